"""Pilot tests of the node screen's single actions (side pane) and of the holders a repair waits on.

Frozen simulated fleets (speed 0): the actions wait in simulated time, so each ends in well under a
real second and always the same way.
"""

from __future__ import annotations

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.console.screens.stream_pane import StreamPane
from nvls_tui.console.widgets.bandwidth_plot import BandwidthPlot
from nvls_tui.poll.probe import LOCK_DIR
from nvls_tui.runbook.steps import unit_states
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import gpu_devices
from tests.pilot.test_console_repair import SIZE, start_repair, wait_until
from tests.test_console_fakes import fixed_clock
from tests.waiting import click_shown, open_node_screen


async def confirm(app, pilot, typed: str | None = None) -> None:
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    if typed is not None:
        assert app.screen.query_one("#confirm").disabled  # nothing happens before the name is typed
        await pilot.press(*typed)
        await pilot.pause()
    await click_shown(pilot, "#confirm")
    await wait_until(pilot, lambda: isinstance(app.screen, StreamPane), "the side pane")


async def test_a_smoke_test_on_a_healthy_node_streams_its_bandwidth_plot_into_the_side_pane(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu01")
        await pilot.press("T")
        await confirm(app, pilot)
        pane = app.screen
        await wait_until(pilot, lambda: pane.column.run.result is not None, "the smoke test to end")
        run = pane.column.run
        assert run.result == "ok", run.message
        assert [s.status for s in run.steps.values()] == ["ok", "ok", "ok"]  # lock, smoke-test, unlock
        plot = pane.column.query_one(BandwidthPlot)
        assert len(plot.rows) == 5 and plot.result.passed
        assert plot.result.avg_busbw == pytest.approx(292, abs=5)
        assert "passed" in run.message and "GB/s" in run.message
        # The result went where `check` reads it: the re-poll shows it on the fleet.
        await wait_until(pilot, lambda: (app.fleet.get("gpu01").smoke or None) is not None
                         and app.fleet.get("gpu01").smoke.passed, "the re-poll with the smoke result")
        assert LOCK_DIR not in fleet.node("gpu01").dirs
        logs = list(tmp_path.glob("session-*.jsonl"))  # every command went to the session's audit log
        assert logs and '"argv": ["all_reduce_perf"' in logs[0].read_text()
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")


async def test_a_reset_while_holders_remain_is_refused_before_nvidia_smi_runs(tmp_path):
    from nvls_tui.console.screens.confirm import ConfirmScreen
    from nvls_tui.model import Fleet

    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("R")  # the poll shows holders: refused before any dialog
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        # A poll that is already stale (no holders in it) gets the dialog; the runbook's own guard,
        # which reads the node afresh, still refuses.
        stale = app.fleet.get("gpu05").replace(holders=())
        app.fleet = Fleet(tuple(stale if n.host == "gpu05" else n for n in app.fleet.nodes))
        await pilot.press("R")
        await confirm(app, pilot, typed="gpu05")
        pane = app.screen
        await wait_until(pilot, lambda: pane.column.run.result is not None, "the reset to end")
        run = pane.column.run
        assert run.result == "failed" and "processes hold /dev/nvidia*" in run.message
        assert run.steps["verify-no-holders"].status == "failed" and run.steps["reset"].status == "skipped"
        assert run.steps["unlock"].status == "ok"
        assert not any(argv[:2] == ["nvidia-smi", "-r"] for _, argv in fleet.node("gpu05").cmdlog)
        assert LOCK_DIR not in fleet.node("gpu05").dirs


async def test_a_fabric_manager_restart_brings_a_failed_unit_back_and_shows_registration(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("F")
        await confirm(app, pilot, typed="gpu05")
        pane = app.screen
        await wait_until(pilot, lambda: pane.column.run.result is not None, "the FM restart to end")
        run = pane.column.run
        assert run.steps["stop"].status == "ok" and run.steps["fabric-manager"].status == "ok"
        assert run.fabric, "registration progress was shown"
        commands = [argv for _, argv in fleet.node("gpu05").cmdlog]
        assert ["systemctl", "reset-failed", "nvidia-fabricmanager.service"] in commands
        assert ["systemctl", "start", "nvidia-fabricmanager.service"] in commands
    state = await sim_backends(fleet)[fleet.names.index("gpu05")].snapshot()
    assert unit_states(state)["nvidia-fabricmanager.service"] == "active"


async def test_read_only_mode_hides_the_single_actions():
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        assert [node.check_action(a, ()) for a in ("reset_gpus", "restart_fm", "smoke_test")] == [False] * 3
        await pilot.press("R", "T")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)


async def test_a_workload_holder_waits_for_the_operator_who_selects_and_sigterms_it_inline(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    node = fleet.node("gpu05")
    job = node.spawn(ppid=1, user="alice", start=fleet.clock.now() - 600, argv=["python3", "train.py", "--tp", "4"],
                     cgroup="0::/user.slice/user-1000.slice/session-5.scope", role="app",
                     devices=gpu_devices(node, ("/dev/nvidiactl", "/dev/nvidia-uvm")))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking, "the runbook to wait on the workload")
        assert [h.pid for h in column.run.holders] == [job.pid]
        assert column.query_one(".holders-box").display
        assert screen.check_action("sigterm_holders", ()) is None  # greyed until a holder is picked
        assert app.focused is column.query_one(".holders")  # the list takes the keys as it appears
        await pilot.press("space")  # select the one holder listed
        assert column.selected_pids == [job.pid]
        assert screen.check_action("sigterm_holders", ()) is True
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the SIGTERM confirmation")
        assert "python3 train.py" in str(app.screen.lines)
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to go on and end")
        assert column.run.result == "repaired", column.run.message
        assert job.pid not in node.procs
        assert not column.query_one(".holders-box").display
        assert isinstance(app.screen, RunbookScreen)
