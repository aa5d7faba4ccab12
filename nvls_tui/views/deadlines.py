"""Waits with a deadline in the operator's words, and how long a repair may take. Pure: no Textual.

A waiting step reads ``8× In Progress, 1:31 of 5:00``: where the wait stands, then the time waited
against the deadline. The runbook reports a wait when it begins (``WaitStarted``) and at each
re-check (``FabricProgress`` and ``HoldersRemaining`` with a limit); :func:`wait_of` turns such an
event into a :class:`Wait`, whose line the console redraws on every tick of its clock, and
:class:`WaitReminders` picks the few of those lines a headless run prints. The plan's expected
duration comes from the same deadlines (:func:`duration_line`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nvls_tui.runbook.changes import RunSmoke
from nvls_tui.runbook.events import (
    CommandFinished,
    FabricProgress,
    HoldersRemaining,
    RunbookEvent,
    RunFinished,
    StepFinished,
    StepStarted,
    WaitStarted,
)
from nvls_tui.runbook.fabric import fabric_counts
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.steps import RepairOptions, clock_text
from nvls_tui.sim.clock import SimClock
from nvls_tui.sim.fabric import REG_COMPLETE
from nvls_tui.sim.render_nccl import INIT_TIME, ROW_DELAYS
from nvls_tui.words import count

# A headless run prints a waiting step's line once per this many seconds of waiting, not every poll.
WAIT_LINE_EVERY = 15.0
# One node's repair as it usually goes on an HGX node, in minutes: quiesce, the reset of 8 GPUs and
# 4 NVSwitches, Fabric Manager registering them, the smoke test, the restore.
TYPICAL_MINUTES = (1, 2)
SERIAL_STRATEGIES = ("serial", "canary")
# The simulator's steps outside its two timed waits (preflight, quiesce, the reset, verify-fabric, the restore):
# under 2 s together on the simulator's clock (sim:seed-incident: 1.2 s), so this much is allowed for them.
SIM_OTHER_STEPS = 2.0


def wait_line(state: str, elapsed: float, limit: float) -> str:
    """``8× In Progress, 1:31 of 5:00``: where the wait stands, its time so far, its deadline."""
    clock = f"{clock_text(elapsed)} of {clock_text(limit)}"
    return f"{state}, {clock}" if state else clock


def holders_left(n: int) -> str:
    """``3 holders left``."""
    return f"{count(n, 'holder')} left"


@dataclass(frozen=True, slots=True)
class Wait:
    """One bounded wait of a step, as last reported.

    Attributes:
        host: the node.
        step: the step that waits.
        what: which wait (``fabric``, ``holders``, ``reset``, ``smoke-test``); a later report of the
            same wait updates it rather than starting a new one.
        state: where it stands, in words (``8× In Progress``).
        limit: its deadline, in seconds after it began.
        origin: when it began, on the viewer's clock (the time shown ticks from here).
        command: the wait is one command, and ends when that command does.
    """

    host: str
    step: str
    what: str
    state: str
    limit: float
    origin: float
    command: bool = False

    def elapsed(self, now: float) -> float:
        """Seconds waited at ``now`` (the viewer's clock)."""
        return max(0.0, now - self.origin)

    def overdue(self, now: float) -> bool:
        """True once the deadline has passed (the step is about to fail)."""
        return self.elapsed(now) >= self.limit

    def line(self, now: float) -> str:
        """The wait line at ``now``: ``8× In Progress, 1:31 of 5:00``."""
        return wait_line(self.state, self.elapsed(now), self.limit)


def _fabric_state(event: FabricProgress) -> str:
    counts = fabric_counts(event.states)
    return counts if event.unit == "active" else f"Fabric Manager {event.unit}, {counts}"


def wait_of(event: RunbookEvent, now: float) -> Wait | None:
    """The wait ``event`` reports, seen at ``now`` on the viewer's clock (None: it reports none)."""
    if isinstance(event, WaitStarted):
        return Wait(event.host, event.step, event.wait, event.state, event.limit, now, event.command)
    if isinstance(event, FabricProgress) and event.limit is not None:
        return Wait(event.host, event.step, "fabric", _fabric_state(event), event.limit, now - event.elapsed)
    if isinstance(event, HoldersRemaining) and event.waiting and event.holders and event.limit is not None:
        return Wait(event.host, event.step, "holders", holders_left(len(event.holders)), event.limit,
                    now - event.elapsed)
    return None


def ends_wait(wait: Wait, event: RunbookEvent) -> bool:
    """True when ``event`` ends ``wait``: a step or the run ended, the holders went, its command finished."""
    if isinstance(event, StepStarted | StepFinished | RunFinished):
        return True
    if isinstance(event, HoldersRemaining):
        return wait.what == "holders" and not (event.waiting and event.holders)
    return wait.command and isinstance(event, CommandFinished)


class WaitReminders:
    """Which wait lines a headless run prints: one each time a wait has run another ``every`` seconds.

    A wait that polls reports itself every few seconds; printing each report would bury the other
    progress lines, so only the crossings of ``every``, ``2 × every``, ... are printed (also for a
    wait that is one long command, given :meth:`due` is asked on a timer).
    """

    def __init__(self, every: float = WAIT_LINE_EVERY) -> None:
        self.every = every
        self._waits: dict[str, Wait] = {}
        self._next: dict[str, float] = {}

    def update(self, event: RunbookEvent, now: float) -> None:
        """Fold one event in (``now``: the printer's clock)."""
        host = event.host
        current = self._waits.get(host)
        wait = wait_of(event, now)
        if wait is not None:
            if current is None or (current.step, current.what) != (wait.step, wait.what):
                self._next[host] = self.every  # a new wait: its first line after ``every`` seconds
            self._waits[host] = wait
        elif current is not None and ends_wait(current, event):
            del self._waits[host]
            del self._next[host]

    def waiting(self, host: str) -> Wait | None:
        """The wait ``host`` is in now (None: none)."""
        return self._waits.get(host)

    def due(self, now: float) -> list[tuple[str, str]]:
        """``(host, wait line)`` for each wait that crossed its next multiple of ``every`` by ``now``."""
        lines = []
        for host, wait in self._waits.items():
            elapsed = wait.elapsed(now)
            if elapsed >= self._next[host]:
                lines.append((host, wait.line(now)))
                self._next[host] = (elapsed // self.every + 1) * self.every
        return lines


# ---- how long a repair takes ---------------------------------------------------------------------

def rechecks_first(outcome: NodeOutcome) -> bool:
    """True when the plan smoke-tests the node before anything else (its fabric looks healthy)."""
    preflight = next((s for s in outcome.steps if s.name == "preflight"), None)
    return preflight is not None and any(isinstance(e, RunSmoke) for e in preflight.entries)


def node_worst_case(options: RepairOptions, recheck: bool = False) -> float:
    """Seconds one node's repair takes when every bounded wait runs to its deadline.

    verify-no-holders waits for the holders, and fabric-manager proves them gone once more (with the
    same deadline) before it starts FM; then the reset, FM's registration and the smoke test. A
    fabric that looks healthy is smoke-tested first, twice at worst with a pause between
    (``recheck``). Commands outside these waits take seconds each and are left out.
    """
    seconds = 2 * options.holder_timeout + options.reset_timeout + options.fm_timeout + options.smoke_timeout
    if recheck:
        seconds += 2 * options.smoke_timeout + options.transient_pause
    return seconds


def about(seconds: float) -> str:
    """An upper bound, rounded up as people say it: ``~22 minutes``, ``~3 hours``."""
    minutes = math.ceil(seconds / 60)
    if minutes < 120:
        return f"~{count(minutes, 'minute')}"
    return f"~{math.ceil(seconds / 360) / 10:g} hours"


def simulated_clock(options: RepairOptions) -> SimClock | None:
    """The simulator's clock the run waits on (``repair_options`` of a simulated fleet), or None for real nodes."""
    owner = getattr(options.clock, "__self__", None)
    return owner if isinstance(owner, SimClock) else None


def simulated_seconds(options: RepairOptions, recheck: bool = False) -> float:
    """Seconds of the simulator's clock one simulated node's repair takes, from the simulator's own timings.

    Fabric Manager registers every GPU ``REG_COMPLETE`` seconds after its start, seen at the runbook's next
    poll; the smoke test starts in ``INIT_TIME`` and prints a row after each of ``ROW_DELAYS``; a plan that
    smoke-tests first runs it once more. The other steps take :data:`SIM_OTHER_STEPS` at most.
    """
    smoke = INIT_TIME + sum(ROW_DELAYS)
    return REG_COMPLETE + options.poll_interval + smoke * (2 if recheck else 1) + SIM_OTHER_STEPS


def _seconds(seconds: float) -> str:
    """``about 15 s``: rounded up to 5 s (a minute and more as ``about 2 minutes``)."""
    rounded = math.ceil(seconds / 5) * 5
    return f"about {rounded} s" if rounded < 60 else f"about {count(math.ceil(seconds / 60), 'minute')}"


def _simulated_usually(options: RepairOptions, clock: SimClock, strategy: str, rechecks: Sequence[bool]) -> str:
    """``simulated: about 15 s on the simulator's clock``: the usual time said for what it is, with the real HGX
    time beside it (a simulated repair must not promise minutes it does not take, nor pass for a real one)."""
    each = [simulated_seconds(options, r) for r in rechecks] or [simulated_seconds(options)]
    serial = strategy in SERIAL_STRATEGIES and len(each) > 1
    text = f"simulated: {_seconds(max(each))} on the simulator's clock"
    if serial:
        text += f" per node, {_seconds(sum(each))} in all, one node after another"
    elif len(each) > 1:
        text += ", the nodes side by side"
    if clock.speed > 0 and clock.speed != 1:
        text += f" (which runs {clock.speed:g}× real time)"
    low, high = TYPICAL_MINUTES
    return f"{text}; a real HGX node usually takes {low}–{high} minutes"


def duration_line(options: RepairOptions, strategy: str, rechecks: Sequence[bool]) -> str:
    """How long the repair of the nodes takes: usually, and at most (every wait to its deadline).

    On a simulated fleet (the run waits on the simulator's clock) "usually" is the simulator's own time,
    said to be simulated (:func:`simulated_seconds`).

    Args:
        options: the run's deadlines.
        strategy: parallel, serial or canary; serial and canary repair one node after another, so
            their times add up, while parallel nodes take as long as the slowest.
        rechecks: one per node, True where its plan smoke-tests first (:func:`rechecks_first`).
    """
    worst = [node_worst_case(options, r) for r in rechecks] or [node_worst_case(options)]
    n = len(worst)
    low, high = TYPICAL_MINUTES
    clock = simulated_clock(options)
    if clock is not None:
        usually = _simulated_usually(options, clock, strategy, rechecks)
        total = sum(worst) if strategy in SERIAL_STRATEGIES and n > 1 else max(worst)
    elif strategy in SERIAL_STRATEGIES and n > 1:
        usually = f"usually about {low}–{high} minutes per node, {low * n}–{high * n} minutes in all, one node after another"
        total = sum(worst)
    else:
        usually = f"usually about {low}–{high} minutes" + (", the nodes side by side" if n > 1 else "")
        total = max(worst)
    return f"{usually}; at most {about(total)} if every wait runs to its deadline"


def deadlines_line(options: RepairOptions, rechecked: Sequence[str] = ()) -> str:
    """Each wait's deadline, so the operator knows when to worry: ``holders 2:00 (checked twice), ...``.

    ``rechecked`` names the nodes whose plan smoke-tests first (a healthy-looking fabric).
    """
    text = (f"holders {clock_text(options.holder_timeout)} (checked twice), reset {clock_text(options.reset_timeout)}, "
            f"Fabric Manager {clock_text(options.fm_timeout)}, smoke test {clock_text(options.smoke_timeout)}")
    if rechecked:
        text += (f"; first a smoke-test re-check of {', '.join(rechecked)} (the fabric looks healthy): "
                 f"{clock_text(options.smoke_timeout)}, up to twice")
    return text


__all__ = ["TYPICAL_MINUTES", "WAIT_LINE_EVERY", "Wait", "WaitReminders", "about", "deadlines_line", "duration_line",
           "ends_wait", "holders_left", "node_worst_case", "rechecks_first", "simulated_clock", "simulated_seconds",
           "wait_line", "wait_of"]
