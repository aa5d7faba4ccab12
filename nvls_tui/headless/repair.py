"""``nvls-tui repair TARGET ... [--dry-run | --yes | --restore] [--json]``: the runbook, headless.

Without ``--yes`` (or ``--dry-run`` / ``--restore``) the operator types the node names to confirm;
with no terminal to type on (a pipe, CI) the repair is refused with one line. Every event goes to
the run's audit log; progress goes to stdout (to stderr with ``--json``, which keeps stdout for the
JSON of contract.md). Exit: 0 every node repaired, 1 any node failed or refused, 2 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import TextIO

from nvls_tui.records.audit import AuditLog, AuditWriteError
from nvls_tui.backends.base import Backend, InvalidArgument, join_argv
from nvls_tui.runbook import STEPS, RepairOptions, RunGroup, new_run_id, restore_node, run_many
from nvls_tui.runbook.events import (
    CommandFinished,
    HoldersRemaining,
    Note,
    ProcessSignalled,
    Restored,
    RunbookEvent,
    RunFinished,
    SmokeRow,
    StepFinished,
    StepStarted,
    fan_out,
)
from nvls_tui.runbook.outcome import REFUSED, NodeOutcome
from nvls_tui.backends.targets import resolve_backends, sim_speed
from nvls_tui.textsafe import one_line


def say(stream: TextIO, text: str) -> bool:
    """Print one line; False when the terminal is gone (SIGHUP: the operator's SSH session dropped)."""
    try:
        print(text, file=stream, flush=True)
        return True
    except (OSError, ValueError):
        return False


class ProgressPrinter:
    """Event sink printing one short line per meaningful event, prefixed by the node.

    A terminal that went away (EIO after a hang-up) silences it; the audit log still has everything.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def __call__(self, event: RunbookEvent) -> None:
        text = self.format(event)
        for line in (text or "").splitlines():
            if self.gone or not say(self.stream, f"{event.host:<14} {one_line(line)}"):
                self.gone = True
                return


class AuditGuard:
    """The audit log as a sink that stops the run when it can no longer write (a full disk).

    The runbook's event sink must never raise (a lost UI update must not break a repair), so a
    failed audit write is turned into an interrupt instead: every node stops and restores.
    """

    def __init__(self, audit: AuditLog, on_failure) -> None:
        self.audit = audit
        self.on_failure = on_failure
        self.failed: AuditWriteError | None = None

    def __call__(self, event: RunbookEvent) -> None:
        try:
            self.audit(event)
        except AuditWriteError as exc:
            if self.failed is None:
                self.failed = exc
                self.on_failure(exc)

    @staticmethod
    def format(event: RunbookEvent) -> str | None:
        """The progress line of ``event`` (None for events that would only add noise)."""
        if isinstance(event, StepStarted):
            return f"{event.step} ..."
        if isinstance(event, StepFinished) and event.status == "planned":
            return f"{event.step} (planned)" + "".join(f"\n  $ {c}" for c in event.commands)
        if isinstance(event, StepFinished):
            tail = f": {event.message}" if event.message else ""
            return f"{event.step} {event.status} ({event.duration:.1f} s){tail}"
        if isinstance(event, CommandFinished):
            status = event.exit_status if event.exit_status is not None else f"no status ({event.error})"
            return f"  $ {join_argv(list(event.argv))}  -> {status}"
        if isinstance(event, ProcessSignalled):
            return f"  {event.signal} {event.pid} ({event.holder_kind}) -> {event.outcome}"
        if isinstance(event, HoldersRemaining):
            return f"  {event.message}"
        if isinstance(event, SmokeRow):
            return f"  {event.size:>12} B  {event.busbw} GB/s" if event.size is not None else None
        if isinstance(event, Restored):
            return f"  restored {', '.join(event.units) or 'no unit'}" + (
                f"; FAILED {', '.join(event.failed)}" if event.failed else "")
        if isinstance(event, Note):
            return f"  [{event.level}] {event.message}"
        if isinstance(event, RunFinished):
            return f"=> {event.result}: {event.message}"
        return None


def _options(args: argparse.Namespace, backends: list[Backend]) -> RepairOptions:
    base = RepairOptions()
    # A simulated clock runs faster than real time: poll it as often, relative to its own time.
    speed = sim_speed() if backends and all(b.simulated for b in backends) else 1.0
    return RepairOptions(
        dry_run=bool(args.dry_run),
        sigkill=bool(args.sigkill),
        smoke_threshold=args.smoke_threshold,
        command_timeout=args.timeout or base.command_timeout,
        poll_interval=max(0.005, base.poll_interval / speed),
        term_grace=max(0.05, base.term_grace / speed),
        transient_pause=max(0.005, base.transient_pause / speed),
    )


def confirm(hosts: list[str], stdin: TextIO, stderr: TextIO) -> tuple[bool, str]:
    """Ask the operator to type the node names. Returns (confirmed, why not)."""
    if not stdin.isatty() or os.environ.get("CI"):
        return False, ("refusing to repair without --yes: there is no terminal to type the node names on "
                       "(run it interactively, or pass --yes)")
    print(f"This resets every GPU and NVSwitch of: {' '.join(hosts)}", file=stderr)
    print("Type the node names to go on (anything else cancels): ", end="", file=stderr, flush=True)
    typed = stdin.readline().split()
    if sorted(typed) != sorted(hosts):
        return False, "the names typed do not match the targets; nothing was changed"
    return True, ""


async def _run(backends: list[Backend], args: argparse.Namespace, options: RepairOptions, sink,
               run_id: str, audit_path: str, group: RunGroup) -> list[NodeOutcome]:
    try:
        if args.restore:
            # A restore is never aborted: it is what an interrupted repair needs (signals only say so).
            return list(await asyncio.gather(*(asyncio.shield(restore_node(b, options, on_event=sink, run_id=run_id,
                                                                           audit_log=audit_path))
                                               for b in backends)))
        return await run_many(backends, options, strategy=args.strategy, on_event=sink, run_id=run_id,
                              audit_log=audit_path, group=group)
    finally:
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


async def _guarded(backends: list[Backend], args: argparse.Namespace, options: RepairOptions, sink,
                   run_id: str, audit_path: str, group: RunGroup, stream: TextIO) -> list[NodeOutcome]:
    """:func:`_run` with SIGINT, SIGTERM and SIGHUP turned into an orderly abort and restore.

    The first signal stops every node at once (the step in flight is cancelled, its remote command
    ended) and each node restores what it changed. The restore itself is shielded: a second signal
    only prints the exact commands that finish the job should this process be killed outright.
    """
    loop = asyncio.get_running_loop()
    hosts = [b.host for b in backends]
    seen: list[str] = []

    def on_signal(name: str) -> None:
        seen.append(name)
        if len(seen) == 1 and not args.restore:
            say(stream, f"nvls-tui: {name}: aborting the repair of {' '.join(hosts)}; every node is being restored")
            group.interrupt(f"{name} received")
            return
        say(stream, f"nvls-tui: {name}: the restore goes on. If nvls-tui is killed before it ends, run: "
                    + "; ".join(f"nvls-tui repair --restore {h}" for h in hosts))

    for sig in INTERRUPTS:
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        return await _run(backends, args, options, sink, run_id, audit_path, group)
    finally:
        for sig in INTERRUPTS:
            loop.remove_signal_handler(sig)


def _refused_all(backends: list[Backend], options: RepairOptions, reason: str) -> list[NodeOutcome]:
    """Every node refused before anything ran (an audit log that cannot be written)."""
    outcomes = []
    for b in backends:
        outcome = NodeOutcome(host=b.host, dry_run=options.dry_run, result=REFUSED, message=reason)
        for name in STEPS:
            outcome.step(name)
        outcomes.append(outcome)
    return outcomes


def _report(outcomes: list[NodeOutcome], args: argparse.Namespace, audit_path: str | None) -> None:
    """The JSON of contract.md, or one line per node (a terminal that is gone is no error)."""
    if args.json:
        say(sys.stdout, json.dumps({"nodes": [o.to_json() for o in outcomes]}, indent=2))
        return
    for o in outcomes:
        smoke = f", {o.smoke.avg_busbw:.1f} GB/s" if o.smoke and o.smoke.avg_busbw is not None else ""
        say(sys.stdout, f"{o.host}: {o.result}{smoke} - {one_line(o.message)}")
    if audit_path:
        say(sys.stdout, f"audit log: {audit_path}")


def run(args: argparse.Namespace) -> int:
    """Run the repair (or dry run, or restore) of every target; print text or contract.md's JSON."""
    try:
        backends = resolve_backends(args)
    except InvalidArgument as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    if not backends:
        print("nvls-tui: no target to repair", file=sys.stderr)
        return 2
    if getattr(args, "read_only", False) and not args.dry_run:
        print("nvls-tui: --read-only forbids changing a node; use --dry-run to see the plan", file=sys.stderr)
        return 2
    hosts = [b.host for b in backends]
    if not (args.yes or args.dry_run or args.restore):
        ok, why = confirm(hosts, sys.stdin, sys.stderr)
        if not ok:
            print(f"nvls-tui: {why}", file=sys.stderr)
            return 2
    options = _options(args, backends)
    run_id = new_run_id()
    kind = "restore" if args.restore else ("dry-run" if args.dry_run else "repair")
    try:
        audit = AuditLog.create(args.audit_dir, run_id, kind=kind, dry_run=options.dry_run)
    except AuditWriteError as exc:
        # Audit first: a run the log cannot record does not start. Nothing was changed.
        outcomes = _refused_all(backends, options, f"refused before any command: {exc}")
        say(sys.stderr, f"nvls-tui: {exc}; nothing was changed")
        _report(outcomes, args, None)
        return 1
    except OSError as exc:
        print(f"nvls-tui: cannot create the audit log: {exc.strerror or exc}", file=sys.stderr)
        return 2
    stream = sys.stderr if args.json else sys.stdout
    progress = ProgressPrinter(stream)
    group = RunGroup()
    guard = AuditGuard(audit, lambda exc: (say(sys.stderr, f"nvls-tui: {exc}: aborting, every node is being restored"),
                                           group.interrupt(f"the audit log could not be written ({exc})")))
    with audit:
        outcomes = asyncio.run(_guarded(backends, args, options, fan_out(guard, progress), run_id, str(audit.path),
                                        group, sys.stderr))
    _report(outcomes, args, str(audit.path))
    return 0 if all(o.ok for o in outcomes) else 1
