"""``nvls-tui check [TARGET ...] [--json]``: poll every target once and diagnose it."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from nvls_tui.backends.base import Backend, BackendError
from nvls_tui.backends.targets import options_from_args, resolve_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState, Severity, Verdict
from nvls_tui.model.node import Diagnosis
from nvls_tui.records.jsonout import node_json
from nvls_tui.textsafe import one_line

VERDICT_STYLE = {
    Verdict.BROKEN: "bold red",
    Verdict.UNREACHABLE: "bold magenta",
    Verdict.DEGRADED: "yellow",
    Verdict.HEALTHY: "green",
}


async def poll_one(backend: Backend, deadline: float) -> NodeState:
    """One snapshot; whatever goes wrong becomes an unreachable state with the reason."""
    try:
        return await asyncio.wait_for(backend.snapshot(), deadline)
    except TimeoutError:
        return NodeState(host=backend.host, reachable=False, simulated=backend.simulated,
                         error=f"no answer within {deadline:.0f} s")
    except BackendError as exc:
        return NodeState(host=backend.host, reachable=False, simulated=backend.simulated, error=str(exc))
    except OSError as exc:
        return NodeState(host=backend.host, reachable=False, simulated=backend.simulated,
                         error=exc.strerror or str(exc))


async def poll_all(backends: list[Backend], deadline: float) -> list[NodeState]:
    """Snapshots of every backend, concurrently, in the backends' order; connections closed after."""
    try:
        return list(await asyncio.gather(*(poll_one(b, deadline) for b in backends)))
    finally:
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)


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


def _print_table(results: list[tuple[NodeState, Diagnosis]]) -> None:
    # rich is imported here: `check --json` on hundreds of nodes should not pay for it.
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Every cell and line is a Text, never markup: a node's words (a driver string, a unit state, a
    # finding that quotes a process) are data, and one hostile node must not hide the others.
    console = Console(highlight=False, markup=False, emoji=False)
    simulated = any(s.simulated for s, _ in results)
    lab = any(s.lab for s, _ in results)
    title = "nvls-tui check" + (" — LAB nodes (simulated GPUs)" if lab else " — SIMULATED nodes" if simulated else "")
    table = Table(title=title)
    for col in ("host", "verdict", "FM", "driver", "fabric", "holders"):
        table.add_column(col, no_wrap=True)
    for state, diag in results:
        fm = state.service("nvidia-fabricmanager")
        # "?" where the poll could not read the section: unknown is never shown as a count or a state.
        fm_text = "?" if state.reachable and not state.was_read("units") else (fm.active if fm else "-")
        holders = "?" if state.reachable and not state.was_read("holders") else str(len(state.holders))
        table.add_row(
            Text(state.host),
            Text(str(diag.verdict), style=VERDICT_STYLE[diag.verdict]),
            Text(fm_text),
            Text(state.driver or "-"),
            Text(_fabric_summary(state)),
            Text(holders),
        )
    console.print(table)
    # What is wrong, what could not be seen, and why a node is degraded: one line each, so nothing
    # needs a wide table. Information (HOLDERS_PRESENT) stays in --json and the console.
    for state, diag in results:
        for finding in diag.findings:
            if finding.severity in (Severity.ERROR, Severity.WARNING):
                line = Text(state.host, style=VERDICT_STYLE[diag.verdict])
                line.append(f" {finding.code}: {one_line(finding.message)}")
                console.print(line, soft_wrap=True)
    counts = {v: sum(1 for _, d in results if d.verdict is v) for v in Verdict}
    console.print(Text(" ").join(Text(f"{n} {v}", style=VERDICT_STYLE[v]) for v, n in counts.items() if n))


def run(args: argparse.Namespace) -> int:
    """Poll, diagnose, print; exit status of contract.md."""
    backends = resolve_backends(args)
    options = options_from_args(args)
    # A poll is several commands; give it a few command timeouts before calling the node unreachable.
    deadline = options.timeout * 3
    started = time.monotonic()
    states = asyncio.run(poll_all(backends, deadline))
    results = [(s, diagnose(s)) for s in states]
    if args.json:
        doc = {"nodes": [node_json(s, d) for s, d in results],
               "elapsed_s": round(time.monotonic() - started, 3)}
        # No indent: the C encoder is several times faster on 256 nodes (pipe to `jq .` to read it).
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        _print_table(results)
    return exit_status(results)
