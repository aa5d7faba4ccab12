"""Built-in scenarios: named fleets of simulated nodes, each node built the way the incident saw it.

Every fact of a node (UUIDs, serials, PIDs) derives from the node's name, so a scenario is the same
on every run and in every process (the shims rebuild nothing: they persist the node they were given).
The table is here; a node's healthy base is :mod:`nvls_tui.sim.base_nodes`, its faults :mod:`nvls_tui.sim.faults`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nvls_tui.sim.faults import (
    clock_stepped,
    fm_flapping,
    fm_in_container,
    fm_log_errors,
    fm_restarters,
    gb200,
    gpu_fell_off,
    gpu_missing,
    healthy,
    hostile,
    insufficient_resources,
    journal_rotated,
    k8s_fm_in_container,
    k8s_incident,
    mig_pending,
    missing_device_files,
    no_answer,
    no_journal,
    persistence_blocks_reset,
    seed_fm_killed,
    seed_out_of_sync,
    stuck_in_progress,
    transient_802,
    version_mismatch,
    vm_host_side,
    wedged,
)
from nvls_tui.sim.state import Node


@dataclass(frozen=True)
class Scenario:
    """One named fleet: its nodes and how each is built."""

    name: str
    description: str
    nodes: tuple[str, ...]
    build: Callable[[str, float], Node]
    # The nodes are a Kubernetes cluster's: the console and check read it through the simulated kubectl
    # (sim/kubectl.py) as they read a real cluster through the real one.
    kubernetes: bool = False

    def build_node(self, node: str, now: float) -> Node:
        """Build ``node`` of this scenario at simulated time ``now``."""
        built = self.build(node, now)
        built.scenario = self.name
        return built



def _seed(name: str, now: float) -> Node:
    return {"gpu05": seed_fm_killed, "gpu06": seed_out_of_sync}.get(name, healthy)(name, now)


FLEET_256_BROKEN = {"gpu017": seed_fm_killed, "gpu042": seed_out_of_sync, "gpu128": insufficient_resources,
                    "gpu201": stuck_in_progress}


def _fleet256(name: str, now: float) -> Node:
    return FLEET_256_BROKEN.get(name, healthy)(name, now)


def _fleet1024(name: str, now: float) -> Node:
    """fleet-256's four faulty nodes at the same numbers (gpu0017 ...), every other node healthy."""
    return FLEET_256_BROKEN.get(f"gpu{int(name[3:]):03d}", healthy)(name, now)


def _wedged(name: str, now: float) -> Node:
    return wedged(name, now) if name == "gpu-wedged01" else healthy(name, now)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("seed-incident", "the incident: gpu05 FM killed days ago, gpu06 out of sync after a reboot; "
             "holders everywhere", tuple(f"gpu{i:02d}" for i in range(1, 9)), _seed),
    Scenario("persistence-blocks-reset", "out of sync; persistence mode on refuses the reset until -pm 0",
             ("gpu-pm01",), persistence_blocks_reset),
    Scenario("version-mismatch", "FM 570 vs driver 580: FM refuses to start", ("gpu-ver01",), version_mismatch),
    Scenario("insufficient-resources", "Completed + Insufficient Resources: a reset does not fix it",
             ("gpu-ir01",), insufficient_resources),
    Scenario("stuck-in-progress", "fabric registration stays In Progress", ("gpu-stuck01",), stuck_in_progress),
    Scenario("wedged", "nvidia-smi hangs on gpu-wedged01 (timeouts); gpu-ok01 answers",
             ("gpu-wedged01", "gpu-ok01"), _wedged),
    Scenario("no-answer", "gpu-silent01 does not answer at all: every command hangs, behind sshd even its "
             "shell (unreachable; sim:wedged's node answers all but nvidia-smi)", ("gpu-silent01",), no_answer),
    Scenario("transient-802", "the first NVLS smoke test fails with 802, later ones pass", ("gpu-t802",),
             transient_802),
    Scenario("gb200-no-fm", "GB200 tray: no host FM, no NVSwitch PCI devices (platform unsupported)",
             ("gb200-n01",), gb200),
    Scenario("hostile", "gpu-evil01: users' process names, Xid lines and a record file full of markup, "
             "escapes and HTML (text from a node is data); gpu-ok01 is healthy", ("gpu-evil01", "gpu-ok01"),
             lambda name, now: hostile(name, now) if name == "gpu-evil01" else healthy(name, now)),
    Scenario("missing-device-files", "HGX H200 out of sync whose /dev lacks nvidia-modeset, nvidia-nvlink and "
             "nvidia-nvswitchctl, as the real H200's does", ("gpu-h200-01",), missing_device_files),
    Scenario("clock-step", "repaired nodes whose clock NTP stepped back an hour before the fault came back: the "
             "fresh out-of-sync line reads older than the smoke record (gpu-ntp01 past the record again, gpu-ahead01 "
             "with the record still in its future)", ("gpu-ntp01", "gpu-ahead01"), clock_stepped),
    Scenario("fm-in-container", "GPU Operator-managed driver: no host nvidia-fabricmanager unit; nv-fabricmanager "
             "runs in the driver pod (restart that pod, not a host unit)", ("gpu-ctr01",), fm_in_container),
    Scenario("gpu-missing", "an HGX H100 whose GPU at D8 is on the PCI bus but not in nvidia-smi (7 of 8 "
             "listed): GPU_LOST, no reset", ("gpu-lost01",), gpu_missing),
    Scenario("mig-pending", "out of sync, and GPU 3 has a pending MIG mode change (Disabled -> Enabled) that the "
             "repair's reset commits", ("gpu-mig01",), mig_pending),
    Scenario("vm-host-side", "a one-GPU H200 VM: no NVSwitch visible, FM with nothing to do, fabric In Progress "
             "for good (the host or provider must finish it)", ("gpu-vm01",), vm_host_side),
    Scenario("fm-restarters", "out of sync on a node that restarts FM behind the operator: needrestart set to "
             "restart nvidia-* units on its own, unattended-upgrades with apt's timers running, FM restarted 3 "
             "times by systemd (NRestarts=3)", ("gpu-nr01",), fm_restarters),
    Scenario("fm-flapping", "out of sync on a node where something restarts FM by hand every ten minutes: its "
             "start times move while systemd's NRestarts stays 0 (the autopilot counts the starts)",
             ("gpu-flap01",), fm_flapping),
    Scenario("fm-log-errors", "FM configured the fabric, then logged nccl#1043's multicast team ERROR lines in its "
             "journal; the GPUs still say Completed/Success (the simulated smoke test still passes)",
             ("gpu-fmlog01",), fm_log_errors),
    Scenario("journal-rotated", "out of sync, but the journal was vacuumed after the fault: the out-of-sync line "
             "is only in the ring buffer (dmesg), which does not reach the boot either", ("gpu-rot01",),
             journal_rotated),
    Scenario("no-journal", "out of sync on a node with no journalctl (dmesg only, as the real H200 VM)",
             ("gpu-nojrnl01",), no_journal),
    Scenario("gpu-fell-off", "GPU 3 fell off the bus (the driver's three-line message, no Xid): a reset cannot "
             "bring it back", ("gpu-lost01",), gpu_fell_off),
    Scenario("k8s-incident", "the seed incident on Kubernetes: gpu05 FM killed and cordoned, gpu06 out of sync "
             "with a vLLM workload pod holding its GPUs beside the GPU Operator's operands; the cluster read through "
             "a simulated kubectl", ("gpu05", "gpu06", "gpu07"), k8s_incident, kubernetes=True),
    Scenario("k8s-fm-in-container", "out of sync on Kubernetes with Fabric Manager in the GPU Operator's driver pod: "
             "the repair restarts that pod through the simulated cluster (the driver reloads)", ("gpu-ctr02",),
             k8s_fm_in_container, kubernetes=True),
    Scenario("healthy", "four healthy HGX H100 nodes", tuple(f"hgx{i:02d}" for i in range(1, 5)), healthy),
    Scenario("fleet-256", "256 nodes, four of them faulty: three broken (gpu017, gpu042, gpu128) and one degraded "
             "(gpu201, its registration In Progress)",
             tuple(f"gpu{i:03d}" for i in range(1, 257)), _fleet256),
    Scenario("fleet-1024", "1,024 nodes, a real fleet's size, four of them faulty: three broken (gpu0017, gpu0042, "
             "gpu0128) and one degraded (gpu0201, its registration In Progress)",
             tuple(f"gpu{i:04d}" for i in range(1, 1025)), _fleet1024),
)}

