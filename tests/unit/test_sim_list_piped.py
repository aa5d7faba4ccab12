"""``nvls-tui sim list`` into a pipe: every scenario's name and description whole, each on its own line.

Piped, rich laid the table out for 80 columns and wrapped or cut the descriptions, so a ``grep`` for a
scenario's words found half a sentence.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

from nvls_tui.sim.scenarios import SCENARIOS


def test_sim_list_into_a_pipe_keeps_every_name_and_description_whole_on_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    nvls = pathlib.Path(__file__).parents[2] / ".venv" / "bin" / "nvls-tui"
    done = subprocess.run([str(nvls), "sim", "list"], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for scenario in SCENARIOS.values():
        row = [line for line in lines if line.startswith(f"│ {scenario.name} ")]
        assert len(row) == 1, (scenario.name, row)
        assert scenario.description in row[0], (scenario.name, row[0])
    assert "…" not in done.stdout
