"""The steps of the repair, their exact commands, and the tunables of a run.

Everything here is data or a pure function of a NodeState, so the dry-run plan and the engine build
their argv lists in one place and cannot drift apart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from nvls_tui.model import GpuState, Holder, NodeState
from nvls_tui.poll.probe import BOOT_ARGV, LOCK_DIR, STATE_DIR, UNITS

STEPS = (
    "preflight",
    "quiesce",
    "verify-no-holders",
    "reset",
    "fabric-manager",
    "verify-fabric",
    "smoke-test",
    "restore",
)

FM_UNIT = "nvidia-fabricmanager.service"
KUBELET = "kubelet.service"
SNAPSHOT_TIMER = "nvidia-snapshot.timer"
SNAPSHOT_SERVICE = "nvidia-snapshot.service"
DCGM = "nvidia-dcgm.service"
PERSISTENCED = "nvidia-persistenced.service"

# Quiesce stops units in this order (clients first, FM last: FM must never restart under holders).
QUIESCE_UNITS = (SNAPSHOT_TIMER, SNAPSHOT_SERVICE, DCGM, PERSISTENCED, KUBELET, FM_UNIT)
# Restore starts them in this order: FM first so clients reconnect to a registered fabric.
RESTORE_UNITS = (FM_UNIT, PERSISTENCED, DCGM, KUBELET, SNAPSHOT_TIMER, SNAPSHOT_SERVICE)
# The units the console's Units pane lists (those the poll reads): the only ones stopped or started by hand
# (runbook/session.Session.unit), so the only ones a record's ``manual`` list may have the restore start.
HAND_UNITS = frozenset(UNITS)

RUNNING = frozenset({"active", "activating", "reloading", "deactivating"})

# Device files that are not per GPU or per switch. A node may lack some (the real H200 has no nvidia-modeset,
# nvidia-nvlink or nvidia-nvswitchctl): fuser is given only those the node lists (quiesce.present_devices).
FIXED_DEVICES = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
    "/dev/nvidia-nvlink",
    "/dev/nvidia-nvswitchctl",
)

SMOKE_ENV = {"NCCL_NVLS_ENABLE": "1", "NCCL_ALGO": "NVLS", "NCCL_DEBUG": "INFO"}

# Minimum average bus bandwidth (GB/s) of the 8M-128M NVLS sweep, by GPU model word.
DEFAULT_THRESHOLDS = {"H100": 250.0, "H200": 250.0}
FALLBACK_THRESHOLD = 250.0

DATE_ARGV = ("date", "+%Y-%m-%d %H:%M:%S")
# When a smoke test ended, as its record keeps it: the clock in UTC with its offset (node-local text
# reads wrong across a DST fall-back), then the boot and the seconds since it, read after the clock so
# that a slow read makes the clock look stepped forward, never back (nvls_tui.diagnosis.kernel.smoke_distrust).
SMOKE_CLOCK_ARGVS = (("date", "-u", "+%Y-%m-%dT%H:%M:%S+00:00"), BOOT_ARGV)

# How a deadline's failure message ends: the restore step always follows a failed step.
AFTER_FAILURE = "the units it stopped are started again, and the node stays broken"


def unit_argv(verb: str, unit: str) -> tuple[str, ...]:
    """``systemctl VERB UNIT``."""
    return ("systemctl", verb, unit)


def devices_of(state: NodeState) -> tuple[str, ...]:
    """Every /dev/nvidia* file of the node: each GPU, each NVSwitch, and the shared control files."""
    gpus = tuple(f"/dev/nvidia{g.index}" for g in state.gpus) or tuple(f"/dev/nvidia{i}" for i in range(8))
    switches = tuple(s.device for s in state.nvswitches if s.device.startswith("/dev/"))
    return gpus + FIXED_DEVICES + switches


def reset_argv() -> tuple[str, ...]:
    """Reset every GPU and NVSwitch of the node (no ``-i``: all of them, as the write-up did)."""
    return ("nvidia-smi", "-r")


def kernel_since_argv(t0: str) -> tuple[str, ...]:
    """Kernel lines the node's clock dates at or after ``t0`` (verify-fabric's fallback without a cursor)."""
    return ("journalctl", "-k", "--since", t0, "--no-pager", "-o", "short-iso")


# Where the kernel journal stands at T0: journalctl visits the boot's last kernel entry, prints nothing of
# it (``-n 0 -q``) and ends with ``-- cursor: ...`` (no line, and exit 1, when the boot has no kernel entry).
KERNEL_CURSOR_ARGV = ("journalctl", "-k", "-n", "0", "--show-cursor", "-q", "--no-pager")


def kernel_cursor_check_argv(cursor: str) -> tuple[str, ...]:
    """Seek to ``cursor`` and say where the seek landed: the same cursor while the journal still holds its entry."""
    return ("journalctl", "-k", f"--cursor={cursor}", "-n", "0", "--show-cursor", "-q", "--no-pager")


def kernel_after_argv(cursor: str) -> tuple[str, ...]:
    """Kernel lines the journal stored after ``cursor``'s entry, whatever the node's clock said meanwhile."""
    return ("journalctl", "-k", f"--after-cursor={cursor}", "--no-pager", "-o", "short-iso")


def smoke_argv(gpus: int) -> tuple[str, ...]:
    """The NVLS all-reduce sweep of the write-up (run with :data:`SMOKE_ENV`)."""
    return ("all_reduce_perf", "-b", "8M", "-e", "128M", "-f", "2", "-g", str(max(gpus, 1)))


def persistence_argv(enabled: bool, gpu: int | None = None) -> tuple[str, ...]:
    """``nvidia-smi -pm 0|1`` for every GPU or one."""
    argv = ("nvidia-smi", "-pm", "1" if enabled else "0")
    return argv + (("-i", str(gpu)) if gpu is not None else ())


def lock_argvs() -> tuple[tuple[str, ...], ...]:
    """Take the per-node lock: ``mkdir`` of a directory is atomic, so only one repair wins."""
    return (("mkdir", "-p", STATE_DIR), ("mkdir", LOCK_DIR))


def unlock_argv() -> tuple[str, ...]:
    """Release the per-node lock."""
    return ("rmdir", LOCK_DIR)


def is_running(active: str | None) -> bool:
    """True for the ActiveStates that mean a unit is up (or on its way)."""
    return (active or "") in RUNNING


def unit_states(state: NodeState) -> dict[str, str]:
    """``{unit: ActiveState}`` for every unit the snapshot read and systemd knows."""
    return {s.name if "." in s.name else f"{s.name}.service": s.active for s in state.services if s.exists}


def persistence_modes(state: NodeState) -> dict[int, str]:
    """``{gpu index: "Enabled"|"Disabled"}`` where the snapshot read it."""
    return {g.index: g.persistence_mode for g in state.gpus if g.persistence_mode}


def clock_text(seconds: float) -> str:
    """A span as a clock reads it: ``clock_text(91) == "1:31"``, ``clock_text(3725) == "1:02:05"``.

    Whole seconds, rounded down (a deadline of 5:00 reads 4:59 until it has passed); never negative.
    Deadlines in messages and the time waited against them on screen both read this way.
    """
    hours, rest = divmod(max(0, int(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def threshold_for(gpus: tuple[GpuState, ...], thresholds: Mapping[str, float], override: float | None) -> float:
    """The pass threshold (GB/s) for this node's GPU model; ``override`` wins when given."""
    if override is not None:
        return override
    names = " ".join(g.name for g in gpus).upper()
    for word, value in thresholds.items():
        if word.upper() in names:
            return value
    return FALLBACK_THRESHOLD


@dataclass(frozen=True, slots=True)
class HolderDecision:
    """What the operator chose for holders the runbook may not stop on its own.

    Attributes:
        sigterm: PIDs the operator selected for SIGTERM (identity is re-checked before sending).
        abort: stop the repair (the runbook restores everything).
    """

    sigterm: tuple[int, ...] = ()
    abort: bool = False


class Operator(Protocol):
    """The console's side of a run: asked when holders remain that only the operator may stop."""

    async def resolve_holders(self, host: str, holders: tuple[Holder, ...]) -> HolderDecision:
        """Return the operator's choice; an empty decision means "keep waiting and re-check"."""


@dataclass(frozen=True)
class RepairOptions:
    """Tunables of a run. Times are seconds of the operator's clock.

    Attributes:
        dry_run: only plan; run nothing that changes the node.
        sigkill: allow SIGKILL for management holders that ignore SIGTERM (never by default).
        smoke_threshold: minimum average bus bandwidth in GB/s, overriding the per-model default.
        thresholds: per-model defaults, keyed by a word of the GPU name.
        command_timeout: per command (``--timeout``).
        reset_timeout: ``nvidia-smi -r`` (resetting 8 GPUs and 4 switches takes a while).
        smoke_timeout: the whole all_reduce_perf run.
        holder_timeout: how long verify-no-holders waits for the last holders to go.
        term_grace: how long a SIGTERMed holder gets to exit before it counts as remaining.
        fm_timeout: how long Fabric Manager gets to become active with every GPU registered.
        poll_interval: pause between re-checks while waiting.
        recheck_transient: smoke-test a node whose fabric looks healthy before anything destructive,
            and once more after ``transient_pause`` if that fails (a transient CUDA 802 clears by itself).
        transient_pause: pause before that second smoke test.
        restore_attempts: tries per restore command when the link drops.
        wait_jobs: with a scheduler, how long preflight waits for the drained node's jobs to end before
            it refuses (``--wait-jobs``; 0: refuse at once while jobs run).
        keep_drained: leave the node drained in the scheduler after a successful repair.
        wait_pods: on Kubernetes, how long an eviction a PodDisruptionBudget refuses is retried before the
            repair is refused (``--wait-pods``; 0: refuse at the first refusal).
        stop_kubelet: a configured cluster that has no node for the target, while kubelet runs on it: repair it
            by stopping kubelet, as without a cluster (``--stop-kubelet``; without it such a repair is refused).
        operand_timeout: on Kubernetes, how long quiesce waits for the paused operands' pods (and the evicted
            workload pods) to be deleted (the GPU Operator's own managers wait 5 minutes).
        heartbeat_interval: real seconds between the lock's heartbeats while a run holds it.
        lock_stale_after: real seconds without a heartbeat after which a lock is stale (``--force`` may
            then take it over; a live one is never taken).
        sleep: awaitable pause (tests may pass a faster one).
        clock: monotonic clock for deadlines and durations.
    """

    dry_run: bool = False
    sigkill: bool = False
    smoke_threshold: float | None = None
    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    command_timeout: float = 20.0
    reset_timeout: float = 180.0
    smoke_timeout: float = 600.0
    holder_timeout: float = 120.0
    term_grace: float = 10.0
    fm_timeout: float = 300.0
    poll_interval: float = 2.0
    recheck_transient: bool = True
    transient_pause: float = 10.0
    restore_attempts: int = 3
    wait_jobs: float = 0.0
    keep_drained: bool = False
    wait_pods: float = 0.0
    stop_kubelet: bool = False
    operand_timeout: float = 300.0
    heartbeat_interval: float = 30.0
    lock_stale_after: float = 300.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.monotonic


__all__ = [
    "AFTER_FAILURE",
    "DCGM",
    "DEFAULT_THRESHOLDS",
    "FM_UNIT",
    "HAND_UNITS",
    "KERNEL_CURSOR_ARGV",
    "KUBELET",
    "PERSISTENCED",
    "QUIESCE_UNITS",
    "RESTORE_UNITS",
    "SMOKE_CLOCK_ARGVS",
    "SMOKE_ENV",
    "SNAPSHOT_SERVICE",
    "SNAPSHOT_TIMER",
    "STEPS",
    "HolderDecision",
    "Operator",
    "RepairOptions",
    "clock_text",
    "devices_of",
    "is_running",
    "kernel_after_argv",
    "kernel_cursor_check_argv",
    "kernel_since_argv",
    "persistence_modes",
    "threshold_for",
    "unit_states",
]
