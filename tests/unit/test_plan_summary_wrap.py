"""The plan's summary keeps a wrapped bullet's indent (X3 item 7): a bullet's further lines start under its
words, not at column 0 where they read as a new paragraph."""

from __future__ import annotations

import asyncio

from rich.console import Console

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.screens.plan import plan_text
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import fill_steps, plan_entries
from nvls_tui.runbook.steps import RepairOptions
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.plan_summary import what_it_does


def _outcome() -> NodeOutcome:
    (backend,) = sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0))
    state = asyncio.run(backend.snapshot())
    return fill_steps(NodeOutcome("gpu05", dry_run=True, result="planned"), plan_entries(state))


def test_a_wrapped_bullet_continues_under_its_words():
    outcome = _outcome()
    bullets = what_it_does(outcome)
    assert any(len(b) > 60 for b in bullets)  # at 60 columns at least one bullet wraps
    console = Console(width=60, record=True, color_system=None)
    console.print(plan_text(outcome, RepairOptions()))
    lines = console.export_text().splitlines()
    start = lines.index("What this repair does:") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("How long"))
    summary = lines[start:end]
    assert sum(line.startswith("  • ") for line in summary) == len(bullets)
    continued = [line for line in summary if not line.startswith("  • ")]
    assert continued and all(line.startswith("    ") and line[4] != " " for line in continued), summary
