"""The cluster's view folded into each node's state: ``k8s`` on the node, a pod's names on each holder.

Pure: a poll round's :class:`~nvls_tui.model.kube.KubeNode` per host (``Kubectl.read``) and the NodeStates
of that round in, NodeStates out. A holder's cgroup gave its pod's uid (``pod<uid>``) and container id; the
pods list of its node gives the pod's namespace, name, container and owner. A node whose cluster side could
not be read carries ``EVIDENCE_MISSING`` (section ``k8s``) where anything of the node was read (a node
never read stays "nothing known": a missing section would make its other sections look read).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from nvls_tui.model import Holder, MissingEvidence, NodeState
from nvls_tui.model.kube import KubeNode, PodRef

SECTION = "k8s"


def pod_ref(holder: Holder, node: KubeNode) -> PodRef | None:
    """The holder's pod as the cluster names it, or None (not a pod's process, or a pod not listed)."""
    if not holder.pod or not holder.pod.startswith("pod"):
        return None
    pod = node.pod_by_uid(holder.pod.removeprefix("pod"))
    if pod is None:
        return None
    return PodRef(pod.namespace, pod.name, pod.container_of(holder.container_id), pod.owner_kind, pod.owner_name)


def with_kube(states: Sequence[NodeState], view: Mapping[str, KubeNode]) -> list[NodeState]:
    """NodeStates with their cluster node attached, each pod holder named; hosts not in ``view`` unchanged."""
    out = []
    for state in states:
        node = view.get(state.host)
        if node is None:
            out.append(state)
            continue
        holders = tuple(dataclasses.replace(h, pod_ref=pod_ref(h, node)) if h.pod else h for h in state.holders)
        missing = tuple(m for m in state.missing if m.section != SECTION)  # a fold again replaces, never adds
        if node.error is not None and state.read_anything:
            missing += (MissingEvidence(SECTION, node.reason or "failed",
                                        f"the Kubernetes cluster could not be read: {node.error}"),)
        out.append(state.replace(k8s=node, holders=holders, missing=missing))
    return out


__all__ = ["SECTION", "pod_ref", "with_kube"]
