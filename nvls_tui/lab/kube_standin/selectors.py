"""Label and field selectors as the API server reads them from ``labelSelector=`` / ``fieldSelector=``.

Labels: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` and ``!k``, comma-joined
(all must hold). Fields: ``path=v``, ``path==v``, ``path!=v`` over the few fields each resource
supports; any other field is refused with the real server's 400 message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from nvls_tui.lab.kube_standin.errors import ApiError, bad_request

Predicate = Callable[[Mapping[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split_terms(text: str) -> list[str]:
    """Commas split terms except inside ``in (...)`` sets."""
    terms: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t for t in terms if t.strip()]


def _equals(key: str, value: str, negate: bool) -> Callable[[Mapping[str, str]], bool]:
    return lambda labels: (labels.get(key) == value) != negate


def _member(key: str, members: set[str], negate: bool) -> Callable[[Mapping[str, str]], bool]:
    return lambda labels: (labels.get(key) in members) != negate


def _exists(key: str, negate: bool) -> Callable[[Mapping[str, str]], bool]:
    return lambda labels: (key in labels) != negate


def label_selector(text: str) -> Predicate:
    """A predicate over an object's ``metadata.labels``; a malformed selector is a 400."""
    checks: list[Callable[[Mapping[str, str]], bool]] = []
    for term in _split_terms(text):
        eq = _EQ_RE.match(term)
        if eq:
            key, op, value = eq.groups()
            checks.append(_equals(key, value, op == "!="))
            continue
        st = _SET_RE.match(term)
        if not st:
            raise bad_request(f"unable to parse requirement: found '{term.strip()}', expected: valid label selector")
        negate, key, op, values = st.groups()
        if op:
            if negate:
                raise bad_request(f"unable to parse requirement: found '{term.strip()}', "
                                  "expected: valid label selector")
            checks.append(_member(key, {v.strip() for v in values.split(",") if v.strip()}, op == "notin"))
        else:
            checks.append(_exists(key, bool(negate)))

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


def selector_from_spec(spec: Mapping[str, Any] | None) -> Predicate:
    """A ``LabelSelector`` object (matchLabels, matchExpressions) as a predicate; None selects nothing."""
    if spec is None:
        return lambda obj: False
    match_labels = dict(spec.get("matchLabels") or {})
    expressions = list(spec.get("matchExpressions") or [])

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in match_labels.items()):
            return False
        for expr in expressions:
            key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
            if op == "In" and labels.get(key) not in values:
                return False
            if op == "NotIn" and labels.get(key) in values:
                return False
            if op == "Exists" and key not in labels:
                return False
            if op == "DoesNotExist" and key in labels:
                return False
        return True

    return matches


def _involved(key: str) -> Callable[[Mapping[str, Any]], str]:
    """An event's ``involvedObject.KEY`` as a selectable field ("" where absent)."""
    return lambda o: str((o.get("involvedObject") or {}).get(key) or "")


#: The fields each resource can be selected by (the real server's field label conversion funcs).
FIELDS: dict[str, dict[str, Callable[[Mapping[str, Any]], str]]] = {
    "nodes": {
        "metadata.name": lambda o: o["metadata"]["name"],
        "spec.unschedulable": lambda o: "true" if o.get("spec", {}).get("unschedulable") else "false",
    },
    "pods": {
        "metadata.name": lambda o: o["metadata"]["name"],
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        "spec.nodeName": lambda o: o.get("spec", {}).get("nodeName", ""),
        "status.phase": lambda o: o.get("status", {}).get("phase", ""),
    },
    # core/v1 Event's field label conversion and the event registry's selectable fields: the involved object's
    # reference, reason, type, the reporting controller and the source (its component, else the reporting one).
    "events": {
        "metadata.name": lambda o: o["metadata"]["name"],
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        **{f"involvedObject.{key}": _involved(key)
           for key in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reason": lambda o: str(o.get("reason") or ""),
        "type": lambda o: str(o.get("type") or ""),
        "reportingComponent": lambda o: str(o.get("reportingComponent") or ""),
        "source": lambda o: str((o.get("source") or {}).get("component") or o.get("reportingComponent") or ""),
    },
}
_GENERIC_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": lambda o: o["metadata"]["name"],
    "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
}


def field_selector(resource: str, text: str) -> Predicate:
    """A predicate for ``fieldSelector=``; an unsupported field is the real 400 message."""
    known = FIELDS.get(resource, _GENERIC_FIELDS)
    checks: list[Predicate] = []
    for term in _split_terms(text):
        m = re.match(r"^\s*([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        path, op, value = m.groups()
        getter = known.get(path)
        if getter is None:
            raise ApiError(400, f'field label not supported: {path}')
        checks.append(_field_equals(getter, value, op == "!="))
    return lambda obj: all(check(obj) for check in checks)


def _field_equals(getter: Callable[[Mapping[str, Any]], str], value: str, negate: bool) -> Predicate:
    return lambda obj: (getter(obj) == value) != negate
