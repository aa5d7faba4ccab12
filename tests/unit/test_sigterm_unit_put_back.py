"""A unit whose process was SIGTERMed by hand is a unit stopped by hand: the next repair puts it back.

Found by a new operator's pass in tmux (tenth session): on the demo's gpu05, `a` then `t` signalled every holder,
nv-hostengine among them. systemd did not start nvidia-dcgm again (a SIGTERM is a clean exit), the repair that
followed found DCGM already inactive, so it neither stopped nor restored it, and the node ended `healthy` with
DCGM down, though "put back what was stopped by hand" was ticked: the ledger had the signal, not the stop.
"""

from __future__ import annotations

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.runbook.ledger import STOPPED
from nvls_tui.runbook.session import Session
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_runbook_sim import FAST, SPEED

DCGM = "nvidia-dcgm.service"


async def _signalled_dcgm(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    backend = SimulatedBackend(fleet, "gpu05")
    dcgm = [h for h in (await backend.snapshot()).holders if h.unit == DCGM and not h.pod]
    assert dcgm, "nv-hostengine holds the GPUs, from nvidia-dcgm.service"
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path), options=FAST)
    done = await session.sigterm("gpu05", dcgm)
    assert done.ok, done.message
    return fleet, backend, session


async def test_a_units_process_signalled_by_hand_goes_to_the_ledger_as_a_stop_with_the_signal(tmp_path):
    fleet, backend, session = await _signalled_dcgm(tmp_path)
    assert session.ledger.stopped_units("gpu05") == {DCGM: "active"}
    (stop,) = [c for c in session.ledger.changes("gpu05") if c.what == STOPPED]
    assert stop.describe().endswith(f"{DCGM} (it was active; SIGTERM of its process {stop.pid})")
    await session.close()


async def test_the_repair_after_it_puts_the_unit_back(tmp_path):
    fleet, backend, session = await _signalled_dcgm(tmp_path)
    assert (await backend.snapshot()).service(DCGM).active != "active"  # systemd did not start it again
    run = session.start_repair(["gpu05"])
    (outcome,) = await session.repair(run, FAST)
    assert outcome.result == "repaired", outcome.message
    assert (await backend.snapshot()).service(DCGM).active == "active"
    assert session.ledger.stopped_units("gpu05") == {}
    await session.close()
