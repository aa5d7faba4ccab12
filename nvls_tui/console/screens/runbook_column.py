"""One node's column on the runbook screen: steps, remaining holders, the bandwidth plot, the output.

The column is a view of a :class:`~nvls_tui.views.runbook.NodeRun`: the screen hands it
each event of its node, it folds the event in and redraws only the parts that changed. While the
runbook waits at ``verify-no-holders`` it also answers the runbook's question (which holders to
SIGTERM) through :meth:`RunbookColumn.ask`.
"""

from __future__ import annotations

import asyncio

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual.widgets.selection_list import Selection

from nvls_tui.console.widgets import palette
from nvls_tui.console.widgets.bandwidth_plot import BandwidthPlot
from nvls_tui.console.widgets.holder_picks import HolderPicks
from nvls_tui.console.widgets.output_pane import OutputPane
from nvls_tui.console.widgets.step_list import StepList, duration_text
from nvls_tui.model import Holder
from nvls_tui.runbook.actions import holder_label
from nvls_tui.runbook.events import RunbookEvent
from nvls_tui.runbook.restore import restored_words
from nvls_tui.runbook.steps import HolderDecision
from nvls_tui.views.runbook import NodeRun

# The colour role of each way a run can end (shown in bold); its keys are also the column's classes.
RESULT_ROLE = {"repaired": "ok", "failed": "bad", "refused": "warn", "aborted": "warn", "planned": "command",
               "restored": "ok", "ok": "ok", "skipped": "note"}
# skipped: left alone (healthy), so not the ✔ of a repair.
RESULT_GLYPH = {"repaired": "✔", "failed": "✖", "refused": "⊘", "aborted": "■", "restored": "✔", "ok": "✔",
                "skipped": "○"}


def result_style(result: str | None) -> Style:
    """How a run's result looks: bold in its role's colour (plain bold while running or unknown)."""
    role = RESULT_ROLE.get(result or "")
    return palette.bold(role) if role is not None else palette.BOLD


def smoke_caption(step: str) -> str:
    """What a smoke run is for: the re-check before anything destructive, or the proof after."""
    return "re-check before any reset" if step == "preflight" else "NVLS all_reduce_perf"


def summary_text(run: NodeRun) -> Text:
    """The end of a run in a few lines: result, bandwidth, duration, what was put back."""
    text = Text()
    result = run.result or "running"
    text.append(f" {RESULT_GLYPH.get(result, '•')} {result} ", style=result_style(result) + palette.REVERSE)
    smoke = run.smoke.result if run.smoke else None
    if smoke is not None and smoke.avg_busbw is not None:
        text.append(f"  {smoke.avg_busbw:.1f} GB/s", style="bold")
        text.append(f" ({'≥' if smoke.passed else '<'} {smoke.threshold or 0:.0f})", style=palette.STYLE["muted"])
    text.append(f"  in {duration_text(run.elapsed(0.0) if run.finished is not None else None) or '–'}",
                style=palette.STYLE["muted"])
    if run.message:
        text.append(f"\n {run.message}")
    if run.restored or run.restored_gpus or run.restore_failed:
        text.append("\n restored: ", style=palette.STYLE["muted"])
        text.append(restored_words([u.removesuffix(".service") for u in run.restored], run.restored_gpus))
        if run.restore_failed:
            text.append(f"  NOT restored: {', '.join(run.restore_failed)}", style=palette.bold("bad"))
    return text


class RunbookColumn(Vertical):
    """The run of one node, top to bottom: steps, holders (when waiting), plot, summary, output.

    Args:
        host: the node.
        threshold: the smoke test's pass threshold (GB/s) drawn on the plot before the verdict.
        step_names: the steps to list (the repair's by default; single actions pass their own).
    """

    def __init__(self, host: str, *, threshold: float | None = 250.0, step_names=None, **kwargs) -> None:
        kwargs.setdefault("classes", "runbook-column")
        super().__init__(**kwargs)
        self.host = host
        self.threshold = threshold
        self.run = NodeRun(host) if step_names is None else NodeRun(host, step_names=tuple(step_names))
        self._decision: asyncio.Future[HolderDecision] | None = None
        self._asked = False  # the runbook asked about this wait's holders (reset when the wait ends)
        self._early: HolderDecision | None = None  # decided between two questions: the next one's answer
        self._subtitle: str | None = None  # the border subtitle last set (redraw)

    def compose(self) -> ComposeResult:
        """Steps, holders (hidden), the plot (hidden until a smoke test), summary (hidden), output."""
        yield StepList(classes="steps")
        with Vertical(classes="holders-box"):
            yield Static(classes="holders-hint")
            yield HolderPicks(classes="holders")
        with Vertical(classes="smoke-box"):
            yield BandwidthPlot(threshold=self.threshold, classes="plot")
        yield Static(classes="summary")
        yield OutputPane(classes="output")

    def on_mount(self) -> None:
        """Titles and the first drawing."""
        self.border_title = self.host
        self.query_one(".holders-box").display = False
        self.query_one(".smoke-box").display = False
        self.query_one(".summary").display = False
        self.query_one(".output").border_title = "output"
        self.redraw({"steps"}, 0.0)

    # ---- events -------------------------------------------------------------------------------
    def apply(self, event: RunbookEvent, now: float) -> None:
        """Fold one event of this node in and redraw what it changed."""
        changed, lines = self.run.apply(event, now)
        if lines:
            self.query_one(OutputPane).add(lines)
        self.redraw(changed, now)

    def tick(self, now: float) -> None:
        """Move the spinner and the elapsed times while the run is going."""
        if self.run.running:
            self.redraw({"steps"}, now)

    def redraw(self, parts: set[str], now: float) -> None:
        """Redraw the named parts (``steps``, ``plot``, ``holders``, ``summary``)."""
        run = self.run
        if "steps" in parts:
            self.query_one(StepList).show(run, now)
            self.set_class(run.running, "-running")
            done = f"{run.done_steps}/{len(run.steps)} steps"
            subtitle = (f"{run.current or '…'} · {done} · {duration_text(run.elapsed(now))}"
                        if run.running else (run.result or "waiting"))
            if subtitle != self._subtitle:  # Textual repaints the whole column at every set, even to the same words
                self._subtitle = subtitle
                self.border_subtitle = subtitle
        if "plot" in parts and run.smoke is not None:
            box = self.query_one(".smoke-box")
            box.display = True
            box.border_title = f"smoke test ({run.smoke.step})"
            self.query_one(BandwidthPlot).set_rows(run.smoke.rows, run.smoke.result, smoke_caption(run.smoke.step))
        if "holders" in parts:
            self._draw_holders()
        if "summary" in parts and run.result is not None:
            summary = self.query_one(".summary", Static)
            summary.display = True
            summary.update(summary_text(run))
            self.query_one(OutputPane).scroll_end(animate=False)  # the summary took room: keep the end in view
            for result in RESULT_ROLE:
                self.set_class(run.result == result, f"-{result}")

    def _draw_holders(self) -> None:
        run = self.run
        box = self.query_one(".holders-box")
        appearing = not box.display and bool(run.waiting and run.holders)
        box.display = bool(run.waiting and run.holders)
        if not box.display:
            self._asked, self._early = False, None  # the wait ended: a decision left over answers nothing
            return
        n = len(run.holders)
        box.border_title = f"{n} holder{'s' if n != 1 else ''} still hold{'' if n != 1 else 's'} a device"
        self.query_one(".holders-hint", Static).update(Text(
            "The runbook waits: space selects, t sends SIGTERM (identity re-checked), a aborts.",
            style=palette.STYLE["warn"]))
        listing = self.query_one(".holders", HolderPicks)
        pids = [h.pid for h in run.holders]
        if pids != [listing.get_option_at_index(i).value for i in range(listing.option_count)]:
            # Rebuild only when the holders changed: a re-check must not lose the cursor or the picks.
            chosen, cursor = set(listing.selected), listing.highlighted
            listing.clear_options()
            listing.add_options([Selection(Text(holder_label(h, 70)), h.pid, h.pid in chosen) for h in run.holders])
            listing.highlighted = min(cursor or 0, len(pids) - 1)
        elif listing.highlighted is None:
            listing.highlighted = 0
        if appearing:
            listing.focus()  # the operator's next keys (space, t) are for this list

    # ---- the operator's side of verify-no-holders ---------------------------------------------
    @property
    def selected_pids(self) -> list[int]:
        """PIDs selected in the holders list (still present)."""
        present = {h.pid for h in self.run.holders}
        return [pid for pid in self.query_one(".holders", HolderPicks).selected if pid in present]

    @property
    def selected_holders(self) -> list[Holder]:
        """The selected holders, as the runbook last saw them."""
        chosen = set(self.selected_pids)
        return [h for h in self.run.holders if h.pid in chosen]

    @property
    def asking(self) -> bool:
        """True while the runbook waits on this column's holders for the operator: from its first question
        until the wait ends, the re-reads between two questions included (the box lists them all along,
        and the deadline runs: a key pressed then is the operator's answer, never dropped)."""
        if self._decision is not None and not self._decision.done():
            return True
        return self._asked and self.run.waiting and bool(self.run.holders) and self.run.result is None

    async def ask(self, recheck: float) -> HolderDecision:
        """Wait for the operator (SIGTERM or abort), or ``recheck`` seconds: then re-read the holders.

        A decision the operator made since the last question (while the runbook re-read the holders) is
        the answer at once.
        """
        self._asked = True
        if self._early is not None:
            decision, self._early = self._early, None
            return decision
        self._decision = asyncio.get_running_loop().create_future()
        self.screen.refresh_bindings()  # t applies from the first pick: the footer must say so now
        try:
            async with asyncio.timeout(recheck):
                return await asyncio.shield(self._decision)
        except TimeoutError:
            return HolderDecision()
        finally:
            self._decision = None
            if self.is_attached:
                self.screen.refresh_bindings()

    def decide(self, decision: HolderDecision) -> bool:
        """Hand the operator's decision to the runbook: now if it is asking, else at its next question while
        it waits on the holders. False when it waits on none (nothing to decide)."""
        if self._decision is not None and not self._decision.done():
            self._decision.set_result(decision)
            return True
        if not self.asking:
            return False
        # Between two questions (the holders being re-read): an abort wins over a SIGTERM, else the last word.
        if self._early is None or not self._early.abort:
            self._early = decision
        return True
