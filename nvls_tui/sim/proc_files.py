"""A simulated node's ``/proc/PID/stat`` and ``/proc/PID/cgroup`` files, for the poll's shell builtins.

The poll reads the holders' parents and cgroups with the shell's own ``read`` (no process: issue 37), from
``${NVLS_TUI_PROC:-/proc}``. A shell serving a simulated node (its shims first on PATH, behind a real
sshd) must read the simulated processes there, never this machine's (a simulated PID 4242 is some other
process here, or none): the shims keep ``DIR/proc`` in step with the node's state, written with every
save of it (:class:`~nvls_tui.sim.store.NodeStore`), and the node's environment names it
(``NVLS_TUI_PROC=DIR/proc``; the test rig's sshd sets it beside PATH).

Only what the poll reads is written: the stat record (pid, comm, state, ppid, ..., starttime as field 22)
and the cgroup lines (the ``cgroup`` column of ``ps`` split back at its commas).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from nvls_tui.sim.state import Node, Proc

PROC_DIR = "proc"
"""``DIR/proc``: where the shims keep the simulated node's process files (present only on shim nodes)."""
PROC_ENV = "NVLS_TUI_PROC"
"""The environment variable that points the poll's builtins at a simulated node's ``DIR/proc``."""
CLOCK_TICKS = 100  # USER_HZ: /proc/PID/stat counts start times in these


def stat_line(proc: Proc, boot: float) -> str:
    """``/proc/PID/stat`` of ``proc`` as the kernel writes it (52 fields; starttime the 22nd)."""
    ticks = max(int(round((proc.start - boot) * CLOCK_TICKS)), 0)
    fields = [str(proc.pid), f"({proc.comm})", "S", str(proc.ppid), str(proc.pid), str(proc.pid), "0", "-1",
              "4194560", *["0"] * 12, str(ticks), *["0"] * 30]
    return " ".join(fields) + "\n"


def cgroup_lines(proc: Proc) -> str:
    """``/proc/PID/cgroup``: the ps column's entries one a line (``-``, every entry at the root: ``0::/``)."""
    if proc.cgroup in ("", "-"):
        return "0::/\n"
    return "".join(f"{entry}\n" for entry in proc.cgroup.split(","))


def write_proc(directory: str | os.PathLike[str], node: Node) -> None:
    """Make ``directory`` hold one folder per process of ``node`` (the old ones removed), each with its
    ``stat`` and ``cgroup``; a folder is written whole to a temporary name first, so a reader never
    sees half a process."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    alive = {str(pid) for pid in node.procs}
    for entry in os.listdir(root):
        if entry not in alive:
            shutil.rmtree(root / entry, ignore_errors=True)
    for proc in node.procs.values():
        stat, cgroup = stat_line(proc, node.boot), cgroup_lines(proc)
        folder = root / str(proc.pid)
        if (folder / "stat").is_file() and (folder / "stat").read_text() == stat \
                and (folder / "cgroup").read_text() == cgroup:
            continue
        tmp = root / f".{proc.pid}.{os.getpid()}.tmp"
        tmp.mkdir(exist_ok=True)
        (tmp / "stat").write_text(stat)
        (tmp / "cgroup").write_text(cgroup)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)


__all__ = ["CLOCK_TICKS", "PROC_DIR", "PROC_ENV", "cgroup_lines", "stat_line", "write_proc"]
