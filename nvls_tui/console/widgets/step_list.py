"""The step list of one node's run: each step's state in a glyph and a word, and its duration.

A running step shows a spinner and its elapsed time; a step in a bounded wait shows instead where the
wait stands and its time against the deadline (``8× In Progress, 1:31 of 5:00``, red once it has
passed). The command running now shows under the list with its own elapsed time, so nothing long
happens without visible progress. The spinner frame and the times come from the column's clock, not
from a free-running timer, so a frozen clock gives a fixed picture.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from nvls_tui.console.widgets import palette
from nvls_tui.runbook.fabric import fabric_counts
from nvls_tui.views.runbook import FAILED, OK, PENDING, RUNNING, SKIPPED, NodeRun, StepView, aborted_message

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

# Glyph and colour role of each finished or waiting state (a running step shows the spinner).
GLYPH = {PENDING: ("·", "stale"), OK: ("✔", "ok"), FAILED: ("✖", "bad"), SKIPPED: ("–", "muted")}
# The colour role of a step's name and state word (a step that went well needs none).
WORD_ROLE = {PENDING: "stale", RUNNING: "accent", FAILED: "bad", SKIPPED: "muted"}


def word_style(status: str) -> Style:
    """How a step's name and state word look: the running and the failed step stand out in bold."""
    role = WORD_ROLE.get(status)
    if role is None:
        return Style.null()
    return palette.bold(role) if status in (RUNNING, FAILED) else palette.STYLE[role]


def duration_text(seconds: float | None) -> str:
    """``0.4 s``, ``12.3 s``, ``2 m 05 s``."""
    if seconds is None:
        return ""
    if seconds < 100:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} m {secs:02d} s"


def spinner(now: float) -> str:
    """The spinner frame for ``now`` (ten frames a second)."""
    return SPINNER[int(now * 10) % len(SPINNER)]


def step_lines(run: NodeRun, now: float, width: int = 40) -> Text:
    """The list as Rich text: glyph, step name, state word and duration, then the running command."""
    text = Text()
    name_width = max(len(n) for n in run.steps) + 2
    for i, step in enumerate(run.steps.values()):
        if i:
            text.append("\n")
        # The operator's abort is no failure: ■ aborted in the warning colour, not a red ✖ failed.
        aborted = step.status == FAILED and aborted_message(step.message)
        if step.status == RUNNING:
            text.append(f" {spinner(now)} ", style=palette.bold("accent"))
        elif aborted:
            text.append(" ■ ", style=palette.STYLE["warn"])
        else:
            glyph, role = GLYPH.get(step.status, ("?", ""))
            text.append(f" {glyph} ", style=palette.STYLE.get(role, ""))
        text.append(step.name.ljust(name_width), style=palette.bold("warn") if aborted else word_style(step.status))
        if step.status == RUNNING:
            running = _running(run, step, now)
            if 3 + name_width + running.cell_len > width:  # a narrow column: under the name, not at column 0
                text.append("\n" + " " * 5)
            text.append_text(running)
        elif step.status in (OK, FAILED):
            word = "aborted" if aborted else step.status
            text.append(f"{word:<8}", style=palette.bold("warn") if aborted else word_style(step.status))
            text.append(duration_text(step.duration), style=palette.STYLE["muted"])
        else:
            text.append(step.status, style=word_style(step.status))
    text.append("\n")
    if run.command and run.command_started is not None:
        cmd = run.command if len(run.command) <= width - 12 else run.command[: max(8, width - 13)] + "…"
        text.append(f" $ {cmd}", style=palette.STYLE["note"])
        text.append(f"  {duration_text(max(0.0, now - run.command_started))}", style=palette.STYLE["muted"])
    elif run.result is None and run.started is None:
        text.append(" waiting to start", style=palette.STYLE["muted"])
    return text


def _running(run: NodeRun, step: StepView, now: float) -> Text:
    """What a running step says: its wait against the deadline, else ``running 3.2 s`` (and FM's counts)."""
    wait = run.wait if run.wait is not None and run.wait.step == step.name else None
    if wait is not None:
        return Text(wait.line(now), style=palette.bold("bad") if wait.overdue(now) else palette.STYLE["warn"])
    elapsed = now - step.started if step.started is not None else 0.0
    text = Text(f"running {duration_text(max(0.0, elapsed))}", style=word_style(RUNNING))
    if step.name == "fabric-manager" and run.fabric:  # registration is the long wait: show it
        text.append(f"  {fabric_counts(run.fabric)}", style=palette.STYLE["warn"])
    return text


class StepList(Static):
    """The steps of one run (see :func:`step_lines`); call :meth:`show` on every change and tick."""

    _shown: tuple | None = None

    def show(self, run: NodeRun, now: float) -> None:
        """Redraw from ``run`` at time ``now``; a redraw that would draw what is shown is skipped.

        Every event of a run calls this, and most (a line of output, a poll) leave the steps' words as
        they were; ``update`` would still ask the screen for a layout each time. A redraw of new words asks for
        one only when the list's height can change: another count of lines, or a line wider than the list
        (it would wrap); the list is ``height: auto``, so as many lines that fit take the rows they took."""
        lines = step_lines(run, now, max(30, self.size.width or 40))
        shown = (lines.plain, tuple(lines.spans), str(lines.style))
        if shown == self._shown:
            return
        before, self._shown = self._shown, shown
        rows, rows_before = lines.plain.split("\n"), before[0].split("\n") if before is not None else []
        same_height = len(rows) == len(rows_before) and all(
            cell_len(row) <= self.size.width for row in (*rows, *rows_before))
        self.update(lines, layout=not same_height)
