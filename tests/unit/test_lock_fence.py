"""The lock fences every change, and a lock is judged on the node's own clock (issue 34, items 1 and 6).

Before: staleness compared the owner's heartbeat (written with the owner's bastion clock) with this
bastion's clock, so a bastion whose clock ran 6 minutes ahead, or a hand-edited ``owner.json``, made a
live lock look stale, and ``repair --restore --force`` took it over. A run whose lock was taken over (it
was paused) went on: it reset the GPUs, started FM and ran the smoke test with no lock. A lock whose
heartbeat lay in the future could never be taken over, even with ``--force``, and the refusal said it was
alive. These tests run on the simulator; tests/sshd/test_lock_skewed_bastions.py does the same with two real
nvls-tui processes (one under a skewed clock) behind a real sshd.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from nvls_tui.backends.base import Fenced
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.poll.fence import OWNER_FILE
from nvls_tui.poll.probe import LOCK_DIR, RECORD_FILE
from nvls_tui.runbook import Runbook, restore_node
from nvls_tui.runbook.events import CommandStarted, Note
from nvls_tui.runbook.lock import LockOwner
from nvls_tui.runbook.steps import unit_states
from nvls_tui.sim.files import age_file
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_node_lock import FAST, SPEED, WAITING, with_workload
from tests.unit.test_runbook_sim import units_and_pm
from tests.waiting import scaled, until

QUICK_WATCH = dataclasses.replace(FAST, heartbeat_interval=0.05, command_timeout=0.5)


def until_a_heartbeat(node):
    """The force's watch (``RepairOptions.sleep``) as long as the live run takes to beat once more: its
    ``0.6 s`` is two of the run's 0.05 s heartbeats and a command timeout on an idle machine, and a loaded one ran
    the run's beat (in this event loop, among its re-checks of the holders) after it. The window's length is the
    product's bet on the owner's heartbeat interval; what this test holds is what the watch makes of a beat
    that came inside it (a live run: refused). A beat that never comes still fails here, on a scaled bound."""

    async def sleep(seconds: float) -> None:
        before = json.loads(node.files[OWNER_FILE])["beat"]
        await asyncio.sleep(seconds)
        await until(lambda: json.loads(node.files[OWNER_FILE])["beat"] > before, scaled(30),
                    "the live run's next heartbeat")

    return sleep


def commands_since(node, mark: int) -> list[list[str]]:
    return [list(argv) for _, argv in node.cmdlog[mark:]]


def other_bastions_owner(fleet, name: str = "gpu05", *, heartbeat_age: float = 0.0) -> None:
    """Another bastion's run holds the lock: its owner file written just now on the node (the file's time), with
    a heartbeat of that bastion's clock ``heartbeat_age`` seconds behind the node's."""
    import datetime as dt

    node = fleet.node(name)
    fleet.sh(name, "mkdir", "-p", LOCK_DIR)
    beat = dt.datetime.fromtimestamp(node.clock(fleet.clock.now()) - heartbeat_age, dt.UTC).isoformat(timespec="seconds")
    owner = LockOwner(run_id="run-b2", bastion="bastion-b2", operator="lee", tool_pid=4242, since=beat,
                      heartbeat=beat, bastion_id="other-boot/4026531836")
    fleet.sh(name, "tee", OWNER_FILE, stdin=owner.to_json())


async def paused_repair(fleet, events: list):
    """A repair of gpu05 waiting in verify-no-holders whose heartbeat does not come (as if SIGSTOPped)."""
    options = dataclasses.replace(WAITING, heartbeat_interval=3600.0)
    book = Runbook(SimulatedBackend(fleet, "gpu05"), options, run_id="run-paused", operator_name="kim",
                   on_event=events.append)
    task = asyncio.ensure_future(book.run())
    await until(lambda: book.context.step == "verify-no-holders" or task.done(), 30, "the repair to wait for holders")
    assert not task.done(), task.result().message
    return book, task


# ---- item 1: judged on the node's clock ----------------------------------------------------------------------

async def test_a_live_lock_whose_heartbeat_reads_old_by_a_skewed_bastion_clock_is_not_taken_over():
    # The owner's bastion clock is 6 minutes behind: its heartbeat field reads 6 minutes old, but the node
    # wrote the file just now. Before: stale by the heartbeat, and --force took it over.
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    other_bastions_owner(fleet, heartbeat_age=360)
    for force in (False, True):
        refused = await restore_node(SimulatedBackend(fleet, "gpu05"), FAST, force=force)
        assert refused.result == "refused", refused.message
        assert "alive" in refused.message and "node's clock" in refused.message, refused.message
        assert refused.to_json()["lock_owner"]["status"] == "live"
    assert json.loads(fleet.node("gpu05").files[OWNER_FILE])["run_id"] == "run-b2"


async def test_a_lock_whose_file_is_old_on_the_nodes_clock_is_stale_whatever_its_heartbeat_says():
    # A hand-edited heartbeat "now" changes nothing: the file itself was last written 10 minutes ago.
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    other_bastions_owner(fleet, heartbeat_age=-30)
    node = fleet.node("gpu05")
    age_file(node, OWNER_FILE, 600)
    refused = await restore_node(SimulatedBackend(fleet, "gpu05"), FAST)
    assert refused.result == "refused" and "stale" in refused.message and "--force" in refused.message
    taken = await restore_node(SimulatedBackend(fleet, "gpu05"), FAST, force=True)
    assert taken.result == "restored", taken.message
    assert LOCK_DIR not in node.dirs


# ---- item 1: the fence ----------------------------------------------------------------------------------------

async def test_a_paused_run_whose_lock_was_taken_over_changes_nothing_more_and_says_so():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    workload = with_workload(fleet)
    seen: list = []
    book, task = await paused_repair(fleet, seen)
    node = fleet.node("gpu05")
    # Paused for 10 minutes: no heartbeat, so the lock is stale on the node's clock and --force takes it over.
    age_file(node, OWNER_FILE, 600)
    events: list = []
    taken = await restore_node(SimulatedBackend(fleet, "gpu05"), FAST, force=True, on_event=events.append)
    assert taken.result == "restored", taken.message
    assert any(isinstance(e, Note) and "took over" in e.message and "run-paused" in e.message for e in events)
    assert LOCK_DIR not in node.dirs and not node.files.get(RECORD_FILE)
    after_take_over = len(node.cmdlog)
    restored = await units_and_pm(SimulatedBackend(fleet, "gpu05"))

    # The paused run wakes up: the workload is gone, and its next command would have been the reset.
    node.procs.pop(workload.pid)
    outcome = await asyncio.wait_for(task, 30)
    assert outcome.result == "failed" and "LOCK LOST" in outcome.message, outcome.message
    later = commands_since(node, after_take_over)
    assert not [a for a in later if a[:2] == ["nvidia-smi", "-r"] or "-r" in a and a[0] == "nvidia-smi"], later
    assert not [a for a in later if a[:1] == ["systemctl"] and a[1:2] in (["start"], ["stop"], ["reset-failed"])]
    assert not [a for a in later if a[:1] in (["all_reduce_perf"], ["kill"], ["rm"], ["rmdir"], ["mkdir"], ["tee"])]
    assert await units_and_pm(SimulatedBackend(fleet, "gpu05")) == restored
    restore = next(s for s in outcome.steps if s.name == "restore")
    assert restore.status == "skipped" and "no longer this run's" in restore.message
    assert any(isinstance(e, Note) and e.level == "error" and "LOCK LOST" in e.message for e in seen)


async def test_every_command_of_a_lock_holder_goes_out_fenced_by_its_run():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    events: list = []
    outcome = await Runbook(SimulatedBackend(fleet, "gpu05"), FAST, run_id="run-fenced", on_event=events.append).run()
    assert outcome.result == "repaired", outcome.message
    started = [e for e in events if isinstance(e, CommandStarted)]
    taken = next(i for i, e in enumerate(started) if e.argv == ("mkdir", LOCK_DIR))
    released = next(i for i, e in enumerate(started) if e.argv[:1] == ("rmdir",))
    unfenced = [e.argv for e in started[taken:released] if not e.fence and e.step != "lock-heartbeat"]
    # Only the lock's own commands go out unfenced while it is held: the owner written and read.
    assert {a[0] for a in unfenced} <= {"mkdir", "tee", "mv", "cat"}, unfenced
    assert all(a[-1].startswith(LOCK_DIR) for a in unfenced if a[0] != "cat") or not unfenced
    fenced = [e for e in started if e.fence]
    assert {e.fence for e in fenced} == {"run-fenced"}
    for argv in (("nvidia-smi", "-r"), ("systemctl", "start", "nvidia-fabricmanager.service")):
        assert any(e.argv[:len(argv)] == argv for e in fenced), argv
    assert any(e.argv[0].endswith("all_reduce_perf") for e in fenced)


async def test_the_simulator_runs_a_fenced_command_only_while_the_lock_names_its_run():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    other_bastions_owner(fleet)
    backend = SimulatedBackend(fleet, "gpu05")
    unit = "nvidia-dcgm.service"
    assert unit_states(await backend.snapshot())[unit] == "active"
    with pytest.raises(Fenced):
        await backend.run(("systemctl", "stop", unit), fence="run-mine")
    assert unit_states(await backend.snapshot())[unit] == "active"
    done = await backend.run(("systemctl", "stop", unit), fence="run-b2")
    assert done.ok and unit_states(await backend.snapshot())[unit] == "inactive"


# ---- item 6: a lock that cannot be judged -------------------------------------------------------------------

async def test_a_lock_dated_in_the_nodes_future_is_refused_as_unjudgeable_and_force_takes_it_after_watching():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    other_bastions_owner(fleet)
    node = fleet.node("gpu05")
    node.step_clock(fleet.clock.now(), -3600)  # NTP steps the node's clock back an hour
    refused = await restore_node(SimulatedBackend(fleet, "gpu05"), QUICK_WATCH)
    assert refused.result == "refused", refused.message
    assert "cannot be judged" in refused.message and "future" in refused.message, refused.message
    assert "--force" in refused.message and "watches" in refused.message
    assert "0 s ago" not in refused.message and "alive" not in refused.message
    events: list = []
    taken = await restore_node(SimulatedBackend(fleet, "gpu05"), QUICK_WATCH, force=True, on_event=events.append)
    assert taken.result == "restored", taken.message
    assert any(isinstance(e, Note) and "took over the unjudgeable lock" in e.message and "no heartbeat" in e.message
               for e in events)


async def test_force_on_an_unjudgeable_lock_of_a_live_run_sees_its_heartbeat_and_refuses():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    with_workload(fleet)
    book = Runbook(SimulatedBackend(fleet, "gpu05"), WAITING, run_id="run-live", operator_name="kim")
    task = asyncio.ensure_future(book.run())
    await until(lambda: book.context.step == "verify-no-holders" or task.done(), 30, "the repair to wait")
    node = fleet.node("gpu05")
    node.missing_tools.append("stat")  # the file's time cannot be read: the age is unknown
    watching = dataclasses.replace(QUICK_WATCH, sleep=until_a_heartbeat(node))
    refused = await restore_node(SimulatedBackend(fleet, "gpu05"), watching, force=True)
    assert refused.result == "refused" and "alive" in refused.message and "changed while it was watched" in \
        refused.message, refused.message
    assert refused.to_json()["lock_owner"]["status"] == "live"
    assert json.loads(node.files[OWNER_FILE])["run_id"] == "run-live"
    book.abort()
    first = await asyncio.wait_for(task, 30)
    assert first.result == "aborted", first.message
