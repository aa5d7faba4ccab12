"""The three patch types a PATCH request can carry, applied to an object held as plain JSON.

- ``application/merge-patch+json`` (RFC 7386): maps merge, ``null`` removes, anything else replaces.
- ``application/strategic-merge-patch+json`` (what ``kubectl cordon``, ``label`` and ``annotate`` send):
  a merge patch whose lists merge by their patch merge key where the API gives one (the few below),
  with the ``$patch``, ``$retainKeys``, ``$deleteFromPrimitiveList`` and ``$setElementOrder`` directives
  the subset needs; other lists replace, as in the API for lists without a strategy.
- ``application/json-patch+json`` (RFC 6902): add, remove, replace, test, move, copy.
Server-side apply (``application/apply-patch+yaml``) is not served: a 415, as for any unknown type.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from nvls_tui.lab.kube_standin.errors import ApiError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
TYPES = (JSON_PATCH, MERGE, STRATEGIC)

#: Lists the API merges by a key under a strategic merge patch (path from the object's root).
MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "template", "spec", "containers"): "name",
    ("metadata", "ownerReferences"): "uid",
}
#: Lists of scalars the API merges (union) under a strategic merge patch.
MERGED_SCALAR_LISTS: set[tuple[str, ...]] = {("metadata", "finalizers")}


def apply(content_type: str, target: dict[str, Any], raw: bytes) -> dict[str, Any]:
    """The patched copy of ``target``; a malformed patch is a 400, an unknown type a 415."""
    kind = content_type.split(";")[0].strip().lower()
    if kind not in TYPES:
        raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                       f"{', '.join(TYPES)}, application/apply-patch+yaml")
    try:
        patch = json.loads(raw or b"null")
    except ValueError as exc:
        raise bad_request(f"error decoding patch: {exc}") from None
    if kind == JSON_PATCH:
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {type(patch).__name__} into Go value of type "
                          "map[string]interface {}")
    if kind == MERGE:
        return merge_patch(target, patch)
    return strategic_merge(target, patch, ())


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge(target: Any, patch: dict[str, Any], path: tuple[str, ...]) -> Any:
    """A strategic merge patch on one map (recursive)."""
    if patch.get("$patch") == "delete":
        return None
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = set(json.dumps(v) for v in value or [])
            result[field] = [v for v in result.get(field) or [] if json.dumps(v) not in drop]
            continue
        sub = (*path, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value, sub)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and sub in MERGE_KEYS:
            result[key] = _merge_keyed_list(result.get(key) or [], value, MERGE_KEYS[sub], sub)
        elif isinstance(value, list) and sub in MERGED_SCALAR_LISTS:
            current = list(result.get(key) or [])
            result[key] = current + [v for v in value if v not in current]
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_keyed_list(current: list[Any], patch: list[Any], key: str, path: tuple[str, ...]) -> list[Any]:
    """Elements with the same merge key merge; ``$patch: delete`` removes one; new ones are appended."""
    result = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"map: {item} does not contain declared merge key: {key}")
        index = next((i for i, old in enumerate(result) if isinstance(old, dict) and old.get(key) == item[key]),
                     None)
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            result.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            result[index] = strategic_merge(result[index], item, path)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f'the server rejected our request due to an error in our request: invalid path "{path}"')
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdecimal() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ApiError(422, f'the server rejected our request due to an error in our request: '
                           f'jsonpatch: missing path "{path}"', reason="Invalid")
    return node


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdecimal() and int(last) < len(parent):
        return parent[int(last)]
    raise ApiError(422, f'jsonpatch: missing path "{path}"', reason="Invalid")


def _set(doc: Any, path: str, value: Any, *, insert: bool) -> None:
    parts = _pointer(path)
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if not insert and last not in parent:
            raise ApiError(422, f'jsonpatch replace operation does not apply: doc is missing key: {path}',
                           reason="Invalid")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and insert:
            parent.append(value)
        elif last.isdecimal() and int(last) <= len(parent) - (0 if insert else 1):
            if insert:
                parent.insert(int(last), value)
            else:
                parent[int(last)] = value
        else:
            raise ApiError(422, f'jsonpatch: index out of range "{path}"', reason="Invalid")
    else:
        raise ApiError(422, f'jsonpatch: missing path "{path}"', reason="Invalid")


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdecimal() and int(last) < len(parent):
        return parent.pop(int(last))
    raise ApiError(422, f'jsonpatch remove operation does not apply: doc is missing path: "{path}"',
                   reason="Invalid")


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 over a copy; a failed ``test`` is the server's 422 and nothing is changed."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request("the server rejected our request due to an error in our request")
        name, path = op["op"], op["path"]
        if name == "add":
            _set(doc, path, copy.deepcopy(op.get("value")), insert=True)
        elif name == "replace":
            _set(doc, path, copy.deepcopy(op.get("value")), insert=False)
        elif name == "remove":
            _remove(doc, path)
        elif name == "test":
            if _get(doc, path) != op.get("value"):
                raise ApiError(422, f"the server rejected our request due to an error in our request: "
                               f"testing value {path} failed: test failed", reason="Invalid")
        elif name in ("move", "copy"):
            value = _get(doc, op.get("from", ""))
            if name == "move":
                _remove(doc, op["from"])
            _set(doc, path, copy.deepcopy(value), insert=True)
        else:
            raise bad_request(f"Unexpected kind: {name}")
    if not isinstance(doc, dict):
        raise bad_request("the patched object is not an object")
    return doc
