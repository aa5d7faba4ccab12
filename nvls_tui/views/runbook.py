"""What one node's column shows, folded from runbook events. Pure: no Textual here.

The console hands every :mod:`nvls_tui.runbook.events` event of a node to :meth:`NodeRun.apply`,
which updates the step states, the smoke-test rows, the remaining holders and the result, and
returns which parts of the column need a redraw. The same object drives the live screen, the
snapshot tests (a fixed script of events) and the single actions' side pane.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.backends.base import Backend, join_argv
from nvls_tui.model import Holder, SmokeResult
from nvls_tui.runbook.events import (
    CommandFinished,
    CommandStarted,
    FabricProgress,
    HoldersRemaining,
    Note,
    OutputLine,
    ProcessSignalled,
    Restored,
    RunbookEvent,
    RunFinished,
    RunStarted,
    SmokeFinished,
    SmokeRow,
    StepFinished,
    StepStarted,
)
from nvls_tui.runbook.lock import HEARTBEAT_STEP
from nvls_tui.runbook.steps import STEPS, RepairOptions
from nvls_tui.views.deadlines import Wait, ends_wait, wait_line, wait_of
from nvls_tui.words import count, verb

PENDING, RUNNING, OK, FAILED, SKIPPED = "pending", "running", "ok", "failed", "skipped"

# Output lines of one finished command shown in the pane; the whole output is in the audit log.
COMMAND_OUTPUT_LINES = 24
# A command line longer than this is shortened on screen (the audit log keeps the exact argv).
COMMAND_WIDTH = 110


@dataclass
class StepView:
    """One step as the step list shows it."""

    name: str
    status: str = PENDING
    started: float | None = None
    duration: float | None = None
    message: str = ""


@dataclass
class SmokeView:
    """One all_reduce_perf run as the bandwidth plot draws it.

    Attributes:
        step: the step that ran it (``preflight`` for the re-check of a healthy-looking fabric).
        rows: (size in bytes, out-of-place busbw, in-place busbw) per row, in arrival order.
        result: the judged result once the run ended.
    """

    step: str
    rows: list[tuple[int, float | None, float | None]] = field(default_factory=list)
    result: SmokeResult | None = None


@dataclass
class PaneLine:
    """One line for the output pane; ``kind`` picks its style (cmd, out, ok, err, note, warn)."""

    text: str
    kind: str = "out"


def short_command(argv: Sequence[str], env: dict[str, str] | None = None, width: int = COMMAND_WIDTH) -> str:
    """The command as a shell line, shortened in the middle when it is too long for a pane."""
    text = join_argv(list(argv), env or None)
    if len(text) <= width:
        return text
    keep = width - 3
    return text[: keep * 2 // 3] + " … " + text[-(keep - keep * 2 // 3):]


@dataclass
class NodeRun:
    """The state of one node's run, folded from its events.

    Attributes:
        host: the node.
        steps: every step, in contract order (single actions use their own step names).
        current: the step running now ("" before the first and after the last).
        command: the command running now, and when it started (the column's clock).
        result: repaired, failed, refused, ... once the run finished.
        smokes: every smoke-test run seen (the last one is the one on the plot).
        holders: holders still present at verify-no-holders, and whether the runbook waits on them.
        wait: the bounded wait of the running step, if it is in one (its line ticks with the clock).
        restored: units the restore started again; ``restore_failed`` those it could not.
    """

    host: str
    step_names: Sequence[str] = STEPS
    steps: dict[str, StepView] = field(default_factory=dict)
    current: str = ""
    command: str = ""
    command_started: float | None = None
    started: float | None = None
    finished: float | None = None
    result: str | None = None
    message: str = ""
    smokes: list[SmokeView] = field(default_factory=list)
    holders: tuple[Holder, ...] = ()
    waiting: bool = False
    restored: tuple[str, ...] = ()
    restore_failed: tuple[str, ...] = ()
    fabric: dict[str, int] = field(default_factory=dict)
    wait: Wait | None = None
    streamed: bool = False
    last_output: dict[tuple[str, ...], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.steps:
            self.steps = {name: StepView(name) for name in self.step_names}

    @property
    def running(self) -> bool:
        """True between the run's start and its end."""
        return self.started is not None and self.result is None

    @property
    def smoke(self) -> SmokeView | None:
        """The latest smoke-test run, if any."""
        return self.smokes[-1] if self.smokes else None

    @property
    def done_steps(self) -> int:
        """Steps that ended (ok, failed or skipped)."""
        return sum(s.status in (OK, FAILED, SKIPPED) for s in self.steps.values())

    def elapsed(self, now: float) -> float:
        """Seconds since the run started (to its end once it ended)."""
        if self.started is None:
            return 0.0
        return max(0.0, (self.finished if self.finished is not None else now) - self.started)

    def apply(self, event: RunbookEvent, now: float) -> tuple[set[str], list[PaneLine]]:
        """Fold one event in.

        Args:
            event: a runbook event of this node.
            now: the column's clock (the sim clock for simulated fleets, so snapshots are fixed).

        Returns:
            The parts that changed (``steps``, ``plot``, ``holders``, ``summary``) and the lines
            for the output pane.
        """
        changed: set[str] = set()
        lines: list[PaneLine] = []
        if isinstance(event, (CommandStarted, CommandFinished)) and event.step == HEARTBEAT_STEP:
            return changed, lines  # the lock's heartbeat: in the audit log, not in the step on screen
        if self._follow_wait(event, now):
            changed.add("steps")
        if isinstance(event, RunStarted):
            self.started = now
            changed.add("steps")
        elif isinstance(event, StepStarted):
            step = self._step(event.step)
            step.status, step.started, step.duration = RUNNING, now, None
            self.current = event.step
            changed.add("steps")
            lines.append(PaneLine(f"── {event.step} ──", "step"))
        elif isinstance(event, StepFinished):
            step = self._step(event.step)
            step.status = {"ok": OK, "failed": FAILED, "planned": PENDING}.get(event.status, event.status)
            step.duration = event.duration
            step.message = event.message
            if self.current == event.step:
                self.current = ""
            if event.step == "verify-no-holders" or (self.waiting and event.status != "ok"):
                self.waiting = False
                changed.add("holders")
            changed.add("steps")
            if event.status == "failed":
                lines.append(PaneLine(f"✖ {event.step} failed: {event.message}", "err"))
            elif event.message and event.status == "ok":
                lines.append(PaneLine(f"✔ {event.message}", "ok"))
        elif isinstance(event, CommandStarted):
            self.command, self.command_started, self.streamed = short_command(event.argv, event.env), now, False
            changed.add("steps")
            lines.append(PaneLine(f"$ {self.command}", "cmd"))
            if event.argv and event.argv[0] == "all_reduce_perf":
                self.smokes.append(SmokeView(step=event.step))
                changed.add("plot")
        elif isinstance(event, OutputLine):
            self.streamed = True
            lines.append(PaneLine(event.line, "out"))
        elif isinstance(event, CommandFinished):
            lines += self._finished_lines(event)
            self.command, self.command_started = "", None
            changed.add("steps")
        elif isinstance(event, SmokeRow):
            smoke = self._current_smoke(event.step)
            if event.size is not None:
                smoke.rows.append((event.size, event.row.get("oop_busbw", event.busbw), event.row.get("ip_busbw")))
                changed.add("plot")
        elif isinstance(event, SmokeFinished):
            self._current_smoke(event.step).result = event.smoke
            changed.add("plot")
            verdict = "passed" if event.smoke.passed else "FAILED"
            avg = f"{event.smoke.avg_busbw:.1f} GB/s" if event.smoke.avg_busbw is not None else "no average"
            lines.append(PaneLine(f"smoke test {verdict}: {avg}" + (f" ({'; '.join(event.smoke.errors)})"
                                                                     if event.smoke.errors else ""),
                                  "ok" if event.smoke.passed else "err"))
        elif isinstance(event, HoldersRemaining):
            self.holders, self.waiting = event.holders, event.waiting
            changed.add("holders")
            n = len(event.holders)
            lines.append(PaneLine(event.message or f"{count(n, 'holder')} {verb(n, 'remains')}",
                                  "warn" if n else "note"))
        elif isinstance(event, ProcessSignalled):
            lines.append(PaneLine(f"{event.signal} {event.pid} ({event.holder_kind}: "
                                  f"{event.command[:60]}) → {event.outcome}", "note"))
        elif isinstance(event, FabricProgress):
            self.fabric = dict(event.states)
            changed.add("steps")
            states = ", ".join(f"{k} ×{v}" for k, v in event.states.items()) or "no GPU answered"
            waited = f" ({wait_line('', event.elapsed, event.limit)})" if event.limit is not None else ""
            lines.append(PaneLine(f"Fabric Manager {event.unit}; {states}{waited}", "note"))
        elif isinstance(event, Restored):
            self.restored, self.restore_failed = tuple(event.units), tuple(event.failed)
            changed.add("summary")
            if event.failed:  # a clean restore is told by the step's own ✔ line
                lines.append(PaneLine(f"could NOT restore {', '.join(event.failed)}", "err"))
        elif isinstance(event, Note):
            lines.append(PaneLine(event.message, {"error": "err", "warning": "warn"}.get(event.level, "note")))
        elif isinstance(event, RunFinished):
            self.result, self.message, self.finished = event.result, event.message, now
            self.current, self.command, self.waiting = "", "", False
            for step in self.steps.values():
                if step.status in (PENDING, RUNNING):  # never reached (or cut short): say so
                    step.status = SKIPPED if step.status == PENDING else FAILED
            changed |= {"steps", "summary", "holders"}
            good = event.result in ("repaired", "skipped")  # skipped: healthy, left alone
            lines.append(PaneLine(f"⇒ {event.result}: {event.message}", "ok" if good else "err"))
        return changed, lines

    def _follow_wait(self, event: RunbookEvent, now: float) -> bool:
        """Start, update or end the running step's wait; True when the step list must be redrawn."""
        wait = wait_of(event, now)
        if wait is not None:
            self.wait = wait
            return True
        if self.wait is not None and ends_wait(self.wait, event):
            self.wait = None
            return True
        return False

    def _current_smoke(self, step: str) -> SmokeView:
        """The smoke run rows go to (one is started when a row comes before its command)."""
        if not self.smokes:
            self.smokes.append(SmokeView(step=step))
        return self.smokes[-1]

    def _step(self, name: str) -> StepView:
        if name not in self.steps:
            self.steps[name] = StepView(name)
        return self.steps[name]

    def _finished_lines(self, event: CommandFinished) -> list[PaneLine]:
        lines: list[PaneLine] = []
        repeated = self.last_output.get(event.argv) == event.output
        self.last_output[event.argv] = event.output
        if not self.streamed and event.output.strip() and repeated:
            # A wait loop asks the same thing every poll: say so rather than print it again.
            lines.append(PaneLine("  (same output as the last time)", "note"))
        elif not self.streamed and event.output.strip():
            out = event.output.rstrip("\n").splitlines()
            for text in out[:COMMAND_OUTPUT_LINES]:
                lines.append(PaneLine(text, "out"))
            if len(out) > COMMAND_OUTPUT_LINES:
                lines.append(PaneLine(f"… {len(out) - COMMAND_OUTPUT_LINES} more lines in the audit log", "note"))
        if event.exit_status is None:
            lines.append(PaneLine(f"  did not finish: {event.error or 'no exit status'} ({event.duration:.1f} s)", "err"))
        elif event.exit_status != 0:
            lines.append(PaneLine(f"  exit {event.exit_status} ({event.duration:.1f} s)", "warn"))
        return lines


@dataclass(frozen=True)
class Approval:
    """What the operator approved on the plan screen.

    Attributes:
        hosts: the nodes to repair, in order.
        strategy: parallel, serial or canary.
        bases: each node's plan basis; the repair refuses a node that drifted from it.
        put_back_manual: the restore starts again what was stopped by hand in this console.
    """

    hosts: tuple[str, ...]
    strategy: str = "parallel"
    bases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    put_back_manual: bool = True


def repair_options(backends: Sequence[Backend], timeout: float | None = None, **overrides: object) -> RepairOptions:
    """RepairOptions for the console.

    A simulated fleet runs on its own clock (faster than real time, or frozen in tests): the runbook
    then waits and times itself in simulated seconds, so the durations on screen are the node's.
    """
    base = RepairOptions()
    kwargs: dict[str, object] = {"command_timeout": timeout or base.command_timeout}
    clocks = {id(getattr(b, "fleet", None)): getattr(b, "fleet", None) for b in backends}
    if backends and all(b.simulated for b in backends) and len(clocks) == 1:
        fleet = next(iter(clocks.values()))
        if fleet is not None:
            kwargs.update(sleep=fleet.clock.sleep, clock=fleet.clock.now)
    kwargs.update(overrides)
    return RepairOptions(**kwargs)  # type: ignore[arg-type]


__all__ = ["FAILED", "Approval", "OK", "PENDING", "RUNNING", "SKIPPED", "NodeRun", "PaneLine", "SmokeView", "StepView",
           "repair_options", "short_command"]
