"""A node clock that steps (sim:clock-step): ``check`` and the console show the fresh fabric error that
reads older than the last smoke record, and a repair's new record (with its boot) is trusted again."""

from __future__ import annotations

import json

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.node import smoke_distrust
from nvls_tui.model import Verdict
from nvls_tui.poll.kernel_tail import last_cursor
from nvls_tui.poll.probe import SMOKE_FILE
from nvls_tui.runbook import Runbook
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.unit.test_runbook_sim import FAST, SPEED
from tests.waiting import first_poll

HOSTS = ("gpu-ntp01", "gpu-ahead01")


def test_check_shows_the_fresh_out_of_sync_error_of_both_stepped_nodes(capsys):
    code = main(["check", "sim:clock-step", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    for node in doc["nodes"]:
        assert node["verdict"] == "broken", node["host"]
        assert "FABRIC_OUT_OF_SYNC" in [f["code"] for f in node["findings"]]
    assert sorted(n["host"] for n in doc["nodes"]) == sorted(HOSTS)


async def test_each_stepped_node_distrusts_its_smoke_record_for_its_own_reason():
    fleet = load_fleet("sim:clock-step", speed=0)
    why = {b.host: smoke_distrust(await b.snapshot()) for b in sim_backends(fleet)}
    assert why == {"gpu-ntp01": "the node's clock was stepped back since the smoke test",
                   "gpu-ahead01": "the smoke record is dated after the node's clock"}


async def test_the_console_shows_the_stepped_nodes_broken_with_the_fabric_out_of_sync():
    fleet = load_fleet("sim:clock-step", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        for host in HOSTS:
            assert app.verdict(host) is Verdict.BROKEN
            assert grid.get_cell(host, "verdict").plain == "✖ broken"
            assert grid.get_cell(host, "note").plain.startswith("fabric out of sync")


def test_the_simulator_serves_the_boot_id_the_journal_cursors_carry_and_an_uptime_that_ignores_steps():
    fleet = load_fleet("sim:clock-step/gpu-ntp01", speed=0)
    boot_id, uptime = fleet.run("gpu-ntp01", ["cat", "/proc/sys/kernel/random/boot_id", "/proc/uptime"]).stdout \
        .splitlines()
    cursor = last_cursor(fleet.run("gpu-ntp01", ["journalctl", "-k", "-b", "--show-cursor", "-n", "1"]).stdout)
    assert cursor is not None and f"b={boot_id.replace('-', '')};" in cursor
    before = fleet.run("gpu-ntp01", ["date", "-u", "+%s"]).stdout
    fleet.node("gpu-ntp01").step_clock(fleet.clock.now(), -3600)
    fleet.clock.advance(10)
    after = fleet.run("gpu-ntp01", ["date", "-u", "+%s"]).stdout
    assert int(after) - int(before) == 10 - 3600
    later = fleet.run("gpu-ntp01", ["cat", "/proc/uptime"]).stdout.split()[0]
    assert float(later) - float(uptime.split()[0]) == pytest.approx(10)


async def test_a_repair_writes_a_smoke_record_of_this_boot_in_utc_and_the_node_is_healthy_after():
    fleet = load_fleet("sim:clock-step/gpu-ntp01", speed=SPEED)
    (backend,) = sim_backends(fleet)
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "repaired", outcome.message
    record = json.loads(fleet.node("gpu-ntp01").files[SMOKE_FILE])
    boot_id = fleet.run("gpu-ntp01", ["cat", "/proc/sys/kernel/random/boot_id"]).stdout.strip()
    assert record["boot_id"] == boot_id and record["at"].endswith("+00:00") and record["uptime"] > 0
    state = await backend.snapshot()
    assert smoke_distrust(state) is None
    assert diagnose(state).verdict is Verdict.HEALTHY
