"""The services' readers (DCGM's log, dcgmi health and diag, the GPU Operator's and the GPU plugins' logs, persistenced's)
read one long line in one pass: no pattern of theirs backtracks over a line from every position of it.

Each file below starts a 200 KB line with what its kind's rule looks for, then fills it with what a rule could try to
match from everywhere (brackets, spaces): a quadratic pattern takes minutes on it.
"""

from __future__ import annotations

import subprocess
import sys

# A bound for a hang, not a latency expectation: a quadratic rule takes minutes on these inputs.
BOUND_S = 60
N = 100_000
LONG_LINES = {
    "dcgm-brackets": "ERROR [1:1] " + "[" * N,
    "dcgm-bracket-words": "2024-05-24 10:22:29.245 ERROR [5231:5273] " + " [a" * N,
    "dcgm-spaces": "ERROR [1:1] x" + " " * N + "x",
    "health-spaces": "| Overall Health | Failure |\n| -> 0 | Failure" + " " * N + "x",
    "diag-spaces": "| Diagnostic                | Result                                         |\n| Deployment | Pass" + " " * N + "x",
    "operator-spaces": "waiting for nvidia container stack to be setup" + " " * N + "x",
    "plugin-brackets": "I0929 12:40:26.277236       1 nvlib.go:243] NVML " + "'" * N,
    "persistenced-spaces": "May 31 05:33:40 kino1 systemd[1]: " + " " * N + "x",
}


def test_analyze_reads_each_kinds_long_line_within_a_bound(tmp_path):
    files = []
    for name, text in LONG_LINES.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text + "\n")
        files.append(str(path))
    try:
        done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "analyze", "--json", *files],
                              capture_output=True, text=True, timeout=BOUND_S, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"analyze of the services' long lines did not end within {BOUND_S} s") from None
    assert done.returncode in (0, 1) and done.stdout.count('"file":') == len(files), done.stderr[-2000:]
