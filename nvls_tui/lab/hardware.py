"""A lab node's simulated hardware, seen through its real processes.

Inside a lab container only the GPUs, the NVSwitches and the kernel's fabric log are simulated. They
live in a :class:`~nvls_tui.sim.store.NodeStore` (the simulator's node model, with no units and no
processes of its own). Every stand-in tool opens it through :func:`hardware`, which first lays the
node's *real* state over the model:

- the processes that hold ``/dev/nvidia*`` files, read from ``/proc/*/fd`` (so ``nvidia-smi -r``
  refuses exactly while a real process holds a device, as the real one does);
- whether the Fabric Manager daemon recorded in :data:`FM_PID_FILE` is still alive. A daemon that
  died without a word (SIGKILL) leaves the driver's fabric state stale, as on a real node.

What the real state decides is thrown away again before the model is saved: only hardware persists.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from nvls_tui.sim.clock import SimClock
from nvls_tui.sim.processes import fm_went_away
from nvls_tui.sim.state import Node, Proc, Unit
from nvls_tui.sim.store import NodeStore

HW_DIR = "/var/lib/nvls-lab"
"""Where a lab container keeps its hardware (a host folder bound into the container)."""
FM_UNIT = "nvidia-fabricmanager.service"
FM_PID_FILE = "fm.pid"
"""The running FM daemon's PID, written by the daemon when it has registered the fabric."""


def hw_dir() -> Path:
    """The hardware folder (``NVLS_LAB_HW`` overrides it: the host's tests read a node from outside)."""
    return Path(os.environ.get("NVLS_LAB_HW", HW_DIR))


def _pid_alive(pid: int, needle: str) -> bool:
    """True when ``pid`` runs and its command line contains ``needle`` (a reused PID is not ours)."""
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def device_holders(skip: int | None = None) -> dict[int, list[str]]:
    """``{pid: [/dev/nvidia* files it has open]}`` for every process but ``skip``, from ``/proc``."""
    out: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdecimal() or int(entry.name) == skip:
            continue
        try:
            fds = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        files = set()
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{entry.name}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/dev/nvidia"):
                files.add(target)
        if files:
            out[int(entry.name)] = sorted(files)
    return out


def fm_pid(folder: Path) -> int | None:
    """The PID the FM daemon recorded, or None."""
    try:
        return int((folder / FM_PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def _overlay_real_state(node: Node, folder: Path) -> None:
    """Lay the real holders and the real FM daemon over ``node`` (see the module docstring)."""
    pid = fm_pid(folder)
    alive = pid is not None and _pid_alive(pid, "nv-fabricmanager")
    if pid is not None and not alive:
        # The daemon is gone and never said so: the driver's cached fabric state is now stale.
        fm_went_away(node)
        (folder / FM_PID_FILE).unlink(missing_ok=True)
    node.units = {FM_UNIT: Unit(name=FM_UNIT, description="", active="active" if alive else "inactive")}
    node.procs = {}
    for holder, files in device_holders(skip=os.getpid()).items():
        node.procs[holder] = Proc(pid=holder, ppid=0, user="root", start=0.0, argv=[], cgroup="",
                                  devices=files, role="fm" if holder == pid and alive else "other")


def _hardware_only(node: Node) -> None:
    """Drop what the real node decides (units, processes, pods, journal, command log) before saving."""
    node.units, node.procs, node.pods, node.journal = {}, {}, [], []
    node.cmdlog.clear()


@contextlib.contextmanager
def hardware(write: bool = True) -> Iterator[tuple[Node, SimClock]]:
    """Lock the node's hardware, lay its real state over it, yield it; save only the hardware."""
    folder = hw_dir()
    store = NodeStore(folder)
    with store.locked(write=write) as (node, clock):
        _overlay_real_state(node, folder)
        try:
            yield node, clock
        finally:
            _hardware_only(node)


def new_hardware(folder: Path, node: Node, clock: SimClock) -> None:
    """Write a fresh hardware store for ``node`` into ``folder`` (before the container boots)."""
    folder.mkdir(parents=True, exist_ok=True)
    _hardware_only(node)
    NodeStore(folder).save(node, clock)
