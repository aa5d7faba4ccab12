"""A simulated ``kubectl`` for a simulated fleet on Kubernetes (``sim:k8s-incident``).

Why a simulated kubectl and not a stand-in API server started by the fleet: the simulator is in-process and
pure (no socket, no thread, nothing left running when a test ends; it imports no backend), and its nodes'
pods already live in its node state (``Node.pods``: uid, container id, the processes kubelet restarts). The
cluster's view is rendered from that state, so a pod whose container kubelet restarted has the new container
id, and a stopped kubelet makes the node's Ready condition ``Unknown`` after the node controller's 40 s grace
period, as on a real cluster. The stand-in API server (``nvls_tui/kube_standin``) is where the real kubectl
is tested; tests hold this one's JSON to what the real kubectl prints from it.

It answers the two reads the product makes (``get nodes -o json``, ``get pods --all-namespaces
--field-selector spec.nodeName=NODE -o json``) with kubectl's list shape and the API's fields, and anything
else with kubectl's own words for an unknown command and exit status 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from nvls_tui.sim.processes import advance
from nvls_tui.sim.state import Node, PodSpec, digest

# The node controller's node-monitor-grace-period: kubelet silent this long -> Ready is Unknown.
GRACE = 40.0
# The GPU Operator's operands, each with its deploy label (all `true` unless a scenario says otherwise).
OPERANDS = ("driver", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter", "gpu-feature-discovery",
            "mig-manager", "node-status-exporter", "operator-validator")
OPERATOR_NAMESPACE = "gpu-operator"
# kubectl's global flags that take a value (the product passes these before the verb).
_VALUED = ("--kubeconfig", "--context", "--cluster", "--user", "--namespace", "-n")


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def node_labels(node: Node) -> dict[str, str]:
    """The node's labels: its hostname, the GPU Operator's `gpu.present` and operand labels (scenario's own)."""
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
    labels |= {f"nvidia.com/gpu.deploy.{o}": "true" for o in OPERANDS}
    labels |= node.k8s_labels
    return dict(sorted(labels.items()))


def _ready(node: Node, now: float) -> str:
    kubelet = node.units.get("kubelet.service")
    if kubelet is None:
        return "Unknown"
    if kubelet.active == "active":
        return "True"
    return "True" if now - (kubelet.since or 0.0) < GRACE else "Unknown"


def node_json(node: Node, now: float) -> dict[str, Any]:
    """One node as the API returns it (the fields a client reads)."""
    ready = _ready(node, now)
    spec: dict[str, Any] = {"podCIDR": "10.244.0.0/24"}
    if node.k8s_cordoned:
        spec["unschedulable"] = True
        spec["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                           "timeAdded": _iso(now)}]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "uid": _uid(node.name, "node"), "labels": node_labels(node),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
                     "creationTimestamp": _iso(node.boot)},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": ready,
                                   "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown",
                                   "message": "kubelet is posting ready status" if ready == "True"
                                   else "Kubelet stopped posting node status.",
                                   "lastHeartbeatTime": _iso(now), "lastTransitionTime": _iso(node.boot + 30)}]},
    }


def _uid(*parts: str) -> str:
    h = digest("k8s", *parts)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def owner_of(pod: PodSpec) -> tuple[str, str, str]:
    """(namespace, owner kind, owner name): the GPU Operator's DaemonSets, or a workload's ReplicaSet."""
    base = pod.name.rsplit("-", 1)[0]
    if pod.k8s_owner_kind is not None and pod.k8s_owner_name is not None:
        return pod.k8s_namespace or "default", pod.k8s_owner_kind, pod.k8s_owner_name
    return OPERATOR_NAMESPACE, "DaemonSet", base


def pod_json(node: Node, pod: PodSpec) -> dict[str, Any]:
    """One pod as the API returns it: its owner, its one container with the runtime's current id."""
    namespace, kind, owner = owner_of(pod)
    container = pod.k8s_container or pod.role
    running = any(p.pod == pod.name for p in node.procs.values())
    state: dict[str, Any] = ({"running": {"startedAt": _iso(node.boot)}} if running
                             else {"waiting": {"reason": "ContainerCreating"}})
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": namespace, "uid": pod.uid,
                     "labels": {"app": pod.name.rsplit("-", 1)[0]},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner,
                                          "uid": _uid(namespace, owner), "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"nodeName": node.name, "containers": [{"name": container, "image": pod.argv[0]}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": container, "ready": running, "restartCount": pod.restarts, "state": state,
             "containerID": f"containerd://{pod.container}"}]},
    }


def _list(items: list[dict[str, Any]]) -> str:
    # kubectl's own framing of several objects: kind List, an empty resourceVersion, four-space indent.
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
                      indent=4) + "\n"


def _words(argv: Sequence[str]) -> list[str]:
    """argv without the binary and the global flags (``--kubeconfig F``, ``--request-timeout=15s``, ...)."""
    out, skip = [], False
    for word in argv[1:]:
        if skip:
            skip = False
            continue
        if word in _VALUED or word == "--request-timeout":
            skip = True
            continue
        if word.startswith(("--request-timeout=", "--kubeconfig=", "--context=")):
            continue
        out.append(word)
    return out


def kubectl(nodes: Sequence[Node], argv: Sequence[str], now: float) -> tuple[int, str, str]:
    """Answer one kubectl argv over the simulated cluster's ``nodes`` at ``now``: (exit status, stdout, stderr)."""
    for node in nodes:
        advance(node, now)
    words = _words(argv)
    if words[:2] == ["get", "nodes"] and words[2:] == ["-o", "json"]:
        return 0, _list([node_json(n, now) for n in sorted(nodes, key=lambda n: n.name)]), ""
    if words[:3] == ["get", "pods", "--all-namespaces"] and len(words) == 7 and words[3] == "--field-selector" \
            and words[5:] == ["-o", "json"]:
        field, _, value = words[4].partition("=")
        if field != "spec.nodeName":
            return 1, "", (f'Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label '
                           f'selector "", field selector "{words[4]}": field label not supported: {field}\n')
        pods = [pod_json(n, p) for n in nodes if n.name == value for p in n.pods]
        # The API lists in its storage's key order: namespace, then name.
        pods.sort(key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
        return 0, _list(pods), ""
    verb = words[0] if words else ""
    return 1, "", f'error: unknown command "{verb}" for "kubectl"\n'


class SimKubectl:
    """The product's kubectl runner (``nvls_tui.kube.client.Runner``) over one simulated fleet's nodes.

    Args:
        node: looks a node up by name (the fleet builds it on first use).
        names: the fleet's nodes in the cluster.
        now: the fleet's clock.
    """

    def __init__(self, node: Callable[[str], Node], names: Sequence[str], now: Callable[[], float]) -> None:
        self._node = node
        self.names = list(names)
        self._now = now

    async def __call__(self, argv: Sequence[str], timeout: float, max_output: int) -> tuple[int, str, str]:
        """Answer ``argv`` at once (the simulated API server is never slow)."""
        status, out, err = kubectl([self._node(n) for n in self.names], argv, self._now())
        return status, out[:max_output + 1], err  # cut past the cap, as the real runner refuses it


__all__ = ["GRACE", "OPERANDS", "OPERATOR_NAMESPACE", "SimKubectl", "kubectl", "node_json", "node_labels",
           "owner_of", "pod_json"]
