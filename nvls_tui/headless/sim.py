"""``nvls-tui sim list`` and ``nvls-tui sim shims DIR --scenario S --node N [--static]``."""

from __future__ import annotations

import sys

from nvls_tui.settings import Settings, SimCommand


def run(settings: Settings) -> int:
    """Dispatch the ``sim`` subcommands (exit 0 on success, 2 on a usage error)."""
    sim = settings.sim
    if sim is None or sim.action not in ("list", "shims"):
        print(f"nvls-tui: unknown sim command {sim.action if sim else None!r}", file=sys.stderr)
        return 2
    return _list() if sim.action == "list" else _shims(sim)


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


def _shims(sim: SimCommand) -> int:
    from nvls_tui.sim.shims import write_shims

    assert sim.dir is not None and sim.node is not None  # argparse requires both
    try:
        root = write_shims(sim.dir, sim.scenario, sim.node, static=sim.static, speed=sim.speed)
    except (ValueError, KeyError) as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    mode = "static (pre-rendered, read-only)" if sim.static else "live"
    print(f"wrote {root}/bin: sim:{sim.scenario}/{sim.node}, {mode}; put {root}/bin first on PATH and set "
          f"NVLS_TUI_PROC={root}/proc NVLS_TUI_JOURNAL_ROOT={root}")
    return 0
