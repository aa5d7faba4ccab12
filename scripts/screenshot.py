"""The README's screenshot: the console on the demo fleet, rendered by Textual itself.

    .venv/bin/python scripts/screenshot.py [OUT.svg]        # default docs/img/console.svg

The console is started in a Pilot run at 160x48 on ``sim:seed-incident`` (what ``make demo`` shows), polls
every node once, and Textual's ``export_screenshot`` writes the screen as SVG. The simulator is frozen and the
clock fixed, as in the snapshot tests, so that making it again from an unchanged console gives the same file.
tests/test_readme.py checks that the README shows this file and that it came from the console.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "img" / "console.svg"
SIZE = (160, 48)
FIXED_NOW = 1_785_000_000.0  # the snapshot tests' clock: ages and times do not change between runs
TITLE = "nvls-tui --demo"


async def render(out: Path) -> None:
    """Start the console on the demo fleet, wait for the first poll round, write the screen to ``out``."""
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None,
                  clock=lambda: FIXED_NOW)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_for_first_poll(timeout=60)
        for _ in range(5):  # the grid redraws coalesced: let it catch up with the last answers
            await pilot.pause()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(app.export_screenshot(title=TITLE), encoding="utf-8")


if __name__ == "__main__":
    os.environ.pop("NO_COLOR", None)  # Textual drops every colour under NO_COLOR: the README shows the console's
    asyncio.run(render(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
