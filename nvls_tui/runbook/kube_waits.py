"""What a Kubernetes repair waits for, as the plan shows it (:class:`~nvls_tui.runbook.changes.Wait` values) and as
the run makes it, side by side, in the same words: the operands' pods deleted once their labels are paused, an
eviction a disruption budget refuses retried, the evicted pods gone, and the driver pod gone and a new one running
where its restart is the reset.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.model.kube import KubePod
from nvls_tui.runbook.changes import Argv, EvictPod, Read, Wait
from nvls_tui.runbook.context import NodeContext, Refused, StepFailed
from nvls_tui.runbook.kube_calls import (
    call,
    kubectl_said,
    make,
    prefix,
    read_pods,
    read_pods_args,
    timed,
    wait_delete_args,
)
from nvls_tui.runbook.kube_hold import KubeHold

#: Seconds between two evictions a disruption budget refused.
EVICT_RETRY = 5.0
#: What kubectl 1.20 says (exit 1) when ``wait --for=delete`` finds the pod gone already (1.32: exit 0).
NO_MATCH = "error: no matching resources found"
#: Seconds kubectl gets on top of a wait's own ``--timeout`` before its process is ended.
WAIT_SLACK = 15.0

#: What each wait waits for, in the operator's words.
OPERANDS_GONE = "the operands' pods are gone"
EVICTED_GONE = "the evicted pods are gone"
DRIVER_GONE = "the driver pod is gone"
NEW_DRIVER_POD = "a new driver pod runs"
BUDGET_LETS = "no disruption budget refuses it (429)"


def wait_timeout(limit: float) -> float:
    """The request timeout of a ``kubectl wait`` bounded by ``limit``: its own ``--timeout`` and :data:`WAIT_SLACK`."""
    return limit + WAIT_SLACK


def by_namespace(pods: Sequence[KubePod]) -> dict[str, list[str]]:
    """``{namespace: [pod name, ...]}`` in the pods' order: one ``kubectl wait`` per namespace."""
    out: dict[str, list[str]] = {}
    for pod in pods:
        out.setdefault(pod.namespace, []).append(pod.name)
    return out


# ---- as the plan shows them ----------------------------------------------------------------------------------

def deletion_waits(kube: Kubectl, pods: Sequence[KubePod], limit: float, until: str) -> list[Wait]:
    """The waits for ``pods`` to be deleted: one blocking ``kubectl wait --for=delete`` per namespace, with the
    request timeout the run sends it with (:func:`wait_timeout`)."""
    waiting = timed(kube, wait_timeout(limit))
    return [Wait(until, Read(tuple(waiting.argv(*wait_delete_args(namespace, names, limit)))), limit=limit)
            for namespace, names in by_namespace(pods).items()]


def budget_wait(wait_pods: float) -> Wait:
    """An eviction a disruption budget refuses, retried for ``wait_pods`` seconds (``--wait-pods``), then refused."""
    limit = max(0.0, wait_pods)
    then = ("the repair is refused" if limit > 0 else
            "a disruption budget's refusal (429) refuses the repair (--wait-pods SECONDS retries that long)")
    return Wait(BUDGET_LETS, limit=limit, repeated=True, every=EVICT_RETRY, then=then)


def new_driver_pod_wait(kubectl: Argv, node: str, limit: float) -> Wait:
    """The node's pods read again until the driver's DaemonSet runs a new pod, for up to ``limit`` seconds."""
    return Wait(NEW_DRIVER_POD, Read((*kubectl, *read_pods_args(node))), limit=limit, repeated=True)


# ---- as the run makes them -----------------------------------------------------------------------------------

async def wait_deleted(ctx: NodeContext, kube: Kubectl, pods: Sequence[KubePod], limit: float, whose: str) -> None:
    """Wait (audited: :func:`~nvls_tui.runbook.kube_calls.call`) for ``pods`` to be deleted, bounded by ``limit``.

    Raises:
        StepFailed: the wait failed, or a pod outlived it.
    """
    for namespace, names in by_namespace(pods).items():
        args = wait_delete_args(namespace, names, limit)
        try:
            status, out, err = await call(ctx, kube, args, timeout=wait_timeout(limit))
        except KubeError as exc:
            raise StepFailed(f"waiting for {whose} pods to be deleted failed: {exc}") from None
        if status != 0 and NO_MATCH in err:
            continue  # kubectl 1.20's words for a pod already gone (1.32: exit 0, nothing printed)
        if status != 0:
            raise StepFailed(f"{whose} pods in {namespace} were not deleted within {limit:.0f} s "
                             f"({kubectl_said(status, out, err)}); the labels are put back and the node stays cordoned")


async def evict(ctx: NodeContext, kube: Kubectl, hold: KubeHold, pod: KubePod, body: str) -> None:
    """Evict ``pod`` (its Eviction in the file ``body``); while a disruption budget refuses it (429), try again
    every :data:`EVICT_RETRY` seconds until ``wait_pods`` has passed since the first try (:func:`budget_wait`).

    Raises:
        Refused: a budget still refused at the deadline (nvls-tui never force-deletes a pod).
        StepFailed: the API refused the eviction for another reason, or it could not be sent.
    """
    deadline = ctx.options.clock() + max(0.0, ctx.options.wait_pods)
    told = False
    while True:
        try:
            status, printed = await make(ctx, kube, EvictPod(pod.namespace, pod.name, prefix(kube), body_file=body))
        except KubeError as exc:
            raise StepFailed(f"the eviction of {pod.namespace}/{pod.name} could not be sent: {exc}") from None
        said = kubectl_said(status, printed)
        if status == 0 or "(NotFound)" in said:
            hold.evicted.append(f"{pod.namespace}/{pod.name}")
            return
        if "(TooManyRequests)" not in said:
            raise StepFailed(f"Kubernetes refused to evict {pod.namespace}/{pod.name}: {said}")
        if ctx.options.clock() >= deadline:
            raise Refused(f"the disruption budget of {pod.namespace}/{pod.name} refuses its eviction ({said}); "
                          f"nvls-tui never force-deletes a pod: let the workload scale elsewhere (--wait-pods SECONDS "
                          f"keeps retrying that long) or delete the pod yourself, then repair again")
        if not told:
            told = True
            ctx.note(f"the disruption budget of {pod.namespace}/{pod.name} refuses its eviction for now: retrying "
                     f"every {EVICT_RETRY:.0f} s for up to {ctx.options.wait_pods:.0f} s", "warning")
        await ctx.options.sleep(EVICT_RETRY)
        ctx.check_abort()


async def wait_new_driver_pod(ctx: NodeContext, kube: Kubectl, hold: KubeHold, pod: KubePod) -> KubePod:
    """Read the node's pods until a new pod of ``pod``'s DaemonSet runs (``operand_timeout``): that pod.

    Raises:
        StepFailed: the pods could not be read, or no new pod ran in time.
    """
    deadline = ctx.options.clock() + ctx.options.operand_timeout
    while True:
        try:
            pods = await read_pods(ctx, kube, hold.node)
        except KubeError as exc:
            raise StepFailed(f"the new driver pod could not be read: {exc}") from None
        new = next((p for p in pods if p.owner_name == pod.owner_name and p.name != pod.name
                    and p.phase == "Running"), None)
        if new is not None:
            return new
        if ctx.options.clock() >= deadline:
            raise StepFailed(f"no new driver pod of {pod.owner_name} ran on {hold.node} within "
                             f"{ctx.options.operand_timeout:.0f} s of deleting {pod.name}; the labels are put back "
                             f"and the node stays cordoned")
        await ctx.pause()


__all__ = ["BUDGET_LETS", "DRIVER_GONE", "EVICTED_GONE", "EVICT_RETRY", "NEW_DRIVER_POD", "NO_MATCH", "OPERANDS_GONE",
           "WAIT_SLACK", "budget_wait", "by_namespace", "deletion_waits", "evict", "new_driver_pod_wait",
           "wait_deleted", "wait_new_driver_pod", "wait_timeout"]
