"""Where a cold ``nvls-tui check`` spends its client CPU: cProfile of one run on the rig.

Usage::

    python -m bench.profile_check [N] [--sort tottime|cumulative] [--top 30] [--repoll [--changed]] [--cpu]

Starts a rig of N static nodes (default 256), runs ``nvls-tui check --json`` in this process under
cProfile (output discarded) and prints the top functions. With ``--repoll`` it profiles the second
poll over kept connections instead (``bench.nvls_repoll``'s second round alone: the cost the
bastion pays per node-poll while the console keeps polling); ``--changed`` forgets every node's last
state before it, so each node is parsed afresh (``nvls_repoll --changed``). ``--cpu`` times this
process's CPU (``time.process_time``) instead of the wall clock: on two cores shared with the rig's
sshd, a wall-clock profile charges a system call with the time the client waited for a core.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

from bench.rig import BenchRig
from bench.tools import _nvls_args


async def _second_round(prof: cProfile.Profile, argv: list[str], changed: bool = False) -> None:
    """Poll every node twice over the check's own backends; profile the second round alone."""
    from bench import nvls_repoll
    from nvls_tui.cli import build_parser, build_settings
    from nvls_tui.poll.assemble import LastAssembly
    from nvls_tui.targets import resolve_backends

    backends = resolve_backends(build_settings(build_parser().parse_args(["check", *argv])))
    try:
        await nvls_repoll._round(backends)
        if changed:
            for backend in backends:
                backend.last_assembly = LastAssembly()
        prof.enable()
        await nvls_repoll._round(backends)
        prof.disable()
    finally:
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", nargs="?", type=int, default=256)
    p.add_argument("--sort", default="tottime")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--repoll", action="store_true")
    p.add_argument("--changed", action="store_true")
    p.add_argument("--cpu", action="store_true", help="profile CPU time, not wall time")
    p.add_argument("--only", help="a regular expression: only functions whose file:line(name) matches")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work, BenchRig(args.n) as rig:
        argv = _nvls_args(rig, args.n, Path(work))
        prof = cProfile.Profile(time.process_time) if args.cpu else cProfile.Profile()
        started, cpu = time.perf_counter(), time.process_time()
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            if args.repoll:
                asyncio.run(_second_round(prof, argv, args.changed))
            else:
                from nvls_tui.cli import main as cli_main

                prof.enable()
                cli_main(["check", "--json", *argv])
                prof.disable()
        print(f"wall {time.perf_counter() - started:.2f}s, this process's CPU {time.process_time() - cpu:.2f}s "
              f"for {args.n} nodes")
        stats = pstats.Stats(prof)
        stats.sort_stats(args.sort).print_stats(*([args.only] if args.only else []), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
