"""PodDisruptionBudgets: their status (the disruption controller) and the Eviction API's decision.

The decision follows the real eviction handler: a pod that is not Running (Pending, Succeeded, Failed)
or already terminating skips the budget; more than one budget is a 500; a budget not yet observed at
its generation is a 429; a negative allowance a 403; none left a 429 with the DisruptionBudget cause
("The disruption budget NAME needs D healthy pods and has C currently"). An unready pod may go under
``unhealthyPodEvictionPolicy`` (IfHealthyBudget: while the budget is met; AlwaysAllow: always).
"""

from __future__ import annotations

import math
from typing import Any

from nvls_tui.lab.kube_standin import clock
from nvls_tui.lab.kube_standin.errors import ApiError
from nvls_tui.lab.kube_standin.selectors import selector_from_spec

Obj = dict[str, Any]

TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def pod_ready(pod: Obj) -> bool:
    """Running, not terminating, and its Ready condition True."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    status = pod.get("status", {})
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def _scaled(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString: an int, or a percentage of ``total`` (rounded up, as the controller does)."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def pdb_status(pdb: Obj, pods_in_namespace: list[Obj]) -> Obj:
    """The budget's status over the pods of its namespace (expected = the matching pods not terminating)."""
    select = selector_from_spec(pdb.get("spec", {}).get("selector"))
    pods = [p for p in pods_in_namespace if select(p) and not p["metadata"].get("deletionTimestamp")]
    expected = len(pods)
    healthy = sum(1 for p in pods if pod_ready(p))
    spec = pdb.get("spec", {})
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = 0
    allowed = max(0, healthy - desired)
    old = pdb.get("status") or {}
    status: Obj = {
        "observedGeneration": pdb.get("metadata", {}).get("generation", 1),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [{
            "type": "DisruptionAllowed",
            "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
            "observedGeneration": pdb.get("metadata", {}).get("generation", 1),
            "lastTransitionTime": _transition(old, allowed > 0),
        }],
    }
    return status


def _transition(old: Obj, allowed: bool) -> str:
    """The condition's transition time: kept while its status holds, now when it flips."""
    for cond in old.get("conditions") or []:
        if cond.get("type") == "DisruptionAllowed" and (cond.get("status") == "True") == allowed:
            return str(cond.get("lastTransitionTime") or clock.now())
    return clock.now()


def check_eviction(pod: Obj, budgets: list[Obj]) -> Obj | None:
    """Raise the real refusal, or return the one budget to charge (None: no budget applies)."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return None
    if pod.get("status", {}).get("phase") in ("Pending", "Succeeded", "Failed"):
        return None
    matching = [b for b in budgets if selector_from_spec(b.get("spec", {}).get("selector"))(pod)]
    if not matching:
        return None
    if len(matching) > 1:
        raise ApiError(500, "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                            "does not support.")
    pdb = matching[0]
    status = pdb.get("status") or {}
    name = pdb["metadata"]["name"]
    if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise ApiError(429, TOO_MANY, details={"causes": [{
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {name} is still being processed by the server."}]})
    policy = pdb.get("spec", {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
    if not pod_ready(pod):
        if policy == "AlwaysAllow":
            return None
        if status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0) > 0:
            return None
    allowed = status.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise ApiError(403, "pdb disruptions allowed is negative")
    if allowed == 0:
        raise ApiError(429, TOO_MANY, details={"causes": [{
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy pods "
                       f"and has {status.get('currentHealthy', 0)} currently"}]})
    return pdb
