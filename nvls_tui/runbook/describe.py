"""Each runbook event worded once, for the three places that say it (issue 36 item 2).

:func:`describe` gives an event's :class:`Said`: its progress line (plain text: headless ``repair``), its
lines for the console's output pane (``rich.text.Text`` and a tone: the pane draws what it is given, never
markup), and its row of the report's timeline (Markdown). An event is said as one :data:`Sentence`: parts
that are our words or data (a value from the run or the node), rendered three ways (:func:`as_plain`,
:func:`as_text`, :func:`as_markdown`), so the three places say the same words.

The sentence is the report's: its rows are held byte for byte (the logs already written are read the same),
and the pane and the progress line say it too, around their own forms: a progress line is indented under its
step, names the step before a step's end and marks a run's end with ``=>``; the pane marks a step's end with
✔, ✖ or ■ after the step's name (an operator's abort says ``aborted``, never ``failed``: issue 28 item 6) and
a run's end with ⇒; the report's table has the step in a column of its own. What each place adds is its own:
why a smoke test failed and NCCL's lines (the report has them in the node's findings), a dry run's commands.
Node text is data: the Markdown escapes it (:func:`nvls_tui.textsafe.markdown_text`), the pane's ``Text`` is
built from parts with node text cleaned onto one line (:func:`nvls_tui.textsafe.one_line`), and a progress
line is folded by its printer. What a command printed, and the registration wait's updating line, are the
pane's to fold (:class:`nvls_tui.views.runbook.NodeRun`); the report folds repeated commands itself.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text

from nvls_tui.backends.base import join_argv
from nvls_tui.model import Holder, SmokeResult
from nvls_tui.runbook.events import (
    CommandFinished,
    FabricProgress,
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
from nvls_tui.runbook.smoke_words import nccl_lines, reasons
from nvls_tui.runbook.steps import clock_text
from nvls_tui.textsafe import markdown_text, one_line
from nvls_tui.words import count, gbps, verb

# A report's hook for the node-clock times inside a runbook sentence (``since 2026-08-15 16:10:00``): it
# adds what they were on the bastion. Elsewhere the sentence is said as the runbook wrote it.
Annotate = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of an event's sentence: our own words, or a value from the run or the node (data).

    ``data``: escaped for Markdown, cleaned and folded onto one line for the pane (never read as markup);
    ``strong``: bold in the pane and the report (``**...**``); ``annotated``: the report adds the bastion's
    time to the node-clock times in it (:data:`Annotate`).
    """

    text: str
    data: bool = False
    strong: bool = False
    annotated: bool = False


Sentence = tuple[Part, ...]


def words(text: str) -> Part:
    """Our own words (no escaping needed: they hold no Markdown)."""
    return Part(text)


def data(value: object, *, strong: bool = False, annotated: bool = False) -> Part:
    """A value from the run or the node: data in every rendering."""
    return Part(str(value), data=True, strong=strong, annotated=annotated)


def as_markdown(sentence: Sentence, annotate: Annotate) -> str:
    """The sentence for the report (every value escaped, node-clock times annotated)."""
    out = []
    for part in sentence:
        text = md(annotate(part.text) if part.annotated else part.text) if part.data else part.text
        out.append(f"**{text}**" if part.strong else text)
    return "".join(out)


def as_plain(sentence: Sentence) -> str:
    """The sentence as plain text (its writer folds it onto one line)."""
    return "".join(part.text for part in sentence)


def as_text(sentence: Sentence) -> Text:
    """The sentence for the console's pane: a ``Text`` built from parts (never parsed as markup), node text
    cleaned and on one line (:func:`nvls_tui.textsafe.one_line`)."""
    text = Text()
    for part in sentence:
        text.append(one_line(part.text) if part.data else part.text, style="bold" if part.strong else "")
    return text


@dataclass(frozen=True, slots=True)
class PaneText:
    """One line for the console's output pane: its text (a ``rich.text.Text``, drawn as it is) and its tone
    (cmd, out, ok, err, warn, note, step: the pane's style, under the text's own bold)."""

    text: Text
    tone: str = "note"


def pane(tone: str, *parts: Part) -> PaneText:
    """A pane line of ``parts`` in ``tone``."""
    return PaneText(as_text(parts), tone)


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


def _as_is(text: str) -> str:
    return text


def md(value: object) -> str:
    """A value from the run or the node, escaped for Markdown prose (it is data)."""
    return markdown_text(value)


def aborted_message(message: str) -> bool:
    """True for the message of a step the operator aborted (the runbook's ``Aborted``: "aborted by ...")."""
    return message.startswith("aborted")


def smoke_sentence(smoke: SmokeResult) -> Sentence:
    """A smoke test's result as the report says it: ``smoke test FAILED: avg no bandwidth``."""
    avg = gbps(smoke.avg_busbw) if smoke.avg_busbw is not None else "no bandwidth"
    return (words(f"smoke test {'passed' if smoke.passed else 'FAILED'}: avg {avg}"),)


def smoke_lines(smoke: SmokeResult) -> list[str]:
    """A smoke test's result: the report's sentence and why it failed (``smoke test FAILED: avg no bandwidth:
    <why>``), then each NCCL line on a line of its own, indented (never glued to the next:
    :mod:`~nvls_tui.runbook.smoke_words`)."""
    return [as_plain(_smoke_head(smoke))] + [f"  {line}" for line in nccl_lines(smoke.errors)]


def _smoke_head(smoke: SmokeResult) -> Sentence:
    why = "; ".join(reasons(smoke.errors))
    return smoke_sentence(smoke) + ((words(": "), data(why)) if why else ())


def _run_started(e: RunStarted, _: Annotate) -> Said:
    return Said(markdown=f"run {md(e.run_id)} started ({md(e.mode)}{', dry run' if e.dry_run else ''})")


def _step_started(e: StepStarted, _: Annotate) -> Said:
    return Said(plain=f"{e.step} ...", pane=(pane("step", words("── "), data(e.step), words(" ──")),),
                markdown="step started")


def step_sentence(e: StepFinished) -> Sentence:
    """A step's end as the report says it (``**failed** in 2.5 s: why``; the report has the step in a column
    of its own, the pane and the progress line put it first). A step the operator aborted is said ``aborted``
    in every place, never ``failed`` (issue 28 item 6), though its record's status is ``failed``."""
    status = "aborted" if e.status == "failed" and aborted_message(e.message) else e.status
    said = (words(": "), data(e.message, annotated=True)) if e.message else ()
    # A dry run's step took no time: it is planned, no more.
    took = () if e.status == "planned" else (words(f" in {e.duration:.1f} s"),)
    return (data(status, strong=True), *took, *said)


def _step_finished(e: StepFinished, annotate: Annotate) -> Said:
    sentence = step_sentence(e)
    plain = f"{e.step} {as_plain(sentence)}"
    if e.status == "planned":  # a dry run's step: then its commands, the plan's own listing
        plain += "".join(f"\n  $ {c}" for c in e.commands)
    step = (data(e.step), words(" "))
    if e.status == "failed" and aborted_message(e.message):  # asked for: no failure (issue 28 item 6)
        lines: tuple[PaneText, ...] = (pane("warn", words("■ "), *step, *sentence),)
    elif e.status == "failed":
        lines = (pane("err", words("✖ "), *step, *sentence),)
    elif e.message and e.status == "ok":
        lines = (pane("ok", words("✔ "), *step, *sentence),)
    else:
        lines = ()  # the step list says it
    return Said(plain=plain, pane=lines, markdown=as_markdown(sentence, annotate))


def _command_finished(e: CommandFinished, _: Annotate) -> Said:
    status = e.exit_status if e.exit_status is not None else f"no status ({e.error})"
    return Said(plain=f"  $ {join_argv(list(e.argv))}  -> {status}")


def _signalled(e: ProcessSignalled, _: Annotate) -> Said:
    # One sentence in the three places: the process as the report names it, its command whole (the pane
    # scrolls sideways).
    sentence = (data(e.signal), words(" pid "), data(e.pid), words(" ("), data(e.holder_kind), words(": "),
                data(e.command), words(")"))
    said = (*sentence, words(" → "), data(e.outcome))
    return Said(plain=f"  {as_plain(said)}", pane=(pane("note", *said),), markdown=as_markdown(said, _as_is))


# How many holders a sentence names before it says how many more there are.
NAMED_HOLDERS = 8


def holder_list(holders: Sequence[Holder]) -> Sentence:
    """The holders as a sentence names them: ``4242 (python3, alice), 924303 (nv-hostengine, root) and 3 more``
    (each by its PID, its program and its user; the first :data:`NAMED_HOLDERS`)."""
    parts: list[Part] = []
    for i, h in enumerate(holders[:NAMED_HOLDERS]):
        program = h.command.split()[0] if h.command.strip() else "?"
        parts += [words(", ") if i else words(""), data(h.pid), words(" ("), data(program), words(", "), data(h.user),
                  words(")")]
    if len(holders) > NAMED_HOLDERS:
        parts.append(words(f" and {len(holders) - NAMED_HOLDERS} more"))
    return tuple(parts)


def holders_sentence(e: HoldersRemaining) -> Sentence:
    """Who still holds the devices, in one sentence for the three places (a wait's last report: none is left):
    ``1 process still holds /dev/nvidia*: 4242 (python3, alice) (waiting for the operator)``."""
    n = len(e.holders)
    if not n:
        return (words("every process that held /dev/nvidia* is gone"),)
    waiting = (words(" (waiting for the operator)"),) if e.waiting else ()
    return (words(f"{count(n, 'process')} still {verb(n, 'holds')} /dev/nvidia*: "), *holder_list(e.holders), *waiting)


def _holders(e: HoldersRemaining, _: Annotate) -> Said:
    sentence = holders_sentence(e)
    return Said(plain=f"  {as_plain(sentence)}", pane=(pane("warn" if e.holders else "note", *sentence),),
                markdown=as_markdown(sentence, _as_is))


def fabric_progress_sentence(e: FabricProgress) -> Sentence:
    """One poll of Fabric Manager's registration, as the pane's updating line says it: ``Fabric Manager active;
    In Progress/N/A ×8 (0:12 of 5:00)`` (the unit's state and the GPUs' as the node answered: data)."""
    states = ", ".join(f"{k} ×{v}" for k, v in e.states.items())
    waited = (words(f" ({clock_text(e.elapsed)} of {clock_text(e.limit)})"),) if e.limit is not None else ()
    return (words("Fabric Manager "), data(e.unit), words("; "), data(states) if states else words("no GPU answered"),
            *waited)


def _fabric_progress(e: FabricProgress, _: Annotate) -> Said:
    # The pane's one updating line for the wait; the progress lines print the wait's reminder every 15 s and the
    # report folds the polls into one line (report/timeline.fabric_wait).
    return Said(pane=(pane("note", *fabric_progress_sentence(e)),))


def _smoke_row(e: SmokeRow, _: Annotate) -> Said:
    return Said(plain=f"  {e.size:>12} B  {e.busbw} GB/s" if e.size is not None else None)


def _smoke_finished(e: SmokeFinished, _: Annotate) -> Said:
    head, nccl = _smoke_head(e.smoke), nccl_lines(e.smoke.errors)
    tone = "ok" if e.smoke.passed else "err"
    # Each NCCL line on its own, marked as quoted (a line's leading blanks do not survive one_line).
    plain = "\n".join([as_plain(head), *(f"| {line.strip()}" for line in nccl)]) if not e.smoke.passed else None
    lines = (pane(tone, *head), *(pane(tone, words("  "), data(line)) for line in nccl))
    return Said(plain=plain, pane=lines, markdown=as_markdown(smoke_sentence(e.smoke), _as_is))


def restored_sentence(e: Restored) -> Sentence:
    """A restore as the report says it: ``restored nvidia-dcgm.service; persistence mode back on for 8 GPUs;
    could not restore kubelet.service`` (the restore step's own message says it too: :func:`restored_parts`)."""
    return restored_parts(e.units, e.persistence_gpus, e.failed)


def restored_parts(units: Sequence[str], persistence_gpus: Sequence[int] = (), failed: Sequence[str] = ()) -> Sentence:
    """What a restore put back (and could not), as :func:`restored_sentence` says it."""
    pm = (words(f"; persistence mode back on for {count(len(persistence_gpus), 'GPU')}"),) if persistence_gpus else ()
    not_back = (words("; could not restore "), data(", ".join(failed))) if failed else ()
    return (words("restored "), data(", ".join(units) or "no unit"), *pm, *not_back)


def _restored(e: Restored, _: Annotate) -> Said:
    sentence = restored_sentence(e)
    # A clean restore is told in the pane by the step's own ✔ line; one that failed here, in full.
    lines = (pane("err", *sentence),) if e.failed else ()
    return Said(plain=f"  {as_plain(sentence)}", pane=lines, markdown=as_markdown(sentence, _as_is))


# A note's level as the pane's tone.
NOTE_TONES = {"error": "err", "warning": "warn"}


def _note(e: Note, annotate: Annotate) -> Said:
    # The level, then the sentence: the pane says the level by its tone.
    return Said(plain=f"  {e.level}: {e.message}", pane=(pane(NOTE_TONES.get(e.level, "note"), data(e.message)),),
                markdown=f"_{md(e.level)}_: {md(annotate(e.message))}")


def run_sentence(e: RunFinished) -> Sentence:
    """A run's end as the report says it: ``run finished: **repaired** NVLS works again``."""
    said = (words(" "), data(e.message, annotated=True)) if e.message else ()
    return (words("run finished: "), data(e.result, strong=True), *said)


def _run_finished(e: RunFinished, annotate: Annotate) -> Said:
    good = e.result in ("repaired", "skipped")  # skipped: healthy, left alone
    tone = "ok" if good else "warn" if e.result == "aborted" else "err"
    sentence = run_sentence(e)
    return Said(plain=f"=> {as_plain(sentence)}", pane=(pane(tone, words("⇒ "), *sentence),),
                markdown=as_markdown(sentence, annotate).rstrip())


_DESCRIBERS: dict[type[RunbookEvent], Callable[[RunbookEvent, Annotate], Said]] = {
    RunStarted: _run_started,  # type: ignore[dict-item]
    StepStarted: _step_started,  # type: ignore[dict-item]
    StepFinished: _step_finished,  # type: ignore[dict-item]
    CommandFinished: _command_finished,  # type: ignore[dict-item]
    ProcessSignalled: _signalled,  # type: ignore[dict-item]
    HoldersRemaining: _holders,  # type: ignore[dict-item]
    FabricProgress: _fabric_progress,  # type: ignore[dict-item]
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


__all__ = ["NAMED_HOLDERS", "NOTE_TONES", "Annotate", "PaneText", "Part", "Said", "Sentence", "aborted_message",
           "as_markdown", "as_plain", "as_text", "data", "describe", "fabric_progress_sentence", "holder_list", "holders_sentence", "restored_parts", "restored_sentence", "run_sentence", "smoke_lines", "smoke_sentence",
           "step_sentence", "words"]
