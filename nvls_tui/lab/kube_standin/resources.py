"""The resources the stand-in serves: their group, version, kind, scope and verbs.

Discovery documents, URL routing and error messages are all read from this one table, so a resource
is either served whole (listed, routed, named in messages) or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    """One served resource (``plural`` is its URL segment and its key in the store)."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: subresource name -> (group, version, kind, verbs)
    subresources: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = ()

    @property
    def group_version(self) -> str:
        """``v1`` for the core group, ``policy/v1`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` its objects carry."""
        return self.group_version


_READ = ("get", "list", "watch")
_ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "nodes", "node", "Node", False, ("create", "delete", "deletecollection", "get", "list",
                                                         "patch", "update", "watch"), ("no",),
             subresources=(("status", "", "v1", "Node", ("get", "patch", "update")),)),
    Resource("", "v1", "pods", "pod", "Pod", True, _ALL, ("po",), ("all",),
             subresources=(("eviction", "policy", "v1", "Eviction", ("create",)),
                           ("status", "", "v1", "Pod", ("get", "patch", "update")))),
    # A node's events (kubelet's Rebooted, NodeNotSchedulable, ...) in core/v1, as ``kubectl get events`` reads them.
    Resource("", "v1", "events", "event", "Event", True, _ALL, ("ev",)),
    Resource("", "v1", "namespaces", "namespace", "Namespace", False, ("create", "delete", "get", "list", "patch",
                                                                       "update", "watch"), ("ns",)),
    Resource("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, _ALL, ("ds",), ("all",)),
    Resource("apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, _ALL, ("rs",), ("all",)),
    Resource("apps", "v1", "deployments", "deployment", "Deployment", True, _ALL, ("deploy",), ("all",)),
    Resource("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", True, _ALL,
             ("pdb",)),
)
BY_PLURAL: dict[str, Resource] = {r.plural: r for r in RESOURCES}
BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES}
#: The groups in the order /apis lists them, each with its one version.
GROUPS: tuple[tuple[str, str], ...] = (("apps", "v1"), ("policy", "v1"))


def find(group: str, version: str, plural: str) -> Resource | None:
    """The resource at ``/api(s)/GROUP/VERSION/.../PLURAL``, or None."""
    r = BY_PLURAL.get(plural)
    if r is None or r.group != group or r.version != version:
        return None
    return r
