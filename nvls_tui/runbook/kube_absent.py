"""A configured cluster that has no node for the target: refused while kubelet runs, unless told to stop it.

The target's Node is looked up by its short host name or the node map's; an IP or alias target, or a node the
cluster names otherwise (``gpu06.dc1.example.com``), with no map line finds nothing. Repairing it "as without a
cluster" would stop kubelet: the whole node NotReady to a cluster that is there (after five minutes the node
controller evicts every pod without a toleration), the scheduler told nothing. So that is refused, naming the
map line that fixes it, and done only with ``--stop-kubelet`` (bound in a saved plan like the other options).
Where no kubelet runs on the machine the cluster has nothing of this machine to lose: the repair goes on as
without a cluster, and says so.
"""

from __future__ import annotations

from nvls_tui.kube.client import Kubectl
from nvls_tui.model import NodeState
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.steps import KUBELET, is_running, unit_states


def kubelet_runs(state: NodeState) -> bool:
    """kubelet's unit is up (or on its way) on the machine, as the poll read it."""
    return is_running(unit_states(state).get(KUBELET))


def absent(ctx: NodeContext, kube: Kubectl, state: NodeState, *, stop_kubelet: bool) -> str | None:
    """The cluster answered and has no node for ``ctx.host``: why the repair must not go on (None: it goes on as
    without a cluster, and the audit log says why)."""
    name = kube.node_name(ctx.host)
    where = f"context {kube.context}" if kube.context else "the kubeconfig's current context"
    if not kubelet_runs(state):
        ctx.note(f"the Kubernetes cluster ({where}) has no node {name} and no kubelet runs on this machine: repaired "
                 f"as without a cluster")
        return None
    if stop_kubelet:
        ctx.note(f"the Kubernetes cluster ({where}) has no node {name}: repaired as without a cluster, kubelet "
                 f"stopped (--stop-kubelet)", "warning")
        return None
    return (f"the Kubernetes cluster ({where}) has no node {name} (the name {ctx.host} maps to) while kubelet runs "
            f"on this machine: without its node the repair would have to stop kubelet, and the cluster would see the "
            f"whole node NotReady. Name its node with the line `{ctx.host} K8S_NODE` in --kube-node-map FILE (or "
            f"[kubernetes.nodes] in the config file; `kubectl get nodes -o wide` lists the names and addresses), or "
            f"check --kube-context; --stop-kubelet repairs it by stopping kubelet instead")


__all__ = ["absent", "kubelet_runs"]
