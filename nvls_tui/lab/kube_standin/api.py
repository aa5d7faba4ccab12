"""The verbs on a resource path, apart from HTTP: a parsed request in, (code, body) out.

Each answer is what the real API server answers for the same request: lists with their list kind and
resourceVersion (items without apiVersion/kind, as the server writes typed lists), a pod's DELETE with
the pod (graceful: marked for the kubelet), an eviction's 201 Status, a refusal's Status.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.lab.kube_standin import disruption, patch
from nvls_tui.lab.kube_standin.errors import ApiError, bad_request, method_not_allowed, status, unknown_path
from nvls_tui.lab.kube_standin.resources import Resource, find
from nvls_tui.lab.kube_standin.selectors import Predicate, field_selector, label_selector
from nvls_tui.lab.kube_standin.store import Obj, Store


@dataclass(frozen=True)
class Target:
    """A resource path: ``/api/v1/namespaces/NS/pods/NAME/eviction`` and the like."""

    resource: Resource
    namespace: str | None  # None: all namespaces (a list of a namespaced resource) or cluster-scoped
    name: str | None
    subresource: str | None
    query: dict[str, str] = field(default_factory=dict)


def parse_path(segments: list[str], query: dict[str, str]) -> Target:
    """``['api','v1',...]`` or ``['apis',G,V,...]`` -> Target; anything not served is the real 404."""
    if segments[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", segments[2:]
    elif len(segments) >= 3 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        raise unknown_path()
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise unknown_path()
    resource = find(group, version, rest[0])
    if resource is None or (namespace is not None and not resource.namespaced):
        raise unknown_path()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in {s[0] for s in resource.subresources}:
        raise unknown_path()
    if resource.namespaced and name is not None and namespace is None:
        raise unknown_path()
    return Target(resource, namespace, name, sub, query)


def predicates(target: Target) -> tuple[Predicate, ...]:
    """The label and field selectors of a list or watch."""
    preds: list[Predicate] = []
    if target.query.get("labelSelector"):
        preds.append(label_selector(target.query["labelSelector"]))
    if target.query.get("fieldSelector"):
        preds.append(field_selector(target.resource.plural, target.query["fieldSelector"]))
    return tuple(preds)


def _typed(r: Resource, obj: Obj) -> Obj:
    return {"kind": r.kind, "apiVersion": r.api_version, **{k: v for k, v in obj.items()
                                                            if k not in ("kind", "apiVersion")}}


def get(store: Store, t: Target) -> tuple[int, Obj]:
    """GET one object."""
    assert t.name is not None
    if t.subresource is not None:
        raise method_not_allowed()
    return 200, _typed(t.resource, store.get(t.resource.plural, t.namespace or "", t.name))


def list_(store: Store, t: Target) -> tuple[int, Obj]:
    """GET a collection (limit and continue are accepted; everything comes in one page)."""
    items, rv = store.query(t.resource.plural, t.namespace, *predicates(t))
    bare = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
    return 200, {"kind": f"{t.resource.kind}List", "apiVersion": t.resource.api_version,
                 "metadata": {"resourceVersion": str(rv)}, "items": bare}


def patch_(store: Store, t: Target, content_type: str, body: bytes) -> tuple[int, Obj]:
    """PATCH one object: merge, strategic merge or JSON patch; a resourceVersion in it is a precondition."""
    assert t.name is not None
    if t.subresource is not None:
        raise method_not_allowed()
    plural, ns = t.resource.plural, t.namespace or ""
    with store.cond:
        current = store.get(plural, ns, t.name)
        patched = patch.apply(content_type, current, body)
        meta = patched.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request("metadata: Required value")
        if meta.get("name") != t.name:
            raise bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                              f"({t.name})")
        if (meta.get("namespace") or "") != ns or meta.get("uid") != current["metadata"].get("uid"):
            raise ApiError(422, f'{t.resource.kind} "{t.name}" is invalid: metadata: Invalid value: '
                           "field is immutable", reason="Invalid")
        expect = meta.get("resourceVersion")
        patched["apiVersion"], patched["kind"] = t.resource.api_version, t.resource.kind
        # status has its own subresource: a write to the main resource leaves it as it was (as the real
        # registries' PrepareForUpdate do), so a patch cannot make a node Ready or a pod Running
        if "status" in current or "status" in patched:
            patched["status"] = current.get("status")
            if patched["status"] is None:
                del patched["status"]
        out = store.replace(plural, patched, expect_rv=expect if expect else None)
    return 200, _typed(t.resource, out)


def _delete_options(body: bytes, query: dict[str, str]) -> tuple[int | None, str | None, str | None]:
    options: dict[str, Any] = {}
    if body.strip():
        try:
            options = json.loads(body)
        except ValueError as exc:
            raise bad_request(f"error decoding DeleteOptions: {exc}") from None
        if not isinstance(options, dict):
            raise bad_request("DeleteOptions must be an object")
    grace = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    pre = options.get("preconditions") or {}
    try:
        period = int(grace) if grace is not None else None
    except (TypeError, ValueError):
        raise bad_request(f"invalid gracePeriodSeconds: {grace!r}") from None
    return period, pre.get("uid"), pre.get("resourceVersion")


def delete(store: Store, t: Target, body: bytes) -> tuple[int, Obj]:
    """DELETE one object: the pod (marked for the kubelet, or gone at grace 0); others a Success Status."""
    assert t.name is not None
    if t.subresource is not None:
        raise method_not_allowed()
    grace, uid, rv = _delete_options(body, t.query)
    out = store.delete(t.resource.plural, t.namespace or "", t.name, grace=grace, uid=uid, rv=rv)
    if t.resource.plural == "pods":
        return 200, _typed(t.resource, out)
    return 200, status(200, success=True, details={"name": t.name, "group": t.resource.group,
                                                     "kind": t.resource.plural, "uid": out["metadata"].get("uid")})


def create(store: Store, t: Target, body: bytes) -> tuple[int, Obj]:
    """POST to a collection (kubectl create -f) or to a pod's eviction subresource."""
    try:
        obj = json.loads(body or b"null")
    except ValueError as exc:
        raise bad_request(f"error decoding the request body: {exc}") from None
    if not isinstance(obj, dict):
        raise bad_request("the body of the request is not a JSON object")
    if t.subresource == "eviction":
        return evict(store, t, obj)
    if t.name is not None or t.subresource is not None:
        raise method_not_allowed()
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ApiError(422, f"{t.resource.kind} \"\" is invalid: metadata.name: Required value: name or "
                            "generateName is required", reason="Invalid")
    if t.resource.namespaced:
        if meta.get("namespace") and t.namespace and meta["namespace"] != t.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the "
                              "request")
        meta["namespace"] = t.namespace or meta.get("namespace") or "default"
    return 201, _typed(t.resource, store.create(t.resource.plural, obj))


def evict(store: Store, t: Target, body: Obj) -> tuple[int, Obj]:
    """POST .../pods/NAME/eviction: the budget decides, then the pod is deleted (gracefully)."""
    assert t.name is not None and t.namespace is not None
    if body.get("kind") != "Eviction" or body.get("apiVersion") not in ("policy/v1", "policy/v1beta1"):
        raise bad_request(f"Eviction in version \"{body.get('apiVersion')}\" cannot be handled as a Eviction: "
                          f"no kind \"{body.get('kind')}\" is registered for version \"{body.get('apiVersion')}\"")
    name = (body.get("metadata") or {}).get("name")
    if name != t.name:
        raise bad_request("name in URL does not match name in Eviction object")
    options = body.get("deleteOptions") or {}
    with store.cond:
        pod = store.get("pods", t.namespace, t.name)
        budgets, _ = store.query("poddisruptionbudgets", t.namespace)
        disruption.check_eviction(pod, budgets)
        pre = options.get("preconditions") or {}
        store.delete("pods", t.namespace, t.name, grace=options.get("gracePeriodSeconds"),
                     uid=pre.get("uid"), rv=pre.get("resourceVersion"))
    return 201, status(201, success=True)
