"""Issue 36's acceptance: for the same starting state, the dry run hands the door the changes the run makes.

The dry run records each change (``door.Recording``) where the run sends it; both keep them, in order, in
``NodeContext.performed``. The simulator's node is planned first (the plan reads and changes nothing), then
repaired: the two lists must be the same changes (type and command lines), in the same order.
"""

from __future__ import annotations

import dataclasses

import pytest

from nvls_tui.backends.base import Unreachable
from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.model.scheduler import SchedulerState
from nvls_tui.poll.probe import RECORD_FILE, SMOKE_FILE
from nvls_tui.runbook import RepairOptions, Runbook, restore_node
from nvls_tui.runbook.changes import (
    SCHEDULER,
    Change,
    DrainNode,
    LockChange,
    ReleaseLock,
    RemoveFile,
    ResetGpus,
    ResumeNode,
    RunSmoke,
    SetPersistence,
    TakeLock,
    UnitChange,
    WriteFile,
    WriteOwner,
)
from nvls_tui.runbook.steps import FM_UNIT, SNAPSHOT_SERVICE
from nvls_tui.sim.fleet import load_fleet

SPEED = 2000.0
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)


def compared(changes: list[Change]) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    """What a plan and a run are compared by: each change's type and its command lines, as the plan can know
    them (``Change.planned``: a label write's resourceVersion and an eviction's body file are the run's)."""
    return [(type(c).__name__, c.planned().argvs()) for c in changes]


class IdleSlurm:
    """A node's Slurm that runs no job and changes its state as scontrol would (runbook/scheduling's hook)."""

    def __init__(self, node: str) -> None:
        self.node, self.state, self.reason = node, "idle", None
        self.commands: list[tuple[str, ...]] = []

    async def read(self) -> SchedulerState:
        return SchedulerState("slurm", self.node, self.state, self.reason, ())

    async def command(self, argv) -> tuple[int, str]:
        self.commands.append(tuple(argv))
        words = dict(w.split("=", 1) for w in argv[2:] if "=" in w)
        self.state, self.reason = ("drained", words["Reason"]) if words.get("State") == "DRAIN" else ("idle", None)
        return 0, ""


async def plan_then_run(spec: str, host: str, options: RepairOptions = FAST,
                        **runbook) -> tuple[list[Change], list[Change], str]:
    fleet = load_fleet(spec, speed=SPEED)
    (backend,) = [b for b in sim_backends(fleet) if b.host == host]
    plan = Runbook(backend, dataclasses.replace(options, dry_run=True), run_id="run1", **runbook)
    assert (await plan.run()).result == "planned"
    run = Runbook(backend, options, run_id="run1", **runbook)
    outcome = await run.run()
    assert plan.outcome.changes is plan.context.performed  # the outcome keeps them
    return plan.context.performed, run.context.performed, f"{outcome.result}: {outcome.message}"


@pytest.mark.parametrize(("spec", "host"), [
    ("sim:seed-incident", "gpu05"),  # FM killed days ago and failed; DCGM, pods, a watch loop holding devices
    ("sim:seed-incident", "gpu06"),  # out of sync after a reboot, FM active
    ("sim:persistence-blocks-reset", "gpu-pm01"),  # persistence mode on every GPU: off, then on again
    ("sim:fm-restarters", "gpu-nr01"),  # apt's timers held for the repair and started again
    ("sim:missing-device-files", "gpu-h200-01"),
])
async def test_the_dry_run_hands_the_door_the_changes_the_run_makes(spec, host):
    planned, performed, result = await plan_then_run(spec, host)
    assert result.startswith("repaired"), result
    assert performed, "the run made no change through the door"
    assert compared(planned) == compared(performed)


async def test_under_slurm_the_drain_and_the_resume_on_the_bastion_are_planned_as_the_run_makes_them():
    slurm = IdleSlurm("gpu05")
    planned, performed, result = await plan_then_run("sim:seed-incident", "gpu05", scheduler=slurm)
    assert result.startswith("repaired"), result
    assert compared(planned) == compared(performed)
    drain, resume = (next(c for c in performed if isinstance(c, kind)) for kind in (DrainNode, ResumeNode))
    assert drain.where == resume.where == SCHEDULER and drain.undo() == resume
    assert slurm.commands == [drain.argv(), resume.argv()]  # sent once each, by the run only
    assert performed.index(drain) < performed.index(ResetGpus()) < performed.index(resume)


async def test_a_restore_after_a_run_that_died_makes_exactly_the_undo_of_what_that_run_changed():
    """``repair --restore`` from the record of a run killed at the reset: each unit the run stopped is started
    (in the restore's order: FM first), persistence mode as it was, then the record the run wrote is removed."""
    fleet = load_fleet("sim:persistence-blocks-reset", speed=SPEED)
    (backend,) = sim_backends(fleet)
    dying = DiesAtTheReset(fleet, backend.host)
    died = await Runbook(dying, FAST, run_id="run-dead").run()
    assert died.result == "failed"
    # What it changed: up to the reset, handed to the door and never answered (its own restore never got through).
    changed = died.changes[:died.changes.index(ResetGpus())]
    restored = await restore_node(backend, FAST, force=True)
    assert restored.result == "restored", restored.message
    undone = [c.undo() for c in changed if isinstance(c, UnitChange | SetPersistence | WriteFile)]
    # The snapshot timer's oneshot is started by its timer, not by the restore (runbook/restore.py).
    undone = [c for c in undone if c != UnitChange("start", SNAPSHOT_SERVICE)]
    # The restore's own lock goes through the door too: its take finds the dead run's lock (mkdir refused), which
    # it takes over (--force) first; released last. Between them, exactly the undo.
    taking = [TakeLock(), TakeLock(again=True), WriteOwner()]
    assert restored.changes[:3] == taking and restored.changes[-1] == ReleaseLock()
    undoing = restored.changes[3:-1]
    assert not any(isinstance(c, LockChange) for c in undoing)
    assert sorted(map(compared_one, undoing)) == sorted(map(compared_one, undone))
    assert undoing[-1] == RemoveFile(RECORD_FILE)
    assert [c.unit for c in undoing if isinstance(c, UnitChange)][0] == FM_UNIT


def compared_one(change: Change) -> tuple[str, tuple[tuple[str, ...], ...]]:
    return compared([change])[0]


class DiesAtTheReset(SimulatedBackend):
    """The process running the repair is gone from ``nvidia-smi -r`` on: nothing after it reaches the node."""

    dead = False

    async def run(self, argv, timeout=None, **kw):
        self.dead = self.dead or tuple(argv[:2]) == ("nvidia-smi", "-r")
        if self.dead:
            raise Unreachable(f"{self.host}: the process running the repair is gone")
        return await super().run(argv, timeout, **kw)

    async def snapshot(self):
        if self.dead:
            raise Unreachable(f"{self.host}: the process running the repair is gone")
        return await super().snapshot()


async def test_a_healthy_looking_node_is_smoke_tested_first_as_planned_and_the_run_ends_there():
    """preflight's recheck (runbook/program.py RECHECK): the plan lists the smoke test the run makes before anything
    destructive; its pass ends the run, so the run makes the plan's preflight up to that test, then lets the lock go."""
    planned, performed, result = await plan_then_run("sim:seed-incident", "gpu01")
    assert result.startswith("skipped"), result
    recheck = planned.index(RunSmoke(8))
    smoke_written = next(i for i, c in enumerate(planned) if isinstance(c, WriteFile) and c.path == SMOKE_FILE)
    assert recheck < smoke_written < planned.index(WriteFile(RECORD_FILE))
    assert compared(performed) == compared([*planned[:smoke_written + 1], ReleaseLock()])


async def test_a_drain_kept_after_the_repair_is_planned_without_the_resume_as_the_run_keeps_it():
    slurm = IdleSlurm("gpu05")
    planned, performed, result = await plan_then_run("sim:seed-incident", "gpu05", scheduler=slurm,
                                                     options=dataclasses.replace(FAST, keep_drained=True))
    assert result.startswith("repaired"), result
    assert compared(planned) == compared(performed)
    assert [type(c) for c in performed if c.where == SCHEDULER] == [DrainNode]
    assert slurm.state == "drained"


def test_the_scheduler_drain_follows_the_lock_in_the_program_itself():
    """No splice: the program's preflight names the lock, then the drain and the job wait, from one place."""
    from nvls_tui.runbook import program
    from nvls_tui.runbook.lock import TAKING
    from nvls_tui.runbook.scheduling import drain_change
    from tests.unit.test_runbook_units import incident_node

    pre = program.preflight(incident_node(), program.Known(scheduler_node="gpu05", run_id="run1"))
    assert [e.point for e in pre[:3] if isinstance(e, program.Decide)] == [program.LOCK, program.DRAIN, program.JOBS]
    assert pre[0].entries == TAKING and pre[1].entries == (drain_change("gpu05", "run1"),)



async def test_without_the_recheck_a_healthy_looking_node_is_planned_and_repaired_without_the_first_smoke_test():
    """``recheck_transient`` off: the run goes straight to the repair, and so does its plan (the plan had listed the
    healthy node's first smoke test whatever the option said)."""
    planned, performed, result = await plan_then_run("sim:seed-incident", "gpu01",
                                                     options=dataclasses.replace(FAST, recheck_transient=False))
    assert result.startswith("repaired"), result
    assert compared(planned) == compared(performed)
    assert [c for c in planned if isinstance(c, RunSmoke)] == [RunSmoke(8)]  # the smoke-test step's only
    assert planned.index(ResetGpus()) < planned.index(RunSmoke(8))
