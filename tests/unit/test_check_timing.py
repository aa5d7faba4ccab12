"""Issue 28 item 4: a wedged node costs `check` one timeout, its counter never restarts, and a pipe never
cuts a host name.

A node whose poll moves from one slow command to the next used to show a counter that started again at
0 s for each command (the operator reads that as a new wait); the counter now also says how long the node
has been waited on in all. Piped (stderr a file or a pipe), the progress line keeps every host name whole:
a log read later has no width, and a cut name cannot be searched for.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncGenerator, Mapping, Sequence

from nvls_tui.backends.base import Backend, CommandResult, ProcessIdentity, SignalOutcome
from nvls_tui.cli import main
from nvls_tui.headless.check import poll_all
from nvls_tui.model import NodeState
from nvls_tui.poll.probe import SECTIONS
from nvls_tui.sim import fleet as sim_fleet
from nvls_tui.sim.fleet import SimFleet, load_fleet
from tests.waiting import waits_recorded

LONG_HOST = "gpu-node-0001.rack-17.row-c.datacenter-west.cluster.example.org"  # 64 characters


class _TwoSlowCommands(Backend):
    """A node whose poll runs ``first`` for ``hold`` seconds, then ``second``, which never returns."""

    def __init__(self, host: str, first: tuple[str, ...], second: tuple[str, ...], hold: float) -> None:
        self.host = host
        self._first, self._second, self._hold = first, second, hold

    async def snapshot(self) -> NodeState:
        self._begin(self._first)
        await asyncio.sleep(self._hold)
        self._begin(self._second)
        await asyncio.Event().wait()
        raise AssertionError("never")

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env: Mapping[str, str] | None = None, stdin: str | None = None, fence=None) -> CommandResult:
        raise NotImplementedError

    async def stream(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, pty: bool = False,
                     privileged: bool = False, fence=None) -> AsyncGenerator[str, None]:
        raise NotImplementedError
        yield ""  # pragma: no cover - makes this an async generator

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity, fence=None) -> SignalOutcome:
        raise NotImplementedError


def test_piped_progress_keeps_a_long_host_name_whole(monkeypatch):
    import nvls_tui.headless.check as check

    # The progress line's first word after 0.5 s, then every 0.5 s (the product's 2 s and 5 s made this 2.6 s).
    monkeypatch.setattr(check, "QUIET_S", 0.5)
    monkeypatch.setattr(check, "EVERY_S", 0.5)
    stream = io.StringIO()  # not a terminal: plain lines
    node = _TwoSlowCommands(LONG_HOST, ("nvidia-smi", "-q"), ("nvidia-smi", "-q"), hold=0)
    asyncio.run(poll_all([node], 1.2, stream))
    lines = [line for line in stream.getvalue().splitlines() if "waiting for" in line]
    assert lines, stream.getvalue()
    assert all(f"{LONG_HOST} `nvidia-smi -q`" in line for line in lines), lines


def test_the_counter_says_the_whole_wait_when_the_node_moves_on_to_the_next_command(monkeypatch):
    import nvls_tui.headless.check as check

    monkeypatch.setattr(check, "QUIET_S", 0.5)
    monkeypatch.setattr(check, "EVERY_S", 0.5)
    stream = io.StringIO()
    node = _TwoSlowCommands("gpu07", ("journalctl", "-k", "-b"), ("nvidia-smi", "-q"), hold=1.6)
    asyncio.run(poll_all([node], 3.8, stream))
    lines = [line for line in stream.getvalue().splitlines() if "waiting for" in line]
    later = [line for line in lines if "`nvidia-smi -q`" in line]
    assert later, lines
    # The current command's own time, and the node's whole wait, which never goes back.
    totals = [int(m.group(1)) for line in later if (m := re.search(r"gpu07 `nvidia-smi -q` \d+ s \((\d+) s in all\)",
                                                                   line))]
    assert len(totals) == len(later) and totals[0] >= 2, later
    assert totals == sorted(totals), later


def test_a_wedged_node_costs_check_one_timeout_not_two(monkeypatch, capsys):
    # Held by what happened, not by the wall clock (which a loaded machine stretched past any bound): the
    # commands the node was asked (its command log) and the timeouts the simulator waited out for them.
    waits = waits_recorded(monkeypatch)
    fleets: list[SimFleet] = []

    def kept(spec: str, speed: float = 1.0) -> SimFleet:
        fleets.append(load_fleet(spec, speed=speed))
        return fleets[-1]

    monkeypatch.setattr(sim_fleet, "load_fleet", kept)
    assert main(["check", "sim:wedged", "--timeout", "6"]) == 1
    assert "gpu-wedged01 EVIDENCE_MISSING" in capsys.readouterr().out
    assert waits == [6.0]  # one hung command, waited out once for the whole --timeout: not twice, not the deadline
    asked = [argv for _, argv in fleets[0].node("gpu-wedged01").cmdlog]
    queries = [argv for argv in asked if argv[0] == "nvidia-smi"]
    section = {s.name: list(s.argv) for s in SECTIONS}
    assert queries == [section["gpus"]]  # the hung query once; its fallback never run after the timeout
    assert asked.count(section["clock"]) == 1  # the poll went on past it to its last section, and polled once
