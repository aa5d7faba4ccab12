"""The operations layer's pure parts and guards: drift, the ledger, the threaded audit log, the session.

Every guard is tested with its evidence missing: an audit log that cannot be written refuses the
next command (but not the restore), a node busy with one action refuses a second, a read-only
session refuses everything.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from nvls_tui.audit.log import AuditLog, AuditWriteError
from nvls_tui.audit.writer import AuditWriter
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.model import Holder, HolderKind
from nvls_tui.runbook.context import Aborted, NodeContext
from nvls_tui.runbook.drift import drift, plan_basis
from nvls_tui.runbook.events import Note
from nvls_tui.runbook.ledger import SIGNALLED, STARTED, STOPPED, Ledger, ManualChange
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.session import Session
from nvls_tui.runbook.steps import RepairOptions
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import FakeBackend, make_node
from tests.waiting import until

DCGM = "nvidia-dcgm.service"


def job(pid: int = 9000, start: str = "Tue Dec  1 03:00:00 2026") -> Holder:
    return Holder(pid, "alice", "python3 train.py", HolderKind.CUDA_APP, ("/dev/nvidia0",), start_time=start)


# ---- drift -----------------------------------------------------------------------------------------
def test_a_workload_that_appeared_is_drift_and_one_that_left_is_not():
    state = make_node("gpu05", broken=True)
    basis = plan_basis(state)
    assert drift(basis, state) == []
    grown = state.replace(holders=(*state.holders, job()))
    assert drift(basis, grown) == ["a process appeared on the GPUs: 9000 (cuda-app, alice: python3 train.py)"]
    assert drift(plan_basis(grown), state) == []  # less to stop is not a reason to refuse


def test_a_pid_reused_by_another_process_is_a_new_process():
    planned = make_node("gpu05").replace(holders=(job(start="Tue Dec  1 03:00:00 2026"),))
    now = planned.replace(holders=(job(start="Tue Dec  1 03:30:00 2026"),))
    assert drift(plan_basis(planned), now) and "9000" in drift(plan_basis(planned), now)[0]


def test_a_new_pid_of_a_management_kind_is_not_drift_the_plan_stops_those_anyway():
    state = make_node("gpu05")
    smi = Holder(7777, "root", "nvidia-smi -q -x", HolderKind.NVIDIA_SMI, ("/dev/nvidia0",), start_time="x")
    assert drift(plan_basis(state), state.replace(holders=(*state.holders, smi))) == []


def test_units_versions_gpus_and_a_record_are_drift():
    state = make_node("gpu05", fm="failed")
    basis = plan_basis(state)
    services = tuple(s.__class__(s.name, "active", "running", s.load) for s in state.services)
    assert drift(basis, state.replace(services=services)) == ["nvidia-fabricmanager.service was failed, now active"]
    assert drift(basis, state.replace(driver="580.95.05")) == ["the driver was 580.82.07, now 580.95.05"]
    assert drift(basis, state.replace(gpus=state.gpus[:7])) == ["8 GPUs were planned for, 7 answer now"]
    assert drift(basis, state.replace(repair_record={"run_id": "x"})) == [
        "the node now holds the record of another repair"]


# ---- the ledger -------------------------------------------------------------------------------------
def test_the_ledger_keeps_stops_until_the_unit_is_started_or_put_back():
    ledger = Ledger()
    ledger.record(ManualChange("gpu05", STOPPED, unit=DCGM, before="active", at=0))
    ledger.record(ManualChange("gpu05", STOPPED, unit="nvidia-snapshot.timer", before="active", at=0))
    ledger.record(ManualChange("gpu05", SIGNALLED, pid=4000, command="dcgm-exporter", kind="dcgm-exporter", at=0))
    assert ledger.stopped_units("gpu05") == {DCGM: "active", "nvidia-snapshot.timer": "active"}
    ledger.record(ManualChange("gpu05", STARTED, unit=DCGM, before="inactive"))
    assert ledger.stopped_units("gpu05") == {"nvidia-snapshot.timer": "active"}
    ledger.forget("gpu05", ["nvidia-snapshot.timer"])
    assert ledger.stopped_units("gpu05") == {} and len(ledger.changes("gpu05")) == 1  # the signal stays listed
    assert ledger.hosts() == ["gpu05"] and ledger.stopped_units("gpu06") == {}


def test_a_change_describes_itself_for_the_plan():
    stop = ManualChange("gpu05", STOPPED, unit=DCGM, before="active", at=0)
    assert stop.describe().startswith("stopped by hand at ") and stop.describe().endswith(f": {DCGM} (it was active)")
    signalled = ManualChange("gpu05", SIGNALLED, pid=4000, command="dcgm-exporter -f", kind="dcgm-exporter", at=0)
    assert "SIGTERM by hand at" in signalled.describe() and "4000 (dcgm-exporter: dcgm-exporter -f)" in signalled.describe()


# ---- the threaded audit log ------------------------------------------------------------------------------
async def test_records_written_off_the_loop_all_land_in_order_and_flush_waits_for_them(tmp_path):
    writer = AuditWriter(AuditLog.create(tmp_path, "run1", kind="session"))
    for i in range(500):
        writer(Note(host="gpu05", message=f"line {i}"))
    assert await writer.flush() is True
    lines = [json.loads(x) for x in writer.path.read_text().splitlines()]
    assert [r["message"] for r in lines[1:]] == [f"line {i}" for i in range(500)]
    writer.close()
    writer(Note(host="gpu05", message="after close"))  # dropped, never raises
    assert "after close" not in writer.path.read_text()


class BrokenLog(AuditLog):
    """An audit log whose disk is full from the first append on."""

    def append(self, lines):
        raise AuditWriteError("the audit log could not be written: No space left on device")


async def test_a_failed_write_is_told_once_and_every_flush_after_it_says_false(tmp_path):
    told = []
    log = BrokenLog(tmp_path / "a.jsonl")
    writer = AuditWriter(log, told.append)
    writer(Note(host="gpu05", message="one"))
    assert await writer.flush() is False
    writer(Note(host="gpu05", message="two"))
    assert await writer.flush() is False
    await asyncio.sleep(0)
    assert len(told) == 1 and "No space left" in str(told[0])
    writer.close()


async def test_a_command_is_not_sent_when_the_audit_log_cannot_hold_it_but_the_restore_is(tmp_path):
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    backend = SimulatedBackend(fleet, "gpu05")
    writer = AuditWriter(BrokenLog(tmp_path / "a.jsonl"))
    ctx = NodeContext(backend, RepairOptions(), writer, NodeOutcome(host="gpu05"), durable=writer.flush)
    ctx.step = "quiesce"
    with pytest.raises(Aborted, match="audit log could not be written"):
        await ctx.run(("systemctl", "stop", DCGM), privileged=True)
    assert not any(argv == ["systemctl", "stop", DCGM] for _, argv in fleet.node("gpu05").cmdlog)
    result = await ctx.run(("systemctl", "start", DCGM), privileged=True, abortable=False)
    assert result.ok  # putting the node back matters more than the gap in the log
    writer.close()


# ---- the session's guards -------------------------------------------------------------------------------
async def test_a_second_action_on_a_busy_node_is_refused_not_queued(tmp_path):
    backend = FakeBackend(make_node("gpu05", holders=2))
    gate = asyncio.Event()

    @__import__("contextlib").asynccontextmanager
    async def held(host):
        await gate.wait()
        yield

    session = Session({"gpu05": backend}, audit_dir=str(tmp_path), pause=held)
    first = asyncio.ensure_future(session.unit("gpu05", "stop", "kubelet.service"))
    await until(lambda: session.busy.get("gpu05") == "unit-stop", 30, "the stop to take gpu05")
    second = await session.sigterm("gpu05", backend.state.holders)
    assert not second.ok and "gpu05 is busy (unit-stop)" in second.message
    assert backend.signalled == []
    gate.set()
    assert (await first).ok
    await session.close()


async def test_a_read_only_session_refuses_every_action(tmp_path):
    backend = FakeBackend(make_node("gpu05", holders=2))
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path), read_only=True)
    outcomes = [await session.sigterm("gpu05", backend.state.holders),
                await session.unit("gpu05", "stop", "kubelet.service"),
                await session.single("gpu05", "reset"), await session.restore("gpu05")]
    assert [o.ok for o in outcomes] == [False] * 4
    assert all("read-only session" in o.message for o in outcomes)
    assert backend.ran == [] and backend.signalled == []


async def test_the_state_before_a_stop_falls_back_to_what_the_operator_saw_when_the_node_cannot_say(tmp_path):
    backend = FakeBackend(make_node("gpu05"))
    answer = backend.run

    async def mute_is_active(argv, timeout=None, **kw):
        if tuple(argv[:2]) == ("systemctl", "is-active"):
            from nvls_tui.backends.base import CommandResult
            backend.ran.append(tuple(argv))
            return CommandResult(tuple(argv), 1, "", "Failed to connect to bus")
        return await answer(argv, timeout, **kw)

    backend.run = mute_is_active
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path))
    done = await session.unit("gpu05", "stop", DCGM, seen="active")
    assert done.ok and "(it was active)" in done.message
    assert session.ledger.stopped_units("gpu05") == {DCGM: "active"}
    await session.close()


async def test_a_unit_name_that_is_not_one_never_reaches_the_node(tmp_path):
    backend = FakeBackend(make_node("gpu05"))
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path))
    done = await session.unit("gpu05", "stop", "kubelet; reboot")
    assert not done.ok and backend.ran == []


def test_signals_leave_the_ledger_once_a_repair_reported_them_stops_stay_until_put_back():
    ledger = Ledger()
    ledger.record(ManualChange("gpu05", SIGNALLED, pid=4000, command="dcgm-exporter", kind="dcgm-exporter", at=0))
    ledger.record(ManualChange("gpu05", STOPPED, unit=DCGM, before="active", at=0))
    ledger.reported("gpu05")
    assert [c.what for c in ledger.changes("gpu05")] == [STOPPED]
