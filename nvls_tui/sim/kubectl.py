"""A simulated ``kubectl`` for a simulated fleet on Kubernetes (``sim:k8s-incident``).

Why a simulated kubectl and not a stand-in API server started by the fleet: the simulator is in-process and
pure (no socket, no thread, nothing left running when a test ends; it imports no backend), and its nodes'
pods already live in its node state (``Node.pods``: uid, container id, the processes kubelet restarts). The
cluster's view is rendered from that state, so a pod whose container kubelet restarted has the new container
id, and a stopped kubelet makes the node's Ready condition ``Unknown`` after the node controller's 40 s grace
period, as on a real cluster. The stand-in API server (``nvls_tui/lab/kube_standin``) is where the real kubectl
is tested; tests hold this one's JSON to what the real kubectl prints from it.

It answers the reads the product makes (``get nodes -o json``, the same with ``--field-selector
metadata.name=NODE``, ``get pods --all-namespaces --field-selector spec.nodeName=NODE -o json``, ``get events
--all-namespaces --field-selector involvedObject.kind=Node,involvedObject.name=NODE -o json``: a field the real
server does not select events by gets its 400) with
kubectl's list shape and the API's fields, and the repair's writes (runbook/kube_repair.py) with what kubectl
1.32 prints against a real API server, exit status included: ``cordon``/``uncordon``, ``label node``
(``--overwrite K=V``, ``K-``), ``patch node --type=merge -o json`` of the labels (the conditioned label write:
the node after it), ``annotate node``, ``wait --for=delete pod/...`` and the Eviction subresource
(``create --raw .../eviction -f FILE``; a pod with a budget that allows no disruption gets the 429); a label
or annotation conditioned on a resourceVersion the node no longer has gets the API server's 409 (each
write moves the node's resourceVersion, ``Node.k8s_rv``). The
cluster acts on them at once: a deploy label that no longer reads ``true`` takes its operand's pods off the
node (their processes end with SIGTERM, as kubelet ends a deleted pod's containers), ``true`` (or unset) brings
new pods back; an evicted pod's processes end and its ReplicaSet's replacement stays Pending (no scheduler
here). Anything else gets kubectl's own words for an unknown command and exit status 1.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

from nvls_tui.sim.fabric import fm_started, reset_gpus
from nvls_tui.sim.files import identity
from nvls_tui.sim.processes import advance, exit_process, fm_went_away, spawn_pod
from nvls_tui.sim.state import Node, PodSpec, digest

# The node controller's node-monitor-grace-period: kubelet silent this long -> Ready is Unknown.
GRACE = 40.0
# The GPU Operator's operands, each with its deploy label (all `true` unless a scenario says otherwise).
OPERANDS = ("driver", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter", "gpu-feature-discovery",
            "mig-manager", "node-status-exporter", "operator-validator")
OPERATOR_NAMESPACE = "gpu-operator"
# The role of the GPU Operator's driver pod (nvls_tui/sim/faults.py's DRIVER_POD_ROLE): FM runs in it.
DRIVER_ROLE = "nvidia-driver"
# kubectl's global flags that take a value (the product passes these before the verb). ``-n NS`` is kept:
# the verbs that take it (wait) read it.
_VALUED = ("--kubeconfig", "--context", "--cluster", "--user")


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def node_labels(node: Node) -> dict[str, str]:
    """The node's labels: its hostname, the GPU Operator's `gpu.present` and operand labels (scenario's own)."""
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
    labels |= {f"nvidia.com/gpu.deploy.{o}": "true" for o in OPERANDS}
    labels |= node.k8s_labels
    # An empty value is a default label removed through the API (``kubectl label node N K-``).
    return dict(sorted((k, v) for k, v in labels.items() if v != ""))


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
        "metadata": {"name": node.name, "uid": _uid(node.name, "node"), "resourceVersion": str(node.k8s_rv),
                     "labels": node_labels(node),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
                     | node.k8s_annotations,
                     "creationTimestamp": _iso(node.boot)},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": ready,
                                   "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown",
                                   "message": "kubelet is posting ready status" if ready == "True"
                                   else "Kubelet stopped posting node status.",
                                   "lastHeartbeatTime": _iso(now), "lastTransitionTime": _iso(node.boot + 30)}],
                   # What kubelet read from the machine: the ids a repair compares with the machine's own files.
                   "nodeInfo": {**identity(node), "kubeletVersion": "v1.32.0", "operatingSystem": "linux",
                                "architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.24"}},
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


def record_event(node: Node, at: float, type_: str, reason: str, message: str, source: str = "kubelet") -> None:
    """The cluster records an event about the Node (what kubelet or the node controller reports)."""
    node.k8s_events.append({"at": at, "type": type_, "reason": reason, "message": message, "source": source})


def event_json(node: Node, index: int, event: dict[str, Any]) -> dict[str, Any]:
    """One of the node's events as the API returns it (core/v1 Event; kubelet files a node's in ``default``)."""
    stamp = _iso(event["at"])
    return {
        "apiVersion": "v1", "kind": "Event", "count": 1, "type": event["type"], "reason": event["reason"],
        "message": event["message"], "firstTimestamp": stamp, "lastTimestamp": stamp, "eventTime": None,
        "involvedObject": {"kind": "Node", "name": node.name, "uid": node.name, "apiVersion": ""},
        "metadata": {"name": f"{node.name}.{digest('event', node.name, index)[:16]}", "namespace": "default",
                     "uid": _uid(node.name, "event", str(index)), "creationTimestamp": stamp},
        "source": {"component": event.get("source", "kubelet"), "host": node.name},
        "reportingComponent": event.get("source", "kubelet"), "reportingInstance": node.name,
    }


# The fields the API server selects events by (core/v1 Event's field label conversion); any other is its 400.
EVENT_FIELDS = ("metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
                "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent",
                "source", "type")


def _event_field(obj: dict[str, Any], path: str) -> str:
    if path == "source":
        return str(obj["source"].get("component") or obj.get("reportingComponent") or "")
    head, _, tail = path.partition(".")
    value = obj.get(head) if not tail else (obj.get(head) or {}).get(tail)
    return "" if value is None else str(value)


def _events(nodes: Sequence[Node], selector: str) -> tuple[int, str, str]:
    """``get events --all-namespaces --field-selector SEL -o json``: every node's events the selector keeps."""
    terms = []
    for term in (t for t in selector.split(",") if t):
        negate = "!=" in term
        path, _, value = term.replace("==", "=").replace("!=", "=").partition("=")
        if path not in EVENT_FIELDS:
            return 1, "", (f'Error from server (BadRequest): Unable to find "/v1, Resource=events" that match label '
                           f'selector "", field selector "{selector}": field label not supported: {path}\n')
        terms.append((path, value, negate))
    items = [event_json(n, i, e) for n in nodes for i, e in enumerate(n.k8s_events)]
    kept = [o for o in items if all((_event_field(o, p) == v) != neg for p, v, neg in terms)]
    kept.sort(key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))  # the storage's key order
    return 0, _list(kept), ""


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
    if words[:3] == ["get", "nodes", "--field-selector"] and len(words) == 6 and words[4:] == ["-o", "json"]:
        field, _, value = words[3].partition("=")
        if field != "metadata.name":
            return 1, "", (f'Error from server (BadRequest): Unable to find "/v1, Resource=nodes" that match label '
                           f'selector "", field selector "{words[3]}": field label not supported: {field}\n')
        return 0, _list([node_json(n, now) for n in nodes if n.name == value]), ""
    if words[:4] == ["get", "events", "--all-namespaces", "--field-selector"] and len(words) == 7 \
            and words[5:] == ["-o", "json"]:
        return _events(nodes, words[4])
    writes = {"cordon": _cordon, "uncordon": _cordon, "label": _label, "annotate": _annotate, "wait": _wait,
              "create": _evict, "delete": _delete, "patch": _patch}
    verb = words[0] if words else ""
    if verb in writes:
        return writes[verb](nodes, words, now)
    return 1, "", f'error: unknown command "{verb}" for "kubectl"\n'


def _not_found(kind: str, name: str) -> tuple[int, str, str]:
    return 1, "", f'Error from server (NotFound): {kind} "{name}" not found\n'


def _node_named(nodes: Sequence[Node], name: str) -> Node | None:
    return next((n for n in nodes if n.name == name), None)


def _cordon(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``cordon NODE`` / ``uncordon NODE``: kubectl sends nothing where the node is already so, and says it."""
    verb, rest = words[0], words[1:]
    if len(rest) != 1:
        return 1, "", "error: USAGE: cordon NODE [flags]\n"
    node = _node_named(nodes, rest[0])
    if node is None:
        return _not_found("nodes", rest[0])
    want = verb == "cordon"
    if node.k8s_cordoned == want:
        return 0, f"node/{node.name} already {verb}ed\n", ""
    node.k8s_cordoned = want
    node.k8s_rv += 1
    status = "NodeNotSchedulable" if want else "NodeSchedulable"
    record_event(node, now, "Normal", status, f"Node {node.name} status is now: {status}")
    return 0, f"node/{node.name} {verb}ed\n", ""


_RV_FLAG = "--resource-version"
# The API server's words for a write conditioned on a resourceVersion the object no longer has.
_CONFLICT = ('Error from server (Conflict): Operation cannot be fulfilled on nodes "{name}": the object has been '
             "modified; please apply your changes to the latest version and try again\n")


def _pairs(words: list[str]) -> tuple[str, bool, list[str]]:
    """``label|annotate node NODE [--overwrite] [--resource-version=RV] K=V|K- ...``: (node name, overwrite, the
    changes)."""
    rest = [w for w in words[2:] if w != "--overwrite" and not w.startswith(_RV_FLAG + "=")]
    return (rest[0] if rest else ""), "--overwrite" in words, rest[1:]


def _stale(node: Node, words: list[str]) -> tuple[int, str, str] | None:
    """The 409 of a write whose ``--resource-version`` is not the node's now (None: no condition, or it holds)."""
    wanted = next((w.partition("=")[2] for w in words if w.startswith(_RV_FLAG + "=")), None)
    if wanted is None or wanted == str(node.k8s_rv):
        return None
    return 1, "", _CONFLICT.format(name=node.name)


def _label(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``label node NODE [--overwrite] K=V | K-``; an operand's deploy label moves its pods (see the module)."""
    if words[1:2] != ["node"]:
        return 1, "", f'error: the server doesn\'t have a resource type "{words[1] if len(words) > 1 else ""}"\n'
    name, overwrite, changes = _pairs(words)
    node = _node_named(nodes, name)
    if node is None:
        return _not_found("nodes", name)
    if (conflict := _stale(node, words)) is not None:
        return conflict
    labels = node_labels(node)
    out = ""
    changed = False
    for change in changes:
        if change.endswith("-") and "=" not in change:
            key = change[:-1]
            if key not in labels:
                out += f'label "{key}" not found.\n'
                continue
            node.k8s_labels[key] = ""  # over a default: gone (node_labels drops the empty)
            changed = True
            continue
        key, _, value = change.partition("=")
        if key in labels and not overwrite:
            return 1, "", f"error: '{key}' already has a value ({labels[key]}), and --overwrite is false\n"
        node.k8s_labels[key] = value
        changed = True
    if not changed:
        return 0, out + f"node/{node.name} not labeled\n", ""
    node.k8s_rv += 1
    _reconcile_operands(node, now)
    return 0, out + f"node/{node.name} {'unlabeled' if all(c.endswith('-') for c in changes) else 'labeled'}\n", ""


def _patch(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``patch node NODE --type=merge -o json -p '{"metadata":{"labels":{K:V|null},"resourceVersion":RV}}'``: a
    merge patch of the node's labels (the conditioned label write), printed as the API answers it (the node after
    the write, kubectl's four-space JSON); a resourceVersion the node no longer has is the 409."""
    flags = words[3:]
    if words[1:2] != ["node"] or len(words) < 3 or "--type=merge" not in flags or "-p" not in flags[:-1]:
        return 1, "", "error: the simulated cluster only patches a node: patch node N --type=merge -o json -p PATCH\n"
    node = _node_named(nodes, words[2])
    if node is None:
        return _not_found("nodes", words[2])
    raw = flags[flags.index("-p") + 1]
    try:
        patch = json.loads(raw)
    except ValueError:
        return 1, "", f"error: unable to parse \"{raw}\": yaml: did not find expected node content\n"
    meta = patch.get("metadata") if isinstance(patch, dict) else None
    if not isinstance(meta, dict) or set(patch) != {"metadata"} or not set(meta) <= {"labels", "resourceVersion"}:
        return 1, "", "error: the simulated cluster only merge-patches a node's labels and resourceVersion\n"
    wanted = meta.get("resourceVersion")
    if wanted is not None and str(wanted) != str(node.k8s_rv):
        return 1, "", _CONFLICT.format(name=node.name)
    labels = node_labels(node)
    changes = {k: v for k, v in (meta.get("labels") or {}).items() if labels.get(k) != v}
    for key, value in changes.items():
        node.k8s_labels[key] = "" if value is None else str(value)  # "" over a default: gone (node_labels)
    if changes:
        node.k8s_rv += 1
        _reconcile_operands(node, now)
    if "json" in flags:
        return 0, json.dumps(node_json(node, now), indent=4) + "\n", ""
    return 0, f"node/{node.name} patched{'' if changes else ' (no change)'}\n", ""


def operand_of(owner: str) -> str:
    """The operand a GPU Operator DaemonSet deploys (its name less ``nvidia-`` and ``-daemonset``)."""
    return owner.removeprefix("nvidia-").removesuffix("-daemonset")


def _deployed(node: Node, pod: PodSpec) -> bool:
    """Whether the pod's DaemonSet wants it on ``node`` (its deploy label true, or unset)."""
    _, kind, owner = owner_of(pod)
    if kind != "DaemonSet":
        return True
    return node_labels(node).get(f"nvidia.com/gpu.deploy.{operand_of(owner)}", "true") == "true"


def _end_pod(node: Node, pod: PodSpec, now: float) -> None:
    """The pod leaves the node: kubelet ends its containers' processes (SIGTERM) and forgets it."""
    for proc in [p for p in node.procs.values() if p.pod == pod.name]:
        exit_process(node, proc, now, signo=signal.SIGTERM)
    node.pods = [p for p in node.pods if p.name != pod.name]


def _reconcile_operands(node: Node, now: float) -> None:
    """The operand DaemonSets after a label change: paused ones' pods go, resumed ones' come back as new pods."""
    for pod in [p for p in node.pods if not _deployed(node, p)]:
        _end_pod(node, pod, now)
        node.k8s_parked.append(pod)
    for pod in [p for p in node.k8s_parked if _deployed(node, p)]:
        node.k8s_parked.remove(pod)
        _renew(node, pod, now)


def _annotate(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``annotate node NODE K=V [--overwrite] | K-``."""
    if words[1:2] != ["node"]:
        return 1, "", f'error: the server doesn\'t have a resource type "{words[1] if len(words) > 1 else ""}"\n'
    name, overwrite, changes = _pairs(words)
    node = _node_named(nodes, name)
    if node is None:
        return _not_found("nodes", name)
    if (conflict := _stale(node, words)) is not None:
        return conflict
    node.k8s_rv += 1
    for change in changes:
        if change.endswith("-") and "=" not in change:
            node.k8s_annotations.pop(change[:-1], None)
            continue
        key, _, value = change.partition("=")
        if key in node.k8s_annotations and not overwrite:
            return 1, "", (f"error: --overwrite is false but found the following declared annotation(s): "
                           f"'{key}' already has a value ({node.k8s_annotations[key]})\n")
        node.k8s_annotations[key] = value
    return 0, f"node/{node.name} annotated\n", ""


def _pod_named(nodes: Sequence[Node], namespace: str, name: str) -> tuple[Node, PodSpec] | None:
    for node in nodes:
        for pod in node.pods:
            if pod.name == name and owner_of(pod)[0] == namespace:
                return node, pod
    return None


def _wait(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``wait --for=delete pod/A ... -n NS --timeout=Ns``: a pod already gone is no output and exit 0 (kubectl
    1.32); this cluster moves only between calls, so a pod still here outlasts the wait."""
    if "--for=delete" not in words:
        return 1, "", "error: the simulated cluster only waits --for=delete\n"
    namespace = words[words.index("-n") + 1] if "-n" in words[:-1] else "default"
    for target in (w for w in words[1:] if w.startswith("pod/")):
        if _pod_named(nodes, namespace, target.removeprefix("pod/")) is not None:
            return 1, "", f"error: timed out waiting for the condition on pods/{target.removeprefix('pod/')}\n"
    return 0, "", ""


def _renew(node: Node, pod: PodSpec, now: float) -> None:
    """A DaemonSet's new pod for the one that went (a new name, uid and container), started where kubelet runs.

    The driver pod loads the driver again first: that resets every GPU and NVSwitch as ``nvidia-smi -r`` does,
    only where no process holds a device (the old driver could not unload otherwise), then FM starts in it.
    """
    base = pod.name.rsplit("-", 1)[0]
    again = digest(node.name, pod.name, now)
    pod.name, pod.uid = f"{base}-{again[:5]}", f"{again[:8]}-{again[8:12]}-{again[12:16]}-{again[16:20]}-{again[20:32]}"
    pod.container, pod.restarts, pod.gone_at = digest(node.name, pod.name, 0)[:64], 0, None
    node.pods.append(pod)
    kubelet = node.units.get("kubelet.service")
    if kubelet is None or kubelet.active != "active":
        return
    if pod.role == DRIVER_ROLE and not node.holders():
        reset_gpus(node, now)
    spawn_pod(node, pod, now)
    if pod.role == DRIVER_ROLE:
        fm_started(node, now)


def _delete(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``delete pod -n NS P --wait=false``: the pod goes (its processes end); its DaemonSet, where its label
    deploys it, makes a new one at once (a workload's ReplicaSet's replacement stays Pending)."""
    rest = [w for w in words[2:] if w != "--wait=false"]
    if words[1:2] != ["pod"] or len(rest) != 3 or rest[0] != "-n":
        return 1, "", "error: the simulated cluster only deletes one pod: delete pod -n NS NAME --wait=false\n"
    found = _pod_named(nodes, rest[1], rest[2])
    if found is None:
        return _not_found("pods", rest[2])
    node, pod = found
    _end_pod(node, pod, now)
    if pod.role == DRIVER_ROLE:
        fm_went_away(node)  # FM went with its pod; the driver container unloads the driver
    if owner_of(pod)[1] == "DaemonSet" and _deployed(node, pod):
        _renew(node, pod, now)
    return 0, f'pod "{rest[2]}" deleted\n', ""


_EVICTED = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'


def _evict(nodes: Sequence[Node], words: list[str], now: float) -> tuple[int, str, str]:
    """``create --raw /api/v1/namespaces/NS/pods/P/eviction -f FILE``: the Eviction subresource."""
    path = words[2] if words[1:2] == ["--raw"] and len(words) > 2 else ""
    parts = path.strip("/").split("/")
    if len(parts) != 7 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods" or parts[6] != "eviction":
        return 1, "", 'error: unknown command "create" for "kubectl"\n' if not path else \
            'Error from server (NotFound): the server could not find the requested resource\n'
    found = _pod_named(nodes, parts[3], parts[5])
    if found is None:
        return _not_found("pods", parts[5])
    node, pod = found
    if pod.k8s_budget:
        return 1, "", "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget.\n"
    _end_pod(node, pod, now)
    return 0, _EVICTED, ""


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


__all__ = ["EVENT_FIELDS", "GRACE", "OPERANDS", "OPERATOR_NAMESPACE", "SimKubectl", "event_json", "kubectl",
           "node_json", "node_labels", "owner_of", "pod_json", "record_event"]
