"""A change made by hand in the console (a SIGTERM, a unit stopped or started) holds the node's repair lock while
it runs, as a single action and a repair do: refused, naming the owner, while another run holds the lock; its
commands fenced by the lock it took; the lock given back after.

Before: neither took the lock. A second operator's console started ``nvidia-dcgm`` on a node whose repair (from
another bastion) had stopped it and was waiting to reset the GPUs, and signalled a holder under that repair's feet.
"""

from __future__ import annotations

import asyncio

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.poll.probe import LOCK_DIR
from nvls_tui.runbook.session import Session
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_node_lock import SPEED, ran, waiting_repair, with_workload

DCGM = "nvidia-dcgm.service"


def _lock_commands(argvs: list[list[str]]) -> list[int]:
    """Indexes of the commands that name the lock's directory."""
    return [i for i, argv in enumerate(argvs) if any(LOCK_DIR in str(word) for word in argv)]


async def test_a_unit_started_by_hand_is_refused_while_another_runs_lock_is_live(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    with_workload(fleet)
    book, task = await waiting_repair(fleet)  # kim's repair: DCGM stopped, waiting for the workload to end
    session = Session({"gpu05": SimulatedBackend(fleet, "gpu05")}, audit_dir=str(tmp_path))
    before = len(ran(fleet))
    done = await session.unit("gpu05", "start", DCGM)
    assert not done.ok
    assert "another run holds the lock of gpu05" in done.message and "run-first" in done.message
    assert not [argv for argv in ran(fleet)[before:] if argv[:2] == ["systemctl", "start"]]
    book.abort()
    await asyncio.wait_for(task, 30)
    await session.close()


async def test_a_sigterm_by_hand_is_refused_while_another_runs_lock_is_live(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    job = with_workload(fleet)
    book, task = await waiting_repair(fleet)
    backend = SimulatedBackend(fleet, "gpu05")
    holders = [h for h in (await backend.snapshot()).holders if h.pid == job.pid]
    assert holders, "the workload reads as a holder"
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path))
    done = await session.sigterm("gpu05", holders)
    assert not done.ok and "another run holds the lock of gpu05" in done.message
    assert job.pid in {p.pid for p in fleet.node("gpu05").alive()}
    assert session.ledger.changes("gpu05") == []
    book.abort()
    await asyncio.wait_for(task, 30)
    await session.close()


async def test_a_unit_stopped_by_hand_takes_the_lock_first_and_gives_it_back(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    session = Session({"gpu05": SimulatedBackend(fleet, "gpu05")}, audit_dir=str(tmp_path))
    done = await session.unit("gpu05", "stop", DCGM)
    assert done.ok, done.message
    argvs = ran(fleet)
    stop = next(i for i, argv in enumerate(argvs) if argv[:3] == ["systemctl", "stop", DCGM])
    around = _lock_commands(argvs)
    assert around and around[0] < stop < around[-1]  # taken before the stop, given back after
    assert LOCK_DIR not in fleet.node("gpu05").dirs
    await session.close()
