"""``smoke-test``: the NVLS all-reduce sweep, streamed, parsed row by row and judged.

Fabric Completed/Success is not proof of health (domain.md); this test is. It passes only when the
run completes, no value is out of bounds, NVLS was really used, and the average bus bandwidth
reaches the threshold for the GPU model. The verdict goes to the node (``last-smoke.json``) so the
next ``check`` sees it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from contextlib import aclosing

from nvls_tui.model import NodeState, SmokeResult
from nvls_tui.parsers.nccl_tests import NcclRun, NcclStreamParser, RowEvent
from nvls_tui.poll import fence as fences
from nvls_tui.poll.assemble import parse_boot
from nvls_tui.runbook.changes import Read, RunSmoke, WriteFile
from nvls_tui.runbook.context import NodeContext, StepFailed, bounded
from nvls_tui.runbook.door import announce, perform
from nvls_tui.runbook.events import (
    CLOCK,
    CommandFinished,
    OutputLine,
    SmokeFinished,
    SmokeRow,
    WaitStarted,
)
from nvls_tui.runbook.steps import (
    DATE_ARGV,
    SMOKE_CLOCK_ARGVS,
    SMOKE_ENV,
    clock_text,
    threshold_for,
)

# Output lines kept for the command's finished event (the lines themselves went out one by one).
_TAIL_LINES = 200
# What the smoke test's wait says it waits on (the step's wait line: "all_reduce_perf sweep, 0:04 of 10:00").
SMOKE_STATE = "all_reduce_perf sweep"


def smoke_deadline_message(limit: float) -> str:
    """Why the smoke test failed when all_reduce_perf ran past ``limit`` seconds, and what to check next."""
    return (f"all_reduce_perf did not finish within {clock_text(limit)} and was stopped: NCCL hangs like this on an "
            "NVLS bind that never completes or a GPU that stopped answering; check `journalctl -k` on the node for "
            "Xid/SXid lines, and run the test by hand with NCCL_DEBUG=INFO to see where it stops; the units it "
            "stopped are started again, and the node is not repaired")


def judge(run: NcclRun, exit_status: int | None, threshold: float, at: str | None = None) -> SmokeResult:
    """Pass or fail one parsed run against ``threshold`` (GB/s)."""
    errors = list(run.errors)
    if exit_status not in (None, 0) and not errors:
        errors.append(f"all_reduce_perf exited with status {exit_status}")
    if run.exit_hint and not run.completed and run.exit_hint not in errors:
        errors.append(run.exit_hint)
    passed = (
        run.completed
        and exit_status in (None, 0)
        and run.out_of_bounds == 0
        and run.nvls.used
        and run.nvls.bind_error is None
        and run.avg_busbw is not None
        and run.avg_busbw >= threshold
    )
    if run.completed and run.avg_busbw is not None and run.avg_busbw < threshold:
        errors.append(f"average bus bandwidth {run.avg_busbw:.1f} GB/s is below the {threshold:.0f} GB/s threshold")
    if run.completed and run.avg_busbw is None:  # its end seen by the out-of-bounds line alone: no bandwidth
        errors.append("the run printed no average bus bandwidth")
    if run.completed and not run.nvls.used:
        errors.append("NVLS was not used by the run (no NVLS channels or comm in the NCCL log)")
    return SmokeResult(avg_busbw=run.avg_busbw, passed=passed, out_of_bounds=run.out_of_bounds,
                       nvls_used=run.nvls.used, completed=run.completed, errors=tuple(errors),
                       threshold=threshold, at=at)


def smoke_json(smoke: SmokeResult) -> str:
    """What goes to ``last-smoke.json`` (SmokeResult's field names, as ``assemble`` reads them)."""
    return json.dumps({"avg_busbw": smoke.avg_busbw, "passed": smoke.passed, "out_of_bounds": smoke.out_of_bounds,
                       "nvls_used": smoke.nvls_used, "completed": smoke.completed, "errors": list(smoke.errors),
                       "threshold": smoke.threshold, "at": smoke.at, "boot_id": smoke.boot_id,
                       "uptime": smoke.uptime}, indent=2) + "\n"


async def node_time(ctx: NodeContext, read: Read | None = None) -> str | None:
    """The node's clock, ``YYYY-MM-DD HH:MM:SS`` (what ``journalctl --since`` takes); ``read``: the program's
    (runbook/program.py ``CLOCK_READ``), by default :data:`DATE_ARGV` as the repair's bookkeeping."""
    read = read or Read(DATE_ARGV, bookkeeping=True)
    result = await ctx.run(read.argv, bookkeeping=read.bookkeeping, purpose=CLOCK)
    text = result.stdout.strip()
    return text if result.ok and len(text) >= 19 else None


async def smoke_clock(ctx: NodeContext, reads: Sequence[Read] = ()) -> tuple[str | None, str | None, float | None]:
    """When the smoke test ended, as its record keeps it: the node's clock in UTC with its offset, its boot
    id and the seconds since that boot; each None where the node did not answer (the record then dates
    nothing: ``check`` counts every kernel line, fail closed).

    ``reads``: the clock's read and the boot's, as the program names them (default: :data:`SMOKE_CLOCK_ARGVS`).
    """
    date_read, boot_read = reads or tuple(Read(argv, bookkeeping=argv[0] == "date") for argv in SMOKE_CLOCK_ARGVS)
    clock = await ctx.run(date_read.argv, bookkeeping=date_read.bookkeeping)
    at = clock.stdout.strip() if clock.ok else ""
    boot_id, uptime = parse_boot(await ctx.run(boot_read.argv, bookkeeping=boot_read.bookkeeping))
    return (at if len(at) == 25 else None), boot_id, uptime


async def _stream(ctx: NodeContext, run_change: RunSmoke) -> tuple[NcclRun, int | None]:
    """Stream the run's lines into events and the parser; end the remote command on abort or timeout.

    Raises:
        StepFailed: the run went past the smoke test's limit (it was ended; the message says what to check).
    """
    parser = NcclStreamParser()
    tail: list[str] = []
    limit = ctx.options.smoke_timeout
    ctx.check_abort()
    ctx.emit(WaitStarted(host=ctx.host, step=ctx.step, wait="smoke-test", state=SMOKE_STATE, limit=limit,
                         command=True))
    argv = run_change.argv()
    fence = await announce(ctx, run_change)  # the test takes every GPU: behind the lock's fence like any command
    started = ctx.options.clock()
    status: int | None = None
    error = ""
    try:
        async with asyncio.timeout(limit):
            async with aclosing(ctx.backend.stream(argv, env=SMOKE_ENV, fence=fence)) as lines:
                async for line in lines:
                    line = line.rstrip("\n")
                    tail = (tail + [line])[-_TAIL_LINES:]
                    ctx.emit(OutputLine(host=ctx.host, step=ctx.step, line=line))
                    for event in parser.feed(line):
                        if isinstance(event, RowEvent):
                            row = event.row
                            ctx.emit(SmokeRow(host=ctx.host, step=ctx.step, size=row.size, busbw=row.oop.busbw,
                                              row={"size": row.size, "oop_busbw": row.oop.busbw,
                                                   "ip_busbw": row.ip.busbw, "oop_time_us": row.oop.time_us}))
                    ctx.check_abort()
        status = getattr(ctx.backend, "last_exit_status", None)
        if fence and fences.refused(status, "\n".join(tail)):
            error = "not run: the lock is not this run's"
            raise ctx.lose_lock()
    except TimeoutError:
        error = f"all_reduce_perf did not finish within {clock_text(limit)}"
        raise StepFailed(smoke_deadline_message(limit)) from None
    except BaseException as exc:
        error = str(exc) or type(exc).__name__
        raise
    finally:
        ctx.emit(CommandFinished(host=ctx.host, step=ctx.step, argv=argv, exit_status=None if error else status,
                                 output=bounded("\n".join(tail) + "\n"), duration=ctx.options.clock() - started,
                                 error=error))
    return parser.finish(), status


async def smoke_test(ctx: NodeContext, state: NodeState, entries: Sequence[object] | None = None) -> SmokeResult:
    """Run, judge and record the NVLS smoke test on ``state``'s node.

    ``entries``: the smoke test as the run's program names it (runbook/program.py ``smoke_entries``: the sweep,
    the reads of when it ended, the verdict's file), made in that order; the verdict is judged before its file is
    written. Default: the program's.

    Returns:
        The judged result (also written to the node's last-smoke.json).
    """
    if entries is None:
        from nvls_tui.runbook.program import smoke_entries

        entries = smoke_entries(state)
    threshold = threshold_for(state.gpus, ctx.options.thresholds, ctx.options.smoke_threshold)
    ran: tuple[NcclRun, int | None] | None = None
    reads: list[Read] = []
    smoke: SmokeResult | None = None
    for entry in entries:
        if isinstance(entry, RunSmoke):
            ran = await _stream(ctx, entry)
        elif isinstance(entry, Read):
            reads.append(entry)
        elif isinstance(entry, WriteFile) and ran is not None:
            smoke = await _judged(ctx, ran, threshold, tuple(reads))
            written = await perform(ctx, dataclasses.replace(entry, content=smoke_json(smoke)))
            if not written.ok:
                ctx.note("the smoke result could not be written to the node; `check` will not see it", "warning")
    if smoke is None:  # a program without the verdict's file: judged all the same
        if ran is None:
            raise StepFailed("the smoke test's program has no sweep to run")
        smoke = await _judged(ctx, ran, threshold, tuple(reads))
    return smoke


async def _judged(ctx: NodeContext, ran: tuple[NcclRun, int | None], threshold: float,
                  reads: tuple[Read, ...]) -> SmokeResult:
    """The sweep judged, dated by the clock's reads (made now, right after it), and said."""
    run, status = ran
    at, boot_id, uptime = await smoke_clock(ctx, reads)
    smoke = dataclasses.replace(judge(run, status, threshold, at), boot_id=boot_id, uptime=uptime)
    ctx.emit(SmokeFinished(host=ctx.host, step=ctx.step, smoke=smoke))
    return smoke


__all__ = ["SMOKE_STATE", "judge", "node_time", "smoke_clock", "smoke_deadline_message", "smoke_json", "smoke_test"]
