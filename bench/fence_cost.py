"""What the lock's fence costs a node per command (issue 34, item 1): ``python -m bench.fence_cost``.

While a run holds a node's lock every command it sends goes out behind the fence
(``nvls_tui.poll.fence``): ``sh -c FENCE_SCRIPT ...`` reads the owner file with ``cat`` and ``exec``s the
command. This runs ``true`` N times plainly and N times behind the fence of a real owner file on this
machine (the node side of a command; the SSH round trip, which dominates a repair's commands, is the same
either way) and prints the median and p95 wall time of each and the difference per command, and how many
processes each form forks (counted with ``/proc/sys/kernel/ns_last_pid`` where it is readable).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nvls_tui.poll.fence import fence_prefix
from nvls_tui.runbook.lock import LockOwner

LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _pids() -> int | None:
    try:
        return int(LAST_PID.read_text())
    except (OSError, ValueError):
        return None


def measure(argv: list[str], runs: int) -> tuple[list[float], float | None]:
    """Wall seconds of each run, and the processes one run forks on average (None: not countable)."""
    times: list[float] = []
    before = _pids()
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append(time.perf_counter() - began)
    after = _pids()
    forks = (after - before) / runs if before is not None and after is not None and after > before else None
    return times, forks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        owner_file = Path(folder) / "owner.json"
        owner_file.write_text(LockOwner(run_id="bench-run", bastion="b", operator="o", tool_pid=1, since="s",
                                        heartbeat="h").to_json())
        plain, plain_forks = measure(["true"], args.runs)
        fenced, fenced_forks = measure([*fence_prefix("bench-run", str(owner_file)), "true"], args.runs)

    def p95(values: list[float]) -> float:
        return sorted(values)[int(len(values) * 0.95) - 1]

    print(f"runs: {args.runs} each, python {sys.version.split()[0]}")
    for name, values, forks in (("plain true", plain, plain_forks), ("fenced true", fenced, fenced_forks)):
        print(f"{name:12s} median {statistics.median(values) * 1e3:6.2f} ms  p95 {p95(values) * 1e3:6.2f} ms  "
              f"processes {forks if forks is not None else 'n/a'}")
    print(f"fence costs {(statistics.median(fenced) - statistics.median(plain)) * 1e3:.2f} ms a command (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
