"""The stand-in tools of a lab node: what the container cannot have for real.

``nvidia-smi``, ``nv-fabricmanager --version``, ``lspci``, ``all_reduce_perf`` and ``journalctl -k``
run the simulator's renderers (the same output, errors and exit statuses the in-process simulator
gives) against the node's hardware, with the node's real holders laid over it
(:mod:`nvls_tui.lab.hardware`). Like the real tools, ``nvidia-smi`` and ``all_reduce_perf`` hold the
GPU device files open while they run, so a reset meets them as it would meet the real ones.

Every other tool on a lab node is the real one: systemd, journald (all but the kernel transport),
procps, psmisc, coreutils.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
import time
from collections.abc import Iterator

from nvls_tui.lab.hardware import hardware
from nvls_tui.sim.commands import HANG, Output, execute
from nvls_tui.sim.render_nccl import Plan
from nvls_tui.sim.shim_main import tool_env, unwind_on_hangup, write_now, write_output

STAND_INS = ("nvidia-smi", "nv-fabricmanager", "lspci", "all_reduce_perf", "journalctl-kernel")


@contextlib.contextmanager
def holding(paths: list[str], mapped: bool = False) -> Iterator[None]:
    """Keep ``paths`` open for the duration: a real process holding device files.

    Opened read-write, as CUDA and NVML open the devices (fuser's ``F``); with ``mapped``, the first
    page of each is mapped too, as the long-lived daemons map theirs (fuser's ``m``).
    """
    fds, maps = [], []
    try:
        for path in paths:
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDWR)
                fds.append(fd)
                if mapped:
                    maps.append(mmap.mmap(fd, mmap.PAGESIZE))
        yield
    finally:
        for area in maps:
            area.close()
        for fd in fds:
            os.close(fd)


def gpu_files() -> list[str]:
    """The GPU device files of this node, and the control file, as a CUDA program opens them."""
    names = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia") and n[6:].isdigit())
    return ["/dev/nvidiactl", *(f"/dev/{n}" for n in names)]


def _replay(plan: Plan) -> int:
    """Print a smoke run's lines at the pace the plan gives (the hardware lock is not held)."""
    try:
        for delay, line in plan.steps:
            if delay:
                time.sleep(delay)
            write_now(sys.stdout, line + "\n")
        return plan.exit_status
    except BrokenPipeError:
        return 141


def main(tool: str, args: list[str]) -> int:
    """Run one stand-in tool; returns its exit status."""
    argv = ["journalctl", *args] if tool == "journalctl-kernel" else [tool, *args]
    env = tool_env()
    unwind_on_hangup()  # the device files close
    opens = gpu_files() if tool in ("nvidia-smi", "all_reduce_perf") else []
    with holding(opens):
        with hardware() as (node, clock):
            result = execute(node, argv, clock.now(), env=env)
        if result is HANG:
            while True:  # a wedged nvidia-smi never returns: the caller's timeout must end it
                time.sleep(3600)
        if isinstance(result, Plan):
            return _replay(result)
        assert isinstance(result, Output)
        return write_output(result)


def script(tool: str, python: str, module: str = "nvls_tui.lab.tools") -> str:
    """The executable a lab node carries for ``tool``: its file name is what ps and fuser show.

    Args:
        tool: the program it stands in for.
        python: the interpreter (the host's, which the node's overlay root shares).
        module: ``nvls_tui.lab.tools`` (one-shot tools) or ``nvls_tui.lab.daemons`` (long-lived).
    """
    source = module.replace(".", "/") + ".py"
    return (f"#!{python}\n"
            f'"""nvls-tui lab stand-in for {tool} (simulated hardware; see {source})."""\n'
            "import sys\n"
            f"from {module} import main\n"
            f"sys.exit(main({tool!r}, sys.argv[1:]))\n")
