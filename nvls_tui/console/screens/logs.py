"""The node's logs (``l`` in the node screen): FM's journal, the kernel log, the past repairs, in tabs.

Each tab is a scrollable, searchable pane (``/``, ``n``/``N``) filled by read-only reads: the node's
``journalctl`` and ``dmesg`` through its own transport (:meth:`Backend.run`, never the session's door
that changes nodes; on a simulated node the simulator answers), and the audit logs on this bastion that
name the node, each opened as its incident report. What a tab reads and how a result becomes lines is
:mod:`nvls_tui.views.node_logs`; node text is written as plain :class:`~rich.text.Text` (never markup).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import RichLog, Static, TabbedContent, TabPane

from nvls_tui.backends.base import BackendError
from nvls_tui.console.bindings import bindings_for, help_first
from nvls_tui.console.commands import Command, ScreenCommands, scope_commands
from nvls_tui.console.screens.searching import SEARCH_ACTIONS, Searching, Where
from nvls_tui.console.screens.typed import OnConsole
from nvls_tui.console.widgets import cells
from nvls_tui.console.widgets.banner import ModeBanner
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.textsafe import one_line
from nvls_tui.views.node_logs import (
    FM_ARGV,
    KERNEL_ARGV,
    LINE_CHARS,
    LINES,
    RING_ARGV,
    TAB_TITLES,
    TABS,
    LogRead,
    command_words,
    coverage_words,
    failed_read,
    read_result,
    ring_reason,
)
from nvls_tui.views.report_text import readable_lines

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nvls_tui.console.services import ConsoleServices

# How a report's kinds of line look in the past-repairs tab (views.report_text).
REPORT_STYLES = {"heading": "bold underline", "table-head": "bold"}
PAST_REPORTS = 5
FOLLOW_EVERY = 3.0  # seconds between two reads of a followed tab (f)  # the newest audit logs opened as reports (the others are listed)
REPORT_BYTES = 8 * 1024 * 1024  # an audit log larger than this is named, not opened here


class LogsScreen(Searching, OnConsole, Screen[None]):
    """Three tabs of one node's logs.

    Args:
        host: the node.
        services: the fleet (for the node's kernel coverage), the backends, the session (its audit
            directory), the settings (the per-command timeout).
        tab: the tab shown first (``fm``, ``kernel`` or ``past``).
    """

    BINDINGS = [help_first(), *bindings_for("search"), *bindings_for("logs")]
    COMMANDS = {ScreenCommands}
    DEFAULT_CSS = """
    LogsScreen #logs-header { height: 1; padding: 0 1; }
    LogsScreen TabbedContent { height: 1fr; }
    LogsScreen TabPane { padding: 0; height: 1fr; }
    LogsScreen .logs-status { height: auto; padding: 0 1; }
    LogsScreen RichLog { height: 1fr; scrollbar-size-vertical: 1; }
    """

    def __init__(self, host: str, services: ConsoleServices, tab: str = "fm") -> None:
        super().__init__()
        self.host = host
        self.services = services
        self.followed = ""  # the tab f follows (its title goes in the header while it does)
        self.follow_timer: Timer | None = None  # f: the tab shown read again every FOLLOW_EVERY seconds
        self.first_tab = tab if tab in TABS else "fm"
        # What each tab shows, as plain lines (the panes render them lazily; tests and search read these).
        self.shown: dict[str, list[str]] = {tab: [] for tab in TABS}
        self.status: dict[str, str] = {tab: "" for tab in TABS}

    def compose(self) -> ComposeResult:
        """The header, the banner, the three tabs (a status line over a pane each), the footer."""
        yield Static(self._header(), id="logs-header")
        yield ModeBanner(simulated=self.services.settings.simulated, read_only=self.services.settings.read_only,
                         id="banner")
        with TabbedContent(initial=f"tab-{self.first_tab}", id="logs-tabs"):
            for tab in TABS:
                with TabPane(TAB_TITLES[tab], id=f"tab-{tab}"):
                    yield Static(id=f"status-{tab}", classes="logs-status")
                    yield RichLog(id=f"log-{tab}", max_lines=2 * LINES + 100, wrap=True, min_width=20,
                                  markup=False, highlight=False)
        yield SettledFooter(compact=True)

    def on_mount(self) -> None:
        """Read every tab at once (each in its own worker)."""
        self.action_reread()
        self.query_one(f"#log-{self.first_tab}", RichLog).focus()

    # ---- what the tabs show -------------------------------------------------------------------
    def _begin(self, tab: str, status: str) -> None:
        self.shown[tab] = []
        pane = self.query_one(f"#log-{tab}", RichLog)
        pane.clear()
        pane.loading = True
        self._say(tab, status)

    def _say(self, tab: str, status: str, *, problem: bool = False) -> None:
        self.status[tab] = status
        style = cells.STYLE["degraded"] if problem else cells.STYLE["muted"]
        self.query_one(f"#status-{tab}", Static).update(Text(status, style=style))

    def _write(self, tab: str, lines: Sequence[str], *, style: str = "") -> None:
        pane = self.query_one(f"#log-{tab}", RichLog)
        for line in lines:
            self.shown[tab].append(line)
            pane.write(Text(line, style=style))

    def _rule(self, tab: str, words: str) -> None:
        self._write(tab, [f"── {words} ──"], style="bold")

    def _end(self, tab: str) -> None:
        self.query_one(f"#log-{tab}", RichLog).loading = False

    async def _run(self, argv: Sequence[str]) -> LogRead:
        """One read-only command on the node, as a tab's read (an error is one line, never a traceback)."""
        backend = self.services.backend_for(self.host)
        try:
            result = await backend.run(list(argv), self.services.settings.timeout, privileged=True)
        except BackendError as exc:
            return failed_read(self.host, argv, str(exc))
        except Exception as exc:  # noqa: BLE001 - whatever a transport raises is one line here
            return failed_read(self.host, argv, f"{type(exc).__name__}: {exc}")
        return read_result(self.host, argv, result)

    def _show_read(self, tab: str, read: LogRead) -> None:
        if read.left_out:
            self._write(tab, [f"({read.left_out} earlier lines left out: the last {LINES} are shown)"], style="dim")
        self._write(tab, read.lines)

    async def _read_fm(self) -> None:
        tab = "fm"
        self._begin(tab, f"reading `{command_words(FM_ARGV)}` …")
        read = await self._run(FM_ARGV)
        self._show_read(tab, read)
        if read.missing_tool:
            self._say(tab, f"{read.error}. FM's journal cannot be read there; 2 shows the kernel ring buffer (dmesg).",
                      problem=True)
        elif read.error:
            self._say(tab, read.error, problem=True)
        else:
            self._say(tab, f"`{command_words(FM_ARGV)}`: {len(read.lines)} lines (this boot; the last {LINES} at most)")
        self._end(tab)

    async def _read_kernel(self) -> None:
        tab = "kernel"
        state = self.services.live.fleet.get(self.host)
        coverage = state.kernel_coverage if state is not None else None
        self._begin(tab, f"reading `{command_words(KERNEL_ARGV)}` …")
        journal = await self._run(KERNEL_ARGV)
        words = [coverage_words(coverage)]
        if not journal.missing_tool:
            self._rule(tab, f"journal: {command_words(KERNEL_ARGV)}")
            self._show_read(tab, journal)
        if journal.error:
            words.append(journal.error)
        why_ring = ring_reason(coverage, journal)
        if why_ring is not None:
            words.append(why_ring)
            ring = await self._run(RING_ARGV)
            self._rule(tab, "ring buffer: dmesg")
            self._show_read(tab, ring)
            if ring.error:
                words.append(ring.error)
        self._say(tab, "; ".join(words), problem=bool(journal.error or why_ring))
        self._end(tab)

    async def _read_past(self) -> None:
        tab = "past"
        from nvls_tui.audit.log import default_audit_dir
        from nvls_tui.audit.past import audit_logs_naming

        folder = Path(self.services.session.audit_dir or default_audit_dir()).expanduser()
        self._begin(tab, f"looking for the audit logs in {folder} that name {self.host} …")
        try:
            logs = await asyncio.to_thread(audit_logs_naming, self.host, folder)
        except OSError as exc:
            self._say(tab, f"the audit directory {folder} cannot be listed ({exc.strerror or exc}): the past "
                           f"repairs of {self.host} are unknown", problem=True)
            self._end(tab)
            return
        if not logs:
            self._say(tab, f"no audit log in {folder} names {self.host}: no repair, restore or console session "
                           "from this bastion's audit directory touched it")
            self._end(tab)
            return
        self._say(tab, f"{len(logs)} audit log{'s' if len(logs) != 1 else ''} in {folder} name {self.host}, newest "
                       f"first" + (f"; the newest {PAST_REPORTS} are opened as reports" if len(logs) > PAST_REPORTS else ""))
        for past in logs[:PAST_REPORTS]:
            self._rule(tab, f"{past.kind}: {past.path.name}")
            for line, kind in await asyncio.to_thread(report_lines, past.path):
                self._write(tab, [line], style=REPORT_STYLES.get(kind, ""))
        for past in logs[PAST_REPORTS:]:
            self._write(tab, [f"also: {past.path} ({past.kind}; nvls-tui report opens it)"], style="dim")
        self._end(tab)

    # ---- keys ---------------------------------------------------------------------------------
    def action_show_fm(self) -> None:
        """``1``: Fabric Manager's journal."""
        self._show("fm")

    def action_show_kernel(self) -> None:
        """``2``: the kernel log."""
        self._show("kernel")

    def action_show_past(self) -> None:
        """``3``: the past repairs."""
        self._show("past")

    def _show(self, tab: str) -> None:
        self.query_one(TabbedContent).active = f"tab-{tab}"
        self.query_one(f"#log-{tab}", RichLog).focus()

    @property
    def active_tab(self) -> str:
        """The tab shown (``fm``, ``kernel`` or ``past``)."""
        return self.query_one(TabbedContent).active.removeprefix("tab-")

    def _header(self) -> Text:
        """The screen's keys, and while ``f`` follows a tab, which one (a toast said it only for 3 s)."""
        follow = (f"following the {TAB_TITLES[self.followed]} every {FOLLOW_EVERY:g} s (f stops)"
                  if self.follow_timer is not None and self.followed else "f follows")
        if self.follow_timer is not None:  # first: the line is cut at the right on a narrow terminal
            return Text(f"Logs of {self.host}  ·  {follow} · 1 FM journal · 2 kernel · 3 past repairs · "
                        "/ searches · Esc back", style="bold")
        return Text(f"Logs of {self.host}  ·  1 FM journal · 2 kernel · 3 past repairs · p reads again · {follow} · "
                    "/ searches · Esc back", style="bold")

    def action_follow(self) -> None:
        """``f``: follow the tab shown (FM's journal or the kernel log): read it again every FOLLOW_EVERY seconds
        until ``f`` again; the status line says so."""
        if self.follow_timer is not None:
            self.follow_timer.stop()
            self.follow_timer = None
            self.query_one("#logs-header", Static).update(self._header())
            self.notify("Stopped following.", timeout=2)
            return
        self.follow_timer = self.set_interval(FOLLOW_EVERY, self._follow_once)
        self.followed = self.active_tab
        self.query_one("#logs-header", Static).update(self._header())
        self.notify(f"Following the {TAB_TITLES[self.active_tab]} tab: read again every {FOLLOW_EVERY:g} s (f stops).",
                    timeout=3)
        self._follow_once()

    @property
    def following(self) -> bool:
        """True while ``f`` follows the tab shown."""
        return self.follow_timer is not None

    def _follow_once(self) -> None:
        tab = self.active_tab
        read = {"fm": self._read_fm, "kernel": self._read_kernel}.get(tab)
        if read is not None:  # the past repairs do not grow while one looks
            self.run_worker(read(), group=f"logs-{tab}", exclusive=True, exit_on_error=False)

    def action_reread(self) -> None:
        """``p``: read the three tabs again."""
        for tab, read in (("fm", self._read_fm), ("kernel", self._read_kernel), ("past", self._read_past)):
            self.run_worker(read(), group=f"logs-{tab}", exclusive=True, exit_on_error=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The search keys apply while a search is on; the tabs' keys always."""
        if action in SEARCH_ACTIONS:
            return self.search_allows(action)
        return True

    def search_lines(self) -> Iterator[tuple[Where, str]]:
        """The shown tab's lines only (the other tabs' panes are out of sight)."""
        tab = self.active_tab
        for where, line in super().search_lines():
            if where[0] in (f"log-{tab}", f"status-{tab}"):
                yield where, line

    def palette_commands(self) -> Iterator[Command]:
        """The logs screen's keys that have a palette title."""
        yield from scope_commands(self, "logs", self.host)


def report_lines(path: Path) -> list[tuple[str, str]]:
    """An audit log's incident report as ``(text, kind)`` lines to read (``views.report_text``: headings, tables
    lined up, no Markdown marks), or one line saying why it cannot be opened here."""
    from nvls_tui.report.markdown import NotAnAuditLog, report_from_file

    try:
        size = path.stat().st_size
        if size > REPORT_BYTES:
            return [(f"{path} is {size / 2**20:.1f} MiB, too large to open here: nvls-tui report {path}", "text")]
        text = report_from_file(path)
    except NotAnAuditLog as exc:
        return [(one_line(str(exc), 300), "text")]
    except (OSError, UnicodeError) as exc:
        return [(f"{path} cannot be read ({getattr(exc, 'strerror', None) or exc})", "text")]
    # A report reads from its top (the summary first): past the bound, its last lines give way.
    lines = readable_lines(text)
    kept = [(line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…", kind) for line, kind in lines[:LINES]]
    return kept + ([(f"({len(lines) - LINES} later lines of the report left out: nvls-tui report {path})", "text")]
                   if len(lines) > LINES else [])


__all__ = ["PAST_REPORTS", "REPORT_BYTES", "LogsScreen", "report_lines"]
