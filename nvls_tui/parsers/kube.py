"""``kubectl get nodes -o json`` and ``kubectl get pods -o json`` -> the model's KubeNode and KubePod.

Read whole or not at all, like Slurm's text: a list that is not JSON, not a ``List``/``NodeList``/``PodList``
with ``items``, or an item without the fields that name it (a node's or pod's name, a pod's namespace and
uid) is a warning, and the caller then knows nothing of the cluster (never "not cordoned"). A node without a
``Ready`` condition, or whose ``spec.unschedulable`` is not a boolean, is read with that part unknown.

Every string from the API is cleaned (:func:`nvls_tui.textsafe.clean`): a label value or pod name is anyone's
text. Also here: the runtime's container id in a process's cgroup path (``cri-containerd-ID.scope``), which
tells which container of a pod holds the devices.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from nvls_tui.model.kube import KubeContainer, KubeEvent, KubeNode, KubePod, Taint
from nvls_tui.parsers.base import Parsed
from nvls_tui.textsafe import clean, one_line

T = TypeVar("T")

# kubectl prints a single object's kind, or List for several; the API's own list kinds are accepted too.
_LIST_KINDS = {"nodes": ("List", "NodeList"), "pods": ("List", "PodList"), "events": ("List", "EventList")}

# The runtime's id of a container in its cgroup: systemd driver (cri-containerd-ID.scope, crio-ID.scope,
# docker-ID.scope) or cgroupfs driver (/kubepods/.../pod<uid>/ID).
_CONTAINER_SCOPE = re.compile(r"(?:cri-containerd|crio|docker)-([0-9a-f]{12,64})\.scope")
_CGROUPFS_CONTAINER = re.compile(r"/pod[0-9a-fA-F_-]+/([0-9a-f]{64})(?:/|$)")


def container_id_of(cgroup: str | None) -> str | None:
    """The container runtime's id in a kubepods cgroup path, or None (not a pod's container, or not said)."""
    if not cgroup or "kubepods" not in cgroup:
        return None
    m = _CONTAINER_SCOPE.search(cgroup) or _CGROUPFS_CONTAINER.search(cgroup)
    return m.group(1) if m else None


def _items(text: str, what: str) -> tuple[list[Any] | None, str | None]:
    """The ``items`` of a kubectl list, or why the text is not one (one sentence)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"kubectl get {what} printed text that is not JSON ({one_line(str(exc), 80)})"
    if not isinstance(data, dict) or data.get("kind") not in _LIST_KINDS[what] or not isinstance(
            data.get("items"), list):
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        return None, f"kubectl get {what} printed no list of {what} (kind {one_line(str(kind), 40)})"
    return data["items"], None


def _text(value: object) -> str | None:
    return clean(value) if isinstance(value, str) else None


def _pairs(mapping: object) -> tuple[tuple[str, str], ...] | None:
    """A ``{key: value}`` of strings as sorted, cleaned pairs; None when it is not one (absent: empty)."""
    if mapping is None:
        return ()
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        return None
    return tuple(sorted((clean(k), clean(v)) for k, v in mapping.items()))


def _ready(status: object) -> bool | None:
    """The node's ``Ready`` condition: True, False (``False`` or ``Unknown``), None when it has none."""
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return None
    for cond in conditions:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return {"True": True, "False": False, "Unknown": False}.get(str(cond.get("status")))
    return None


def _conditions(status: object) -> tuple[tuple[str, str, str | None], ...]:
    """Every condition of ``status.conditions`` as (type, status, reason); one without a type is left out."""
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return ()
    return tuple((clean(c["type"]), _text(c.get("status")) or "?", _text(c.get("reason")) or None)
                 for c in conditions if isinstance(c, dict) and isinstance(c.get("type"), str))


def _node(item: object) -> tuple[KubeNode | None, str | None]:
    if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
        return None, "a node without metadata"
    meta, spec = item["metadata"], item.get("spec") or {}
    name = _text(meta.get("name"))
    if not name or not isinstance(spec, dict):
        return None, "a node without a name"
    labels, annotations = _pairs(meta.get("labels")), _pairs(meta.get("annotations"))
    if labels is None or annotations is None:
        return None, f"node {one_line(name, 60)}'s labels or annotations are not strings"
    unschedulable = spec.get("unschedulable", False)  # the API leaves it out when false
    taints = []
    for taint in spec.get("taints") or ():
        if not isinstance(taint, dict) or not isinstance(taint.get("key"), str) or not isinstance(
                taint.get("effect"), str):
            return None, f"node {one_line(name, 60)} has a taint without a key or effect"
        taints.append(Taint(clean(taint["key"]), _text(taint.get("value")), clean(taint["effect"])))
    status = item.get("status")
    info = status.get("nodeInfo") if isinstance(status, dict) else None
    info = info if isinstance(info, dict) else {}
    return KubeNode(node=name, ready=_ready(status),
                    cordoned=unschedulable if isinstance(unschedulable, bool) else None,
                    labels=labels, annotations=annotations, taints=tuple(taints),
                    boot_id=_text(info.get("bootID")) or None, machine_id=_text(info.get("machineID")) or None,
                    system_uuid=_text(info.get("systemUUID")) or None,
                    resource_version=_text(meta.get("resourceVersion")) or None, conditions=_conditions(status)), None


def parse_nodes(text: str) -> Parsed[dict[str, KubeNode]]:
    """``kubectl get nodes -o json`` -> {node name: KubeNode} (no pods yet); any warning: read nothing."""
    items, problem = _items(text, "nodes")
    if items is None:
        return Parsed({}, (problem or "",))
    out: dict[str, KubeNode] = {}
    for item in items:
        node, problem = _node(item)
        if node is None:
            return Parsed({}, (f"kubectl get nodes printed {problem}",))
        if node.node in out:
            return Parsed({}, (f"kubectl get nodes printed node {one_line(node.node, 60)} twice",))
        out[node.node] = node
    return Parsed(out)


def parse_node(text: str) -> Parsed[KubeNode | None]:
    """One Node as kubectl prints a single object (``kubectl patch node N ... -o json``: the API's answer to the
    write) -> KubeNode (no pods); what is not JSON, not a Node, or a Node that cannot be read whole: None and a
    warning. kubectl's own lines after the object (a warning on stderr, appended by the caller) are not read."""
    try:
        data, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError as exc:
        return Parsed(None, (f"kubectl printed text that is not JSON ({one_line(str(exc), 80)})",))
    if not isinstance(data, dict) or data.get("kind") != "Node":
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        return Parsed(None, (f"kubectl printed no Node (kind {one_line(str(kind), 40)})",))
    node, problem = _node(data)
    if node is None:
        return Parsed(None, (f"kubectl printed {problem}",))
    return Parsed(node)


def _owner(meta: dict[str, Any]) -> tuple[str | None, str | None]:
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, dict)]
    ref = next((r for r in refs if r.get("controller") is True), refs[0] if refs else None)
    if ref is None:
        return None, None
    return _text(ref.get("kind")), _text(ref.get("name"))


def _containers(spec: dict[str, Any], status: dict[str, Any]) -> tuple[KubeContainer, ...]:
    ids: dict[str, str] = {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for st in status.get(key) or ():
            if isinstance(st, dict) and isinstance(st.get("name"), str) and isinstance(st.get("containerID"), str):
                ids[st["name"]] = st["containerID"].partition("://")[2] or st["containerID"]
    out = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                out.append(KubeContainer(clean(c["name"]), _text(ids.get(c["name"]))))
    return tuple(out)


def _pod(item: object) -> tuple[KubePod | None, str | None]:
    if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
        return None, "a pod without metadata"
    meta = item["metadata"]
    spec: dict[str, Any] = item["spec"] if isinstance(item.get("spec"), dict) else {}
    status: dict[str, Any] = item["status"] if isinstance(item.get("status"), dict) else {}
    name, namespace, uid = _text(meta.get("name")), _text(meta.get("namespace")), _text(meta.get("uid"))
    if not (name and namespace and uid):
        return None, "a pod without a name, namespace or uid"
    labels = _pairs(meta.get("labels"))
    if labels is None:
        return None, f"pod {one_line(namespace, 40)}/{one_line(name, 60)}'s labels are not strings"
    owner_kind, owner_name = _owner(meta)
    return KubePod(namespace=namespace, name=name, uid=uid, node=_text(spec.get("nodeName")),
                   phase=_text(status.get("phase")), containers=_containers(spec, status),
                   owner_kind=owner_kind, owner_name=owner_name, labels=labels), None


def _every(text: str, what: str, reader: Callable[[object], tuple[T | None, str | None]]) -> Parsed[list[T]]:
    """Every item of a kubectl list read by ``reader``; the first one it cannot read is the warning (read nothing)."""
    items, problem = _items(text, what)
    if items is None:
        return Parsed([], (problem or "",))
    out = []
    for item in items:
        value, problem = reader(item)
        if value is None:
            return Parsed([], (f"kubectl get {what} printed {problem}",))
        out.append(value)
    return Parsed(out)


def parse_pods(text: str) -> Parsed[list[KubePod]]:
    """``kubectl get pods -o json`` -> its pods; any warning: read nothing (a holder's pod may be the one)."""
    return _every(text, "pods", _pod)


def _stamp(value: object) -> float | None:
    """An RFC 3339 time of the API (``2026-12-06T20:00:00Z``, a MicroTime's fraction too) as epoch seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None


def _event(item: object) -> tuple[KubeEvent | None, str | None]:
    if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
        return None, "an event without metadata"
    meta = item["metadata"]
    involved = item.get("involvedObject")
    if not isinstance(involved, dict) or not _text(involved.get("kind")) or not _text(involved.get("name")):
        return None, f"event {one_line(str(meta.get('name')), 60)} without the object it is about"
    # The newest of the times the API may carry: an events.k8s.io writer fills eventTime, a core one lastTimestamp.
    last = next((t for t in (_stamp(item.get(k)) for k in ("lastTimestamp", "eventTime", "firstTimestamp"))
                 if t is not None), None)
    if last is None:
        last = _stamp(meta.get("creationTimestamp"))
    series: dict[str, Any] = item["series"] if isinstance(item.get("series"), dict) else {}
    count = item.get("count") if isinstance(item.get("count"), int) else series.get("count")
    return KubeEvent(type=_text(item.get("type")) or None, reason=_text(item.get("reason")) or None,
                     message=_text(item.get("message")) or None, last_seen=last,
                     object_kind=clean(involved["kind"]), object_name=clean(involved["name"]),
                     count=count if isinstance(count, int) and not isinstance(count, bool) else None), None


def parse_events(text: str) -> Parsed[list[KubeEvent]]:
    """``kubectl get events -o json`` -> its events, oldest first; any warning: read nothing (never "no events")."""
    read = _every(text, "events", _event)
    # The API lists by key (namespace, name), not by time; unknown times first, as the oldest.
    return Parsed(sorted(read.value, key=lambda e: e.last_seen if e.last_seen is not None else float("-inf")),
                  read.warnings)


__all__ = ["container_id_of", "parse_events", "parse_node", "parse_nodes", "parse_pods"]
