"""Issue 38 item 6: `check` on a terminal puts the problems first and the summary on top; `--problems-only`;
`--watch` marks what changed since the last round.

Before, `check sim:fleet-1024` on a terminal printed 1,035 lines in host order: the broken rows at lines 21,
46 and 132 and the counts last, under a thousand healthy rows. Piped, the order stays the host order a
script may rely on.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys

from nvls_tui.headless.check import order_for_reading, verdict_changes
from nvls_tui.model import NodeState, Verdict
from nvls_tui.model.node import Diagnosis

VERDICTS = ("healthy", "degraded", "broken", "unreachable")


def check_on_a_terminal(*args: str) -> tuple[int, str]:
    """``nvls-tui check ARGS`` with its stdout on a real pseudo-terminal (180 columns); (status, what it drew)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "180", "LINES": "50", "TERM": "xterm-256color", "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", "check", "--timeout", "5", *args],
                            stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        assert ready, "check printed nothing for 300 s"
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the follower side closed, the command is done
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return proc.wait(timeout=60), re.sub(r"\x1b\[[0-9;]*m", "", text)  # the styles (bold, dim) are not read here


def rows_of(text: str) -> list[tuple[str, str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            host, verdict = (cell.strip() for cell in line.strip("│").split("│")[:2])
            rows.append((host, verdict.split(" ")[0]))
    return rows


def test_on_a_terminal_the_broken_nodes_come_first_under_the_counts():
    code, out = check_on_a_terminal("sim:fleet-256")
    rows = rows_of(out)
    assert len(rows) == 256 and code == 1
    ranks = [VERDICTS.index(v) for _, v in rows]
    problems = [h for h, v in rows if v != "healthy"]
    assert [h for h, _ in rows[:len(problems)]] == problems, rows[:8]  # every problem above every healthy row
    assert {"gpu017", "gpu042", "gpu128", "gpu201"} <= set(problems)
    assert sorted(ranks, key=lambda r: r == 0) == ranks  # healthy last
    lines = out.splitlines()
    counts = next(i for i, line in enumerate(lines) if " healthy" in line and line[:1].isdigit())
    first_row = next(i for i, line in enumerate(lines) if line.startswith("│"))
    assert counts < first_row, lines[:6]


def test_problems_only_leaves_the_healthy_rows_out_and_counts_them():
    code, out = check_on_a_terminal("sim:fleet-256", "--problems-only")
    rows = rows_of(out)
    assert rows and all(v != "healthy" for _, v in rows) and code == 1
    assert "healthy not shown (--problems-only)" in out


def test_problems_only_in_json_keeps_the_problem_nodes_and_says_how_many_were_left_out():
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "check", "sim:seed-incident", "--json",
                           "--problems-only"], capture_output=True, text=True, timeout=300, check=False)
    doc = json.loads(done.stdout)
    assert sorted(n["host"] for n in doc["nodes"]) == ["gpu05", "gpu06"]
    assert doc["left_out"] == {"healthy": 6}


def _pair(host: str, verdict: Verdict) -> tuple[NodeState, Diagnosis]:
    return NodeState(host), Diagnosis((), verdict)


def test_the_order_for_reading_is_the_worst_first_then_the_fleets_order():
    results = [_pair("a", Verdict.HEALTHY), _pair("b", Verdict.DEGRADED), _pair("c", Verdict.BROKEN),
               _pair("d", Verdict.HEALTHY), _pair("e", Verdict.BROKEN)]
    assert [s.host for s, _ in order_for_reading(results)] == ["c", "e", "b", "a", "d"]


def test_watch_names_each_verdict_that_changed_since_the_last_round():
    before = {"a": Verdict.HEALTHY, "b": Verdict.BROKEN, "c": Verdict.HEALTHY}
    now = [_pair("a", Verdict.BROKEN), _pair("b", Verdict.HEALTHY), _pair("c", Verdict.HEALTHY),
           _pair("d", Verdict.DEGRADED)]
    assert verdict_changes(before, now) == {"a": "healthy", "b": "broken", "d": None}
    assert verdict_changes(None, now) == {}  # the first round has nothing to compare with


def test_a_watch_round_marks_the_changed_rows_and_names_them_on_top(capsys):
    from nvls_tui.headless.check import _print_table

    results = [_pair("gpu01", Verdict.HEALTHY), _pair("gpu02", Verdict.BROKEN), _pair("gpu03", Verdict.HEALTHY)]
    _print_table(results, changed={"gpu02": "healthy", "gpu03": None})
    out = capsys.readouterr().out
    assert "changed since the last round: gpu02 healthy → broken, gpu03 not polled → healthy" in out
    verdicts = {line.strip("│").split("│")[0].strip(): line.strip("│").split("│")[1].strip()
                for line in out.splitlines() if line.startswith("│")}
    assert verdicts == {"gpu01": "healthy", "gpu02": "broken (was healthy)", "gpu03": "healthy (was not polled)"}
