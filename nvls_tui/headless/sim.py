"""``nvls-tui sim list`` and ``nvls-tui sim shims DIR --scenario S --node N [--static]``."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    """Dispatch the ``sim`` subcommands (exit 0 on success, 2 on a usage error)."""
    if args.sim_command == "list":
        return _list()
    if args.sim_command == "shims":
        return _shims(args)
    print(f"nvls-tui: unknown sim command {args.sim_command!r}", file=sys.stderr)
    return 2


def _list() -> int:
    from ClusterShell.NodeSet import NodeSet
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from nvls_tui.sim.scenarios import SCENARIOS

    rows = [(s.name, str(NodeSet.fromlist(s.nodes)), s.description) for s in SCENARIOS.values()]
    console = Console(highlight=False, markup=False, emoji=False)
    piped = not console.is_terminal
    if piped:
        # A pipe has no width: rich would lay the table out for 80 columns and wrap or cut the descriptions
        # (a grep would find half a sentence). Piped, the table is as wide as its longest row.
        widths = [max(len(head), *(len(row[i]) for row in rows)) for i, head in enumerate(("name", "nodes", "x"))]
        console = Console(highlight=False, markup=False, emoji=False, width=max(sum(widths) + 3 * len(widths) + 1, 80))
    table = Table(title="Simulated scenarios (use as sim:NAME or sim:NAME/NODESET)")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("nodes", no_wrap=True)
    table.add_column("description", no_wrap=piped)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    return 0


def _shims(args: argparse.Namespace) -> int:
    from nvls_tui.sim.shims import write_shims

    try:
        root = write_shims(args.dir, args.scenario, args.node, static=args.static, speed=args.speed)
    except (ValueError, KeyError) as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    mode = "static (pre-rendered, read-only)" if args.static else "live"
    print(f"wrote {root}/bin: sim:{args.scenario}/{args.node}, {mode}; put {root}/bin first on PATH")
    return 0
