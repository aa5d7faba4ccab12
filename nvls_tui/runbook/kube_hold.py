"""What a Kubernetes repair finds in the cluster and decides from it, before it changes anything: the operand
labels it pauses (never an administrator's ``false``), the operands' pods that go with them, the workload pods it
evicts, the driver pod where Fabric Manager runs in it, and :class:`KubeHold`, what the run remembers (its first
fields go into the on-node record). Pure: no call to the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.model import NodeState
from nvls_tui.model.kube import OPERAND_LABEL_PREFIX, KubeNode, KubePod

#: The operands whose pods open the GPUs. The driver and the container toolkit are never paused: pausing the
#: driver's label unloads the driver.
PAUSE_OPERANDS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "mig-manager",
                  "node-status-exporter", "operator-validator")


def operand_of(daemonset: str) -> str:
    """The operand a GPU Operator DaemonSet deploys: ``nvidia-device-plugin-daemonset`` -> ``device-plugin``,
    ``nvidia-dcgm-exporter`` -> ``dcgm-exporter`` (its name less ``nvidia-`` and ``-daemonset``)."""
    return daemonset.removeprefix("nvidia-").removesuffix("-daemonset")


def pause_plan(node: KubeNode) -> dict[str, str | None]:
    """``{label: value before}`` of each operand label to pause: ``true`` or unset (None); never a ``false`` or
    any other value an administrator (or another manager) set."""
    labels = dict(node.labels)
    plan: dict[str, str | None] = {}
    for operand in PAUSE_OPERANDS:
        key = OPERAND_LABEL_PREFIX + operand
        if labels.get(key, "true") == "true":
            plan[key] = labels.get(key)
    return plan


def operand_pods(pods: Sequence[KubePod], paused: Sequence[str]) -> list[KubePod]:
    """The pods of the DaemonSets that the ``paused`` labels deploy (the pods the pause deletes)."""
    operands = {key.removeprefix(OPERAND_LABEL_PREFIX) for key in paused}
    return [p for p in pods if p.owner_kind == "DaemonSet" and p.owner_name and operand_of(p.owner_name) in operands]


def workload_pods(pods: Sequence[KubePod], state: NodeState) -> list[KubePod]:
    """The pods to evict: not a DaemonSet's, with a process that holds a GPU device (the poll's holders)."""
    holding = {h.pod.removeprefix("pod") for h in state.holders if h.pod and h.pod.startswith("pod")}
    return [p for p in pods if p.owner_kind != "DaemonSet" and p.uid in holding]


@dataclass
class KubeHold:
    """What this repair found and changed in the cluster (its first three fields go into the on-node record).

    Attributes:
        node: the Kubernetes node name.
        cordoned_before: the node was cordoned before the repair (its cordon is left alone).
        labels: ``{operand label: value before}`` (None: unset) of the labels this repair pauses.
        inherited: the cordon is an earlier nvls-tui repair's (it carries :data:`STOPPED_AT`): a passing repair
            lifts it.
        cordoned: this run cordoned the node.
        paused: the labels this run set to paused.
        evicted: ``namespace/pod`` of each pod this run evicted.
        pods: the node's pods as preflight read them.
        kept: the operand labels left alone (``false`` or another value someone set), as read.
        identity: how the Node was proven to be this machine (words; the plan shows them).
        annotated: the node carries :data:`STOPPED_AT` (a passing repair that uncordons it removes it).
    """

    node: str
    cordoned_before: bool
    labels: dict[str, str | None] = field(default_factory=dict)
    inherited: bool = False
    cordoned: bool = False
    paused: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    pods: tuple[KubePod, ...] = ()
    kept: dict[str, str] = field(default_factory=dict)
    identity: str = ""
    annotated: bool = False

    def to_record(self) -> dict[str, Any]:
        """The part the on-node record keeps (``kube`` in repair.json)."""
        return {"node": self.node, "cordoned_before": self.cordoned_before, "inherited": self.inherited,
                "labels": dict(self.labels)}

    @classmethod
    def from_record(cls, data: Any) -> KubeHold | None:
        """Read the record's ``kube`` back; None when it is absent or not one (the record is data, not trusted)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("node"), str) or not data["node"]:
            return None
        raw = data.get("labels")
        labels = {k: v for k, v in raw.items() if isinstance(k, str) and k.startswith(OPERAND_LABEL_PREFIX)
                  and (v is None or isinstance(v, str))} if isinstance(raw, Mapping) else {}
        return cls(node=data["node"], cordoned_before=data.get("cordoned_before") is not False,
                   labels=labels, inherited=data.get("inherited") is True)


def driver_pod(hold: KubeHold, state: NodeState) -> KubePod | None:
    """The GPU Operator's driver pod that runs Fabric Manager on the node: the pod whose uid FM's cgroup names,
    owned by a DaemonSet (None where FM runs elsewhere or the cluster does not list that pod)."""
    place = state.fm_place
    if place is None or not place.in_container or not place.pod_uid:
        return None
    return next((p for p in hold.pods if p.uid == place.pod_uid and p.owner_kind == "DaemonSet"), None)


__all__ = ["KubeHold", "PAUSE_OPERANDS", "driver_pod", "operand_of", "operand_pods", "pause_plan", "workload_pods"]
