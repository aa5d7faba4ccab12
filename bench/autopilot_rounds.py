"""The autopilot's rounds on the bench rig: each round's wall time, the client's CPU and the machine's.

``nvls-tui autopilot --mode observe`` over N loopback nodes (bench/rig.py: static shims, ~50 KB probes),
``--rounds`` rounds back to back. A round's time is read from when its first record reaches stdout. With
several ``--tree`` checkouts (another commit's worktree, say) each rep runs every tree, in turned order, on
the same rig, so two versions are compared on one machine state.

Usage::

    python -m bench.autopilot_rounds N [--rounds 4] [--reps 2] [--tree DIR ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.rig import BenchRig
from bench.tools import ROOT, VENV, base_env


def _busy_ticks() -> int:
    """The machine's busy CPU so far (all processes, the rig's sshd included), in clock ticks."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(values) - values[3] - values[4]  # less idle and iowait


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(rig: BenchRig, n: int, tree: Path, rounds: int) -> dict:
    """One autopilot of ``rounds`` rounds from ``tree``: wall, client CPU, machine CPU, each round's seconds."""
    targets = rig.root / f"targets.{n}"
    targets.write_text("".join(f"{t}\n" for t in rig.targets(n)))
    env = {**base_env(), "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory() as state:
        argv = [str(VENV / "python"), "-m", "nvls_tui.cli", "autopilot", "--hosts-file", str(targets),
                *rig.rig.cli_args(), "--timeout", "60", "--mode", "observe", "--rounds", str(rounds), "--every", "0.1",
                "--json", "--state-dir", state]
        cpu0, busy0, t0 = _children_cpu(), _busy_ticks(), time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tree,
                                stdin=subprocess.DEVNULL)
        seen: list[float] = []  # when each round's first record came
        last = None
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            number = json.loads(line).get("round") if line.startswith("{") else None
            if number is not None and number != last:
                seen.append(time.perf_counter() - t0)
                last = number
        err = proc.stderr.read()
        proc.wait()
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the autopilot from {tree} ended {proc.returncode}: {err[-500:]}")
    # Records of round 0 (started) come before any poll: round k's time is from record k-1's to record k's.
    return {"wall": wall, "client_cpu": _children_cpu() - cpu0, "machine_cpu": (_busy_ticks() - busy0) / 100,
            "rounds": [round(b - a, 2) for a, b in zip(seen, seen[1:], strict=False)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to run (default: this one)")
    args = parser.parse_args(argv)
    trees = args.tree or [ROOT]
    with BenchRig(args.n) as rig:
        for rep in range(args.reps):
            for tree in trees if rep % 2 == 0 else list(reversed(trees)):
                got = run_once(rig, args.n, tree, args.rounds)
                print(f"rep {rep} {tree}: wall {got['wall']:.2f} s, client CPU {got['client_cpu']:.2f} s, machine CPU "
                      f"{got['machine_cpu']:.1f} s, rounds {got['rounds']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
