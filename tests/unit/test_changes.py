"""The typed changes of runbook/changes.py: where each runs, its command lines, its words and its undo."""

from __future__ import annotations

import pytest

from nvls_tui.poll.probe import RECORD_FILE, SMOKE_FILE
from nvls_tui.runbook.changes import (
    NODE,
    SCHEDULER,
    CancelJob,
    DrainNode,
    Read,
    RemoveFile,
    ResetGpus,
    ResumeNode,
    RunSmoke,
    SetPersistence,
    SignalHolder,
    UnitChange,
    WriteFile,
    record_write,
    start_fabric_manager,
)


def test_a_unit_stopped_is_undone_by_its_start_and_a_reset_failed_by_nothing():
    stop = UnitChange("stop", "nvidia-dcgm.service")
    assert stop.argv() == ("systemctl", "stop", "nvidia-dcgm.service") and stop.where == NODE
    assert stop.undo() == UnitChange("start", "nvidia-dcgm.service")
    assert UnitChange("start", "kubelet.service").undo() == UnitChange("stop", "kubelet.service")
    assert UnitChange("reset-failed", "kubelet.service").undo() is None
    with pytest.raises(ValueError, match="not a unit change"):
        UnitChange("mask", "kubelet.service")


def test_a_unit_change_with_a_reason_says_it_in_the_plan_and_without_one_shows_the_command_alone():
    assert UnitChange("stop", "apt-daily.timer", "held for the repair").display == \
        "systemctl stop apt-daily.timer  # held for the repair"
    assert UnitChange("stop", "nvidia-dcgm.service").display == "systemctl stop nvidia-dcgm.service"
    assert "client of the GPUs" in UnitChange("stop", "nvidia-dcgm.service").why


def test_persistence_mode_off_is_undone_by_on_for_the_same_gpus():
    assert SetPersistence(False).argv() == ("nvidia-smi", "-pm", "0")
    assert SetPersistence(False).undo() == SetPersistence(True)
    assert SetPersistence(True, 3).argv() == ("nvidia-smi", "-pm", "1", "-i", "3")
    assert SetPersistence(True, 3).undo() == SetPersistence(False, 3)


def test_a_signal_and_a_reset_cannot_be_undone_and_a_signal_says_its_identity_is_re_checked():
    term = SignalHolder(pid=4242, reason="dcgm-exporter holder", start_time="Mon Aug 10 15:00:00 2026",
                        command="/usr/bin/dcgm-exporter")
    assert term.argv() == ("kill", "-TERM", "4242") and term.undo() is None
    assert term.display == "kill -TERM 4242  # dcgm-exporter holder, identity re-checked first"
    assert ResetGpus().argv() == ("nvidia-smi", "-r") and ResetGpus().undo() is None


def test_a_file_is_written_in_three_commands_with_its_content_on_stdin_and_undone_by_its_removal():
    write = record_write('{"run_id": "r1"}')
    assert write.argvs() == (("mkdir", "-p", "/var/lib/nvls-tui"), ("tee", f"{RECORD_FILE}.tmp"),
                             ("mv", "-f", f"{RECORD_FILE}.tmp", RECORD_FILE))
    assert write.commands()[1].stdin == '{"run_id": "r1"}'
    assert write.undo() == RemoveFile(RECORD_FILE)
    assert write == WriteFile(RECORD_FILE), "the content is not what a plan and a run are compared by"
    assert write.lines[1] == f"tee {RECORD_FILE}.tmp"
    with pytest.raises(ValueError, match="3 commands"):
        WriteFile(SMOKE_FILE).argv()


def test_the_smoke_run_shows_its_environment_and_fabric_managers_start_clears_its_failed_state_first():
    assert RunSmoke(8).display == ("NCCL_NVLS_ENABLE=1 NCCL_ALGO=NVLS NCCL_DEBUG=INFO "
                                   "all_reduce_perf -b 8M -e 128M -f 2 -g 8")
    clear, start = start_fabric_manager("nvidia-fabricmanager.service")
    assert (clear.verb, start.verb) == ("reset-failed", "start")


def test_a_read_shows_its_command_alone():
    assert Read(("ps", "-ww", "-e"), reason="find every watch loop").display == "ps -ww -e"


def test_slurms_changes_run_on_the_bastion_and_a_drain_is_undone_by_its_resume():
    drain = DrainNode("gpu05", "nvls-tui run1: NVLS repair", remark="on the bastion: no new job lands")
    assert drain.where == SCHEDULER and drain.argv() == (
        "scontrol", "update", "NodeName=gpu05", "State=DRAIN", "Reason=nvls-tui run1: NVLS repair")
    assert drain.display == "scontrol update NodeName=gpu05 State=DRAIN 'Reason=nvls-tui run1: NVLS repair'" \
        "  # on the bastion: no new job lands"
    assert drain == DrainNode("gpu05", "nvls-tui run1: NVLS repair"), "a remark is words, not the change"
    assert drain.undo() == ResumeNode("gpu05") and ResumeNode("gpu05").undo() is None
    assert CancelJob(1234).argv() == ("scancel", "1234") and CancelJob(1234).where == SCHEDULER


async def test_the_door_will_not_send_a_schedulers_change_to_the_node():
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.runbook.context import NodeContext
    from nvls_tui.runbook.door import perform
    from nvls_tui.runbook.outcome import NodeOutcome
    from nvls_tui.runbook.steps import RepairOptions
    from nvls_tui.sim.fleet import load_fleet

    (backend,) = sim_backends(load_fleet("sim:seed-incident/gpu05", speed=2000.0))
    ctx = NodeContext(backend, RepairOptions(), None, NodeOutcome(host="gpu05"))
    with pytest.raises(ValueError, match="runs on the scheduler"):
        await perform(ctx, ResumeNode("gpu05"))
    assert ctx.performed == []
