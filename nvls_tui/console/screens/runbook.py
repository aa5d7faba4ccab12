"""The runbook screen: the repair of several nodes side by side, live.

One column per node (two to four side by side; more go to tabs), each with its step list, the
holders left at ``verify-no-holders``, the live bandwidth plot of the smoke test and the streamed
output. The repair runs in a worker (the services' ``start_action``); every event goes to the run's audit
log first and then to the node's column. ``a`` aborts the node whose column has the focus, ``A``
every node (confirmed; each restores what it changed), ``t`` SIGTERMs the holders selected in a
waiting column, ``e`` writes the incident report at the end. The run itself is the console session's
(:meth:`~nvls_tui.runbook.session.Session.repair`): this screen only starts it and shows it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import SelectionList, Static, TabbedContent, TabPane

from nvls_tui.console.bindings import bindings_for
from nvls_tui.console.commands import Command, ScreenCommands, scope_commands
from nvls_tui.console.messages import ActionFailed, RepairFinished, RepairNeedsOperator
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.runbook_column import RESULT_GLYPH, RunbookColumn, result_style
from nvls_tui.console.screens.searching import SEARCH_ACTIONS, Searching
from nvls_tui.console.screens.typed import OnConsole
from nvls_tui.console.services import services_of
from nvls_tui.console.widgets import palette
from nvls_tui.console.widgets.banner import ModeBanner
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.console.widgets.step_list import duration_text
from nvls_tui.model.scheduler import Job
from nvls_tui.runbook.actions import holder_label
from nvls_tui.runbook.events import RunbookEvent, StepFinished
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.scheduling import JobDecision
from nvls_tui.runbook.session import Busy, RepairRun
from nvls_tui.runbook.steps import (
    DEFAULT_THRESHOLDS,
    HolderDecision,
    RepairOptions,
    threshold_for,
)
from nvls_tui.textsafe import one_line
from nvls_tui.views.consequences import workload_words
from nvls_tui.views.runbook import Approval, repair_options
from nvls_tui.words import count, verb

if TYPE_CHECKING:
    from nvls_tui.console.services import ConsoleServices

# Side by side up to this many nodes; beyond it every node gets a tab.
MAX_SIDE_BY_SIDE = 4
# While the runbook waits on holders, re-read them this often (real seconds) unless the operator acts.
HOLDER_RECHECK = 2.0


class RunbookScreen(Searching, OnConsole, Screen[None]):
    """The repair of ``hosts``, one column each.

    Args:
        hosts: the nodes, in the operator's order.
        start: run the repair on mount (False: the screen only shows events handed to :meth:`apply`,
            which is how the snapshot tests replay a fixed script).
        options: the runbook's tunables (default: :func:`repair_options` for the nodes' backends).
        clock: the columns' clock (default: the options' clock, the simulated one for simulated fleets).
        approval: what the operator approved on the plan screen (strategy, each node's plan basis);
            None runs in parallel with no plan to hold the nodes to.
        services: the session, the fleet and the settings (:class:`ConsoleServices`). Only a screen
            that replays a fixed script (``start=False``, the snapshot tests) may leave them out: it then
            takes the console's own when it is composed.
    """

    # The search keys first: while a search is on, Esc ends it rather than leaving the screen.
    BINDINGS = [*bindings_for("search"), *bindings_for("runbook"), Binding("escape", "back", "Back", show=False)]
    COMMANDS = {ScreenCommands}

    def __init__(self, hosts: Sequence[str], *, start: bool = True, options: RepairOptions | None = None,
                 clock: Callable[[], float] | None = None, approval: Approval | None = None,
                 services: ConsoleServices | None = None) -> None:
        super().__init__()
        if services is None and start:
            raise ValueError("a runbook screen that starts a repair needs the console's services")
        if services is not None:
            self.services = services
        self.hosts = list(hosts)
        self.start = start
        self.options = options
        self.clock = clock
        self.approval = approval or Approval(tuple(hosts))
        self.run_id = ""
        self.audit_path: Path | None = None
        self.report_path: Path | None = None
        self.repair: RepairRun | None = None
        self.outcomes: list[NodeOutcome] = []
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.aborting: set[str] = set()
        # Nodes whose holders wait was already notified: verify-no-holders asks again every
        # HOLDER_RECHECK seconds while it waits, and the operator hears of a wait once (until its step ends).
        self.waits_told: set[str] = set()

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """Header, banner, the columns (or tabs), the footer."""
        if not hasattr(self, "services"):  # a replay made without them (see Args): the console's own
            self.services = services_of(self.app)
        yield Static(id="runbook-header")
        yield ModeBanner(simulated=self.services.settings.simulated, read_only=self.services.settings.read_only,
                         id="banner")
        columns = [RunbookColumn(h, threshold=self._threshold(h), id=f"col-{i}") for i, h in enumerate(self.hosts)]
        if len(columns) <= MAX_SIDE_BY_SIDE:
            with Horizontal(id="runbook-columns"):
                yield from columns
        else:
            with TabbedContent(id="runbook-tabs"):
                for column in columns:
                    with TabPane(column.host, id=f"tab-{column.id}"):
                        yield column
        yield SettledFooter(compact=True)

    def _threshold(self, host: str) -> float:
        state = self.services.live.fleet.get(host)
        gpus = state.gpus if state is not None else ()
        override = self.options.smoke_threshold if self.options else None
        thresholds = self.options.thresholds if self.options else DEFAULT_THRESHOLDS
        return threshold_for(gpus, thresholds, override)

    def on_mount(self) -> None:
        """Start the clock ticks (spinners, elapsed times) and, unless replaying, the repair."""
        if self.options is None and self.start:
            self.options = repair_options([self.services.backend_for(h) for h in self.hosts],
                                          self.services.settings.timeout, **self.services.settings.repair)
        if self.clock is None:
            self.clock = self.options.clock if self.options else time.monotonic
        self.set_interval(0.2, self.tick)
        self.draw_header()
        if self.start:
            self.services.actions.start_action(f"repair {' '.join(self.hosts)}", self.run_repair(), hosts=self.hosts)

    @property
    def columns(self) -> dict[str, RunbookColumn]:
        """The column of each node."""
        return {c.host: c for c in self.query(RunbookColumn)}

    def now(self) -> float:
        """The columns' clock."""
        return (self.clock or time.monotonic)()

    @property
    def running(self) -> bool:
        """True while any node's run is going."""
        return self.started_at is not None and self.finished_at is None

    # ---- events -------------------------------------------------------------------------------
    def apply(self, event: RunbookEvent) -> None:
        """Show one runbook event in its node's column (and the header)."""
        column = self.columns.get(event.host)
        if column is None:
            return
        if self.started_at is None:
            self.started_at = self.now()
        if isinstance(event, StepFinished):
            self.waits_told.discard(event.host)  # a later wait of this node is news again
        column.apply(event, self.now())
        if column.run.result is not None:
            self.draw_header()
            self.refresh_bindings()

    def tick(self) -> None:
        """Five times a second: spinners and elapsed times."""
        now = self.now()
        for column in self.columns.values():
            column.tick(now)
        if self.running:
            self.draw_header()

    def draw_header(self) -> None:
        """`` Repair  gpu05 gpu06  run …  ⠹ 12.3 s  audit log …``."""
        text = Text()
        text.append(" Repair ", style="bold reverse")
        text.append(f"  {' '.join(self.hosts)}  ", style="bold")
        if len(self.hosts) > 1:
            text.append(f"{self.approval.strategy}  ", style=palette.STYLE["muted"])
        runs = [c.run for c in self.columns.values()]
        if runs and all(r.result is not None for r in runs):
            stays = {o.host: o.stays for o in self.outcomes}
            for r in runs:
                text.append(f"{RESULT_GLYPH.get(r.result or '', '•')} {r.host} {r.result}  ",
                            style=result_style(r.result))
                if stays.get(r.host):
                    # What still holds it out of service, in short (the column's summary has the command).
                    short = "; ".join(s.split(" (", 1)[0].removeprefix(f"{r.host} ") for s in stays[r.host])
                    text.append(f"⚠ {short}  ", style=palette.bold("warn"))
        elif self.started_at is not None:
            end = self.finished_at if self.finished_at is not None else self.now()
            text.append(f"running {duration_text(max(0.0, end - self.started_at))}  ", style=palette.bold("accent"))
        if self.run_id:
            text.append(f"run {self.run_id}  ", style=palette.STYLE["muted"])
        # Paths on a line of their own, wrapped rather than cut: the operator copies them from here.
        if self.report_path:
            text.append(f"\nreport: {self.report_path}", style=palette.bold("ok"))
        elif self.audit_path:
            text.append(f"\naudit log: {self.audit_path}", style=palette.STYLE["muted"])
        self.query_one("#runbook-header", Static).update(text)

    # ---- the run ------------------------------------------------------------------------------
    async def run_repair(self) -> None:
        """Run the repair through the session; the run log gets every event before the screen does."""
        services = self.services
        options = self.options or repair_options([services.backend_for(h) for h in self.hosts],
                                                 services.settings.timeout, **services.settings.repair)
        self.repair = services.session.start_repair(self.hosts, self.approval.strategy)
        self.started_at = self.now()
        self.draw_header()
        try:
            self.outcomes = await services.session.repair(
                self.repair, options, on_event=self.apply, operator=self, approved=self.approval.bases or None,
                put_back_manual=self.approval.put_back_manual)
        except (Busy, OSError) as exc:
            self.tell(RepairFinished(self.hosts, [], error=str(exc)))
            return
        finally:
            if self.repair.audit_log:
                self.audit_path = Path(self.repair.audit_log)
            self.finished_at = self.now()
            self.draw_header()
            self.refresh_bindings()
        self.tell(RepairFinished(self.hosts, self.outcomes))

    @on(RepairFinished)
    def _finished(self, message: RepairFinished) -> None:
        drifted = [o for o in message.outcomes if o.drift]
        if drifted:
            self.ask_again(drifted)

    def ask_again(self, drifted: list[NodeOutcome]) -> None:
        """A node changed between plan and apply: show how, and offer a fresh plan of it."""
        hosts = [o.host for o in drifted]

        def answer(ok: bool | None) -> None:
            if ok:
                self.services.actions.plan_repair(hosts, reply_to=self)

        self.app.push_screen(ConfirmScreen(
            f"{' '.join(hosts)} changed since the plan was approved: plan again?",
            [f"{o.host}: {change}" for o in drifted for change in o.drift],
            confirm_label="Plan again", cancel_label="Leave it",
            note="Nothing was changed on these nodes: the repair stopped at preflight."), answer)

    async def resolve_holders(self, host: str, holders: tuple) -> HolderDecision:
        """The runbook's question at verify-no-holders: the column waits for the operator's choice."""
        column = self.columns.get(host)
        if column is None or host in self.aborting:
            return HolderDecision(abort=host in self.aborting)
        if host not in self.waits_told:
            self.waits_told.add(host)
            self.tell(RepairNeedsOperator(host, f"{count(len(holders), 'process')} still {verb(len(holders), 'holds')} "
                                                "/dev/nvidia* at verify-no-holders: pick which to SIGTERM, or abort"))
        return await column.ask(HOLDER_RECHECK)

    async def resolve_jobs(self, host: str, jobs: tuple[Job, ...]) -> JobDecision:
        """The runbook's question at preflight when the drained node still runs Slurm jobs.

        Wait for them (the default: ``a`` still aborts), or scancel them after their ids are typed;
        the repair never signals a job's processes itself.
        """
        if host in self.aborting:
            return JobDecision(abort=True)
        answer: asyncio.Future[JobDecision] = asyncio.get_running_loop().create_future()
        lines = [f"job {j.id} {one_line(j.user)}/{one_line(j.name, 120)}" + (f", time limit ends {j.end}" if j.end else "")
                 for j in jobs]  # a job's name is anyone's text: one line each
        ids = " ".join(str(j.id) for j in jobs)

        def settle(decision: JobDecision) -> None:
            if not answer.done():
                answer.set_result(decision)

        def typed(ok: bool | None) -> None:
            settle(JobDecision(scancel=tuple(j.id for j in jobs)) if ok else JobDecision())

        def first(cancel_now: bool | None) -> None:
            if not cancel_now:
                settle(JobDecision())
                return
            self.app.push_screen(ConfirmScreen(
                f"scancel {count(len(jobs), 'Slurm job')} on {host}?", lines, confirm_label=f"scancel {len(jobs)}",
                type_to_confirm=ids, note="Slurm ends them (their owners see them cancelled); the repair goes on "
                                          "once they are gone. Esc: wait for them instead."), typed)

        self.tell(RepairNeedsOperator(host, f"still runs {count(len(jobs), 'Slurm job')}: wait for them, or "
                                            "scancel them"))
        self.app.push_screen(ConfirmScreen(
            f"{host} still runs {count(len(jobs), 'Slurm job')}", lines, confirm_label="scancel…",
            cancel_label="Wait for them",
            note="The node is drained in Slurm: no new job lands. Wait: the repair goes on when they end (a aborts "
                 "it, and the drain is put back). scancel: ends them now, once you type their ids."), first)
        return await answer

    # ---- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Abort while running, SIGTERM while a column waits with a selection, report at the end.

        The abort keys leave the footer once no node runs (before the start, after the end): greyed there,
        they still read as something to do. While nodes run, ``a`` is greyed when no column says which.
        """
        if action in SEARCH_ACTIONS:
            return self.search_allows(action)
        if action in ("abort", "abort_all") and not (self.running and self._running_hosts()):
            return False
        if action == "abort":
            return True if self.abort_target() else None
        if action == "sigterm_holders":
            if self.services.settings.read_only:
                return False
            # Offered from the first pick (greyed while nothing is picked: there is nothing to signal).
            return True if any(c.asking and c.selected_pids for c in self.columns.values()) else None
        if action == "report":
            return True if self.finished_at is not None and self.audit_path else None
        return True

    def why_not(self, action: str) -> str | None:
        """Why the key of ``action`` cannot act now, as the app's toast says it (None when it can act): a key
        never does nothing without a word (issue 28 item 5)."""
        if action in ("abort", "abort_all") and not (self.running and self._running_hosts()):
            return "Nothing to abort: the repair has ended (Esc goes back to the fleet)." if self.finished_at \
                is not None else "Nothing to abort yet: no node has started."
        if action == "abort" and self.abort_target() is None:
            return "Move to the column of the node to abort (Tab), or A aborts every node."
        if action == "sigterm_holders" and not self.services.settings.read_only:
            if not any(c.asking for c in self.columns.values()):
                return ("t signals the holders a waiting node lists: no node waits for its holders now"
                        + (" (the repair has ended)." if self.finished_at is not None else "."))
            if not any(c.selected_pids for c in self.columns.values() if c.asking):
                return "Select holders in a waiting column first (space)."
        if action == "report" and self.finished_at is None:
            return "The report is written once the repair has ended (e then)."
        return None

    def _running_hosts(self) -> list[str]:
        return [h for h, c in self.columns.items() if c.run.result is None and h not in self.aborting]

    def abort_target(self) -> str | None:
        """The node ``a`` aborts: the one whose column has the focus (or the visible tab), else the only one running."""
        running = self._running_hosts()
        if not self.running or not running:
            return None
        node: DOMNode | None = self.focused
        while node is not None and not isinstance(node, RunbookColumn):
            node = node.parent
        if node is None and self.query("TabbedContent"):
            active = self.query_one(TabbedContent).active_pane
            node = next(iter(active.query(RunbookColumn)), None) if active is not None else None
        if isinstance(node, RunbookColumn) and node.host in running:
            return node.host
        return running[0] if len(running) == 1 else None

    def action_abort(self) -> None:
        """Confirm, then abort the focused node (it restores what it changed); the others go on."""
        host = self.abort_target()
        if host is None:
            self.notify("Move to a running node's column first (Tab), or A aborts every node.", severity="warning")
            return
        self._confirm_abort([host])

    def action_abort_all(self) -> None:
        """Confirm, then abort every node still running (each one restores what it changed)."""
        hosts = self._running_hosts()
        if not hosts:
            self.notify("Nothing is running.", severity="warning")
            return
        self._confirm_abort(hosts)

    def _confirm_abort(self, hosts: list[str]) -> None:
        runs = [self.columns[h].run for h in hosts]

        def done(ok: bool | None) -> None:
            if ok:
                self.abort(hosts)

        self.app.push_screen(ConfirmScreen(
            f"Abort the repair of {', '.join(hosts)}?",
            [f"{r.host}: at {r.current or 'a step boundary'}; stops before its next command" for r in runs],
            confirm_label="Abort and restore",
            note="The restore step then puts every unit and persistence setting back as it was."
                 + ("" if len(hosts) == len(self._running_hosts()) else " The other nodes go on.")), done)

    def abort(self, hosts: Sequence[str] | None = None) -> None:
        """Abort ``hosts`` (every running node when None) now: the key's confirmation already asked."""
        targets = list(hosts) if hosts is not None else self._running_hosts()
        for host in targets:
            self.aborting.add(host)
            self.services.session.abort(host)
            column = self.columns.get(host)
            if column is not None and column.run.result is None:
                column.decide(HolderDecision(abort=True))
        self.refresh_bindings()
        self.notify(f"Aborting {', '.join(targets)}: each finishes its current command, then restores.",
                    severity="warning")

    def action_sigterm_holders(self) -> None:
        """Confirm, then hand the selected holders of the waiting column(s) to the runbook for SIGTERM."""
        if self.services.settings.read_only:
            from nvls_tui.console.screens.node import READ_ONLY_REFUSAL

            self.tell(ActionFailed(f"SIGTERM during the repair of {' '.join(self.hosts)}", READ_ONLY_REFUSAL,
                                   self.hosts, refused=True))
            return
        chosen = {c.host: c.selected_holders for c in self.columns.values() if c.asking and c.selected_holders}
        if not chosen:
            self.notify("Select holders in a waiting column first (space).", severity="warning")
            return
        # Whose work each one is, where it is someone's (a job, a pod, a user's process): said before the signal.
        lines = [f"{host}: {holder_label(h, 80)}" + (f"  ← {words}" if (words := workload_words(h)) else "")
                 for host, hs in chosen.items() for h in hs]

        def done(ok: bool | None) -> None:
            if ok:
                for host, hs in chosen.items():
                    self.columns[host].decide(HolderDecision(sigterm=tuple(h.pid for h in hs)))

        self.app.push_screen(ConfirmScreen(
            f"Send SIGTERM to {len(lines)} process{'es' if len(lines) != 1 else ''}?", lines,
            confirm_label=f"SIGTERM {len(lines)}",
            note="The runbook re-checks each PID's start time and command line just before the signal."), done)

    @on(SelectionList.SelectedChanged)
    def _picks_changed(self) -> None:
        # A pick or an unpick in a waiting column decides whether t applies: the footer follows at once.
        self.refresh_bindings()

    def palette_commands(self) -> Iterator[Command]:
        """The runbook's bound actions that apply now (abort, SIGTERM, the report)."""
        return scope_commands(self, "runbook")

    async def action_report(self) -> None:
        """Write the Markdown incident report next to the audit log and say where."""
        if self.audit_path is None:
            self.notify("No audit log yet: the report comes from it.", severity="warning")
            return
        from nvls_tui.localfiles import write_private
        from nvls_tui.report.markdown import report_from_file

        path = self.audit_path.with_suffix(".md")
        try:
            text = await asyncio.to_thread(report_from_file, self.audit_path)
            await asyncio.to_thread(write_private, path, text)  # 0600, never through a planted link
        except OSError as exc:
            self.notify(f"Could not write the report: {exc}", severity="error", timeout=10)
            return
        self.report_path = path
        self.draw_header()
        self.notify(f"Incident report written to {path}", timeout=15)

    def action_back(self) -> None:
        """Esc: leave once the run ended; while it runs the screen stays (``a`` aborts)."""
        if self.running:
            self.notify("The repair is still running: a aborts it (and restores); the screen stays until it ends.",
                        severity="warning")
            return
        self.app.pop_screen()

