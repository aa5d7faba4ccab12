"""The stand-in tools of a lab node: what the container cannot have for real.

``nvidia-smi``, ``nv-fabricmanager --version``, ``lspci`` and ``all_reduce_perf`` run the simulator's
renderers (the same output, errors and exit statuses the in-process simulator
gives) against the node's hardware, with the node's real holders laid over it
(:mod:`nvls_tui.lab.hardware`). Like the real tools, ``nvidia-smi`` and ``all_reduce_perf`` hold the
GPU device files open while they run, so a reset meets them as it would meet the real ones. The kernel
lines the hardware logs are handed to the node's real journal file and ring buffer file after each run
(:mod:`nvls_tui.lab.kernel_log`; ``kernel-log`` is that module's command on the node), where the real
``journalctl -k`` and util-linux ``dmesg --file`` read them.

Every other tool on a lab node is the real one: systemd, journald, journalctl, dmesg, procps, psmisc,
coreutils.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from nvls_tui.lab import kernel_log
from nvls_tui.lab.devices import gpu_files, holding
from nvls_tui.lab.hardware import hardware
from nvls_tui.sim.commands import HANG, Output, execute
from nvls_tui.sim.processes import advance
from nvls_tui.sim.render_nccl import Plan
from nvls_tui.sim.shim_main import tool_env, unwind_on_hangup, write_now, write_output
from nvls_tui.sim.state import Node

STAND_INS = ("nvidia-smi", "nv-fabricmanager", "lspci", "all_reduce_perf", "kernel-log")


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


def _hand_on(node: Node, now: float) -> None:
    """Hand the kernel lines this run logged to the node's journal and ring buffer (root, in a lab node).

    A failure leaves them pending: the next reader's ``kernel-log sync`` says why, and fails.
    """
    if kernel_log.in_lab_node() and os.geteuid() == 0:
        with contextlib.suppress(kernel_log.KernelLogError, OSError):
            kernel_log.sync(node, now)


KERNEL_LOG_USAGE = "usage: kernel-log sync | print TEXT | rotate | wrap EPOCH-SECONDS\n"


def kernel_log_main(args: list[str]) -> int:
    """``kernel-log``: the node's kernel log, by hand (the wrappers of journalctl -k and dmesg sync first).

    ``sync`` hands on what the hardware logged (a user other than root has nothing to write: 0);
    ``print TEXT`` has the kernel log TEXT now; ``rotate`` archives the journal file as journald would;
    ``wrap EPOCH`` drops the ring buffer's records logged before EPOCH.
    """
    verb, rest = (args[0], args[1:]) if args else ("", [])
    shapes = {"sync": 0, "print": 1, "rotate": 0, "wrap": 1}
    if shapes.get(verb) != len(rest):
        sys.stderr.write(KERNEL_LOG_USAGE)
        return 2
    if os.geteuid() != 0:
        if verb == "sync":
            return 0
        sys.stderr.write(f"kernel-log: {verb} needs root\n")
        return 1
    try:
        since = float(rest[0]) if verb == "wrap" else 0.0
    except ValueError:
        sys.stderr.write(f"kernel-log: not a time in epoch seconds: {rest[0]!r}\n")
        return 2
    failed: Exception | None = None
    try:
        with hardware() as (node, clock):
            now = clock.now()
            advance(node, now)
            if verb == "print":
                node.log_kernel(now, rest[0])
            try:  # a line that could not be handed on stays logged, and pending
                kernel_log.sync(node, now)
                if verb == "rotate":
                    kernel_log.rotate()
                elif verb == "wrap":
                    kernel_log.wrap(since)
            except (kernel_log.KernelLogError, OSError) as exc:
                failed = exc
    except OSError as exc:
        failed = exc
    if failed is not None:
        sys.stderr.write(f"kernel-log: {failed}\n")
        return 1
    return 0


def main(tool: str, args: list[str]) -> int:
    """Run one stand-in tool; returns its exit status."""
    if tool == "kernel-log":
        return kernel_log_main(args)
    argv = [tool, *args]
    env = tool_env()
    unwind_on_hangup()  # the device files close
    opens = gpu_files() if tool in ("nvidia-smi", "all_reduce_perf") else []
    with holding(opens):
        with hardware() as (node, clock):
            result = execute(node, argv, clock.now(), env=env)
            _hand_on(node, clock.now())
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
