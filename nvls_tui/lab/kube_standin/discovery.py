"""Discovery documents: ``/version``, the legacy ``/api``, ``/api/v1``, ``/apis``, ``/apis/G/V``, and the
aggregated form (apidiscovery.k8s.io/v2) kubectl 1.32 asks for first.

kubectl 1.32 sends ``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,...``
on ``/api`` and ``/apis`` and uses the aggregated answer when the response's Content-Type says it is
one; older clients (Debian's 1.20) read the legacy documents. Both are served from resources.RESOURCES.
"""

from __future__ import annotations

from typing import Any

from nvls_tui.lab.kube_standin.resources import GROUPS, RESOURCES, Resource

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

VERSION: dict[str, str] = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0+nvls-standin",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def wants_aggregated(accept: str) -> str | None:
    """The aggregated media type the client asked for (v2 preferred), or None for the legacy form."""
    parts = [p.replace(" ", "") for p in accept.split(",")]
    for wanted in (AGGREGATED_V2, AGGREGATED_V2BETA1):
        if any(p.startswith(wanted) or _same_params(p, wanted) for p in parts):
            return wanted
    return None


def _same_params(offered: str, wanted: str) -> bool:
    """Media-type parameters compare as a set (clients may order g, v, as differently)."""
    return set(offered.split(";")) == set(wanted.split(";"))


def _resource_discovery(r: Resource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    if r.subresources:
        entry["subresources"] = [{"subresource": name, "responseKind": {"group": g, "version": v, "kind": k},
                                  "verbs": list(verbs)} for name, g, v, k, verbs in r.subresources]
    return entry


def aggregated(path: str, media_type: str) -> dict[str, Any]:
    """The APIGroupDiscoveryList for ``/api`` (the core group) or ``/apis`` (the named groups)."""
    version = "v2" if ";v=v2;" in media_type else "v2beta1"
    groups = [("", "v1")] if path == "/api" else list(GROUPS)
    items = []
    for group, ver in groups:
        item: dict[str, Any] = {"metadata": {"creationTimestamp": None}, "versions": [{
            "version": ver,
            "resources": [_resource_discovery(r) for r in RESOURCES if r.group == group and r.version == ver],
            "freshness": "Current",
        }]}
        if group:
            item["metadata"]["name"] = group
        items.append(item)
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {},
            "items": items}


def api_versions(server_address: str) -> dict[str, Any]:
    """Legacy ``/api``."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(group: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{group}/{version}", "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> dict[str, Any]:
    """Legacy ``/apis``."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, v) for g, v in GROUPS]}


def api_group(group: str) -> dict[str, Any] | None:
    """Legacy ``/apis/GROUP``."""
    for g, v in GROUPS:
        if g == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(g, v)}
    return None


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    """Legacy ``/api/v1`` or ``/apis/GROUP/VERSION``: an APIResourceList with the subresources as entries."""
    if (group, version) != ("", "v1") and (group, version) not in GROUPS:
        return None
    resources: list[dict[str, Any]] = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        entry: dict[str, Any] = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                                 "kind": r.kind, "verbs": list(r.verbs)}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        resources.append(entry)
        for name, g, v, k, verbs in r.subresources:
            sub: dict[str, Any] = {"name": f"{r.plural}/{name}", "singularName": "", "namespaced": r.namespaced,
                                   "kind": k, "verbs": list(verbs)}
            if (g, v) != (group, version):
                sub["group"], sub["version"] = g, v
            resources.append(sub)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
