"""``nvls-tui repair TARGET ... [--dry-run | --yes | --restore] [--plan FILE] [--json]``: the runbook, headless.

Without ``--yes`` (or ``--dry-run`` / ``--restore``) the plan is read and shown first, then the
operator types the node names to approve it; with no terminal to type on (a pipe, CI) the repair is
refused with one line. An approved plan binds: a node that changed since (a job that started on a
GPU, a unit that came up) is refused at preflight, exit 1. ``--plan FILE`` approves a saved dry run
(``repair --dry-run --json``) the same way, for pipelines. The run goes through the same
:class:`~nvls_tui.runbook.session.Session` as the console. Every event goes to the run's audit log;
progress goes to stdout (to stderr with ``--json``, which keeps stdout for the JSON of contract.md).
Exit: 0 every node repaired, 1 any node failed, was refused or aborted, 2 usage.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from nvls_tui.audit.log import AuditWriteError
from nvls_tui.backends.base import Backend, InvalidArgument
from nvls_tui.diagnosis.restore_hint import restore_commands
from nvls_tui.runbook import STEPS, RepairOptions
from nvls_tui.runbook.describe import describe
from nvls_tui.runbook.events import (
    CommandFinished,
    HoldersRemaining,
    RunbookEvent,
)
from nvls_tui.runbook.happened import NodeHappened, bookkeeping
from nvls_tui.runbook.outcome import REFUSED, NodeOutcome
from nvls_tui.runbook.session import Session
from nvls_tui.settings import Settings
from nvls_tui.targets import kube_from_settings, resolve_backends, scheduler_from_settings
from nvls_tui.textsafe import one_line
from nvls_tui.views.deadlines import WaitReminders, deadlines_line, duration_line, rechecks_first
from nvls_tui.views.runbook import repair_options

# How often the run looks for a wait line that is due (the lines themselves come every 15 s of waiting).
REMIND_TICK = 1.0


def say(stream: TextIO, text: str) -> bool:
    """Print one line; False when the terminal is gone (SIGHUP: the operator's SSH session dropped)."""
    try:
        print(text, file=stream, flush=True)
        return True
    except (OSError, ValueError):
        return False


class ProgressPrinter:
    """Event sink printing one short line per meaningful event, prefixed by the node.

    A step that waits with a deadline gets a line every 15 s of waiting (``waiting: 8× In Progress,
    1:31 of 5:00``), not one per poll: the events bring the news, and :meth:`remind`, called on a
    timer, prints the lines due meanwhile (a reset is one long command with no event in between).
    The holders a wait reports are printed when they change, and a registration wait's poll commands
    when their answer does (once per wait while it is stuck); on a terminal each ``waiting:`` line of a
    wait replaces the one before it while nothing else was printed between. A terminal that went away
    (EIO after a hang-up) silences it; the audit log still has everything.

    Args:
        stream: where the lines go.
        clock: the runbook's clock (a wait's time is measured on it).
    """

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.gone = False
        self.clock = clock
        self.reminders = WaitReminders()
        self.happened: dict[str, NodeHappened] = {}  # what happened to each node: the runbook's one fold
        self._answers: dict[str, dict[tuple[str, ...], tuple[int | None, str]]] = {}  # each command's last answer
        self._wait_shown: str | None = None  # the host whose wait line was the last line printed
        try:
            self._tty = stream.isatty()
        except (AttributeError, ValueError, OSError):
            self._tty = False

    def __call__(self, event: RunbookEvent) -> None:
        self.reminders.update(event, self.clock())
        node = self.happened.setdefault(event.host, NodeHappened(event.host))
        node.fold(event)
        # A wait re-checks the holders every poll: the same ones are said once.
        if not (isinstance(event, HoldersRemaining) and node.holders_repeated) and not self._same_poll(event):
            self._print(event.host, self.format(event))
        self.remind()

    def _same_poll(self, event: RunbookEvent) -> bool:
        """True for a registration wait's poll that answered as the last time: printed once per wait, not
        every 2 s for five minutes (the wait line says how it stands; the audit log keeps every poll)."""
        if not isinstance(event, CommandFinished):
            return False
        answers = self._answers.setdefault(event.host, {})
        answer = (event.exit_status, event.output)
        same = answers.get(event.argv) == answer and event.exit_status is not None
        answers[event.argv] = answer
        wait = self.reminders.waiting(event.host)
        return same and wait is not None and wait.what == "fabric"

    def remind(self) -> None:
        """Print the wait lines that came due (every 15 s of a wait); on a terminal, a wait line that follows
        the same wait's last line replaces it (one updating line)."""
        for host, line in self.reminders.due(self.clock()):
            self._print(host, f"  waiting: {line}", wait=True)

    def _print(self, host: str, text: str | None, *, wait: bool = False) -> None:
        for line in (text or "").splitlines():
            # Cursor up one line and erase it: our own sequence, on a terminal only; node text never
            # carries one (one_line).
            again = "\x1b[1A\x1b[2K" if wait and self._wait_shown == host and self._tty else ""
            if self.gone or not say(self.stream, f"{again}{host:<14} {one_line(line)}"):
                self.gone = True
                return
            self._wait_shown = host if wait else None

    @staticmethod
    def format(event: RunbookEvent) -> str | None:
        """The progress line of ``event`` (None for events that would only add noise): its plain words
        (:func:`nvls_tui.runbook.describe.describe`, which words it for the console's pane and the report too)."""
        if bookkeeping(event):
            return None  # the lock's heartbeat every 30 s: the audit log keeps it
        return describe(event).plain


def run_options(settings: Settings, backends: list[Backend]) -> RepairOptions:
    """The run's tunables (``repair`` and the autopilot's repairs); a simulated fleet's run waits and times itself on the fleet's clock, as the
    console's does (``repair_options``)."""
    return repair_options(backends, settings.timeout, dry_run=settings.repair.dry_run, **settings.repair.tunables())


def can_confirm(stdin: TextIO) -> tuple[bool, str]:
    """Whether there is a terminal to type the node names on. Returns (yes, why not)."""
    if not stdin.isatty() or os.environ.get("CI"):
        return False, ("refusing to repair without --yes: there is no terminal to type the node names on "
                       "(run it interactively, or pass --yes, or approve a saved dry run with --plan FILE)")
    return True, ""


def confirm(hosts: list[str], stdin: TextIO, stderr: TextIO, rechecked: Sequence[str] = (),
            evictions: Mapping[str, Sequence[str]] | None = None) -> tuple[bool, str]:
    """Ask the operator to type the node names. Returns (confirmed, why not).

    ``rechecked`` are the nodes that look healthy: they are smoke-tested first and skipped when the
    test passes, so the question does not say they will be reset. ``evictions``: per node, the workload
    pods (``ns/pod``) its plan evicts, named in the question.
    """
    from nvls_tui.views.plan_summary import evictions_sentence, recheck_sentence

    interactive, why = can_confirm(stdin)
    if not interactive:
        return False, why
    resets = [h for h in hosts if h not in rechecked]
    if resets:
        print(f"This resets every GPU and NVSwitch of: {' '.join(resets)}", file=stderr)
    if pods := evictions_sentence(evictions or {}):
        print(f"It {pods}", file=stderr)
    for host in rechecked:
        print(recheck_sentence(host), file=stderr)
    print("Type the node names to go on (anything else cancels): ", end="", file=stderr, flush=True)
    typed = stdin.readline().split()
    if sorted(typed) != sorted(hosts):
        return False, "the names typed do not match the targets; nothing was changed"
    return True, ""


def load_plan(path: str, hosts: list[str], options: dict | None = None) -> dict[str, dict]:
    """The approved basis of each target from a saved ``repair --dry-run --json``, every field checked
    and its options (``plan_file.plan_options``) the same as ``options`` (:mod:`~nvls_tui.headless.plan_file`).

    Raises:
        ValueError: the file is not such a plan, lacks a target, planned a refusal, or was made with
            other options (one sentence).
        OSError: it cannot be read.
    """
    from nvls_tui.headless.plan_file import plan_options, read_plan

    return read_plan(path, hosts, options if options is not None else plan_options(Settings()))


def duration_lines(outcomes: list[NodeOutcome], options: RepairOptions, strategy: str) -> list[str]:
    """How long the planned repair takes (usually, and at most) and each wait's deadline; nothing when no node
    would be repaired (a refused node is promised neither a duration nor a re-check)."""
    planned = [o for o in outcomes if o.result == "planned"]
    if not planned:
        return []
    rechecked = [o.host for o in planned if rechecks_first(o)]
    return [f"expected duration: {duration_line(options, strategy, [rechecks_first(o) for o in planned])}",
            f"deadlines per node: {deadlines_line(options, rechecked)}"]


def print_plan(outcomes: list[NodeOutcome], stream: TextIO, duration: Sequence[str] = ()) -> None:
    """The plan of each node as the operator approves it: what was changed by hand, each step's commands,
    then ``duration`` (:func:`duration_lines`): how long what the operator commits to takes."""
    for o in outcomes:
        why = (f" ({one_line(o.message)})" if o.result != "planned" else
               " (looks healthy: smoke-tested first, skipped if the test passes)" if rechecks_first(o) else "")
        say(stream, f"== {o.host}: {o.result}{why}")
        for line in o.manual:
            say(stream, f"  changed by hand: {one_line(line)}")
        if o.result == "refused" and not any(step.commands for step in o.steps):
            say(stream, "  no step runs: the repair stops at preflight")
        for step in (s for s in o.steps if s.commands or o.result != "refused"):
            say(stream, f"  {step.name}")
            for command in step.commands:
                say(stream, f"    $ {one_line(command)}")
    for line in duration:
        say(stream, line)


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


async def _run(session: Session, hosts: list[str], settings: Settings, options: RepairOptions, sink,
               stream: TextIO, approved: dict[str, dict] | None) -> list[NodeOutcome]:
    """The run, with SIGINT, SIGTERM and SIGHUP turned into an orderly abort and restore.

    The first signal stops every node at once (the step in flight is cancelled, its remote command
    ended) and each node restores what it changed. The restore itself is shielded: a second signal
    only prints the exact commands that finish the job should this process be killed outright.
    """
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    def on_signal(name: str) -> None:
        seen.append(name)
        if len(seen) == 1 and not settings.repair.restore:
            say(stream, f"nvls-tui: {name}: aborting the repair of {' '.join(hosts)}; every node is being restored")
            session.interrupt(f"{name} received")
            return
        # Killed, this run leaves its lock with no live owner: stale, so only --force takes it over.
        say(stream, f"nvls-tui: {name}: the restore goes on. If nvls-tui is killed before it ends, run: "
                    + "; ".join(restore_commands(h)[1] for h in hosts))

    for sig in INTERRUPTS:
        loop.add_signal_handler(sig, on_signal, sig.name)
    reminders = asyncio.ensure_future(_remind(sink)) if isinstance(sink, ProgressPrinter) else None
    try:
        if settings.repair.restore:
            return await session.restore_nodes(hosts, on_event=sink, force=settings.repair.force)
        kind = "dry-run" if options.dry_run else "repair"
        run = session.start_repair(hosts, settings.repair.strategy)
        return await session.repair(run, options, on_event=sink, approved=approved, kind=kind)
    finally:
        if reminders is not None:
            reminders.cancel()
        for sig in INTERRUPTS:
            loop.remove_signal_handler(sig)
        await asyncio.gather(*(b.close() for b in session.backends.values()), return_exceptions=True)


async def _remind(printer: ProgressPrinter) -> None:
    """Let the printer print the wait lines due while no event comes (a long reset, a quiet smoke test)."""
    while True:
        await asyncio.sleep(REMIND_TICK)
        printer.remind()


async def _plan_first(session: Session, hosts: list[str], options: RepairOptions) -> list[NodeOutcome]:
    """The plan the operator is asked to approve, read in an event loop of its own."""
    try:
        plans = await session.plan(hosts, options)
    finally:
        # Its connections belong to this loop; the repair runs in the next one and opens its own.
        await asyncio.gather(*(b.close() for b in session.backends.values()), return_exceptions=True)
    return [plans[h] for h in hosts]


def _refused_all(hosts: list[str], options: RepairOptions, reason: str) -> list[NodeOutcome]:
    """Every node refused before anything ran (an audit log that cannot be written)."""
    outcomes = []
    for host in hosts:
        outcome = NodeOutcome(host=host, dry_run=options.dry_run, result=REFUSED, message=reason)
        for name in STEPS:
            outcome.step(name)
        outcomes.append(outcome)
    return outcomes


def _report(outcomes: list[NodeOutcome], settings: Settings, audit_path: str | None,
            simulated: bool = False, options: RepairOptions | None = None) -> None:
    """The JSON of contract.md, or one line per node (a terminal that is gone is no error).

    A dry run's text also says how long the repair it planned would take (``options``: its deadlines).
    """
    if settings.json:
        doc: dict = {"nodes": [o.to_json() for o in outcomes]}
        if options is not None and options.dry_run:  # what `--plan` holds the repair to
            from nvls_tui.headless.plan_file import plan_options

            doc["options"] = plan_options(settings)
        say(sys.stdout, json.dumps(doc, indent=2))
        return
    if simulated:
        say(sys.stdout, "SIMULATED nodes: nothing here touched real hardware")
    for o in outcomes:
        smoke = f", {o.smoke.avg_busbw:.1f} GB/s" if o.smoke and o.smoke.avg_busbw is not None else ""
        say(sys.stdout, f"{o.host}: {o.result}{smoke} - {one_line(o.message)}")
    if options is not None and options.dry_run:
        for line in duration_lines(outcomes, options, settings.repair.strategy):
            say(sys.stdout, line)
    if audit_path:
        say(sys.stdout, f"audit log: {audit_path}")
    fallback = next((o.audit_fallback for o in outcomes if o.audit_fallback), None)
    if fallback:
        say(sys.stdout, f"audit fallback (what the audit log could not take): {fallback}")


def run(settings: Settings) -> int:
    """Run the repair (or dry run, or restore) of every target; print text or contract.md's JSON."""
    repair = settings.repair
    if not (settings.targets or settings.hosts_file or settings.demo):
        # The console may open on the demo fleet; a repair never picks its nodes by default.
        print("nvls-tui: repair needs a TARGET (a host, a node set such as gpu[01-08], local, sim:SCENARIO "
              "or --demo); it never repairs a default fleet", file=sys.stderr)
        return 2
    try:
        backends = resolve_backends(settings)
    except InvalidArgument as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    if not backends:
        print("nvls-tui: no target to repair", file=sys.stderr)
        return 2
    if settings.read_only and not repair.dry_run:
        print(f"nvls-tui: {settings.named('read_only', '--read-only')} forbids changing a node; use --dry-run to see "
              "the plan", file=sys.stderr)
        return 2
    hosts = [b.host for b in backends]
    simulated = any(b.simulated for b in backends)
    plan_file = repair.plan
    if repair.force and not repair.restore:
        print("nvls-tui: --force only takes over a stale lock for --restore; it goes with nothing else",
              file=sys.stderr)
        return 2
    if plan_file and (repair.dry_run or repair.restore):
        print("nvls-tui: --plan approves a repair; it goes with neither --dry-run nor --restore", file=sys.stderr)
        return 2
    options = run_options(settings, backends)
    stream = sys.stderr if settings.json else sys.stdout

    def audit_failed(message: str) -> None:
        say(sys.stderr, f"nvls-tui: {message}: aborting, every node is being restored")

    try:
        slurm = scheduler_from_settings(settings)
    except InvalidArgument as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    # A purely simulated node is in no cluster; a lab node (over SSH) may be a real Slurm node.
    schedulers = {b.host: slurm.hook(b.host) for b in backends if not b.simulated} if slurm else {}
    try:
        # On Kubernetes the repair cordons, pauses operand labels and evicts through the API (runbook/kube_repair.py).
        fleet = kube_from_settings(settings, backends)
    except InvalidArgument as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    kubes = {h: k for h in hosts if fleet is not None and (k := fleet.for_host(h)) is not None}
    session = Session({b.host: b for b in backends}, audit_dir=settings.audit_dir, options=options,
                      on_audit_failure=audit_failed, schedulers=schedulers, kube=kubes)
    approved: dict[str, dict] | None = None
    if plan_file:
        try:
            from nvls_tui.headless.plan_file import plan_options

            approved = load_plan(plan_file, hosts, plan_options(settings))
        except (OSError, ValueError) as exc:
            print(f"nvls-tui: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            return 2
    elif not (repair.yes or repair.dry_run or repair.restore):
        interactive, why = can_confirm(sys.stdin)
        if not interactive:
            print(f"nvls-tui: {why}", file=sys.stderr)
            return 2
        # Plan first: what the operator types the names for is this plan, and the repair holds to it.
        plans = asyncio.run(_plan_first(session, hosts, options))
        print_plan(plans, sys.stderr, duration_lines(plans, options, repair.strategy))
        refused = [o.host for o in plans if o.result != "planned"]
        if refused:
            print(f"nvls-tui: a repair of {' '.join(refused)} would be refused (see above); nothing was changed",
                  file=sys.stderr)
            _report(plans, settings, None, simulated)
            return 1
        from nvls_tui.views.plan_summary import evictions

        ok, why = confirm(hosts, sys.stdin, sys.stderr, [o.host for o in plans if rechecks_first(o)],
                          {o.host: evictions(o) for o in plans})
        if not ok:
            print(f"nvls-tui: {why}", file=sys.stderr)
            return 2
        approved = {o.host: o.basis or {} for o in plans}
    progress = ProgressPrinter(stream, options.clock)
    try:
        outcomes = asyncio.run(_run(session, hosts, settings, options, progress, stream, approved))
    except AuditWriteError as exc:
        # Audit first: a run the log cannot record does not start. Nothing was changed.
        say(sys.stderr, f"nvls-tui: {exc}; nothing was changed")
        _report(_refused_all(hosts, options, f"refused before any command: {exc}"), settings, None, simulated)
        return 1
    except OSError as exc:
        print(f"nvls-tui: cannot create the audit log: {exc.strerror or exc}", file=sys.stderr)
        return 2
    audit_path = next((o.audit_log for o in outcomes if o.audit_log), None)
    _report(outcomes, settings, audit_path, simulated, options)
    return 0 if all(o.ok for o in outcomes) else 1
