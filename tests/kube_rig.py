"""A simulated node on a stand-in cluster: the stand-in API server is the cluster, the simulator the machine.

The stand-in's kubelet hooks link the two. A pod the stand-in runs on the node (``on_create``) becomes a
container on the simulated node: a process holding every GPU, in the pod's cgroup (its uid and container id),
as the GPU Operator's operands and a vLLM worker do. A pod the stand-in deletes (``on_delete``: a paused
operand label, an eviction) ends that process. So the real kubectl changes the cluster, and the runbook's
fuser on the simulated node sees the operands and the workload leave, or stay.

The hooks run on the stand-in's controller thread; the node is changed only on the test's thread, at the
next command the backend answers (its ``node`` property drains what the hooks queued), as a kubelet's work
lands between two reads of a real node.
"""

from __future__ import annotations

import asyncio
import copy
import queue
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.kube.client import Kubectl
from nvls_tui.lab.kube_standin.controller import Timing
from nvls_tui.lab.kube_standin.harness import running
from nvls_tui.runbook import RepairOptions
from nvls_tui.runbook.session import Session
from nvls_tui.sim.base_nodes import VLLM_ARGV
from nvls_tui.sim.fabric import fm_started, reset_gpus
from nvls_tui.sim.faults import DRIVER_POD_ROLE
from nvls_tui.sim.files import identity
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import exit_process, fm_went_away, spawn_pod
from nvls_tui.sim.state import FM_ARGV, Node, PodSpec, digest
from nvls_tui.sim.systemd import FM_DEVICES

NODE = "gpu06"
# The operand labels as an administrator left them: the MIG manager off (false), dcgm and the node status
# exporter unset (the operator counts unset as true), the rest true.
LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
          "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.dcgm-exporter": "true",
          "nvidia.com/gpu.deploy.gpu-feature-discovery": "true", "nvidia.com/gpu.deploy.mig-manager": "false",
          "nvidia.com/gpu.deploy.operator-validator": "true", "nvidia.com/gpu.deploy.driver": "true"}
OPERANDS = ["nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter", "gpu-feature-discovery", "nvidia-mig-manager",
            "nvidia-operator-validator"]
# Labels a repair pauses here (true or unset), and those it leaves alone.
PAUSED: dict[str, str | None] = {
    "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.dcgm": None,
    "nvidia.com/gpu.deploy.node-status-exporter": None, "nvidia.com/gpu.deploy.operator-validator": "true"}


# Another site's gpu06: the same name in another cluster, another machine (its kubelet's ids are its own).
OTHER_SITE = {"bootID": "7d3f0c2e-5b1a-4e8f-9c6d-2a4b8e1f0c3d", "machineID": "4c1e9a7b2d3f4e5a8b6c0d9e1f2a3b4c",
              "systemUUID": "9E2B4C6D-1A3F-4B5C-8D7E-0F1A2B3C4D5E"}


def cluster_state(*, budget: bool = False, cordoned: bool = False, driver: bool = False,
                  node_info: dict[str, str] | None = None) -> dict[str, Any]:
    """The stand-in's state: the node with the operator's operands and a vLLM workload (optionally with a
    budget that allows no eviction, and with the operator's driver DaemonSet, whose pod runs Fabric Manager).
    ``node_info``: the Node's status.nodeInfo ids (the simulated machine's: ``sim.files.identity``; another
    site's: :data:`OTHER_SITE`; None: empty, as a kubelet that never reported leaves them)."""
    workload: dict[str, Any] = {"name": "vllm", "namespace": "inference", "nodes": [NODE],
                                "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    if budget:
        workload["pdb"] = {"minAvailable": 1}
    return {"nodes": [{"name": NODE, "labels": dict(LABELS), "unschedulable": cordoned, "nodeInfo": node_info or {}}],
            "gpuOperator": {"namespace": "gpu-operator",
                            "operands": list(OPERANDS) + (["nvidia-driver-daemonset"] if driver else [])},
            "workloads": [workload]}


def _container_id(pod: dict[str, Any]) -> str:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    raw = statuses[0].get("containerID", "") if statuses else ""
    return raw.partition("://")[2] or digest(pod["metadata"]["uid"])[:64]


def _owner(pod: dict[str, Any]) -> tuple[str | None, str | None]:
    refs = pod["metadata"].get("ownerReferences") or []
    return (refs[0]["kind"], refs[0]["name"]) if refs else (None, None)


class Kubelet:
    """The stand-in's hooks for one simulated node: what they queue is applied by :meth:`apply`."""

    def __init__(self) -> None:
        self.pending: queue.SimpleQueue[tuple[str, dict[str, Any]]] = queue.SimpleQueue()
        self.created: list[str] = []
        self.ended: list[str] = []
        self.reloads = 0  # times a new driver pod loaded the driver again (after the old one was deleted)
        self._driver_gone = False

    def on_create(self, pod: dict[str, Any]) -> None:
        """A pod runs on a node (the stand-in's kubelet)."""
        if pod["spec"].get("nodeName") == NODE:
            self.pending.put(("create", copy.deepcopy(pod)))

    def on_delete(self, pod: dict[str, Any]) -> None:
        """A pod's containers are ended (the stand-in's kubelet)."""
        if pod["spec"].get("nodeName") == NODE:
            self.pending.put(("delete", copy.deepcopy(pod)))

    def apply(self, node: Node, now: float) -> None:
        """Start and end the containers the hooks asked for, in order."""
        while True:
            try:
                what, pod = self.pending.get_nowait()
            except queue.Empty:
                return
            meta = pod["metadata"]
            if what == "delete":
                spec = next((p for p in node.pods if p.uid == meta["uid"]), None)
                if spec is None:
                    continue
                for proc in [p for p in node.procs.values() if p.pod == spec.name]:
                    exit_process(node, proc, now, signo=signal.SIGTERM)
                node.pods.remove(spec)
                self.ended.append(meta["name"])
                if spec.role == DRIVER_POD_ROLE:
                    fm_went_away(node)  # FM went with its pod; the driver container unloads the driver
                    self._driver_gone = True
                continue
            kind, owner = _owner(pod)
            workload = kind != "DaemonSet"
            container = pod["spec"]["containers"][0]["name"]
            if owner == "nvidia-driver-daemonset":
                self._driver(node, pod, now)
                continue
            spec = PodSpec(name=meta["name"], role="vllm" if workload else container,
                           argv=list(VLLM_ARGV) if workload else [f"/usr/bin/{container}"],
                           devices=[f"/dev/nvidia{g.index}" for g in node.gpus] + ["/dev/nvidiactl"],
                           uid=meta["uid"], container=_container_id(pod), shim_pid=1,
                           k8s_namespace=meta["namespace"], k8s_owner_kind=kind, k8s_owner_name=owner,
                           k8s_container=container)
            node.pods.append(spec)
            spawn_pod(node, spec, now)
            self.created.append(meta["name"])


    def _driver(self, node: Node, pod: dict[str, Any], now: float) -> None:
        """A driver pod: it loads the driver (after a deleted one: a reload, which resets every GPU and NVSwitch
        as ``nvidia-smi -r`` does, only where nothing holds a device) and starts Fabric Manager in the pod."""
        meta = pod["metadata"]
        if self._driver_gone and not node.holders():
            reset_gpus(node, now)
            self.reloads += 1
        self._driver_gone = False
        spec = PodSpec(name=meta["name"], role=DRIVER_POD_ROLE, argv=list(FM_ARGV),
                       devices=[d for d in FM_DEVICES if d in node.device_files()], uid=meta["uid"],
                       container=_container_id(pod), shim_pid=1, k8s_namespace=meta["namespace"],
                       k8s_owner_kind="DaemonSet", k8s_owner_name="nvidia-driver-daemonset",
                       k8s_container=pod["spec"]["containers"][0]["name"])
        node.pods.append(spec)
        spawn_pod(node, spec, now)
        fm_started(node, now)
        self.created.append(meta["name"])


def as_operator_driver(node: Node) -> None:
    """The node's driver is the GPU Operator's: no host Fabric Manager unit (nor its process, nor the binary on
    the host's PATH); the stand-in's driver pod runs FM (as sim:fm-in-container's node, but out of sync)."""
    unit = node.units.pop("nvidia-fabricmanager.service")
    for proc in [p for p in node.procs.values() if p.unit == unit.name]:
        node.procs.pop(proc.pid)
    node.fm_version = None


class LinkedBackend(SimulatedBackend):
    """A simulated node whose containers are the stand-in's pods (what the kubelet queued lands first)."""

    def __init__(self, fleet, name: str, kubelet: Kubelet) -> None:
        super().__init__(fleet, name)
        self.kubelet = kubelet

    @property
    def node(self) -> Node:  # type: ignore[override]
        """The simulated node, with the stand-in kubelet's work applied."""
        node = self.fleet.node(self.host)
        self.kubelet.apply(node, self.fleet.clock.now())
        return node


def without_own_pods(node: Node, now: float) -> None:
    """Take the scenario's own pods (and their processes) off the node: the stand-in's pods replace them."""
    for spec in list(node.pods):
        for proc in [p for p in node.procs.values() if p.pod == spec.name]:
            exit_process(node, proc, now, signo=signal.SIGTERM)
    node.pods.clear()


SPEED = 2000.0
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=5.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3, operand_timeout=20.0)
TIMING = Timing(operand_grace=0.1, create_delay=0.1)


class Rig:
    """The stand-in cluster, the linked simulated node, and a session that repairs it through the real kubectl."""

    def __init__(self, standin, kubelet: Kubelet, tmp_path, *, driver: bool = False, fleet=None) -> None:
        self.standin = standin
        self.kubelet = kubelet
        self.fleet = fleet if fleet is not None else load_fleet(f"sim:seed-incident/{NODE}", speed=SPEED)
        without_own_pods(self.fleet.node(NODE), self.fleet.clock.now())
        if driver:
            as_operator_driver(self.fleet.node(NODE))
        self.backend = LinkedBackend(self.fleet, NODE, kubelet)
        self.kubectl = Kubectl(kubeconfig=standin.kubeconfig, timeout=30.0)
        self.audit_dir = str(tmp_path / "audit")

    def session(self, options: RepairOptions = FAST) -> Session:
        return Session({NODE: self.backend}, audit_dir=self.audit_dir, options=options, kube={NODE: self.kubectl})

    def repair(self, options: RepairOptions = FAST, *, dry_run: bool = False):
        async def go():
            session = self.session(options)
            run = session.start_repair([NODE])
            opts = RepairOptions(**{**options.__dict__, "dry_run": dry_run}) if dry_run else options
            return (await session.repair(run, opts, kind="dry-run" if dry_run else "repair"))[0]
        return asyncio.run(go())

    def node(self) -> dict:
        return self.standin.store.find("nodes", "", NODE)

    def labels(self) -> dict[str, str]:
        return dict(self.node()["metadata"].get("labels") or {})

    def pods(self) -> list[dict]:
        pods, _ = self.standin.store.query("pods")
        return [p for p in pods if p["spec"].get("nodeName") == NODE and not p["metadata"].get("deletionTimestamp")]

    def writes(self) -> list[tuple[str, str, str]]:
        """The changes sent to the API, in order: (method, path, body)."""
        return [(m, p.split("?")[0], b.decode(errors="replace")) for m, p, _, b in self.standin.requests()
                if m in ("PATCH", "POST", "DELETE")]

    def holders_of_pods(self) -> set[str]:
        node = self.backend.node  # what the stand-in's kubelet did lands first
        return {p.pod for p in node.procs.values() if p.pod}


def rigs(tmp_path) -> Iterator[Callable[..., Rig]]:
    """What the ``rig`` fixture of a test module yields: a maker of rigs, each stopped at the end.

    The stand-in's Node carries the simulated machine's ids (its kubelet's report) unless ``node_info`` says
    otherwise (``OTHER_SITE``: another site's gpu06; ``{}``: none)."""
    def make(node_info: dict[str, str] | None = None, **state) -> Rig:
        fleet = load_fleet(f"sim:seed-incident/{NODE}", speed=SPEED)
        kubelet = Kubelet()
        ids = identity(fleet.node(NODE)) if node_info is None else node_info
        ctx = running(cluster_state(node_info=ids, **state), tmp_path, on_create=kubelet.on_create,
                      on_delete=kubelet.on_delete, timing=TIMING)
        standin = ctx.__enter__()
        made.append(ctx)
        return Rig(standin, kubelet, tmp_path, driver=bool(state.get("driver")), fleet=fleet)

    made: list = []
    yield make
    for ctx in made:
        ctx.__exit__(None, None, None)


class Skipping:
    """A run's clock that a pause moves on at once (the 5 s between two evictions take no real time)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def clock(self) -> float:
        return time.monotonic() + self.offset

    async def sleep(self, seconds: float) -> None:
        self.offset += seconds
        await asyncio.sleep(0.005)
