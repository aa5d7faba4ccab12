"""nvls-tui's re-poll: the console's case, every node read again over the connections it keeps.

Builds the backends exactly like ``nvls-tui check`` (same command-line options, same
``resolve_backends``), polls every node once (connect + probe + parse + diagnose), then polls them
all again over the open connections and reports that second round alone (``BENCH {...}``).

A node that answers what it answered last time is not parsed again (``LastAssembly``); the bench's
static nodes always do. ``--changed`` forgets every node's last state before the second round, so
each node is parsed afresh: the cost when every node of the fleet changed at once.

Usage::

    python -m bench.nvls_repoll [--changed] [check options and targets, as for `nvls-tui check`]
"""

from __future__ import annotations

import asyncio
import sys
import time

from bench.measure import cpu_now, self_report
from nvls_tui.cli import build_parser, build_settings
from nvls_tui.diagnosis import diagnose
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.targets import resolve_backends


async def _round(backends) -> list:
    async def one(backend):
        state = await backend.snapshot()
        return state, diagnose(state)

    return await asyncio.gather(*(one(b) for b in backends))


async def main(argv: list[str]) -> int:
    changed = "--changed" in argv
    args = build_parser().parse_args(["check", *(a for a in argv if a != "--changed")])
    backends = resolve_backends(build_settings(args))
    try:
        first = await _round(backends)
        if changed:
            for backend in backends:
                backend.last_assembly = LastAssembly()
        cpu0, t0 = cpu_now(), time.perf_counter()
        second = await _round(backends)
        wall, cpu = time.perf_counter() - t0, cpu_now() - cpu0
    finally:
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)
    self_report(wall=round(wall, 4), cpu=round(cpu, 4), phase="repoll",
                reachable_first=sum(s.reachable for s, _ in first),
                unchanged=sum(b.last_assembly.hits for b in backends))
    for state, diag in second:
        sys.stdout.write(f"{state.host} {'ok' if state.reachable else 'unreachable'} {diag.verdict} "
                         f"gpus={len(state.gpus)} holders={len(state.holders)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
