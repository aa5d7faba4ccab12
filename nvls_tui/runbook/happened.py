"""What happened to one node, folded from its runbook events: the one fold its readers share.

:meth:`NodeHappened.fold` takes the node's events in order and keeps the facts: each step's status,
duration and message, the step running now, the smoke-test runs and their rows, the holders a wait
reports, Fabric Manager's registration, what the restore put back, and the result. The console's
columns (``views/runbook.NodeRun``, which adds its clock and pane lines) and the headless progress
lines (``headless/repair.ProgressPrinter``) read these facts instead of folding the events each
their own way. Pure: no clock, no text for a screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nvls_tui.model import Holder, SmokeResult
from nvls_tui.runbook.events import (
    CommandFinished,
    CommandStarted,
    FabricProgress,
    HoldersRemaining,
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
from nvls_tui.runbook.steps import STEPS

PENDING, RUNNING, OK, FAILED, SKIPPED = "pending", "running", "ok", "failed", "skipped"
# A step's status as StepFinished says it, in the fold's words (a planned step has not run).
_FINISHED = {"ok": OK, "failed": FAILED, "planned": PENDING}


def bookkeeping(event: RunbookEvent) -> bool:
    """True for the lock's heartbeat commands (every 30 s): audited, left out of every view of the run."""
    return isinstance(event, CommandStarted | CommandFinished) and event.step == HEARTBEAT_STEP


@dataclass
class StepView:
    """One step as far as it got.

    Attributes:
        started: when it started on the reader's clock (the fold has none and leaves it to the reader).
    """

    name: str
    status: str = PENDING
    started: float | None = None
    duration: float | None = None
    message: str = ""


@dataclass
class SmokeView:
    """One all_reduce_perf run.

    Attributes:
        step: the step that ran it (``preflight`` for the re-check of a healthy-looking fabric).
        rows: (size in bytes, out-of-place busbw, in-place busbw) per row, in arrival order.
        result: the judged result once the run ended.
    """

    step: str
    rows: list[tuple[int, float | None, float | None]] = field(default_factory=list)
    result: SmokeResult | None = None


@dataclass
class NodeHappened:
    """What happened to one node's run so far.

    Attributes:
        host: the node.
        steps: every step, in contract order (single actions use their own step names).
        current: the step running now ("" before the first and after the last).
        result: repaired, failed, refused, ... once the run finished; ``message`` its words.
        smokes: every smoke-test run seen (the last one is the one that counts).
        holders: holders still present at verify-no-holders, and whether the runbook waits on them.
        holders_repeated: the last holders report named the same processes, while waiting, as the one
            before it (a wait re-checks every poll; a reader says it once).
        fabric: GPUs per registration state at Fabric Manager's last poll.
        restored: units the restore started again; ``restore_failed`` those it could not;
            ``restored_gpus`` the GPUs it turned persistence mode back on for.
    """

    host: str
    step_names: Sequence[str] = STEPS
    steps: dict[str, StepView] = field(default_factory=dict)
    current: str = ""
    result: str | None = None
    message: str = ""
    smokes: list[SmokeView] = field(default_factory=list)
    holders: tuple[Holder, ...] = ()
    waiting: bool = False
    holders_repeated: bool = False
    fabric: dict[str, int] = field(default_factory=dict)
    restored: tuple[str, ...] = ()
    restore_failed: tuple[str, ...] = ()
    restored_gpus: tuple[int, ...] = ()
    _holder_pids: tuple[int, ...] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.steps:
            self.steps = {name: StepView(name) for name in self.step_names}

    @property
    def smoke(self) -> SmokeView | None:
        """The latest smoke-test run, if any."""
        return self.smokes[-1] if self.smokes else None

    @property
    def done_steps(self) -> int:
        """Steps that ended (ok, failed or skipped)."""
        return sum(s.status in (OK, FAILED, SKIPPED) for s in self.steps.values())

    def fold(self, event: RunbookEvent) -> set[str]:
        """Fold one event of this node in.

        Returns:
            The facts it changed: ``steps`` (a step, the command running, the registration),
            ``plot`` (the smoke runs), ``holders`` and ``summary`` (the result, the restore).
        """
        if bookkeeping(event):
            return set()
        if isinstance(event, RunStarted | CommandFinished):
            return {"steps"}
        if isinstance(event, StepStarted):
            step = self.step(event.step)
            step.status, step.duration = RUNNING, None
            self.current = event.step
            return {"steps"}
        if isinstance(event, StepFinished):
            return self._step_finished(event)
        if isinstance(event, CommandStarted):
            if event.argv and event.argv[0] == "all_reduce_perf":
                self.smokes.append(SmokeView(step=event.step))
                return {"steps", "plot"}
            return {"steps"}
        if isinstance(event, SmokeRow):
            smoke = self._current_smoke(event.step)
            if event.size is None:
                return set()
            # A row parsed without its out-of-place column still has the event's busbw.
            out_of_place = event.out_of_place if event.out_of_place is not None else event.busbw
            smoke.rows.append((event.size, out_of_place, event.in_place))
            return {"plot"}
        if isinstance(event, SmokeFinished):
            self._current_smoke(event.step).result = event.smoke
            return {"plot"}
        if isinstance(event, HoldersRemaining):
            pids = tuple(h.pid for h in event.holders)
            self.holders_repeated = event.waiting and self._holder_pids == pids
            self.holders, self.waiting, self._holder_pids = event.holders, event.waiting, pids
            return {"holders"}
        if isinstance(event, FabricProgress):
            self.fabric = dict(event.states)
            return {"steps"}
        if isinstance(event, Restored):
            self.restored, self.restore_failed = tuple(event.units), tuple(event.failed)
            self.restored_gpus = tuple(event.persistence_gpus)
            return {"summary"}
        if isinstance(event, RunFinished):
            self.result, self.message = event.result, event.message
            self.current, self.waiting = "", False
            for step in self.steps.values():
                if step.status in (PENDING, RUNNING):  # never reached (or cut short): say so
                    step.status = SKIPPED if step.status == PENDING else FAILED
            return {"steps", "summary", "holders"}
        return set()

    def step(self, name: str) -> StepView:
        """Step ``name`` (added after the others when the run names a step not in its list)."""
        if name not in self.steps:
            self.steps[name] = StepView(name)
        return self.steps[name]

    def _step_finished(self, event: StepFinished) -> set[str]:
        step = self.step(event.step)
        step.status = _FINISHED.get(event.status, event.status)
        step.duration, step.message = event.duration, event.message
        if self.current == event.step:
            self.current = ""
        changed = {"steps"}
        if event.step == "verify-no-holders" or (self.waiting and event.status != "ok"):
            self.waiting = False
            changed.add("holders")
        return changed

    def _current_smoke(self, step: str) -> SmokeView:
        """The smoke run rows go to (one is started when a row comes before its command)."""
        if not self.smokes:
            self.smokes.append(SmokeView(step=step))
        return self.smokes[-1]


__all__ = ["FAILED", "OK", "PENDING", "RUNNING", "SKIPPED", "NodeHappened", "SmokeView", "StepView", "bookkeeping"]
