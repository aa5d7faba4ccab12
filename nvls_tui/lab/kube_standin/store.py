"""The cluster's objects, their resourceVersions and the event log that watches read.

Every write takes the one lock, bumps the cluster-wide resourceVersion, stamps it on the object and
appends a watch event (ADDED, MODIFIED, DELETED), as etcd's revision does for the real server. A write
that changes nothing is not a write (no new resourceVersion, no event), as the real server skips a
no-op update. Pod deletion is graceful: the pod gets ``deletionTimestamp`` and stays until the kubelet
stand-in (controller.Kubelet) has ended its processes, unless the grace period is 0.
"""

from __future__ import annotations

import collections
import copy
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from nvls_tui.lab.kube_standin import clock, disruption
from nvls_tui.lab.kube_standin.errors import ApiError, conflict, expired, not_found
from nvls_tui.lab.kube_standin.resources import BY_PLURAL
from nvls_tui.lab.kube_standin.selectors import Predicate

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

#: How many events a watch can start behind the newest (older is 410 Expired, as after compaction).
EVENT_WINDOW = 10000


class Event:
    """One watch event: its resourceVersion, type, resource and the object as it was then."""

    __slots__ = ("rv", "type", "resource", "obj")

    def __init__(self, rv: int, type_: str, resource: str, obj: Obj) -> None:
        self.rv = rv
        self.type = type_
        self.resource = resource
        self.obj = obj


class Store:
    """All objects by resource; thread-safe; the only place the resourceVersion moves."""

    def __init__(self, event_window: int = EVENT_WINDOW) -> None:
        self.cond = threading.Condition(threading.RLock())
        self._objects: dict[str, dict[Key, Obj]] = {plural: {} for plural in BY_PLURAL}
        self._rv = 1000
        self._events: collections.deque[Event] = collections.deque(maxlen=event_window)
        self.closed = False

    # -- reading ---------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion."""
        with self.cond:
            return self._rv

    def get(self, resource: str, namespace: str, name: str) -> Obj:
        """A copy of one object, or the real 404."""
        with self.cond:
            obj = self._objects[resource].get((namespace, name))
            if obj is None:
                raise not_found(resource, name, BY_PLURAL[resource].group)
            return copy.deepcopy(obj)

    def find(self, resource: str, namespace: str, name: str) -> Obj | None:
        """A copy of one object, or None."""
        with self.cond:
            obj = self._objects[resource].get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def query(self, resource: str, namespace: str | None = None,
             *predicates: Predicate) -> tuple[list[Obj], int]:
        """Copies of the matching objects (sorted by namespace, name) and the list's resourceVersion."""
        with self.cond:
            items = [copy.deepcopy(obj) for (ns, _), obj in sorted(self._objects[resource].items())
                     if (namespace is None or ns == namespace) and all(p(obj) for p in predicates)]
            return items, self._rv

    # -- writing ---------------------------------------------------------------------------------

    def _commit(self, resource: str, type_: str, obj: Obj) -> Obj:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if type_ == "DELETED":
            self._objects[resource].pop(key, None)
        else:
            self._objects[resource][key] = obj
        self._events.append(Event(self._rv, type_, resource, copy.deepcopy(obj)))
        self.cond.notify_all()
        return copy.deepcopy(obj)

    def create(self, resource: str, obj: Obj) -> Obj:
        """Store a new object (uid, creationTimestamp, generation filled in); 409 AlreadyExists if taken."""
        r = BY_PLURAL[resource]
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if r.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        obj["apiVersion"], obj["kind"] = r.api_version, r.kind
        with self.cond:
            key = (meta.get("namespace", ""), meta["name"])
            if key in self._objects[resource]:
                raise ApiError(409, f'{resource if not r.group else resource + "." + r.group} "{meta["name"]}" '
                               "already exists", reason="AlreadyExists",
                               details={"name": meta["name"], "kind": resource} if not r.group
                               else {"name": meta["name"], "group": r.group, "kind": resource})
            meta.setdefault("uid", clock.new_uid())
            meta.setdefault("creationTimestamp", clock.now())
            meta["generation"] = 1
            out = self._commit(resource, "ADDED", obj)
            self._after_write(resource)
            return out

    def replace(self, resource: str, obj: Obj, *, expect_rv: str | None = None) -> Obj:
        """Write a changed object (a no-op write is skipped); 409 if ``expect_rv`` is stale."""
        with self.cond:
            meta = obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            current = self._objects[resource].get(key)
            if current is None:
                raise not_found(resource, meta["name"], BY_PLURAL[resource].group)
            if expect_rv is not None and expect_rv != current["metadata"]["resourceVersion"]:
                raise conflict(resource, meta["name"], BY_PLURAL[resource].group)
            new = copy.deepcopy(obj)
            new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            if new == current:
                return copy.deepcopy(current)
            if new.get("spec") != current.get("spec"):
                new["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
            out = self._commit(resource, "MODIFIED", new)
            self._after_write(resource)
            return out

    def update(self, resource: str, namespace: str, name: str, change: Callable[[Obj], None]) -> Obj:
        """Read, change in place, write: for the controllers (never conflicts: it holds the lock)."""
        with self.cond:
            obj = self.get(resource, namespace, name)
            change(obj)
            return self.replace(resource, obj)

    def delete(self, resource: str, namespace: str, name: str, *, grace: int | None = None,
               uid: str | None = None, rv: str | None = None) -> Obj:
        """Delete one object; a pod with a grace period is only marked (deletionTimestamp) for the kubelet.

        Returns the object as the API answers a pod's DELETE (the registry returns the deleted object).
        ``uid``/``rv`` are DeleteOptions preconditions: a mismatch is the real 409.
        """
        group = BY_PLURAL[resource].group
        with self.cond:
            current = self._objects[resource].get((namespace, name))
            if current is None:
                raise not_found(resource, name, group)
            meta = current["metadata"]
            if uid is not None and uid != meta.get("uid"):
                raise ApiError(409, f'Operation cannot be fulfilled on {resource} "{name}": Precondition failed: '
                               f'UID in precondition: {uid}, UID in object meta: {meta.get("uid")}',
                               details={"name": name, "kind": resource})
            if rv is not None and rv != meta.get("resourceVersion"):
                raise ApiError(409, f'Operation cannot be fulfilled on {resource} "{name}": Precondition failed: '
                               f'ResourceVersion in precondition: {rv}, ResourceVersion in object meta: '
                               f'{meta.get("resourceVersion")}', details={"name": name, "kind": resource})
            if resource == "pods":
                spec_grace = current.get("spec", {}).get("terminationGracePeriodSeconds", 30)
                period = spec_grace if grace is None else grace
                if period > 0:
                    if meta.get("deletionTimestamp"):
                        return copy.deepcopy(current)
                    marked = copy.deepcopy(current)
                    marked["metadata"]["deletionTimestamp"] = clock.now()
                    marked["metadata"]["deletionGracePeriodSeconds"] = period
                    out = self._commit(resource, "MODIFIED", marked)
                    self._after_write(resource)
                    return out
            out = self._commit(resource, "DELETED", copy.deepcopy(current))
            self._after_write(resource)
            return out

    def remove(self, resource: str, namespace: str, name: str) -> Obj | None:
        """Take an object out at once (the kubelet's last step for a pod whose processes ended)."""
        with self.cond:
            current = self._objects[resource].get((namespace, name))
            if current is None:
                return None
            out = self._commit(resource, "DELETED", copy.deepcopy(current))
            self._after_write(resource)
            return out

    def _after_write(self, resource: str) -> None:
        """Keep PodDisruptionBudget status current (the disruption controller, synchronous here)."""
        if resource not in ("pods", "poddisruptionbudgets"):
            return
        pods = list(self._objects["pods"].values())
        for key, pdb in list(self._objects["poddisruptionbudgets"].items()):
            status = disruption.pdb_status(pdb, [p for p in pods if p["metadata"].get("namespace") == key[0]])
            if status != pdb.get("status"):
                new = copy.deepcopy(pdb)
                new["status"] = status
                self._commit("poddisruptionbudgets", "MODIFIED", new)

    # -- watching --------------------------------------------------------------------------------

    def watch(self, resource: str, namespace: str | None, predicates: tuple[Predicate, ...],
              since: str | None, timeout: float, stop: Callable[[], bool] = lambda: False) -> Iterator[Event]:
        """Events after ``since`` (or the current objects as ADDED when it is empty or "0"), until timeout.

        A ``since`` older than the kept window is the real 410 ``too old resource version``.
        """
        deadline = time.monotonic() + timeout
        with self.cond:
            if since in (None, "", "0"):
                items, last = self.query(resource, namespace, *predicates)
                initial = [Event(int(o["metadata"]["resourceVersion"]), "ADDED", resource, o) for o in items]
            else:
                try:
                    last = int(since or 0)
                except ValueError:
                    raise ApiError(400, f'invalid resource version: "{since}"') from None
                oldest = self._events[0].rv if self._events else self._rv + 1
                if len(self._events) == self._events.maxlen and last < oldest - 1:
                    raise expired(f"too old resource version: {last} ({oldest - 1})")
                initial = []
        return self._follow(resource, namespace, predicates, initial, last, deadline, stop)

    def _follow(self, resource: str, namespace: str | None, predicates: tuple[Predicate, ...],
                initial: list[Event], last: int, deadline: float, stop: Callable[[], bool]) -> Iterator[Event]:
        """The watch's stream: the initial events, then each new matching one, until the deadline."""

        def wanted(ev: Event) -> bool:
            ns = ev.obj["metadata"].get("namespace", "")
            return (ev.resource == resource and (namespace is None or ns == namespace)
                    and all(p(ev.obj) for p in predicates))

        yield from initial
        while not self.closed and not stop():
            with self.cond:
                pending = [ev for ev in self._events if ev.rv > last]
                if not pending:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    self.cond.wait(min(left, 0.5))
                    continue
                last = pending[-1].rv
            for ev in pending:
                if wanted(ev):
                    yield Event(ev.rv, ev.type, ev.resource, copy.deepcopy(ev.obj))
            if time.monotonic() >= deadline:
                return

    def events_after(self, since: int) -> list[Event]:
        """Every event after ``since`` (for the controller), newest last."""
        with self.cond:
            return [ev for ev in self._events if ev.rv > since]

    def close(self) -> None:
        """End every watch (the server is stopping)."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def matching(objs: list[Obj], labels: Mapping[str, str]) -> list[Obj]:
    """The objects whose labels include all of ``labels``."""
    return [o for o in objs if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())]
