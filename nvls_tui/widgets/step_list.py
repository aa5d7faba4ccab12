"""The step list of one node's run: each step's state in a glyph and a word, and its duration.

A running step shows a spinner and its elapsed time; the command running now shows under the list
with its own elapsed time, so nothing long happens without visible progress. The spinner frame comes
from the column's clock, not from a free-running timer, so a frozen clock gives a fixed picture.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from nvls_tui.views.runbook import FAILED, OK, PENDING, RUNNING, SKIPPED, NodeRun

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

GLYPH = {PENDING: ("·", "#6c6c6c"), OK: ("✔", "#5fd75f"), FAILED: ("✖", "#ff5f5f"), SKIPPED: ("–", "#8a8a8a")}
WORD_STYLE = {PENDING: "#6c6c6c", RUNNING: "bold #5fafff", OK: "", FAILED: "bold #ff5f5f", SKIPPED: "#8a8a8a"}


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
        if step.status == RUNNING:
            text.append(f" {spinner(now)} ", style="bold #5fafff")
        else:
            glyph, style = GLYPH.get(step.status, ("?", ""))
            text.append(f" {glyph} ", style=style)
        text.append(step.name.ljust(name_width), style=WORD_STYLE.get(step.status, ""))
        if step.status == RUNNING:
            elapsed = now - step.started if step.started is not None else 0.0
            text.append(f"running {duration_text(max(0.0, elapsed))}", style=WORD_STYLE[RUNNING])
            if step.name == "fabric-manager" and run.fabric:  # registration is the long wait: show it
                text.append("  " + " ".join(f"{n}× {k.split('/')[0]}" for k, n in run.fabric.items()),
                            style="#ffaf00")
        elif step.status in (OK, FAILED):
            text.append(f"{step.status:<8}", style=WORD_STYLE[step.status])
            text.append(duration_text(step.duration), style="#8a8a8a")
        else:
            text.append(step.status, style=WORD_STYLE.get(step.status, ""))
    text.append("\n")
    if run.command and run.command_started is not None:
        cmd = run.command if len(run.command) <= width - 12 else run.command[: max(8, width - 13)] + "…"
        text.append(f" $ {cmd}", style="#afafaf")
        text.append(f"  {duration_text(max(0.0, now - run.command_started))}", style="#8a8a8a")
    elif run.result is None and run.started is None:
        text.append(" waiting to start", style="#8a8a8a")
    return text


class StepList(Static):
    """The steps of one run (see :func:`step_lines`); call :meth:`show` on every change and tick."""

    def show(self, run: NodeRun, now: float) -> None:
        """Redraw from ``run`` at time ``now``."""
        self.update(step_lines(run, now, max(30, self.size.width or 40)))
