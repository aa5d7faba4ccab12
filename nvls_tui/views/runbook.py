"""What one node's column shows, folded from runbook events. Pure: no Textual here.

The console hands every :mod:`nvls_tui.runbook.events` event of a node to :meth:`NodeRun.apply`.
The facts (step states, smoke-test rows, remaining holders, result) are the runbook's one fold,
:class:`nvls_tui.runbook.happened.NodeHappened`; a column adds its clock, the command running now and
the output pane's lines, and learns which parts need a redraw. The same object drives the live screen, the
snapshot tests (a fixed script of events) and the single actions' side pane.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from nvls_tui.backends.base import Backend, join_argv
from nvls_tui.runbook.describe import aborted_message, describe, smoke_lines
from nvls_tui.runbook.events import (
    FABRIC_POLL,
    CommandFinished,
    CommandStarted,
    FabricProgress,
    OutputLine,
    RunbookEvent,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from nvls_tui.runbook.happened import (
    FAILED,
    OK,
    PENDING,
    RUNNING,
    SKIPPED,
    NodeHappened,
    SmokeView,
    StepView,
    bookkeeping,
)
from nvls_tui.runbook.steps import RepairOptions
from nvls_tui.views.deadlines import Wait, ends_wait, wait_of

# Output lines of one finished command shown in the pane; the whole output is in the audit log.
COMMAND_OUTPUT_LINES = 24
# A command line longer than this is shortened on screen (the audit log keeps the exact argv).
COMMAND_WIDTH = 110


# The key of the registration wait's line: each poll rewrites it in place rather than adding one.
FABRIC_LINE = "fabric"


@dataclass
class PaneLine:
    """One line for the output pane; ``kind`` picks its style (cmd, out, ok, err, note, warn).

    ``styled``: an event's line as :func:`nvls_tui.runbook.describe.describe` gives it (a ``Text`` with its own
    bold parts, node text already data), which the pane draws under the kind's style; None: ``text`` as it is.

    ``key``: a line that replaces the pane's last line when that line has the same key (a wait's
    progress, rewritten every poll); "" for a line that is always added.
    """

    text: str
    kind: str = "out"
    key: str = ""
    styled: Text | None = None  # the line as runbook/describe words it (its ``plain`` is ``text``): drawn as is


def short_command(argv: Sequence[str], env: dict[str, str] | None = None, width: int = COMMAND_WIDTH) -> str:
    """The command as a shell line, shortened in the middle when it is too long for a pane."""
    return middle_cut(join_argv(list(argv), env or None), width)


def middle_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by `` … `` when it is longer.

    The end stays: of a command it is usually what the command acts on (``rm -f A B`` cut at its end read
    as ``rm -f A A`` when B was A plus a suffix).
    """
    if len(text) <= width:
        return text
    if width < 8:
        return text[: max(width - 1, 0)] + "…"
    keep = width - 3
    return text[: keep * 2 // 3] + " … " + text[-(keep - keep * 2 // 3):]


REGISTRATION_STEP = "fabric-manager"


def registration_poll(event: CommandStarted) -> bool:
    """True for the commands Fabric Manager's registration wait sends every few seconds (FM's unit state, the
    GPUs' fabric query): their answers are summed up by the wait's one updating line while it runs. The runbook
    marks them where it sends them (``CommandStarted.purpose``), never known here by their words."""
    return event.step == REGISTRATION_STEP and event.purpose == FABRIC_POLL


@dataclass
class NodeRun(NodeHappened):
    """One node's column: what happened (:class:`NodeHappened`) on the column's clock.

    Attributes:
        command: the command running now, and when it started (the column's clock).
        started: when the run started; ``finished`` when it ended (the column's clock).
        wait: the bounded wait of the running step, if it is in one (its line ticks with the clock).
    """

    command: str = ""
    command_started: float | None = None
    started: float | None = None
    finished: float | None = None
    wait: Wait | None = None
    streamed: bool = False
    last_output: dict[tuple[str, ...], str] = field(default_factory=dict)
    last_status: dict[tuple[str, ...], int | None] = field(default_factory=dict)
    # A registration wait's poll command, held until its answer shows whether it is news.
    held: PaneLine | None = None
    held_poll: bool = False  # the held command is one of the registration's polls
    # The registration wait's last answer to each of its polls (the command and what it printed): the wait is
    # one updating line while it runs, and these are printed once, when its step ends (issue 38 item 7).
    deferred: dict[tuple[str, ...], list[PaneLine]] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        """True between the run's start and its end."""
        return self.started is not None and self.result is None

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
        if bookkeeping(event):
            return set(), []  # the lock's heartbeat: in the audit log, not in the step on screen
        changed = {"steps"} if self._follow_wait(event, now) else set()
        changed |= self.fold(event)
        return changed, self._pane(event, now)

    def _pane(self, event: RunbookEvent, now: float) -> list[PaneLine]:
        """The column's own state (its clock, the command running) and the pane's lines for ``event``."""
        lines: list[PaneLine] = []
        if isinstance(event, RunStarted):
            self.started = now
        elif isinstance(event, StepStarted):
            self.steps[event.step].started = now
        elif isinstance(event, StepFinished):
            lines += self._flush_deferred()
        elif isinstance(event, CommandStarted):
            self.command, self.command_started, self.streamed = short_command(event.argv, event.env), now, False
            line = PaneLine(f"$ {self.command}", "cmd")
            if self._polling(event.argv) or registration_poll(event):
                self.held, self.held_poll = line, registration_poll(event)  # shown only if its answer is news
            else:
                lines.append(line)
        elif isinstance(event, OutputLine):
            self.streamed = True
            lines.append(PaneLine(event.line, "out"))
        elif isinstance(event, CommandFinished):
            held, self.held = self.held, None
            if held is not None and self.held_poll and event.exit_status == 0:
                self._finished_lines(event)  # remembered; the wait's line says where it stands
                self.deferred[event.argv] = [held, *self._output_lines(event.output)]
            elif not (held is not None and self._same_answer(event)):
                lines += ([held] if held is not None else []) + self._finished_lines(event)
            self.command, self.command_started = "", None
        elif isinstance(event, FabricProgress):  # describe's line, as the wait's one updating line
            lines += [PaneLine(said.text.plain, said.tone, FABRIC_LINE, styled=said.text) for said in describe(event).pane]
        elif isinstance(event, RunFinished):
            lines += self._flush_deferred()
            self.finished, self.command = now, ""
        # What the event says (runbook/describe: worded once for the pane, the progress lines and the report);
        # a command's own lines are the column's, above.
        if not isinstance(event, CommandStarted | CommandFinished | OutputLine | FabricProgress):
            lines += [PaneLine(said.text.plain, said.tone, styled=said.text) for said in describe(event).pane]
        return lines

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

    def _polling(self, argv: tuple[str, ...]) -> bool:
        """True for a command the registration wait already sent: a poll, whose same answer is no news."""
        return self.wait is not None and self.wait.what == "fabric" and argv in self.last_output

    def _same_answer(self, event: CommandFinished) -> bool:
        """True when ``event`` answered as the last time (output and exit status): nothing for the pane."""
        same = (not self.streamed and self.last_output.get(event.argv) == event.output
                and self.last_status.get(event.argv) == event.exit_status and event.exit_status is not None)
        return same

    def _flush_deferred(self) -> list[PaneLine]:
        """The registration wait's last answers, once, as its step ends (nothing when there was no wait)."""
        lines = [line for answer in self.deferred.values() for line in answer]
        self.deferred.clear()
        return lines

    @staticmethod
    def _output_lines(output: str) -> list[PaneLine]:
        """A finished command's output for the pane: its first lines, and how many more the audit log has."""
        if not output.strip():
            return []
        out = output.rstrip("\n").splitlines()
        lines = [PaneLine(text, "out") for text in out[:COMMAND_OUTPUT_LINES]]
        if len(out) > COMMAND_OUTPUT_LINES:
            lines.append(PaneLine(f"… {len(out) - COMMAND_OUTPUT_LINES} more lines in the audit log", "note"))
        return lines

    def _finished_lines(self, event: CommandFinished) -> list[PaneLine]:
        lines: list[PaneLine] = []
        repeated = self.last_output.get(event.argv) == event.output
        self.last_output[event.argv] = event.output
        self.last_status[event.argv] = event.exit_status
        if not self.streamed and event.output.strip() and repeated:
            # A wait loop asks the same thing every poll: say so rather than print it again.
            lines.append(PaneLine("  (same output as the last time)", "note"))
        elif not self.streamed:
            lines += self._output_lines(event.output)
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


__all__ = ["FABRIC_LINE", "FAILED", "Approval", "OK", "PENDING", "RUNNING", "SKIPPED", "NodeRun", "PaneLine", "SmokeView", "StepView",
           "aborted_message", "middle_cut", "repair_options", "short_command", "smoke_lines"]
