"""Server-side printing: the ``meta.k8s.io/v1 Table`` kubectl asks for when it prints for a person.

``kubectl get`` without ``-o json`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...``; the
real server answers with the resource's printer columns (priority 0 always shown, 1 with ``-o wide``) and
each row's object as PartialObjectMetadata (``includeObject=``). The columns here are the real ones for
nodes, pods, DaemonSets and PodDisruptionBudgets; other resources get Name and Age.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from typing import Any

from nvls_tui.lab.kube_standin.resources import Resource

Obj = dict[str, Any]
Column = tuple[str, str, int, Callable[[Obj], Any]]  # name, type, priority, cell

TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> str | None:
    """The Table media type asked for (v1 or v1beta1), or None."""
    for part in accept.split(","):
        params = set(part.replace(" ", "").split(";"))
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return "application/json;as=Table;v=v1beta1;g=meta.k8s.io" if "v=v1beta1" in params else TABLE_V1
    return None


def human_age(stamp: str | None, now: float | None = None) -> str:
    """An age as kubectl shows one (``45s``, ``3m20s``, ``25m``, ``5h10m``, ``3d4h``, ``90d``)."""
    if not stamp:
        return "<unknown>"
    try:
        then = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return "<invalid>"
    seconds = max(0, int((now if now is not None else time.time()) - then))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def _age(obj: Obj) -> str:
    return human_age(obj.get("metadata", {}).get("creationTimestamp"))


def _node_status(node: Obj) -> str:
    ready = next((c for c in node.get("status", {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    words = ["Ready" if ready and ready.get("status") == "True" else "NotReady" if ready else "Unknown"]
    if node.get("spec", {}).get("unschedulable"):
        words.append("SchedulingDisabled")
    return ",".join(words)


def _node_roles(node: Obj) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in node["metadata"].get("labels") or {} if k.startswith(prefix))
    return ",".join(r for r in roles if r) or "<none>"


def _address(kind: str) -> Callable[[Obj], str]:
    return lambda node: next((a["address"] for a in node.get("status", {}).get("addresses") or []
                              if a.get("type") == kind), "<none>")


def _pod_ready(pod: Obj) -> str:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    total = len(pod.get("spec", {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(pod: Obj) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str(pod.get("status", {}).get("phase") or "Unknown")


def _int_or_none(field: str) -> Callable[[Obj], str]:
    return lambda pdb: str(pdb.get("spec", {}).get(field)) if pdb.get("spec", {}).get(field) is not None else "N/A"


def _status_int(field: str) -> Callable[[Obj], int]:
    return lambda obj: int(obj.get("status", {}).get(field) or 0)


COLUMNS: dict[str, list[Column]] = {
    "nodes": [
        ("Name", "string", 0, lambda o: o["metadata"]["name"]),
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        ("Age", "string", 0, _age),
        ("Version", "string", 0, lambda o: o.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")),
        ("Internal-IP", "string", 1, _address("InternalIP")),
        ("External-IP", "string", 1, _address("ExternalIP")),
        ("OS-Image", "string", 1, lambda o: o.get("status", {}).get("nodeInfo", {}).get("osImage", "")),
        ("Kernel-Version", "string", 1, lambda o: o.get("status", {}).get("nodeInfo", {}).get("kernelVersion", "")),
        ("Container-Runtime", "string", 1,
         lambda o: o.get("status", {}).get("nodeInfo", {}).get("containerRuntimeVersion", "")),
    ],
    "pods": [
        ("Name", "string", 0, lambda o: o["metadata"]["name"]),
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "string", 0, lambda o: str(sum(s.get("restartCount", 0)
                                                    for s in o.get("status", {}).get("containerStatuses") or []))),
        ("Age", "string", 0, _age),
        ("IP", "string", 1, lambda o: o.get("status", {}).get("podIP") or "<none>"),
        ("Node", "string", 1, lambda o: o.get("spec", {}).get("nodeName") or "<none>"),
        ("Nominated Node", "string", 1, lambda o: "<none>"),
        ("Readiness Gates", "string", 1, lambda o: "<none>"),
    ],
    "daemonsets": [
        ("Name", "string", 0, lambda o: o["metadata"]["name"]),
        ("Desired", "integer", 0, _status_int("desiredNumberScheduled")),
        ("Current", "integer", 0, _status_int("currentNumberScheduled")),
        ("Ready", "integer", 0, _status_int("numberReady")),
        ("Up-to-date", "integer", 0, _status_int("updatedNumberScheduled")),
        ("Available", "integer", 0, _status_int("numberAvailable")),
        ("Node Selector", "string", 0, lambda o: ",".join(
            f"{k}={v}" for k, v in (o.get("spec", {}).get("template", {}).get("spec", {})
                                    .get("nodeSelector") or {}).items()) or "<none>"),
        ("Age", "string", 0, _age),
    ],
    "poddisruptionbudgets": [
        ("Name", "string", 0, lambda o: o["metadata"]["name"]),
        ("Min Available", "string", 0, _int_or_none("minAvailable")),
        ("Max Unavailable", "string", 0, _int_or_none("maxUnavailable")),
        ("Allowed Disruptions", "integer", 0, _status_int("disruptionsAllowed")),
        ("Age", "string", 0, _age),
    ],
}
_GENERIC: list[Column] = [("Name", "string", 0, lambda o: o["metadata"]["name"]), ("Age", "string", 0, _age)]


def table(resource: Resource, items: list[Obj], resource_version: str, include: str, media_type: str) -> Obj:
    """The Table of ``items``; ``include`` is the request's includeObject (None, Object, PartialObjectMetadata)."""
    columns = COLUMNS.get(resource.plural, _GENERIC)
    version = "v1beta1" if "v=v1beta1" in media_type else "v1"
    rows = []
    for obj in items:
        row: Obj = {"cells": [cell(obj) for _, _, _, cell in columns]}
        if include == "Object":
            row["object"] = {"kind": resource.kind, "apiVersion": resource.api_version, **obj}
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
                             "metadata": obj.get("metadata", {})}
        rows.append(row)
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": [{"name": name, "type": kind, "format": "name" if name == "Name" else "",
                                   "description": "", "priority": priority}
                                  for name, kind, priority, _ in columns],
            "rows": rows}
