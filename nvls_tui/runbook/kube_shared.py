"""Targets of one run that map to the same Kubernetes node: refused together, before anything runs.

Two repairs of one node undo each other in the cluster: the run that ends first puts the operand labels back
(and, after a pass, uncordons) while the other is between verify-no-holders and the reset, so the GPU
Operator's pods come back onto GPUs about to be reset. A node map with a copied line, or two names of one machine
(``gpu05`` and ``10.0.0.5``), does it. Such targets are refused as a group, each naming the others and the node;
the run's other targets go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nvls_tui.kube.client import Kubectl


def _cluster(kube: Kubectl) -> tuple[object, ...]:
    """Which cluster a kubectl reaches: its kubeconfig and context (the simulator's: its runner)."""
    return (kube.kubeconfig, kube.context, id(kube.runner) if kube.runner is not None else None)


def shared_nodes(hosts: Sequence[str], kubes: Mapping[str, Kubectl]) -> dict[str, str]:
    """``{host: why it is refused}`` for every host whose Kubernetes node another host of ``hosts`` maps to too."""
    groups: dict[tuple[object, ...], list[str]] = {}
    for host in hosts:
        kube = kubes.get(host)
        if kube is not None:
            groups.setdefault((*_cluster(kube), kube.node_name(host)), []).append(host)
    refused: dict[str, str] = {}
    for key, group in groups.items():
        if len(group) < 2:
            continue
        node = key[-1]
        for host in group:
            others = " and ".join(h for h in group if h != host)
            refused[host] = (f"{host} and {others} map to the same Kubernetes node {node}: two repairs of one node "
                             f"undo each other in the cluster (the first to end puts the labels back while the other "
                             f"still needs them paused), so neither is run; nothing was changed. Give each target its "
                             f"own node (--kube-node-map, [kubernetes.nodes]) or repair the node through one target")
    return refused


__all__ = ["shared_nodes"]
