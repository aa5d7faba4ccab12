"""What was not read is ``?``, never 0, "none" or another board's wording (issue item 16).

A node that never answered (sim:wedged's nvidia-smi hangs past the poll's deadline) or that has not been
polled yet showed ``hold 0``, ``kern 0`` and "no host Fabric Manager" (the GB200 wording): all of it
reads as a healthy fact. Every screen and ``check``'s plain table must say unknown instead.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.console.widgets.node_text import header_text
from nvls_tui.model import NodeState
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, give_up_on, open_node_screen, scaled

NOW = 1_785_000_000.0
WEDGED = "gpu-wedged01"


def wedged_console() -> NvlsApp:
    """sim:wedged on a frozen clock: gpu-wedged01's poll is given up on after 0.5 s (its nvidia-smi hangs, so
    it is never read), gpu-ok01 answers however slow the machine is (a 0.5 s deadline for it too read a healthy
    node as never read under load)."""
    app = NvlsApp(sim_backends(load_fleet("sim:wedged", speed=0)), poll_interval=None, clock=lambda: NOW)
    give_up_on(app, [WEDGED], 0.5)
    return app


def test_a_state_never_read_has_every_section_unknown_and_a_stale_one_keeps_what_it_read():
    never = NodeState("gpu09")
    assert never.missing_section("holders") is not None and not never.was_read("holders")
    assert never.missing_section("holders").reason == "not polled yet"
    gone = NodeState("gpu09", reachable=False, error="no answer within 5 s")
    assert gone.missing_section("kernel").reason == "unreachable"
    read = NodeState("gpu09", driver="580.82.07", polled_at=NOW)
    assert read.missing_section("holders") is None and read.was_read("holders")
    stale = read.replace(reachable=False, error="no answer")
    assert stale.missing_section("holders") is None  # last known, shown greyed as such


async def test_the_grid_shows_question_marks_for_a_node_never_read():
    app = wedged_console()
    async with app.run_test(size=(160, 48)) as pilot:
        grid = app.screen.query_one(FleetGrid)
        placeholder = {k: v.plain for k, v in grid.row_cells(NodeState("gpu09"), None, NOW).items()}
        await first_poll(app, timeout=30)
        await pilot.pause()
        cells = {k: v.plain for k, v in grid.row_cells(app.fleet.get(WEDGED), app.diagnoses.get(WEDGED), NOW).items()}
        for row in (placeholder, cells):
            assert (row["holders"], row["kernel"], row["fm"], row["smoke"]) == ("?", "?", "?", "?"), row
            assert set(row["gpus"]) == {"?"} and set(row["switches"]) == {"?"}, row
        healthy = {k: v.plain for k, v in grid.row_cells(app.fleet.get("gpu-ok01"), None, NOW).items()}
        assert healthy["holders"] == "7" and healthy["kernel"] == "0" and healthy["fm"] == "active"


async def test_the_node_screen_of_a_node_never_read_says_unknown_not_none():
    app = wedged_console()
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await open_node_screen(app, pilot, WEDGED)
        await pilot.pause()
        header = header_text(app.fleet.get(WEDGED), app.diagnoses.get(WEDGED), None).plain
        assert "no host Fabric Manager" not in header, header
        assert "driver ?" in header and "FM ? (?)" in header, header
        for panel in ("#holders-box", "#kernel", "#switches"):
            subtitle = str(app.screen.query_one(panel).border_subtitle)
            assert subtitle.startswith("unknown: unreachable"), (panel, subtitle)


def closed_port() -> int:
    """A loopback port nothing listens on (just handed out by the kernel and closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check_shows_question_marks_for_an_unreachable_node():
    # A frozen simulated clock: the holders counted below include the minutely nvidia-snapshot run, which holds
    # the GPUs for the first 3 s of each minute; at real speed a slow machine read the node after it had ended.
    env = {**os.environ, "COLUMNS": "200", "NVLS_TUI_SIM_SPEED": "0"}
    gone = f"root@127.0.0.1:{closed_port()}"  # connection refused: nothing of it was read
    # The hung nvidia-smi is waited out once per --timeout and the whole poll gets three of them: scaled, so that
    # on a loaded machine the rest of gpu-wedged01's poll still fits (past it the node would read unreachable).
    timeout = f"{scaled(2):.0f}"
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "check", "sim:wedged", gone, "--timeout", timeout],
                          capture_output=True, text=True, timeout=scaled(120), env=env, stdin=subprocess.DEVNULL)
    row = next(line for line in done.stdout.splitlines() if gone in line and "│" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:2] == [gone, "unreachable"], row
    assert cells[2:] == ["?", "?", "?", "?"], row  # FM, driver, fabric, holders
    # A node whose nvidia-smi hung is read but for its GPUs: ? for driver and fabric only.
    wedged = next(line for line in done.stdout.splitlines() if WEDGED in line and "│" in line)
    assert [c.strip() for c in wedged.strip("│ ").split("│")] == [WEDGED, "broken", "failed", "?", "?", "8"], wedged
    ok = next(line for line in done.stdout.splitlines() if "gpu-ok01" in line and "│" in line)
    assert re.search(r"│\s*active\s*│.*│\s*7\s*│$", ok.strip()), ok


def test_the_reports_after_column_of_a_node_that_did_not_answer_is_unknown_not_zero(tmp_path):
    from tests.unit.test_report import BEFORE, report_from_file, row_of, section, write_incident

    path = tmp_path / "log.jsonl"
    write_incident(path, before=BEFORE, after={"reachable": False, "error": "no answer within 20 s",
                                               "verdict": "unreachable"})
    table = section(report_from_file(path), "### Before and after")
    for label in ("holders of /dev/nvidia*", "kernel events", "driver / FM", "units", "Fabric Manager"):
        assert row_of(table, label)[2] == "? (unreachable)", (label, row_of(table, label))
    assert row_of(table, "holders of /dev/nvidia*")[1] != "? (unreachable)"  # before: read
