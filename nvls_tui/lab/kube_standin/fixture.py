"""A cluster's starting state from a small JSON document (the stand-in's fixture format).

```
{"nodes": [{"name": "gpu01", "labels": {...}, "unschedulable": false, "ready": true,
            "nodeInfo": {"bootID": "...", "machineID": "...", "systemUUID": "..."}}],
 "gpuOperator": {"namespace": "gpu-operator", "operands": ["nvidia-device-plugin-daemonset", ...]},
 "workloads": [{"name": "vllm", "namespace": "inference", "nodes": ["gpu01"],
                "containers": [{"name": "vllm", "image": "vllm/vllm-openai"}],
                "pdb": {"minAvailable": 1}}],
 "pods": [{"name": ..., "namespace": ..., "node": ..., "labels": {}, "containers": [...], "phase": "Running"}],
 "objects": [ ...whole Kubernetes objects... ]}
```
``gpuOperator`` makes the operand DaemonSets (each selecting ``nvidia.com/gpu.deploy.<operand>=true``)
and their pods on every GPU node they select; ``workloads`` a Deployment, its ReplicaSet, one pod per
listed node and an optional PodDisruptionBudget. Anything the loader cannot read is a FixtureError
with one line saying what and where.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from nvls_tui.lab.kube_standin import clock, objects
from nvls_tui.lab.kube_standin.controller import DEPLOY_PREFIX, GPU_PRESENT, OPERANDS, selects
from nvls_tui.lab.kube_standin.errors import ApiError
from nvls_tui.lab.kube_standin.resources import BY_KIND
from nvls_tui.lab.kube_standin.store import Obj, Store

_OPERATOR_IMAGES = {
    "nvidia-driver-daemonset": ("nvidia-driver-ctr", "nvcr.io/nvidia/driver:570.124.06-ubuntu22.04"),
    "nvidia-device-plugin-daemonset": ("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"),
    "nvidia-dcgm-exporter": ("nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:4.1.1-4.0.4-ubuntu22.04"),
    "gpu-feature-discovery": ("gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"),
    "nvidia-mig-manager": ("nvidia-mig-manager", "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.1"),
    "nvidia-operator-validator": ("nvidia-operator-validator",
                                  "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.0"),
}


class FixtureError(ValueError):
    """A state document the loader cannot read (the message is one line)."""


def _need(entry: Any, key: str, where: str) -> Any:
    if not isinstance(entry, dict) or key not in entry:
        raise FixtureError(f"{where}: missing {key!r}")
    return entry[key]


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise FixtureError(f"{where}: must map strings to strings")
    return dict(value)


def operand_daemonset(name: str, namespace: str) -> Obj:
    """One GPU Operator operand DaemonSet, selecting its ``nvidia.com/gpu.deploy.<operand>`` label."""
    if name not in OPERANDS:
        raise FixtureError(f"gpuOperator.operands: unknown operand {name!r} (known: {', '.join(OPERANDS)})")
    container, image = _OPERATOR_IMAGES[name]
    labels = {"app": name, "app.kubernetes.io/managed-by": "gpu-operator", "app.kubernetes.io/part-of": "gpu-operator"}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                     "ownerReferences": []},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": dict(labels)},
                              "spec": {"nodeSelector": {DEPLOY_PREFIX + OPERANDS[name]: "true"},
                                       "priorityClassName": "system-node-critical",
                                       "terminationGracePeriodSeconds": 30,
                                       "containers": [{"name": container, "image": image}]}}},
    }


def _workload(store: Store, entry: Any, where: str) -> None:
    name = _need(entry, "name", where)
    namespace = entry.get("namespace", "default")
    labels = {"app": name, **_str_map(entry.get("labels"), where + ".labels")}
    containers = entry.get("containers") or [{"name": name, "image": "vllm/vllm-openai:v0.8.5",
                                             "resources": {"limits": {"nvidia.com/gpu": "8"}}}]
    nodes = entry.get("nodes") or []
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise FixtureError(f"{where}.nodes: must be a list of node names")
    template = {"metadata": {"labels": labels}, "spec": {"containers": containers,
                                                          "terminationGracePeriodSeconds":
                                                              entry.get("terminationGracePeriodSeconds", 30)}}
    deployment = store.create("deployments", {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"replicas": len(nodes), "selector": {"matchLabels": {"app": name}}, "template": template}})
    pod_hash = clock.suffix(10)
    rs_labels = {**labels, "pod-template-hash": pod_hash}
    replicaset = store.create("replicasets", {
        "metadata": {"name": f"{name}-{pod_hash}", "namespace": namespace, "labels": rs_labels,
                     "ownerReferences": [objects.owner_ref(deployment)]},
        "spec": {"replicas": len(nodes), "selector": {"matchLabels": {"app": name, "pod-template-hash": pod_hash}},
                 "template": {**template, "metadata": {"labels": rs_labels}}}})
    for node_name in nodes:
        _place(store, objects.pod_from_template(replicaset, node_name), node_name, where)
    if entry.get("pdb") is not None:
        pdb = entry["pdb"]
        spec: Obj = {"selector": {"matchLabels": {"app": name}}}
        for key in ("minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"):
            if isinstance(pdb, dict) and key in pdb:
                spec[key] = pdb[key]
        store.create("poddisruptionbudgets", {"metadata": {"name": f"{name}-pdb", "namespace": namespace},
                                              "spec": spec})


def _place(store: Store, pod: Obj, node_name: str, where: str, phase: str = "Running") -> None:
    node = store.find("nodes", "", node_name)
    if node is None:
        raise FixtureError(f"{where}: no node {node_name!r}")
    if phase == "Running":
        pod["status"] = objects.running_status(pod, node)
    else:
        pod["status"] = {"phase": phase, "qosClass": "BestEffort"}
    store.create("pods", pod)


def _pod(store: Store, entry: Any, where: str) -> None:
    name = _need(entry, "name", where)
    namespace = entry.get("namespace", "default")
    node_name = _need(entry, "node", where)
    containers = entry.get("containers") or [{"name": name, "image": "registry.invalid/stand-in"}]
    pod: Obj = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": _str_map(entry.get("labels"), where + ".labels")},
                "spec": {"nodeName": node_name, "containers": containers,
                         "terminationGracePeriodSeconds": entry.get("terminationGracePeriodSeconds", 30)}}
    owner = entry.get("owner")
    if owner is not None:
        kind, owner_name = _need(owner, "kind", where + ".owner"), _need(owner, "name", where + ".owner")
        resource = BY_KIND.get(kind)
        found = store.find(resource.plural, namespace, owner_name) if resource else None
        if found is None:
            raise FixtureError(f"{where}.owner: no {kind} {namespace}/{owner_name} in the state")
        pod["metadata"]["ownerReferences"] = [objects.owner_ref(found)]
    _place(store, pod, node_name, where, entry.get("phase", "Running"))


def _namespaces(store: Store) -> None:
    """A Namespace object for every namespace the state's objects live in (and ``default``)."""
    used = {"default"}
    for plural in ("pods", "daemonsets", "replicasets", "deployments", "poddisruptionbudgets"):
        used.update(o["metadata"]["namespace"] for o in store.query(plural)[0])
    for name in sorted(used):
        if store.find("namespaces", "", name) is None:
            store.create("namespaces", {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                                        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})


def load_state(doc: Any, store: Store | None = None) -> Store:
    """A Store holding the state ``doc`` describes."""
    store = store or Store()
    if not isinstance(doc, dict):
        raise FixtureError("the state must be a JSON object")
    unknown = set(doc) - {"nodes", "gpuOperator", "workloads", "pods", "objects", "comment"}
    if unknown:
        raise FixtureError(f"unknown top-level key(s): {', '.join(sorted(unknown))}")
    try:
        for i, entry in enumerate(doc.get("nodes") or []):
            where = f"nodes[{i}]"
            store.create("nodes", objects.node(
                _need(entry, "name", where), labels=_str_map(entry.get("labels"), where + ".labels"),
                annotations=_str_map(entry.get("annotations"), where + ".annotations"),
                unschedulable=bool(entry.get("unschedulable", False)), ready=bool(entry.get("ready", True)),
                gpus=int(entry.get("gpus", 8)), taints=entry.get("taints"),
                address=str(entry.get("address", f"10.0.0.{i + 1}")),
                node_info=_str_map(entry.get("nodeInfo"), where + ".nodeInfo")))
        for i, raw in enumerate(doc.get("objects") or []):
            kind = _need(raw, "kind", f"objects[{i}]")
            resource = BY_KIND.get(kind)
            if resource is None:
                raise FixtureError(f"objects[{i}]: kind {kind!r} is not served by the stand-in")
            store.create(resource.plural, copy.deepcopy(raw))
        operator = doc.get("gpuOperator")
        if operator is not None:
            namespace = operator.get("namespace", "gpu-operator") if isinstance(operator, dict) else None
            if not isinstance(namespace, str):
                raise FixtureError("gpuOperator: must be an object with a namespace")
            nodes, _ = store.query("nodes")
            for name in operator.get("operands") or list(OPERANDS):
                ds = store.create("daemonsets", operand_daemonset(name, namespace))
                for node in nodes:
                    if selects(ds, node) and node["metadata"]["labels"].get(GPU_PRESENT) == "true":
                        _place(store, objects.pod_from_template(ds, node["metadata"]["name"]),
                               node["metadata"]["name"], f"gpuOperator.{name}")
        for i, entry in enumerate(doc.get("workloads") or []):
            _workload(store, entry, f"workloads[{i}]")
        for i, entry in enumerate(doc.get("pods") or []):
            _pod(store, entry, f"pods[{i}]")
        _namespaces(store)
    except ApiError as err:
        raise FixtureError(str(err)) from None
    except (TypeError, ValueError, AttributeError) as err:
        if isinstance(err, FixtureError):
            raise
        raise FixtureError(f"unreadable state: {err}") from None
    return store


def load_state_file(path: str | os.PathLike[str]) -> Store:
    """A Store from a JSON state file; an unreadable file is a FixtureError."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as err:
        raise FixtureError(f"{path}: {err.strerror or err}") from None
    except ValueError as err:
        raise FixtureError(f"{path}: not JSON: {err}") from None
    return load_state(doc)
