"""Entry point of the shim commands: ``python -m nvls_tui.sim.shim_main DIR CMD [ARGS...]``.

Runs one simulated command against the node stored in ``DIR/state.json`` and behaves like the real
tool: its stdout, stderr and exit status. all_reduce_perf rows are printed and flushed one by one at
the simulated pace, with the lock released in between so other commands can run meanwhile.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from nvls_tui.poll.node_paths import STATE_DIR
from nvls_tui.sim import files
from nvls_tui.sim.clock import SimClock
from nvls_tui.sim.commands import HANG, Output, execute
from nvls_tui.sim.processes import gpu_devices
from nvls_tui.sim.render_nccl import Plan
from nvls_tui.sim.state import Node
from nvls_tui.sim.store import NodeStore

ENV_PREFIXES = ("NCCL_", "CUDA_")
PARENT_PID: int | None = None
"""The shell that ran the shim; set by the fork server (whose child's own parent is the server)."""


def write_now(stream, text: str) -> None:
    """Write and flush at once: a streaming reader sees each line when the tool prints it."""
    if text:
        stream.write(text)
        stream.flush()


def tool_env() -> dict[str, str]:
    """The environment a simulated tool looks at (NCCL's and CUDA's variables)."""
    return {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}


def unwind_on_hangup() -> None:
    """A closed SSH channel sends SIGHUP/SIGTERM: unwind through the finally blocks instead of dying."""
    for signo in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signo, lambda *_: sys.exit(128 + 15))


def write_output(result: Output) -> int:
    """Replay a finished command's writes in the tool's own order; its exit status."""
    for fd, text in result.writes():  # in the tool's own order: a `2>&1` interleaves them as it would
        write_now(sys.stdout if fd == 1 else sys.stderr, text)
    return result.exit_status


def _replay(store: NodeStore, plan: Plan, argv: list[str], speed: float) -> int:
    try:
        for delay, line in plan.steps:
            if delay and speed > 0:
                time.sleep(delay / speed)
            write_now(sys.stdout, line + "\n")
        return plan.exit_status
    except BrokenPipeError:
        return 141
    finally:
        with store.locked() as (node, _clock):
            node.procs.pop(plan.pid, None)


def _real_entry(root: str, node: Node, clock: SimClock, path: str) -> tuple[float, int] | None:
    """A file of the node's state directory as ``stat`` sees it: behind a real sshd the node's files are real
    files under ``root`` (the file shims remap them), written at real times; their mtime is read on the node's
    clock as the in-process simulator reads it (``sim.files.node_mtime``: the age in real seconds)."""
    if path != STATE_DIR and not path.startswith(STATE_DIR + "/"):
        return None  # the runbook only ever asks about its own files
    try:
        info = os.stat(root + path)
    except OSError:
        return None
    written = clock.start + (info.st_mtime - clock.real_start) * clock.speed + clock.offset
    return files.node_mtime(node, written, info.st_mtime, clock.now()), info.st_size


def main(argv: list[str] | None = None) -> int:
    """Run one shim command; returns its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: python -m nvls_tui.sim.shim_main DIR CMD [ARGS...]", file=sys.stderr)
        return 2
    store = NodeStore(args[0])
    command = args[1:]
    env = tool_env()
    unwind_on_hangup()  # the smoke process's cleanup runs
    with store.locked() as (node, clock):
        now = clock.now()
        if command[0] == "stat":
            node.log_command(now, list(command))
            code, out, err = files.stat(node, command[1:], now, lambda path: _real_entry(args[0], node, clock, path))
            return write_output(Output(code, out, err))
        result = execute(node, command, now, env=env)
        speed = clock.speed
        if isinstance(result, Plan):
            node.spawn(pid=result.pid, ppid=PARENT_PID or os.getppid(), user="root", start=now, argv=list(command),
                       cgroup="0::/user.slice/user-0.slice/session-9.scope", role="smoke",
                       devices=gpu_devices(node, ("/dev/nvidiactl", "/dev/nvidia-uvm")),
                       expires=now + result.duration, access="F...m")
    if result is HANG:
        while True:  # a wedged nvidia-smi: never returns; the caller's timeout must end it
            time.sleep(3600)
    if isinstance(result, Plan):
        return _replay(store, result, command, speed)
    assert isinstance(result, Output)
    return write_output(result)


if __name__ == "__main__":
    sys.exit(main())
