"""Whole objects from a few facts: nodes, pods and their status as a running kubelet reports them.

The fixture loader and the controller both build objects here, so a pod created by the DaemonSet
stand-in looks like one loaded from a state file (same fields, same status shape).
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from nvls_tui.lab.kube_standin import clock

Obj = dict[str, Any]


def node(name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
         unschedulable: bool = False, ready: bool = True, gpus: int = 8, taints: list[Obj] | None = None,
         address: str = "10.0.0.1", node_info: dict[str, str] | None = None) -> Obj:
    """A Node with a Ready condition, addresses, capacity (``nvidia.com/gpu``) and nodeInfo.

    ``node_info`` sets nodeInfo's fields (``bootID``, ``machineID``, ``systemUUID``: what a kubelet read from its
    machine); those not given stay empty, as the API has them for a node whose kubelet never reported."""
    now = clock.now()
    spec: Obj = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = copy.deepcopy(taints)
    capacity = {"cpu": "224", "memory": "2113400000Ki", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "kubernetes.io/arch": "amd64", **(labels or {})},
                     "annotations": dict(annotations or {})},
        "spec": spec,
        "status": {
            "conditions": [{
                "type": "Ready", "status": "True" if ready else "Unknown",
                "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                "message": "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.",
                "lastHeartbeatTime": now, "lastTransitionTime": now,
            }],
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
            "capacity": capacity, "allocatable": dict(capacity),
            "nodeInfo": {"kubeletVersion": "v1.32.0", "containerRuntimeVersion": "containerd://1.7.24",
                         "kernelVersion": "6.8.0-60-generic", "osImage": "Ubuntu 24.04.2 LTS",
                         "operatingSystem": "linux", "architecture": "amd64", "machineID": "", "systemUUID": "",
                         "bootID": "", "kubeProxyVersion": "", "osImageVersion": ""} | dict(node_info or {}),
        },
    }


def running_status(pod: Obj, node_obj: Obj | None, container_ids: dict[str, str] | None = None) -> Obj:
    """The status a kubelet reports for a pod whose containers all started: Running and Ready.

    ``container_ids``: ``{container name: "containerd://ID"}`` of containers that really run somewhere (the
    lab's); any other container gets a made-up id.
    """
    ids = container_ids or {}
    now = clock.now()
    containers = pod.get("spec", {}).get("containers") or []
    host_ip = ""
    if node_obj is not None:
        host_ip = next((a["address"] for a in node_obj.get("status", {}).get("addresses", [])
                        if a.get("type") == "InternalIP"), "")
    conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {
        "phase": "Running", "conditions": conditions, "hostIP": host_ip, "podIP": host_ip,
        "startTime": now, "qosClass": "BestEffort",
        "containerStatuses": [{
            "name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True, "started": True,
            "restartCount": 0,
            "containerID": ids.get(c["name"]) or "containerd://" + secrets.token_hex(32),
            "state": {"running": {"startedAt": now}},
        } for c in containers],
    }


def pending_status() -> Obj:
    """An unscheduled pod's status (no scheduler here: it stays so)."""
    return {"phase": "Pending", "qosClass": "BestEffort", "conditions": [{
        "type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": clock.now(),
        "reason": "Unschedulable", "message": "0/1 nodes are available: no scheduler in the stand-in."}]}


def owner_ref(owner: Obj) -> Obj:
    """A controller ownerReference to ``owner``."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def pod_from_template(owner: Obj, node_name: str | None) -> Obj:
    """A new pod of a DaemonSet or ReplicaSet (generated name, the template's labels and spec)."""
    template = owner.get("spec", {}).get("template", {})
    spec = copy.deepcopy(template.get("spec") or {})
    if node_name:
        spec["nodeName"] = node_name
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("containers", [{"name": owner["metadata"]["name"], "image": "registry.invalid/stand-in"}])
    labels = dict(template.get("metadata", {}).get("labels") or {})
    if owner["kind"] == "DaemonSet":
        labels.setdefault("pod-template-generation", str(owner["metadata"].get("generation", 1)))
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{owner['metadata']['name']}-{clock.suffix()}",
                     "generateName": f"{owner['metadata']['name']}-",
                     "namespace": owner["metadata"].get("namespace", "default"),
                     "labels": labels, "ownerReferences": [owner_ref(owner)]},
        "spec": spec,
        "status": pending_status() if not node_name else {"phase": "Pending", "qosClass": "BestEffort"},
    }
