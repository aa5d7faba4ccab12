"""``check --via slurm``: the poll of many nodes through one ``srun`` instead of one SSH session each.

The same probe script as the SSH path (:func:`nvls_tui.poll.probe_script.probe_script`) runs once per node
(``srun -N COUNT --ntasks-per-node=1 -w NODES --label``); srun's label (``3: ``) tells the nodes'
lines apart, the script's first line names its node, and each node's lines are a recording replayed
through the same poll as every transport (``backends.recorded``, ``poll.once``), so both paths give the
same state of the same node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from nvls_tui.backends.recorded import RecordedBackend
from nvls_tui.model import NodeState
from nvls_tui.poll.once import poll_once
from nvls_tui.poll.probe import MARK, new_nonce
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.scheduler.slurm import Slurm
from nvls_tui.textsafe import one_line

# The line each task prints first: which node it runs on.
HOST_MARK = "@@nvls-tui-node"


def srun_argv(nodes: Sequence[str], script: str, timeout: float) -> list[str]:
    """One task on each node, labelled, bounded in time, running ``script`` with sh."""
    minutes = max(1, int(timeout // 60) + 1)
    return ["srun", "--quiet", "--label", "-N", str(len(nodes)), "--ntasks-per-node=1", "-w", ",".join(nodes),
            # --immediate: a node that cannot take the task now (drained, fully allocated) is reported,
            # not waited for until the deadline.
            f"--time={minutes}", "--immediate=10", "--job-name=nvls-tui-check", "sh", "-c",
            f'echo "{HOST_MARK} $(hostname -s)"; {script}']


def split_by_label(text: str) -> dict[int, list[str]]:
    """srun ``--label`` output (``0: line``) as each task's lines, in order."""
    tasks: dict[int, list[str]] = {}
    for line in text.splitlines():
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdecimal():
            tasks.setdefault(int(label.strip()), []).append(rest)
    return tasks


async def node_state(host: str, lines: list[str], nonce: str, cap: int, deadline: float = 60.0) -> NodeState:
    """One task's lines, replayed through the one poll every transport goes through (``poll.once``):
    a recording of the script's output, read as the SSH path reads it live."""
    recording = RecordedBackend(host, "\n".join(lines) + "\n", mark=f"{MARK}-{nonce}", cap=cap)
    state = await poll_once(recording, deadline)
    return state.replace(polled_at=time.time()) if state.reachable else state


async def poll_via_srun(slurm: Slurm, nodes: Sequence[str], timeout: float, cap: int,
                        command_timeout: float | None = None) -> list[NodeState]:
    """Every node's state from one srun; a node that did not answer is unreachable with srun's words.

    Args:
        timeout: seconds the whole srun may take.
        cap: characters a section may print.
        command_timeout: seconds each command may take on the node (``--timeout``): a hung one ends
            alone there (its section timed out), since nothing here watches a node's sections as they
            come and a hung command would otherwise hold every node's answer until ``timeout``.
    """
    nonce = new_nonce()
    argv = srun_argv(nodes, probe_script(False, nonce, cap=cap, section_timeout=command_timeout), timeout)
    try:
        proc = await asyncio.create_subprocess_exec(*argv, env=slurm.env(), stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:  # before OSError, which it is a kind of: srun is stopped, not left running
        proc.kill()
        await proc.wait()
        return [NodeState(n, reachable=False, error=f"srun did not finish within {timeout:.0f} s") for n in nodes]
    except OSError as exc:
        return [NodeState(n, reachable=False, error=f"srun could not be run: {exc.strerror or exc}") for n in nodes]
    by_host: dict[str, list[str]] = {}
    for lines in split_by_label(out.decode(errors="replace")).values():
        if lines and lines[0].startswith(HOST_MARK + " "):
            by_host[lines[0].split()[1]] = lines[1:]
    said = one_line(err.decode(errors="replace"), 200) or f"srun exited {proc.returncode}"
    return [await node_state(n, by_host[n], nonce, cap, timeout) if n in by_host else
            NodeState(n, reachable=False, error=f"no answer through srun: {said}") for n in nodes]


__all__ = ["HOST_MARK", "node_state", "poll_via_srun", "split_by_label", "srun_argv"]
