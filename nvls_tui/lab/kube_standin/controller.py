"""The cluster's moving parts, simplified: the GPU Operator's DaemonSets, ReplicaSets and the kubelet.

- DaemonSets: a pod on every node the DaemonSet selects. The GPU Operator's operand DaemonSets select
  GPU nodes (``nvidia.com/gpu.present=true``) by ``nvidia.com/gpu.deploy.<operand>``; as the operator
  labels a GPU node ``true`` where the label is unset, unset selects here too. Any other value
  (``false``, ``paused-for-nvls-repair``) deletes the operand's pod there after ``operand_grace``
  seconds; back to ``true`` (or unset) creates a new pod (new name) after ``create_delay``.
- ReplicaSets: a deleted pod is replaced by a new one; there is no scheduler, so it stays Pending.
- Kubelet: a pod marked for deletion has its processes ended through ``on_delete`` (the lab ends the
  node's real process there), then the pod object goes; if ``on_delete`` raises, the pod stays
  Terminating and it is tried again (a stuck pod, as a wedged container leaves one). A new pod runs
  once ``on_create`` returns (Pending if it raises); where it returns ``{container name: containerID}``
  (the lab's hook: the ids of the scopes it started), the pod's status reports those ids, as a kubelet
  reports the runtime's. A force-deleted pod (grace 0) is gone at once and
  ``on_delete`` runs after, as the kubelet kills such containers after the object is gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nvls_tui.lab.kube_standin import objects
from nvls_tui.lab.kube_standin.errors import ApiError
from nvls_tui.lab.kube_standin.store import Obj, Store

Hook = Callable[[Obj], Any]

#: The GPU Operator's operand DaemonSets and the node label each is deployed by.
OPERANDS: dict[str, str] = {
    "nvidia-driver-daemonset": "driver",
    "nvidia-device-plugin-daemonset": "device-plugin",
    "nvidia-dcgm-exporter": "dcgm-exporter",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "nvidia-mig-manager": "mig-manager",
    "nvidia-operator-validator": "operator-validator",
}
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
GPU_PRESENT = "nvidia.com/gpu.present"


@dataclass
class Timing:
    """How long each step waits (seconds): tests make these short, the lab may make them real."""

    operand_grace: float = 0.2
    create_delay: float = 0.2
    termination_delay: float = 0.0
    retry: float = 0.5
    tick: float = 0.05


def _nothing(pod: Obj) -> None:
    """The default hook: no process behind the pod."""


def selects(ds: Obj, node: Obj) -> bool:
    """Whether a DaemonSet wants a pod on ``node`` (deploy labels: ``true`` or unset select)."""
    labels = node["metadata"].get("labels") or {}
    selector = ds.get("spec", {}).get("template", {}).get("spec", {}).get("nodeSelector") or {}
    for key, value in selector.items():
        if key.startswith(DEPLOY_PREFIX) and value == "true":
            if key in labels and labels[key] != "true":
                return False
            if labels.get(GPU_PRESENT) != "true":
                return False
        elif labels.get(key) != value:
            return False
    return True


def _owned_by(pod: Obj, owner: Obj) -> bool:
    return any(ref.get("uid") == owner["metadata"]["uid"] for ref in pod["metadata"].get("ownerReferences") or [])


class Controller:
    """One thread reconciling DaemonSets, ReplicaSets and pod termination against the store."""

    def __init__(self, store: Store, *, on_create: Hook = _nothing, on_delete: Hook = _nothing,
                 timing: Timing | None = None) -> None:
        self.store = store
        self.on_create = on_create
        self.on_delete = on_delete
        self.timing = timing or Timing()
        self.errors: list[str] = []
        self._since: dict[tuple[str, ...], float] = {}
        self._ended: set[str] = set()
        self._retry_at: dict[str, float] = {}
        self._last_rv = store.resource_version
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kube-standin-controller", daemon=True)

    def start(self) -> None:
        """Start reconciling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the thread."""
        self._stop.set()
        with self.store.cond:
            self.store.cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.reconcile()
            except Exception as exc:  # keep reconciling: one bad object must not stop the cluster
                self.errors.append(f"{type(exc).__name__}: {exc}")
            with self.store.cond:
                if self.store.resource_version == self._last_rv and not self._stop.is_set():
                    self.store.cond.wait(self.timing.tick)

    # -- one pass --------------------------------------------------------------------------------

    def reconcile(self) -> None:
        """One pass: force-deleted pods' processes, terminating pods, DaemonSets, ReplicaSets."""
        now = time.monotonic()
        self._after_force_delete()
        self._terminate(now)
        self._daemonsets(now)
        self._replicasets()

    def _hook(self, hook: Hook, pod: Obj) -> bool:
        return self._call(hook, pod)[0]

    def _call(self, hook: Hook, pod: Obj) -> tuple[bool, Any]:
        """(whether ``hook`` returned, what it returned); a raise is logged in :attr:`errors`."""
        try:
            value = hook(pod)
        except Exception as exc:
            self.errors.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}: "
                               f"{type(exc).__name__}: {exc}")
            return False, None
        return True, value

    def _after_force_delete(self) -> None:
        events = self.store.events_after(self._last_rv)
        if events:
            self._last_rv = events[-1].rv
        for ev in events:
            uid = ev.obj["metadata"].get("uid", "")
            if ev.resource == "pods" and ev.type == "DELETED" and uid not in self._ended:
                self._ended.add(uid)
                self._hook(self.on_delete, ev.obj)

    def _terminate(self, now: float) -> None:
        pods, _ = self.store.query("pods")
        for pod in pods:
            meta = pod["metadata"]
            if not meta.get("deletionTimestamp") or not pod.get("spec", {}).get("nodeName"):
                if meta.get("deletionTimestamp"):
                    self._ended.add(meta["uid"])
                    self.store.remove("pods", meta["namespace"], meta["name"])
                continue
            key = ("terminating", meta["uid"])
            started = self._since.setdefault(key, now)
            if now - started < self.timing.termination_delay or now < self._retry_at.get(meta["uid"], 0):
                continue
            if self._hook(self.on_delete, pod):
                self._ended.add(meta["uid"])
                self.store.remove("pods", meta["namespace"], meta["name"])
                self._since.pop(key, None)
            else:
                self._retry_at[meta["uid"]] = now + self.timing.retry

    def _start_pod(self, pod: Obj) -> None:
        """Create a pod, run ``on_create``, then report it Running (or leave it Pending)."""
        created = self.store.create("pods", pod)
        node_name = created["spec"].get("nodeName")
        if not node_name:
            return
        ok, ids = self._call(self.on_create, created)
        if ok:
            node = self.store.find("nodes", "", node_name)
            ids = ids if isinstance(ids, dict) else None
            try:
                self.store.update("pods", created["metadata"]["namespace"], created["metadata"]["name"],
                                  lambda p: p.__setitem__("status", objects.running_status(p, node, ids)))
            except ApiError:
                pass  # deleted meanwhile

    def _daemonsets(self, now: float) -> None:
        daemonsets, _ = self.store.query("daemonsets")
        nodes, _ = self.store.query("nodes")
        pods, _ = self.store.query("pods")
        for ds in daemonsets:
            ns = ds["metadata"]["namespace"]
            mine = [p for p in pods if _owned_by(p, ds)]
            desired = scheduled = ready = 0
            for node in nodes:
                name = node["metadata"]["name"]
                here = [p for p in mine if p["spec"].get("nodeName") == name]
                live = [p for p in here if not p["metadata"].get("deletionTimestamp")]
                wanted = selects(ds, node)
                key_add = ("add", ds["metadata"]["uid"], name)
                key_del = ("del", ds["metadata"]["uid"], name)
                desired += wanted
                scheduled += bool(live)
                ready += any(p.get("status", {}).get("phase") == "Running" for p in live)
                if wanted:
                    self._since.pop(key_del, None)
                    if live or here:
                        self._since.pop(key_add, None)
                        continue
                    if now - self._since.setdefault(key_add, now) >= self.timing.create_delay:
                        self._since.pop(key_add, None)
                        self._start_pod(objects.pod_from_template(ds, name))
                else:
                    self._since.pop(key_add, None)
                    if not live:
                        self._since.pop(key_del, None)
                        continue
                    if now - self._since.setdefault(key_del, now) >= self.timing.operand_grace:
                        self._since.pop(key_del, None)
                        for pod in live:
                            try:
                                self.store.delete("pods", ns, pod["metadata"]["name"])
                            except ApiError:
                                pass  # already gone
            self._ds_status(ds, desired, scheduled, ready)

    def _ds_status(self, ds: Obj, desired: int, scheduled: int, ready: int) -> None:
        status = {"currentNumberScheduled": scheduled, "desiredNumberScheduled": desired,
                  "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                  "updatedNumberScheduled": scheduled,
                  "observedGeneration": ds["metadata"].get("generation", 1)}
        if desired - ready:
            status["numberUnavailable"] = desired - ready
        if ds.get("status") != status:
            try:
                self.store.update("daemonsets", ds["metadata"]["namespace"], ds["metadata"]["name"],
                                  lambda d: d.__setitem__("status", status))
            except ApiError:
                pass

    def _replicasets(self) -> None:
        replicasets, _ = self.store.query("replicasets")
        pods, _ = self.store.query("pods")
        for rs in replicasets:
            live = [p for p in pods if _owned_by(p, rs) and not p["metadata"].get("deletionTimestamp")]
            for _ in range(int(rs.get("spec", {}).get("replicas", 1)) - len(live)):
                self.store.create("pods", objects.pod_from_template(rs, None))
