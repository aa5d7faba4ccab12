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
import sys
from typing import TextIO

from nvls_tui.audit import AuditLog
from nvls_tui.backends.base import Backend, InvalidArgument, join_argv
from nvls_tui.runbook import RepairOptions, new_run_id, restore_node, run_many
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
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.targets import resolve_backends, sim_speed


class ProgressPrinter:
    """Event sink printing one short line per meaningful event, prefixed by the node."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, event: RunbookEvent) -> None:
        text = self.format(event)
        for line in (text or "").splitlines():
            print(f"{event.host:<14} {line}", file=self.stream, flush=True)

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
               run_id: str, audit_path: str) -> list[NodeOutcome]:
    try:
        if args.restore:
            return list(await asyncio.gather(*(restore_node(b, options, on_event=sink, run_id=run_id,
                                                            audit_log=audit_path) for b in backends)))
        return await run_many(backends, options, strategy=args.strategy, on_event=sink, run_id=run_id,
                              audit_log=audit_path)
    finally:
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)


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
    except OSError as exc:
        print(f"nvls-tui: cannot create the audit log: {exc.strerror or exc}", file=sys.stderr)
        return 2
    progress = ProgressPrinter(sys.stderr if args.json else sys.stdout)
    with audit:
        outcomes = asyncio.run(_run(backends, args, options, fan_out(audit, progress), run_id, str(audit.path)))
    if args.json:
        print(json.dumps({"nodes": [o.to_json() for o in outcomes]}, indent=2))
    else:
        for o in outcomes:
            smoke = f", {o.smoke.avg_busbw:.1f} GB/s" if o.smoke and o.smoke.avg_busbw is not None else ""
            print(f"{o.host}: {o.result}{smoke} - {o.message}")
        print(f"audit log: {audit.path}")
    return 0 if all(o.ok for o in outcomes) else 1
