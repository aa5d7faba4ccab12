"""Slurm's outputs read as the scheduler's state of a node (issue 15): node states and reasons, the jobs
on a node, the PIDs of job steps; and what the diagnosis and the JSON make of them."""

from __future__ import annotations

import dataclasses

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.model.scheduler import Job, SchedulerState
from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.parsers.holders import build_holders
from nvls_tui.parsers.ps import parse_ps
from nvls_tui.parsers.slurm import job_of_cgroup, node_state_word, parse_listpids, parse_show_node, parse_squeue
from nvls_tui.records.jsonout import node_json
from nvls_tui.runbook.quiesce import stoppable

# `scontrol show node -o gpu05,gpu06` (Slurm 22.05 takes one node argument): one line per node; OS= and
# Reason= hold spaces (the real lines also have double spaces here and there).
SHOW_NODE = (
    "NodeName=gpu05 Arch=x86_64 CoresPerSocket=1 CPUAlloc=1 CPUEfctv=1 CPUTot=1 CPULoad=0.02 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.5.5 NodeHostName=gpu05 "
    "Version=22.05.8 OS=Linux 6.1.0-28-cloud-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22) "
    "RealMemory=1 AllocMem=0 FreeMem=N/A Sockets=1 Boards=1 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu BootTime=2026-12-01T10:00:00 "
    "SlurmdStartTime=2026-12-01T10:00:05 LastBusyTime=2026-12-01T10:01:00 CfgTRES=cpu=1,mem=1M,billing=1 "
    "AllocTRES=cpu=1 CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
    "ExtSensorsTemp=n/s Reason=nvls-tui 20261201T100000Z-abc123: NVLS repair [root@2026-12-01T10:02:00]\n"
    "NodeName=gpu06 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=1 CPUTot=1 NodeAddr=127.0.5.6 "
    "NodeHostName=gpu06 State=IDLE ThreadsPerCore=1 Partitions=gpu\n"
)


def test_show_node_reads_state_and_a_reason_with_spaces_and_colons():
    nodes = parse_show_node(SHOW_NODE)
    assert nodes.warnings == ()
    gpu05, gpu06 = nodes.value["gpu05"], nodes.value["gpu06"]
    assert gpu05["State"] == "MIXED+DRAIN" and gpu05["OS"].startswith("Linux 6.1.0-28-cloud-amd64 #1 SMP")
    assert gpu05["Reason"] == "nvls-tui 20261201T100000Z-abc123: NVLS repair [root@2026-12-01T10:02:00]"
    assert gpu05["CfgTRES"] == "cpu=1,mem=1M,billing=1"  # '=' inside a value is no new field
    assert gpu06["State"] == "IDLE" and "Reason" not in gpu06


def test_show_node_warns_on_a_line_that_is_not_a_node():
    nodes = parse_show_node("Node gpu99 not found\n")
    assert nodes.value == {} and nodes.warnings == ("not a node line: Node gpu99 not found",)


def test_slurm_state_words_map_to_the_contracts_states():
    cases = {"IDLE": "idle", "ALLOCATED": "allocated", "MIXED": "mixed", "IDLE+DRAIN": "drained",
             "MIXED+DRAIN": "draining", "ALLOCATED+DRAIN": "draining", "DOWN": "down", "DOWN+DRAIN": "down",
             "IDLE+COMPLETING+DRAIN": "draining", "DOWN*": "down", "ALLOCATED+NOT_RESPONDING": "down",
             "FUTURE": "down", "REBOOT_ISSUED": "unknown"}
    assert {raw: node_state_word(raw) for raw in cases} == cases


def test_squeue_lines_become_jobs_and_odd_lines_warnings():
    jobs = parse_squeue("1234|alice|train llama|2026-12-01T09:00:00|RUNNING|gpu05\n"
                        "1235|bob|x|N/A|PENDING|\nsqueue: error: Invalid user: zed\n")
    assert jobs.value == [(Job(1234, "alice", "train llama", "2026-12-01T09:00:00", "RUNNING"), "gpu05"),
                          (Job(1235, "bob", "x", None, "PENDING"), "")]
    assert jobs.warnings == ("not a job line: squeue: error: Invalid user: zed",)


def test_listpids_maps_each_pid_to_its_job():
    text = ("PID      JOBID    STEPID   LOCALID GLOBALID\n72041    5        batch    0       0\n"
            "72045    5        batch    -       -\n80000    7        0        0       0\n")
    assert parse_listpids(text).value == {72041: 5, 72045: 5, 80000: 7}


def test_a_holder_in_a_job_steps_cgroup_is_a_jobs_workload_never_signalled_by_the_repair():
    assert job_of_cgroup("0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0") == 1234
    assert job_of_cgroup("0::/system.slice/nvidia-dcgm.service") is None
    fuser = parse_fuser_v("/dev/nvidia0:         root      4242 F...m nvidia-smi\n").value
    ps = parse_ps("  4242     1 alice                            Tue Dec  1 08:18:02 2026 nvidia-smi -l 1\n").value
    (holder,) = build_holders(fuser, ps, {4242: "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0"})
    assert holder.job == Job(1234, "alice", "")
    # An nvidia-smi in a job step is still the job's: the repair's quiesce never SIGTERMs it.
    assert stoppable([holder]) == []
    assert stoppable([dataclasses.replace(holder, job=None)])  # the same process outside a job would be


def test_a_drained_node_gets_scheduler_drained_and_the_json_carries_the_scheduler():
    sched = SchedulerState("slurm", "gpu05", "drained", reason="maintenance", jobs=(Job(7, "alice", "train"),))
    state = NodeState("gpu05", scheduler=sched)
    found = [f for f in diagnose(state).findings if f.code == "SCHEDULER_DRAINED"]
    assert [(f.severity.value, f.message) for f in found] == [("info", "Slurm has gpu05 drained: maintenance")]
    doc = node_json(state, diagnose(state))
    assert doc["scheduler"] == {"kind": "slurm", "node": "gpu05", "state": "drained", "reason": "maintenance",
                                "jobs": [{"id": 7, "user": "alice", "name": "train", "end": None}], "error": None}
    assert node_json(NodeState("gpu06"), diagnose(NodeState("gpu06")))["scheduler"] is None


def test_a_scheduler_that_could_not_be_read_is_missing_evidence_never_idle():
    state = NodeState("gpu05", scheduler=SchedulerState("slurm", "gpu05", "unknown", error="scontrol: timed out"))
    found = [f for f in diagnose(state).findings if f.code == "EVIDENCE_MISSING" and f.section == "scheduler"]
    assert found and found[0].severity.value == "warning" and "scontrol: timed out" in found[0].message


# ---- finding the scheduler ------------------------------------------------------------------
def test_a_targets_slurm_name_is_its_short_host_name_unless_mapped():
    from nvls_tui.scheduler.slurm import Slurm

    slurm = Slurm("/etc/slurm/slurm.conf", {"gpu05.dc1.example": "dc1-gpu05"})
    assert [slurm.node_name(h) for h in ("gpu05.dc1.example", "root@gpu06.dc1:2222", "gpu07", "10.0.0.8:22")] == \
        ["dc1-gpu05", "gpu06", "gpu07", "10.0.0.8"]


def test_the_scheduler_is_found_from_the_option_or_slurm_conf_and_a_named_file_must_exist(tmp_path, monkeypatch):
    import pytest

    from nvls_tui.scheduler import slurm as module
    from nvls_tui.scheduler.slurm import SlurmError, find_slurm

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setattr(module.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert find_slurm(str(conf), environ={}).conf == str(conf)
    assert find_slurm(None, environ={"SLURM_CONF": str(conf)}).conf == str(conf)
    with pytest.raises(SlurmError, match="does not exist"):
        find_slurm(str(tmp_path / "nope.conf"), environ={})
    monkeypatch.setattr(module, "DEFAULT_CONF", str(tmp_path / "absent.conf"))
    assert find_slurm(None, environ={}) is None  # scontrol installed but no cluster configured: no scheduler
    monkeypatch.setattr(module.shutil, "which", lambda name: None)
    with pytest.raises(SlurmError, match="scontrol is not installed"):
        find_slurm(str(conf), environ={})


def test_the_node_map_comes_from_the_config_file_and_the_option_file_wins(tmp_path, monkeypatch):
    import argparse

    from nvls_tui.backends.targets import scheduler_from_args
    from nvls_tui.config import merge_args, parse_config
    from nvls_tui.scheduler import slurm as module

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setattr(module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    config = parse_config({"slurm": {"conf": str(conf), "nodes": {"gpu05": "a05", "gpu06": "a06"}}})
    mapfile = tmp_path / "map"
    mapfile.write_text("# target slurm-name\ngpu06 b06\n")
    args = merge_args(argparse.Namespace(slurm_conf=None, slurm_node_map=str(mapfile)), config)
    found = scheduler_from_args(args)
    assert found.conf == str(conf) and dict(found.node_map) == {"gpu05": "a05", "gpu06": "b06"}
    mapfile.write_text("gpu06\n")
    import pytest

    from nvls_tui.backends.base import InvalidArgument

    with pytest.raises(InvalidArgument, match="expected 'TARGET SLURM_NODE'"):
        scheduler_from_args(args)
