"""Fabric Manager inside the GPU Operator's driver pod: the words and the move that works. Pure.

With an operator-managed driver there is no host ``nvidia-fabricmanager`` unit: ``nv-fabricmanager`` runs
in the driver pod (``nvidia-driver-daemonset-...``), stopping kubelet stops neither it nor the running
containers, and restarting FM means restarting that pod. The diagnosis, the grid's story, preflight and
the plan all say it with these words, so they never disagree.
"""

from __future__ import annotations

from nvls_tui.model import NodeState
from nvls_tui.model.node import FM_UNKNOWN, FmPlace

# The GPU Operator's defaults: its namespace and the label of the driver daemonset's pods.
OPERATOR_NAMESPACE = "gpu-operator"
DRIVER_POD_LABEL = "app=nvidia-driver-daemonset"


def node_name(host: str) -> str:
    """The node's own name from a target as written (``root@gpu05:2222``, ``sim:scenario/gpu05`` -> ``gpu05``).

    Kubernetes may know the node by another name (a fully qualified one): the command says which it used.
    """
    name = host.rsplit("/", 1)[-1].rsplit("@", 1)[-1]
    if name.startswith("[") and "]" in name:  # [::1]:22
        return name[1:name.index("]")]
    return name.split(":", 1)[0] if name.count(":") == 1 else name


def restart_pod_command(state: NodeState) -> str:
    """The ``kubectl`` line that restarts the driver pod of ``state``'s node (the operator recreates it)."""
    place = state.fm_place
    if place is not None and place.pod:
        return f"kubectl delete pod -n {OPERATOR_NAMESPACE} {place.pod}"
    return (f"kubectl delete pod -n {OPERATOR_NAMESPACE} -l {DRIVER_POD_LABEL} "
            f"--field-selector spec.nodeName={node_name(state.host)}")


def in_container(state: NodeState) -> bool:
    """Fabric Manager runs in the driver pod (no host unit)."""
    return state.fm_place is not None and state.fm_place.in_container


def story_line(state: NodeState) -> str:
    """The grid's and node screen's plain words for a node whose FM runs in the driver pod."""
    place = state.fm_place or FmPlace("container")
    return (f"Fabric Manager runs in the GPU Operator's driver pod {place.pod_words}: restart that pod, "
            "not a host unit")


def finding_message(state: NodeState) -> str:
    """``FM_IN_CONTAINER``'s message: where FM runs, and the move that restarts it."""
    place = state.fm_place or FmPlace("container")
    pid = f" (nv-fabricmanager pid {place.pid}; no host nvidia-fabricmanager unit)" if place.pid else ""
    return (f"{story_line(state)}{pid}: `{restart_pod_command(state)}` (or the operator's driver upgrade path); "
            "stop the node's GPU workloads first, since the new pod reloads the driver")


def refusal(state: NodeState) -> str:
    """Why the host-unit repair path is refused on ``state``, with the move that works instead."""
    place = state.fm_place or FmPlace("container")
    return (f"Fabric Manager runs in the GPU Operator's driver pod {place.pod_words}, not in a host unit: this "
            "repair's reset and host `systemctl start nvidia-fabricmanager` do not apply (there is no such "
            "unit, and stopping kubelet stops neither FM nor the running containers). Restart that pod "
            f"instead: `{restart_pod_command(state)}` (or the operator's driver upgrade path), with the node's "
            "GPU workloads stopped first")


def unknown_place(state: NodeState) -> str | None:
    """Why where FM runs could not be told although an FM process was seen (None otherwise).

    Units or holders that could not be read say so on their own (``EVIDENCE_MISSING``); this is the FM
    process that is neither in a unit nor in a pod, or whose cgroup could not be read.
    """
    place = state.fm_place
    if place is None or place.location != FM_UNKNOWN or place.pid is None:
        return None
    return place.reason or "where Fabric Manager runs could not be told"


__all__ = ["DRIVER_POD_LABEL", "OPERATOR_NAMESPACE", "finding_message", "in_container", "node_name", "refusal",
           "restart_pod_command", "story_line", "unknown_place"]
