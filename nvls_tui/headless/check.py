"""``nvls-tui check [TARGET ...] [--json]``: poll every target once and diagnose it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from nvls_tui.backends.base import Activity, Backend, InvalidArgument, join_argv
from nvls_tui.model import NodeState, Severity, Verdict
from nvls_tui.model.jsonout import node_json
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.after_poll import AfterPoll
from nvls_tui.poll.once import poll_deadline, poll_once
from nvls_tui.settings import Settings
from nvls_tui.targets import kube_from_settings, read_targets, resolve_backends, scheduler_from_settings, target_words
from nvls_tui.textsafe import one_line

if TYPE_CHECKING:
    from nvls_tui.headless.metrics_out import MetricsOut

VERDICT_STYLE = {
    Verdict.BROKEN: "bold red",
    Verdict.UNREACHABLE: "bold magenta",
    Verdict.DEGRADED: "yellow",
    Verdict.HEALTHY: "green",
}


# While check waits: nothing at all for a fast check, then the pending nodes on stderr.
QUIET_S = 2.0  # a healthy fleet answers well within this: no progress output at all
EVERY_S = 5.0  # one plain line per interval where stderr is a pipe or a log
EVERY_TTY_S = 1.0  # a terminal's one line is rewritten in place, so its counters may tick
SHOWN = 4  # pending nodes named per line (longest-waiting first); the rest are counted
HOST_CHARS = 40
COMMAND_CHARS = 32  # enough to tell `journalctl -k -b …` from `nvidia-smi --query-gpu=…`
PREFIX = "nvls-tui check: "
ADVICE = "Ctrl-C stops; --timeout N gives up sooner; a node that does not answer stays unknown, never healthy"


class Waiting(Protocol):
    """A node as the progress line reads it (a Backend here, or a node of the poller process)."""

    @property
    def host(self) -> str: ...

    @property
    def activity(self) -> Activity | None: ...


def _command_text(argv: tuple[str, ...], limit: int) -> str:
    """A command as the node runs it, cleaned (node-derived text is data) and cut to ``limit``."""
    return one_line(join_argv(argv), limit)


def _waiting_on(activity: Activity | None) -> str:
    """The command in backticks (cut), or the step that has no command (``connecting``)."""
    if activity is None:
        return "starting"
    if activity.argv:
        return f"`{_command_text(activity.argv, COMMAND_CHARS)}`"
    return one_line(activity.phase, COMMAND_CHARS)


def _waited(activity: Activity | None, now: float, started: float) -> str:
    """``3 s``: how long the current command has run; ``3 s (12 s in all)`` once the node has moved on
    from an earlier slow command, so the count an operator watches never starts again at 0."""
    own = now - (activity.since if activity else started)
    whole = now - started
    return f"{own:.0f} s" + (f" ({whole:.0f} s in all)" if whole - own >= 1 else "")


def pending_text(pending: Sequence[Waiting], total: int, now: float, started: float, *, whole_hosts: bool = False) -> str:
    """How many nodes are pending, what each waits on and for how long (longest-waiting first).

    Args:
        whole_hosts: never cut a host name (a pipe or a log: it has no width, and a cut name cannot be
            searched for); else names are cut at ``HOST_CHARS`` so a terminal's one line shows several.
    """
    seen = [(b, b.activity) for b in pending]  # read once each: a backend may move on
    seen.sort(key=lambda ba: ba[1].since if ba[1] else started)
    host_chars = None if whole_hosts else HOST_CHARS
    named = [f"{one_line(b.host, host_chars)} {_waiting_on(a)} {_waited(a, now, started)}"
             for b, a in seen[:SHOWN]]
    more = f" and {len(seen) - SHOWN} more" if len(seen) > SHOWN else ""
    noun = "node" if total == 1 else "nodes"
    return f"waiting for {len(pending)} of {total} {noun}: {', '.join(named)}{more}"


def _columns(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to (COLUMNS or 80 when it cannot be asked)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    # A pseudo-terminal whose size was never set says 0 columns.
    return columns if columns > 0 else shutil.get_terminal_size().columns


class ProgressLine:
    """Where progress goes: a terminal gets one line rewritten in place, anything else plain lines.

    A plain line carries the advice each time (a log read later needs it on the line); a terminal
    gets the advice once, above the rewritten line, so a narrow one cuts only the node list.
    A stream that fails (stderr closed) turns progress off rather than failing the check.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        try:
            self.tty = stream.isatty()
        except (OSError, ValueError):
            self.tty = False
        self.every = EVERY_TTY_S if self.tty else EVERY_S
        self._drawn = False
        self._advised = False
        self._broken = False

    def show(self, text: str) -> None:
        """Write ``text`` (the pending nodes, already cleaned) as the current progress."""
        if not self.tty:
            self._write(f"{PREFIX}{text} — {ADVICE}\n")
            return
        if not self._advised:
            self._write(f"{PREFIX}{ADVICE}\n")
            self._advised = True
        # Cut to the width: a wrapped line could no longer be rewritten with a carriage return.
        self._write("\r" + one_line(text, max(20, _columns(self.stream)) - 1) + "\x1b[K")
        self._drawn = True

    def clear(self) -> None:
        """Remove a terminal's progress line, so the table (or an error) starts on a clean line."""
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _write(self, text: str) -> None:
        if self._broken:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self._broken = True


async def _report(backends: list[Backend], polls: Sequence[asyncio.Future], line: ProgressLine, deadline: float,
                  started: float) -> None:
    """After a quiet delay, show the pending nodes every interval until none is left."""
    # Never later than halfway to the deadline: a wait long enough to cut a node off gets a word first.
    await asyncio.sleep(min(QUIET_S, deadline / 2))
    while pending := [b for b, poll in zip(backends, polls, strict=True) if not poll.done()]:
        line.show(pending_text(pending, len(backends), time.monotonic(), started, whole_hosts=not line.tty))
        await asyncio.sleep(line.every)


async def poll_all(backends: list[Backend], deadline: float, progress: TextIO | None = None) -> list[NodeState]:
    """Snapshots of every backend, concurrently, in the backends' order; each node's connection closed as soon
    as its answer is in (not after the slowest node: at 1,024 nodes the closes were a serial second at the end,
    and a hung node kept every other session open until its deadline), and every one by the time this returns.

    Args:
        backends: the nodes.
        deadline: seconds before a node that has not answered is unreachable.
        progress: where to say which nodes are still pending while it waits (stderr; never stdout,
            which may carry JSON). None: say nothing.
    """
    started = time.monotonic()
    polls = [asyncio.ensure_future(poll_once(b, deadline)) for b in backends]
    closing: list[asyncio.Future] = []

    def close_when_done(backend: Backend) -> Callable[[asyncio.Future], None]:
        return lambda _poll: closing.append(asyncio.ensure_future(backend.close()))

    for backend, poll in zip(backends, polls, strict=True):
        poll.add_done_callback(close_when_done(backend))
    line = ProgressLine(progress) if progress is not None else None
    reporter = asyncio.ensure_future(_report(backends, polls, line, deadline, started)) if line else None
    try:
        return list(await asyncio.gather(*polls))
    finally:
        if reporter is not None and line is not None:
            reporter.cancel()
            await asyncio.gather(reporter, return_exceptions=True)
            line.clear()
        # A close of every node (a no-op for one closed already), then every close begun as a node's poll ended
        # (a cancelled check's callbacks run late): every node is closed whichever way this ends.
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)
        await asyncio.gather(*closing, return_exceptions=True)


def exit_status(results: list[tuple[NodeState, Diagnosis]]) -> int:
    """0 all healthy, 1 any error finding, 2 no target could be reached (contract.md)."""
    if results and all(not state.reachable for state, _ in results):
        return 2
    if any(f.severity is Severity.ERROR for _, d in results for f in d.findings):
        return 1
    return 0


def _fabric_summary(state: NodeState) -> str:
    """``8× Completed/Success`` or the mix of words, most common first."""
    words: dict[str, int] = {}
    for gpu in state.gpus:
        key = f"{gpu.fabric.state}/{gpu.fabric.status}"
        words[key] = words.get(key, 0) + 1
    return ", ".join(f"{n}× {w}" for w, n in sorted(words.items(), key=lambda kv: -kv[1])) or "-"


def order_for_reading(results: Sequence[tuple[NodeState, Diagnosis]]) -> list[tuple[NodeState, Diagnosis]]:
    """The worst verdicts first (broken, unreachable, degraded, healthy), each in the fleet's order: what a
    person at a terminal reads first (a script reading a pipe keeps the fleet's order)."""
    return sorted(results, key=lambda pair: pair[1].verdict.rank)


def verdict_changes(before: Mapping[str, Verdict] | None,
                    results: Sequence[tuple[NodeState, Diagnosis]]) -> dict[str, str | None]:
    """``--watch``: each node whose verdict differs from the last round's -> the verdict it had (None: a node
    the last round did not have). The first round (``before`` None) has nothing to compare with."""
    if before is None:
        return {}
    return {state.host: (str(before[state.host]) if state.host in before else None)
            for state, diag in results if before.get(state.host) is not diag.verdict}


def _counts_line(results: Sequence[tuple[NodeState, Diagnosis]], left_out: int) -> Any:
    from rich.text import Text

    counts = {v: sum(1 for _, d in results if d.verdict is v) for v in Verdict}
    line = Text(" ").join(Text(f"{n} {v}", style=VERDICT_STYLE[v]) for v, n in counts.items() if n)
    if left_out:
        line.append(f"; {left_out} healthy not shown (--problems-only)", style="dim")
    return line


def _print_table(results: list[tuple[NodeState, Diagnosis]], *, tty: bool = False, problems_only: bool = False,
                 changed: Mapping[str, str | None] | None = None) -> None:
    """The table, the lines under it and the counts.

    Args:
        tty: stdout is a terminal: the worst nodes first and the counts on top (piped: the fleet's order,
            the counts last).
        problems_only: leave the healthy nodes out (the counts still count them).
        changed: ``--watch``: each node whose verdict changed since the last round -> what it was.
    """
    # rich is imported here: `check --json` on hundreds of nodes should not pay for it.
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    everything = results
    if tty:
        results = order_for_reading(results)
    if problems_only:
        results = [(s, d) for s, d in results if d.verdict is not Verdict.HEALTHY]
    changed = changed or {}
    # Every cell and line is a Text, never markup: a node's words (a driver string, a unit state, a
    # finding that quotes a process) are data, and one hostile node must not hide the others.
    rows = [_table_row(state, diag, changed) for state, diag in results]
    columns: tuple[str, ...] = ("host", "verdict", "FM", "driver", "fabric", "holders")
    if any(state.k8s is not None for state, _ in results):  # a cluster is configured: its word for each node
        columns += ("k8s",)
        rows = [(*row, Text(state.k8s.word if state.k8s is not None else "-"))
                for row, (state, _) in zip(rows, results, strict=True)]
    widths = [max([len(col), *(len(row[i].plain) for row in rows)]) for i, col in enumerate(columns)]
    # A pipe has no width: rich would lay the table out for 80 columns and cut every column to fit, host
    # names too. Piped, the table is as wide as it needs; on a terminal the host and verdict columns keep
    # their whole width and the others give way.
    console = Console(highlight=False, markup=False, emoji=False)
    if not console.is_terminal:
        console = Console(highlight=False, markup=False, emoji=False, width=max(sum(widths) + 3 * len(widths) + 1, 80))
    simulated = any(s.simulated for s, _ in results)
    lab = any(s.lab for s, _ in results)
    title = "nvls-tui check" + (" — LAB nodes (simulated GPUs)" if lab else " — SIMULATED nodes" if simulated else "")
    counts = _counts_line(everything, len(everything) - len(results) if problems_only else 0)
    if tty:
        console.print(counts)
    moves = [f"{s.host} {changed[s.host] or 'not polled'} → {d.verdict}" for s, d in results if s.host in changed]
    if moves:
        console.print(Text("changed since the last round: " + ", ".join(moves)), soft_wrap=True)
    table = Table(title=title)
    for i, col in enumerate(columns):
        table.add_column(col, no_wrap=True, min_width=widths[i] if i < 2 else None)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    _print_lines(console, results)
    if not tty:
        console.print(counts)


def _table_row(state: NodeState, diag: Diagnosis, changed: Mapping[str, str | None]) -> tuple[Any, ...]:
    """One node's row of the plain table (every cell a Text: a node's words are data); a verdict that changed
    since the last round (``--watch``) says what it was."""
    from rich.text import Text

    fm = state.service("nvidia-fabricmanager")
    # "?" where the poll could not read the section: unknown is never shown as a count or a state.
    # A node that never answered has read nothing: every cell is "?" (missing_section says so).
    fm_text = "?" if state.missing_section("units") is not None else (fm.active if fm else "-")
    if state.fm_place is not None and state.fm_place.in_container:
        fm_text = "driver pod"  # no host unit: its "inactive" (not-found) is no FM state
    holders = "?" if state.missing_section("holders") is not None else str(len(state.holders))
    gpus_unread = state.missing_section("gpus") is not None
    return (
        Text(state.host),
        Text(str(diag.verdict) + (f" (was {changed[state.host] or 'not polled'})" if state.host in changed else ""),
             style=VERDICT_STYLE[diag.verdict]),
        Text(fm_text),
        Text("?" if gpus_unread else state.driver or "-"),
        Text("?" if gpus_unread else _fabric_summary(state)),
        Text(holders),
    )


def _print_lines(console: Any, results: list[tuple[NodeState, Diagnosis]]) -> None:
    """The lines under the table: each error and warning, untrusted smoke records, the counts."""
    from rich.text import Text

    # What is wrong, what could not be seen, and why a node is degraded: one line each, so nothing
    # needs a wide table. Information (HOLDERS_PRESENT) stays in --json and the console.
    for state, diag in results:
        for finding in diag.findings:
            # FM_IN_CONTAINER is information, yet it changes the move: the host-unit repair does not apply.
            if finding.severity in (Severity.ERROR, Severity.WARNING) or finding.code == "FM_IN_CONTAINER":
                line = Text(state.host, style=VERDICT_STYLE[diag.verdict])
                line.append(f" {finding.code}: {one_line(finding.message)}")
                console.print(line, soft_wrap=True)
        if diag.smoke_distrust and state.smoke is not None:
            # The pass no longer dates the kernel lines, so an old alarm counts again: say why.
            bw = f" {state.smoke.avg_busbw:.1f} GB/s" if state.smoke.avg_busbw is not None else ""
            line = Text(state.host, style=VERDICT_STYLE[diag.verdict])
            line.append(f" smoke ✔{bw} not trusted: {diag.smoke_distrust}")
            console.print(line, soft_wrap=True)


async def read_scheduler_view(slurm, after: AfterPoll, states: Sequence[NodeState]) -> None:
    """Read the scheduler's view of every node it can know (a purely simulated node is in no cluster) and
    fold it into ``after``'s polls from now on."""
    from functools import partial

    from nvls_tui.scheduler.slurm import with_scheduler

    hosts = [s.host for s in states if s.lab or not s.simulated]
    after.set_view("scheduler", partial(with_scheduler, scheduler=await slurm.states(hosts)) if hosts else None)


async def read_kube_view(kube, after: AfterPoll) -> None:
    """Read the cluster's view of every node in one (one node list, one pods list a node) and fold it into
    ``after``'s polls from now on: read after the poll, a holder's pod uid is looked up in a pods list read
    after the holders were."""
    from functools import partial

    from nvls_tui.kube.view import with_kube

    after.set_view("kube", partial(with_kube, view=await kube.read()))


def slurm_nodes(settings: Settings) -> list[str]:
    """The Slurm node names of ``check --via slurm`` (node sets expanded; no simulated targets).

    Each is counted before it is expanded (``target_words`` holds the total to the cap), and the
    names are kept once each in one pass, first seen first.
    """
    from ClusterShell.NodeSet import NodeSet, NodeSetParseError

    from nvls_tui.backends.nodesets import nodeset_size

    names: dict[str, None] = {}
    for word in target_words(settings):
        if word.startswith("sim:") or word == "local":
            raise InvalidArgument(f"--via slurm reaches Slurm nodes, not {word}")
        if nodeset_size(word) is None:  # ClusterShell's operators and groups: not counted, not expanded
            raise InvalidArgument(f"{word!r} is not a Slurm node name or node set (names, commas, [a-b] ranges)")
        try:
            names.update(dict.fromkeys(NodeSet(word)))
        except (NodeSetParseError, ValueError):
            raise InvalidArgument(f"{word!r} is not a Slurm node name or node set") from None
    return list(names)


def _poll(settings: Settings, slurm, deadline: float, after: AfterPoll) -> list[NodeState]:
    """Every target's state: over SSH (each node its own session) or through one srun; the cluster's view
    read into ``after`` where a cluster is configured."""
    # Progress goes to stderr only: stdout stays exactly the table or the one JSON document.
    if settings.via != "slurm":
        backends = resolve_backends(settings)
        kube = kube_from_settings(settings, backends)  # a bad kubeconfig is refused before any node is polled
        states = asyncio.run(poll_all(backends, deadline, sys.stderr))
        if kube is not None:
            asyncio.run(read_kube_view(kube, after))
        return states
    if slurm is None:
        raise InvalidArgument("--via slurm needs the Slurm cluster: --slurm-conf FILE or SLURM_CONF")
    from nvls_tui.scheduler.srun import poll_via_srun

    return asyncio.run(poll_via_srun(slurm, slurm_nodes(settings), deadline, settings.max_output,
                                     command_timeout=settings.timeout))


def poll_round(settings: Settings, slurm, after: AfterPoll) -> tuple[list[tuple[NodeState, Diagnosis]], float]:
    """One poll of every target as ``after`` shows it (carried from its last round, with the cluster's
    views, diagnosed), and how long it took: a round of ``check``, of ``check --watch`` polled here, and of
    the autopilot (``headless/autopilot.py``), the one function all three use."""
    # A poll is several commands; give it a few command timeouts before calling the node unreachable.
    deadline = poll_deadline(settings.timeout)
    started = time.monotonic()
    states = _poll(settings, slurm, deadline, after)
    if slurm is not None:
        asyncio.run(read_scheduler_view(slurm, after, states))
    return after.read_round(states), time.monotonic() - started


def targets_json(read: dict[str, list[str]], results: list[tuple[NodeState, Diagnosis]]) -> dict[str, Any]:
    """The JSON's ``targets``: the words read, where from, and whether any node polled is simulated."""
    return {**read, "simulated": any(state.simulated for state, _ in results)}


def _print_round(settings: Settings, results: list[tuple[NodeState, Diagnosis]], elapsed: float,
                 read: dict[str, list[str]], changed: Mapping[str, str | None] | None = None) -> None:
    """The table and its lines, or the one JSON document (one line) of a round.

    Args:
        read: the target words and where they came from (``{"read": [...], "from": [...]}``).
        changed: ``--watch``, after its first round: each node whose verdict changed -> what it was.
    """
    if settings.json:
        shown = [(s, d) for s, d in results if not settings.problems_only or d.verdict is not Verdict.HEALTHY]
        # The targets first: a script (or the person it pages) sees which nodes these are, simulated or not.
        doc: dict[str, Any] = {"targets": targets_json(read, results), "nodes": [node_json(s, d) for s, d in shown],
                               "elapsed_s": round(elapsed, 3)}
        if settings.problems_only:
            doc["left_out"] = {"healthy": len(results) - len(shown)}
        if changed is not None:
            doc["changed"] = dict(changed)
        # No indent: the C encoder is several times faster on 256 nodes (pipe to `jq .` to read it).
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        _print_table(results, tty=_stdout_is_tty(), problems_only=settings.problems_only, changed=changed)
    sys.stdout.flush()


def _stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (OSError, ValueError):  # a closed or odd stdout: read as a pipe
        return False


def run(settings: Settings) -> int:
    """Poll, diagnose, print; exit status of contract.md (``--watch``: that of the last round)."""
    # The words once (a hosts file may be a pipe): no target is a usage error here, before anything runs.
    words, sources = read_targets(settings)
    settings = replace(settings, targets=tuple(words), hosts_file=None, demo=False)
    read = {"read": words, "from": sources}
    slurm = scheduler_from_settings(settings)
    out: MetricsOut | None = None
    if settings.metrics_textfile or settings.metrics_listen:
        # Imported only when asked: prometheus_client and the metrics core are a few hundredths of a second of
        # CPU at every check's start, which a check without metrics (a script's, a bench's) need not pay.
        from nvls_tui.headless.metrics_out import MetricsSetupError, metrics_out

        if settings.metrics_listen and settings.watch is None:
            raise MetricsSetupError("--metrics-listen serves the metrics while --watch runs: add --watch SECONDS "
                                    "(a single check can write --metrics-textfile)")
        out = metrics_out(settings)  # a folder that cannot be written or an address in use: refused before any poll
    try:
        if settings.watch is None:
            results, elapsed = poll_round(settings, slurm, AfterPoll())
            if out is not None:
                out.publish(results, elapsed)
            _print_round(settings, results, elapsed, read)
            return exit_status(results)
        return _watch(settings, slurm, settings.watch, read, out)
    finally:
        if out is not None:
            out.close()


# A terminal's round replaces the last: cursor home, clear to the end of the screen.
HOME_CLEAR = "\x1b[H\x1b[J"
WATCH_ADVICE = "Ctrl-C stops (exit status of the last round)"


def _watch(settings: Settings, slurm, every: float, read: dict[str, list[str]], out: MetricsOut | None = None) -> int:
    """``check --watch``: a round every ``every`` seconds until Ctrl-C; the last finished round's status.

    On a terminal (stdout a tty, no ``--json``) each round is drawn whole in place of the last, so the
    screen never scrolls. Otherwise each round follows the last under a header line naming it (a log
    keeps every round); ``--json`` prints one document per line and no header, so each line parses.
    Raises KeyboardInterrupt (130) when Ctrl-C comes before any round finished: there is no status.

    The rounds run in a poller process (``nvls_tui.poller.process``, the console's own), which keeps each
    node's connection and kernel-log cursor from one round to the next; ``--via slurm`` (one srun a
    round) and a test's ``connect`` hook (which cannot travel to another process) poll here, round by round.
    """
    try:
        tty = sys.stdout.isatty()
    except (OSError, ValueError):
        tty = False
    watch = _Watch(settings, every, tty, read, out)
    try:
        if settings.via == "slurm" or settings.connect is not None:
            watch.rounds_here(slurm)
        else:
            asyncio.run(watch.rounds_polled(slurm))
    except KeyboardInterrupt:
        if watch.status is None:
            raise
    return watch.status if watch.status is not None else 130


class _Watch:
    """The rounds of one ``check --watch``: their number, how each is printed, the last status."""

    def __init__(self, settings: Settings, every: float, tty: bool, read: dict[str, list[str]],
                 out: MetricsOut | None = None) -> None:
        self.settings = settings
        self.out = out  # --metrics-textfile / --metrics-listen: each round published before it is printed
        self.read = read
        self.every = every
        self.tty = tty
        self.number = 0
        self.status: int | None = None
        self.verdicts: dict[str, Verdict] | None = None  # the last round's, for what changed since

    def show(self, results: list[tuple[NodeState, Diagnosis]], elapsed: float) -> None:
        """Publish the round's metrics (the textfile right after the round's end), print it, keep its status."""
        if self.out is not None:
            self.out.publish(results, elapsed)
        self.number += 1
        when = time.strftime("%H:%M:%S") if self.tty else time.strftime("%Y-%m-%dT%H:%M:%S%z")
        header = f"nvls-tui check --watch: round {self.number}, {when}, every {self.every:g} s — {WATCH_ADVICE}"
        if self.tty and not self.settings.json:
            sys.stdout.write(HOME_CLEAR + header + "\n")
        elif not self.settings.json:
            sys.stdout.write(("\n" if self.number > 1 else "") + header + "\n")
        changed = verdict_changes(self.verdicts, results) if self.verdicts is not None else None
        _print_round(self.settings, results, elapsed, self.read, changed)
        self.verdicts = {state.host: diag.verdict for state, diag in results}
        self.status = exit_status(results)

    def rounds_here(self, slurm) -> None:
        """Every round polled in this process (new connections each round), carried from the last."""
        after = AfterPoll()
        while True:
            began = time.monotonic()
            self.show(*poll_round(self.settings, slurm, after))
            time.sleep(max(0.0, self.every - (time.monotonic() - began)))

    async def rounds_polled(self, slurm) -> None:
        """Every round polled by one poller process (started here, ended with this command)."""
        from nvls_tui.headless.polled_rounds import PolledRounds
        from nvls_tui.poll.client import PollerGone

        rounds = PolledRounds(self.settings, slurm)  # its words already read (run): the poller's nodes are these
        try:
            await rounds.start()
            while True:
                began = time.monotonic()
                try:
                    results = await rounds.next(sys.stderr)
                except PollerGone as exc:
                    raise PollerGone(f"check --watch: {exc}") from None
                self.show(results, time.monotonic() - began)
                await asyncio.sleep(max(0.0, self.every - (time.monotonic() - began)))
        finally:
            await rounds.close()


