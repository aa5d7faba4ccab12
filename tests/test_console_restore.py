"""A console started after nvls-tui died mid-repair shows INTERRUPTED_REPAIR and restores the node."""

from __future__ import annotations

from nvls_tui.app import NvlsApp
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.steps import unit_states
from nvls_tui.screens.confirm import ConfirmScreen
from nvls_tui.screens.node import NodeScreen
from nvls_tui.sim.fleet import load_fleet
from tests.test_runbook_sim import FAST, SPEED, FaultBackend
from tests.waiting import wait_until


async def test_a_restarted_console_shows_the_interrupted_repair_and_u_puts_every_unit_back(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    before = unit_states(await SimulatedBackend(fleet, "gpu05").snapshot())
    # The first nvls-tui "dies" at the reset: the node keeps its record, kubelet and the timer stay stopped.
    dead = await Runbook(FaultBackend(fleet, "gpu05", die_at=("nvidia-smi", "-r")), FAST).run()
    assert dead.result == "failed" and fleet.node("gpu05").files.get(RECORD_FILE)

    app = NvlsApp([SimulatedBackend(fleet, "gpu05")], poll_interval=None, audit_dir=str(tmp_path))
    notes: list[str] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_for_first_poll()
        codes = [f.code for f in app.diagnoses["gpu05"].findings]
        assert codes[0] == "INTERRUPTED_REPAIR"
        app.open_node("gpu05")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen")
        app.notify = lambda message, **kw: notes.append(message)
        await pilot.press("U")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: notes, "the outcome")
        await wait_until(pilot, lambda: not app.fleet.get("gpu05").repair_record, "the record to be gone")
        state = app.fleet.get("gpu05")
    assert "INTERRUPTED_REPAIR" not in [f.code for f in app.diagnoses["gpu05"].findings]
    after = unit_states(state)
    for unit in ("kubelet.service", "nvidia-snapshot.timer", "nvidia-dcgm.service"):
        assert after[unit] == before[unit] == "active"
    logs = list(tmp_path.glob("session-*.jsonl"))  # the restore's commands are in the session's audit log
    assert logs and '"mode": "restore"' in logs[0].read_text()
