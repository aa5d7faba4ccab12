"""Each runbook event worded once, for the three places that say it (issue 36 item 2).

:func:`describe` gives an event's :class:`Said`: its progress line (plain text: headless ``repair``), its
lines for the console's output pane (text and tone: the pane draws each as a ``rich.text.Text``, never
markup), and its row of the report's timeline (Markdown). The three were worded apart, in
``headless/repair.ProgressPrinter``, ``views/runbook.NodeRun`` and ``report/timeline``; they are worded here,
side by side, so a change to what an event says is made once and seen in all three.

The forms stay each place's own: a progress line is indented under its step and marks a run's end with
``=>``, the pane marks a step's end with ✔, ✖ or ■, the report's table has the step in a column of its own
and escapes every value. Node text is data: the Markdown goes through :func:`nvls_tui.textsafe.markdown_text`,
and plain text and pane lines are folded onto one line by their writers (``one_line``; the pane draws
``Text``). What a command printed, and the registration wait's updating line, are the pane's to fold
(:class:`nvls_tui.views.runbook.NodeRun`); the report folds repeated commands itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nvls_tui.backends.base import join_argv
from nvls_tui.model import SmokeResult
from nvls_tui.runbook.events import (
    CommandFinished,
    HoldersRemaining,
    Note,
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
from nvls_tui.runbook.restore import restored_words
from nvls_tui.runbook.smoke_words import nccl_lines, reasons
from nvls_tui.textsafe import markdown_text
from nvls_tui.words import count, gbps, verb


@dataclass(frozen=True, slots=True)
class PaneText:
    """One line for the console's output pane: its text (drawn as plain ``Text``) and its tone (cmd, out,
    ok, err, warn, note, step: the pane's style)."""

    text: str
    tone: str = "note"


@dataclass(frozen=True, slots=True)
class Said:
    """What one event says in each place.

    Attributes:
        plain: the progress line, without the node (lines after the first are the event's own: a dry run's
            commands, NCCL's lines); None where the event says nothing there.
        pane: the output pane's lines for it (none: nothing).
        markdown: the report timeline's words (Markdown, node text escaped); None: no row.
    """

    plain: str | None = None
    pane: tuple[PaneText, ...] = ()
    markdown: str | None = None


# A report's hook for the node-clock times inside a runbook sentence (``since 2026-08-15 16:10:00``): it
# adds what they were on the bastion. Elsewhere the sentence is said as the runbook wrote it.
Annotate = Callable[[str], str]


def _as_is(text: str) -> str:
    return text


def md(value: object) -> str:
    """A value from the run or the node, escaped for Markdown prose (it is data)."""
    return markdown_text(value)


def aborted_message(message: str) -> bool:
    """True for the message of a step the operator aborted (the runbook's ``Aborted``: "aborted by ...")."""
    return message.startswith("aborted")


def smoke_lines(smoke: SmokeResult) -> list[str]:
    """A smoke test's result: ``smoke test FAILED: no average: <why>``, then each NCCL line on a line of its own,
    indented (never glued to the next: :mod:`~nvls_tui.runbook.smoke_words`)."""
    verdict = "passed" if smoke.passed else "FAILED"
    avg = f"{smoke.avg_busbw:.1f} GB/s" if smoke.avg_busbw is not None else "no average"
    why = "; ".join(reasons(smoke.errors))
    return [f"smoke test {verdict}: {avg}" + (f": {why}" if why else "")] + [f"  {line}" for line in
                                                                            nccl_lines(smoke.errors)]


def _run_started(e: RunStarted, _: Annotate) -> Said:
    return Said(markdown=f"run {md(e.run_id)} started ({md(e.mode)}{', dry run' if e.dry_run else ''})")


def _step_started(e: StepStarted, _: Annotate) -> Said:
    return Said(plain=f"{e.step} ...", pane=(PaneText(f"── {e.step} ──", "step"),), markdown="step started")


def _step_finished(e: StepFinished, annotate: Annotate) -> Said:
    if e.status == "planned":
        plain = f"{e.step} (planned)" + "".join(f"\n  $ {c}" for c in e.commands)
    else:
        plain = f"{e.step} {e.status} ({e.duration:.1f} s)" + (f": {e.message}" if e.message else "")
    if e.status == "failed" and aborted_message(e.message):
        pane: tuple[PaneText, ...] = (PaneText(f"■ {e.step} aborted: {e.message}", "warn"),)  # asked for: no failure
    elif e.status == "failed":
        pane = (PaneText(f"✖ {e.step} failed: {e.message}", "err"),)
    elif e.message and e.status == "ok":
        pane = (PaneText(f"✔ {e.message}", "ok"),)
    else:
        pane = ()
    said = f": {md(annotate(e.message))}" if e.message else ""
    return Said(plain=plain, pane=pane, markdown=f"**{md(e.status)}** in {e.duration:.1f} s{said}")


def _command_finished(e: CommandFinished, _: Annotate) -> Said:
    status = e.exit_status if e.exit_status is not None else f"no status ({e.error})"
    return Said(plain=f"  $ {join_argv(list(e.argv))}  -> {status}")


def _signalled(e: ProcessSignalled, _: Annotate) -> Said:
    # One sentence in the three places (the progress line named no command, the pane cut it at 60 characters
    # and named no pid): the process as the report names it, its command whole (the pane scrolls sideways).
    plain = f"{e.signal} pid {e.pid} ({e.holder_kind}: {e.command})"
    return Said(plain=f"  {plain} -> {e.outcome}", pane=(PaneText(f"{plain} → {e.outcome}", "note"),),
                markdown=f"{md(e.signal)} pid {md(e.pid)} ({md(e.holder_kind)}: {md(e.command)}) → {md(e.outcome)}")


def _holders(e: HoldersRemaining, _: Annotate) -> Said:
    n = len(e.holders)
    remain = f"{count(n, 'holder')} {verb(n, 'remains')}"
    # The runbook's own sentence where it wrote one (it names the processes), else how many remain.
    return Said(plain=f"  {e.message or remain}", pane=(PaneText(e.message or remain, "warn" if n else "note"),),
                markdown=remain + (" (waiting for the operator)" if e.waiting else ""))


def _smoke_row(e: SmokeRow, _: Annotate) -> Said:
    return Said(plain=f"  {e.size:>12} B  {e.busbw} GB/s" if e.size is not None else None)


def _smoke_finished(e: SmokeFinished, _: Annotate) -> Said:
    lines = smoke_lines(e.smoke)
    head, *nccl = lines
    # Each NCCL line on its own, marked as quoted (a line's leading blanks do not survive one_line).
    plain = "\n".join([head, *(f"| {line.strip()}" for line in nccl)]) if not e.smoke.passed else None
    avg = gbps(e.smoke.avg_busbw) if e.smoke.avg_busbw is not None else "no bandwidth"
    return Said(plain=plain, pane=tuple(PaneText(text, "ok" if e.smoke.passed else "err") for text in lines),
                markdown=f"smoke test {'passed' if e.smoke.passed else 'FAILED'}: avg {avg}")


def _restored(e: Restored, _: Annotate) -> Said:
    plain = f"  restored {restored_words(e.units, e.persistence_gpus, 'no unit')}" + (
        f"; FAILED {', '.join(e.failed)}" if e.failed else "")
    # A clean restore is told in the pane by the step's own ✔ line.
    pane = (PaneText(f"could NOT restore {', '.join(e.failed)}", "err"),) if e.failed else ()
    failed = f"; could not restore {md(', '.join(e.failed))}" if e.failed else ""
    pm = f"; persistence mode back on for {count(len(e.persistence_gpus), 'GPU')}" if e.persistence_gpus else ""
    return Said(plain=plain, pane=pane, markdown=f"restored {md(', '.join(e.units) or 'no unit')}{pm}{failed}")


# A note's level as the pane's tone.
NOTE_TONES = {"error": "err", "warning": "warn"}


def _note(e: Note, annotate: Annotate) -> Said:
    return Said(plain=f"  [{e.level}] {e.message}", pane=(PaneText(e.message, NOTE_TONES.get(e.level, "note")),),
                markdown=f"_{md(e.level)}_: {md(annotate(e.message))}")


def _run_finished(e: RunFinished, annotate: Annotate) -> Said:
    good = e.result in ("repaired", "skipped")  # skipped: healthy, left alone
    tone = "ok" if good else "warn" if e.result == "aborted" else "err"
    return Said(plain=f"=> {e.result}: {e.message}", pane=(PaneText(f"⇒ {e.result}: {e.message}", tone),),
                markdown=f"run finished: **{md(e.result)}** {md(annotate(e.message))}".rstrip())


_DESCRIBERS: dict[type[RunbookEvent], Callable[[RunbookEvent, Annotate], Said]] = {
    RunStarted: _run_started,  # type: ignore[dict-item]
    StepStarted: _step_started,  # type: ignore[dict-item]
    StepFinished: _step_finished,  # type: ignore[dict-item]
    CommandFinished: _command_finished,  # type: ignore[dict-item]
    ProcessSignalled: _signalled,  # type: ignore[dict-item]
    HoldersRemaining: _holders,  # type: ignore[dict-item]
    SmokeRow: _smoke_row,  # type: ignore[dict-item]
    SmokeFinished: _smoke_finished,  # type: ignore[dict-item]
    Restored: _restored,  # type: ignore[dict-item]
    Note: _note,  # type: ignore[dict-item]
    RunFinished: _run_finished,  # type: ignore[dict-item]
}


def describe(event: RunbookEvent, annotate: Annotate = _as_is) -> Said:
    """What ``event`` says in the progress lines, the console's pane and the report's timeline.

    Args:
        annotate: the report's hook for node-clock times in a runbook sentence (the Markdown only).
    """
    describer = _DESCRIBERS.get(type(event))
    return describer(event, annotate) if describer is not None else Said()


__all__ = ["NOTE_TONES", "Annotate", "PaneText", "Said", "aborted_message", "describe", "smoke_lines"]
