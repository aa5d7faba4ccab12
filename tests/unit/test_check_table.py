"""Plain `check` never cuts a host name or a verdict, on a terminal or in a pipe.

Piped (`check sim:fleet-1024 > f.txt`), rich laid the table out for 80 columns and cut every column to
fit the widest fabric text: 1,024 rows of `│ gpu0… │ healt… │`, no row saying which node it was.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def plain_check(*targets: str, columns: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "check", "--timeout", "5", *targets],
                          capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300, check=False)
    assert done.returncode == 1 and done.stdout, done.stderr[-2000:]  # the fleet has broken nodes
    return done.stdout


@pytest.mark.parametrize("columns", [None, "80", "60"], ids=["a pipe", "80 columns", "60 columns"])
def test_every_host_name_and_verdict_is_whole_in_the_table(columns):
    out = plain_check("sim:fleet-256", columns=columns)
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 256, out[:2000]
    for row in rows:
        host, verdict = (cell.strip() for cell in row.strip("│").split("│")[:2])
        assert "…" not in host and "…" not in verdict, row
        assert verdict in ("healthy", "degraded", "broken", "unreachable"), row
    hosts = [row.strip("│").split("│")[0].strip() for row in rows]
    assert len(set(hosts)) == 256
