"""Hand-built nodes and a scriptable backend for the console tests (no tests in this module).

The real simulated fleet covers the scenarios end to end; these fakes pin down edge cases the
scenarios do not reach on demand (a PID reused between selection and signal, a poll that hangs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from nvls_tui.backends.base import (
    Backend,
    CommandResult,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    SignalOutcome,
)
from nvls_tui.model import (
    FabricInfo,
    GpuState,
    Holder,
    HolderKind,
    KernelEvent,
    NodeState,
    Platform,
    ServiceState,
    SmokeResult,
    SwitchState,
)
from nvls_tui.poll.probe import STATE_DIR

FIXED_NOW = 1_785_000_000.0


def fixed_clock() -> float:
    """A clock that never moves, so ages and snapshots are the same on every run."""
    return FIXED_NOW


def make_node(host: str, *, broken: bool = False, holders: int = 2, fm: str = "active") -> NodeState:
    """An 8-GPU H100 node; ``broken`` adds the out-of-sync kernel line of the incident."""
    gpus = tuple(
        GpuState(i, f"00000000:{0x18 + i:02X}:00.0", "NVIDIA H100 80GB HBM3", f"GPU-{host}-{i:04d}",
                 FabricInfo("Completed", "Success", "0", "00000000-0000-0000-0000-000000000000"))
        for i in range(8))
    hs = tuple(
        Holder(4000 + i, "root", f"/usr/bin/dcgm-exporter --instance {i}", HolderKind.DCGM_EXPORTER,
               ("/dev/nvidia0", "/dev/nvidiactl"), pod=f"gpu-operator/dcgm-{i}", start_time=f"t{i}")
        for i in range(holders))
    kernel = (KernelEvent("NV_ERR_FABRIC_STATE_OUT_OF_SYNC",
                          "NVRM: NVLink fabric state cached by the driver is out of sync"),) if broken else ()
    return NodeState(
        host, simulated=True, platform=Platform.HGX_H100, driver="580.82.07", fm_version="580.82.07",
        gpus=gpus, nvswitches=tuple(SwitchState(f"/dev/nvidia-nvswitch{i}") for i in range(4)),
        services=(ServiceState("nvidia-fabricmanager.service", fm, "running" if fm == "active" else "failed",
                               "loaded"),
                  ServiceState("kubelet.service", "active", "running", "loaded")),
        holders=hs, kernel_events=kernel,
        smoke=SmokeResult(291.9, True, 0, True, True) if not broken else None)


class FakeBackend(Backend):
    """A backend whose node is a NodeState the test controls.

    Attributes:
        hang: when set, ``snapshot()`` never returns (a wedged nvidia-smi).
        changed_pids: PIDs that now belong to another process (``signal`` refuses them).
        signalled: PIDs that really got a signal.
        ran: every argv passed to ``run``.
        files, dirs: the node's repair lock as the lock's own commands leave it (``mkdir``, ``tee``, ``mv``,
            ``cat``, ``rm``, ``rmdir`` of paths under ``/var/lib/nvls-tui``), so a change by hand takes and gives
            back the lock as on a node; every other command succeeds and changes nothing but a unit's stop.
    """

    def __init__(self, state: NodeState, *, hang: bool = False) -> None:
        self.host = state.host
        self.simulated = True
        self.state = state
        self.hang = hang
        self.changed_pids: set[int] = set()
        self.signalled: list[int] = []
        self.ran: list[tuple[str, ...]] = []
        self.snapshots = 0
        self.files: dict[str, str] = {}
        self.dirs: set[str] = set()

    async def snapshot(self) -> NodeState:
        self.snapshots += 1
        if self.hang:
            await asyncio.Event().wait()
        return self.state

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity, fence=None) -> SignalOutcome:
        if pid in self.changed_pids:
            raise ProcessChanged(f"PID {pid} is now another process")
        if not any(h.pid == pid for h in self.state.holders):
            raise ProcessGone(f"PID {pid} has exited")
        self.signalled.append(pid)
        self.state = self.state.replace(holders=tuple(h for h in self.state.holders if h.pid != pid))
        return SignalOutcome(pid, True)

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env=None, stdin=None, fence=None) -> CommandResult:
        self.ran.append(tuple(argv))
        if any(str(word).startswith(STATE_DIR) for word in argv[1:]):
            return self._lock_files(tuple(argv), stdin)
        if tuple(argv[:2]) == ("systemctl", "is-active"):
            active = next((s.active for s in self.state.services if s.name == argv[2]), "inactive")
            return CommandResult(tuple(argv), 0 if active == "active" else 3, active + "\n")
        if argv[:2] == ["systemctl", "stop"] or tuple(argv[:2]) == ("systemctl", "stop"):
            self.state = self.state.replace(services=tuple(
                s.__class__(s.name, "inactive", "dead", s.load) if s.name == argv[2] else s
                for s in self.state.services))
        return CommandResult(tuple(argv), 0)

    def _lock_files(self, argv: tuple[str, ...], stdin) -> CommandResult:
        """The lock's own commands, on the paths they name (coreutils' words where a path is missing)."""
        verb, paths = argv[0], [a for a in argv[1:] if not a.startswith("-")]
        missing = CommandResult(argv, 1, "", f"{verb}: {paths[0] if paths else ''}: No such file or directory")
        if verb == "mkdir":
            if "-p" not in argv and paths[0] in self.dirs:
                return CommandResult(argv, 1, "", f"mkdir: cannot create directory '{paths[0]}': File exists")
            self.dirs.add(paths[0])
        elif verb == "tee":
            self.files[paths[0]] = stdin.decode() if isinstance(stdin, bytes) else (stdin or "")
        elif verb == "mv":
            if paths[0] not in self.files:
                return missing
            self.files[paths[1]] = self.files.pop(paths[0])
        elif verb == "cat":
            return CommandResult(argv, 0, self.files[paths[0]]) if paths[0] in self.files else missing
        elif verb == "rm":
            for path in paths:
                self.files.pop(path, None)
        elif verb == "rmdir":
            if paths[0] not in self.dirs:
                return missing
            self.dirs.discard(paths[0])
        return CommandResult(argv, 0)

    def stream(self, argv, *, env=None, pty=False, privileged=False, fence=None):
        raise NotImplementedError("the console part 1 never streams")
