"""How long the event loop is held per audit record: the old synchronous log against the writer thread.

A smoke test streams a line per event; with one ``write`` + ``fsync`` per record on the event loop,
the console stalled for every line. This replays the same number of ``output-line`` events through
both and prints, for each, the time the caller was blocked per record (what the event loop pays)
and the time until everything was on disk::

    python -m bench.audit_bench [--events 2000] [--dir DIR]

``--dir`` should be on the disk the audit logs really use (the default is a temporary directory).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from nvls_tui.audit.log import AuditLog
from nvls_tui.audit.writer import AuditWriter
from nvls_tui.runbook.events import OutputLine

LINE = "  134217728      33554432     float     sum      -1   1184.2  113.35  198.36      0   1183.9  113.37  198.40      0"


def _events(n: int) -> list[OutputLine]:
    return [OutputLine(host="gpu05", step="smoke-test", line=LINE) for _ in range(n)]


def sync_log(folder: Path, n: int) -> dict[str, float]:
    """The first version: every record written and fsynced by the caller."""
    log = AuditLog.create(folder, "sync", kind="bench")
    blocked = []
    began = time.perf_counter()
    for event in _events(n):
        t0 = time.perf_counter()
        log(event)
        blocked.append(time.perf_counter() - t0)
    durable = time.perf_counter() - began
    log.close()
    return {"blocked_median_us": statistics.median(blocked) * 1e6,
            "blocked_p99_us": sorted(blocked)[int(0.99 * len(blocked))] * 1e6,
            "all_on_disk_s": durable}


async def threaded_log(folder: Path, n: int) -> dict[str, float]:
    """Now: the caller queues, a thread writes and fsyncs in groups; one flush at the end."""
    writer = AuditWriter(AuditLog.create(folder, "threaded", kind="bench"))
    blocked = []
    began = time.perf_counter()
    for event in _events(n):
        t0 = time.perf_counter()
        writer(event)
        blocked.append(time.perf_counter() - t0)
        if len(blocked) % 50 == 0:
            await asyncio.sleep(0)  # the loop goes on with other work, as the console's does
    ok = await writer.flush()
    durable = time.perf_counter() - began
    writer.close()
    lines = sum(1 for _ in writer.path.open())
    return {"blocked_median_us": statistics.median(blocked) * 1e6,
            "blocked_p99_us": sorted(blocked)[int(0.99 * len(blocked))] * 1e6,
            "all_on_disk_s": durable, "records": lines - 1, "ok": float(ok)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp) / "audit"
        old = sync_log(folder, args.events)
        new = asyncio.run(threaded_log(folder, args.events))
    print(f"audit records: {args.events} smoke-test output lines")
    print(f"{'':28} {'blocked/record p50':>20} {'p99':>10} {'all on disk':>12}")
    for name, r in (("write+fsync on the loop", old), ("writer thread, group commit", new)):
        print(f"{name:28} {r['blocked_median_us']:>17.1f} us {r['blocked_p99_us']:>7.1f} us "
              f"{r['all_on_disk_s']:>10.3f} s")
    if new.get("records") != args.events or not new.get("ok"):
        print(f"ERROR: the threaded log holds {new.get('records')} records, expected {args.events}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
