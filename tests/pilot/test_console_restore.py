"""A console started after nvls-tui died mid-repair shows INTERRUPTED_REPAIR and restores the node; its ``U``
follows the lock's rule: a live run's lock refuses it (naming the owner), a stale one is taken over only
when the operator confirms the take-over, and a lock that is already gone is no failure."""

from __future__ import annotations

import asyncio

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.steps import unit_states
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_node_lock import hand_record, waiting_repair, with_workload
from tests.unit.test_runbook_sim import FAST, SPEED, FaultBackend
from tests.waiting import click_shown, first_poll, open_node_screen, wait_until


async def test_a_restarted_console_shows_the_interrupted_repair_and_u_puts_every_unit_back(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    before = unit_states(await SimulatedBackend(fleet, "gpu05").snapshot())
    # The first nvls-tui "dies" at the reset: the node keeps its record, kubelet and the timer stay stopped.
    dead = await Runbook(FaultBackend(fleet, "gpu05", die_at=("nvidia-smi", "-r")), FAST).run()
    assert dead.result == "failed" and fleet.node("gpu05").files.get(RECORD_FILE)

    app = NvlsApp([SimulatedBackend(fleet, "gpu05")], poll_interval=None, audit_dir=str(tmp_path))
    notes: list[str] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        codes = [f.code for f in app.diagnoses["gpu05"].findings]
        assert codes[0] == "INTERRUPTED_REPAIR"
        await open_node_screen(app, pilot, "gpu05")
        app.notify = lambda message, **kw: notes.append(message)
        await pilot.press("U")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: notes, "the outcome")
        # The dead run's lock is stale: U says so, and only a confirmed take-over restores.
        assert "stale" in notes[0] and "Press U again" in notes[0] and app.fleet.get("gpu05").repair_record
        await pilot.press("U")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the take-over confirmation")
        assert "Take over the stale lock" in app.screen.title_text
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: len(notes) > 1, "the outcome")
        await wait_until(pilot, lambda: not app.fleet.get("gpu05").repair_record, "the record to be gone")
        state = app.fleet.get("gpu05")
    assert "INTERRUPTED_REPAIR" not in [f.code for f in app.diagnoses["gpu05"].findings]
    after = unit_states(state)
    for unit in ("kubelet.service", "nvidia-snapshot.timer", "nvidia-dcgm.service"):
        assert after[unit] == before[unit] == "active"
    logs = list(tmp_path.glob("session-*.jsonl"))  # the restore's commands are in the session's audit log
    assert logs and '"mode": "restore"' in logs[0].read_text()


async def restore_with_u(app, pilot, notes: list[str]) -> str:
    """Open gpu05, press U, confirm; the notification it ends with."""
    await first_poll(app)
    await open_node_screen(app, pilot, "gpu05")
    app.notify = lambda message, **kw: notes.append(message)
    await pilot.press("U")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    await click_shown(pilot, "#confirm")
    await wait_until(pilot, lambda: notes, "the outcome")
    return notes[-1]


async def test_u_is_refused_while_a_repair_of_the_node_is_alive_and_names_its_owner(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    with_workload(fleet)
    book, task = await waiting_repair(fleet)  # another bastion's run, waiting for the training job
    app = NvlsApp([SimulatedBackend(fleet, "gpu05")], poll_interval=None, audit_dir=str(tmp_path))
    notes: list[str] = []
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            said = await restore_with_u(app, pilot, notes)
        kubelet = unit_states(await SimulatedBackend(fleet, "gpu05").snapshot())["kubelet.service"]
        record = fleet.node("gpu05").files.get(RECORD_FILE)
    finally:
        book.abort()
        await asyncio.wait_for(task, 30)
    assert "run-first" in said and "kim" in said and "alive" in said and "Press U again" not in said
    assert kubelet == "inactive" and record


async def test_u_with_the_lock_already_gone_reports_the_node_restored(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    fleet.sh("gpu05", "systemctl", "stop", "kubelet.service")
    fleet.sh("gpu05", "mkdir", "-p", "/var/lib/nvls-tui")
    fleet.sh("gpu05", "tee", RECORD_FILE, stdin=hand_record({"kubelet.service": "active"}))
    app = NvlsApp([SimulatedBackend(fleet, "gpu05")], poll_interval=None, audit_dir=str(tmp_path))
    notes: list[str] = []
    async with app.run_test(size=(160, 48)) as pilot:
        said = await restore_with_u(app, pilot, notes)
    assert "restored the repair" in said and "kubelet.service" in said
    assert unit_states(await SimulatedBackend(fleet, "gpu05").snapshot())["kubelet.service"] == "active"
