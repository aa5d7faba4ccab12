"""Slurm's outputs read as the scheduler's state of a node (issue 15): node states and reasons, the jobs
on a node, the PIDs of job steps; and what the diagnosis and the JSON make of them."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.model.jsonout import node_json
from nvls_tui.model.scheduler import Job, SchedulerState
from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.parsers.holders import build_holders
from nvls_tui.parsers.ps import parse_ps
from nvls_tui.parsers.slurm import (
    job_of_cgroup,
    node_state_word,
    parse_listpids,
    parse_show_node,
    parse_squeue,
    squeue_format,
)
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


def test_squeue_records_become_jobs_and_a_record_that_cannot_be_read_a_warning():
    mark = "nvls0123abcd"
    assert squeue_format(mark) == "nvls0123abcd%A|%u|%e|%T|%N|%j"
    jobs = parse_squeue("nvls0123abcd1234|alice|2026-12-01T09:00:00|RUNNING|gpu[05-06]|train llama\n"
                        "nvls0123abcd1235|bob|N/A|SUSPENDED|gpu05|x|y\nz\n"
                        "nvls0123abcd1236|carol|soon|RUNNING|gpu05|odd\n", mark)
    assert jobs.value == [(Job(1234, "alice", "train llama", "2026-12-01T09:00:00", "RUNNING"), "gpu[05-06]"),
                          (Job(1235, "bob", "x|y\nz", None, "SUSPENDED"), "gpu05")]
    assert jobs.warnings == ("not a job record: 1236|carol|soon|RUNNING|gpu05|odd",)
    assert parse_squeue("", mark).value == [] and parse_squeue("", mark).warnings == ()
    before = parse_squeue("squeue: error: Invalid user: zed\nnvls0123abcd7|a|NONE|RUNNING|gpu05|b\n", mark)
    assert before.warnings == ("not a job record: squeue: error: Invalid user: zed",) and len(before.value) == 1
    cut = parse_squeue("nvls0123abcd7|a|NONE|RUNNING|gpu05|b", mark)
    assert cut.warnings == ("squeue's output ends inside a record: nvls0123abcd7|a|NONE|RUNNING|gpu05|b",)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.text(), min_size=1, max_size=5), users=st.lists(st.from_regex(r"[a-z_][a-z0-9_.-]{0,15}",
                                                                                        fullmatch=True),
                                                                          min_size=5, max_size=5))
def test_any_job_name_reads_back_as_itself_less_its_control_characters(names, users):
    """Whatever `sbatch -J` was given, squeue's record of it (the stand-in prints what the real one
    prints: tests/lab/test_lab_slurm.py) reads back as that name, on that node, and nothing else."""
    from nvls_tui.textsafe import clean
    from tests.slurm_clients import QueuedJob, render_squeue

    mark = "nvls5f3e9a0b1c2d"
    jobs = [QueuedJob(100 + i, users[i], name, nodes=f"gpu0{5 + i % 2}") for i, name in enumerate(names)]
    read = parse_squeue(render_squeue(squeue_format(mark), jobs), mark)
    assert read.warnings == ()
    assert read.value == [(Job(j.id, j.user, clean(j.name), None, "RUNNING"), j.nodes) for j in jobs]


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

    from nvls_tui.config import parse_config
    from nvls_tui.scheduler import slurm as module
    from nvls_tui.settings import settings_from
    from nvls_tui.targets import scheduler_from_settings

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setattr(module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    config = parse_config({"slurm": {"conf": str(conf), "nodes": {"gpu05": "a05", "gpu06": "a06"}}})
    mapfile = tmp_path / "map"
    mapfile.write_text("# target slurm-name\ngpu06 b06\n")
    settings = settings_from(argparse.Namespace(slurm_conf=None, slurm_node_map=str(mapfile)), config)
    found = scheduler_from_settings(settings)
    assert found.conf == str(conf) and dict(found.node_map) == {"gpu05": "a05", "gpu06": "b06"}
    mapfile.write_text("gpu06\n")
    import pytest

    from nvls_tui.backends.base import InvalidArgument

    with pytest.raises(InvalidArgument, match="expected 'TARGET SLURM_NODE'"):
        scheduler_from_settings(settings)


# ---- job names of any characters; text that cannot be read is missing evidence (issue: item B) ----
# `scontrol show node -o gpu05,gpu06` from the lab's slurmctld 22.05 (tests/lab/test_lab_slurm.py) after
# `scontrol update NodeName=gpu06 Comment=$'c\nNodeName=gpu05 State=IDLE x'`: scontrol prints a Comment's
# newline as it is, and the line after it reads like gpu05's (allocated, with two jobs) saying "idle".
FORGED_BY_A_COMMENT = (
    "NodeName=gpu05 Arch=x86_64 CoresPerSocket=1  CPUAlloc=2 CPUEfctv=2 CPUTot=2 CPULoad=1.38 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:8 NodeAddr=127.0.31.10 NodeHostName=gpu05 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1 AllocMem=0 FreeMem=22974 "
    "Sockets=2 Boards=1 State=ALLOCATED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu  "
    "BootTime=2026-12-02T03:13:55 SlurmdStartTime=2026-12-02T03:17:54 LastBusyTime=2026-12-02T03:17:54 "
    "CfgTRES=cpu=2,mem=1M,billing=2 AllocTRES=cpu=2 CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s "
    "ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
    "NodeName=gpu06 Arch=x86_64 CoresPerSocket=1  CPUAlloc=2 CPUEfctv=2 CPUTot=2 CPULoad=1.38 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:8 NodeAddr=127.0.31.11 NodeHostName=gpu06 Port=12482 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1 AllocMem=0 FreeMem=22972 "
    "Sockets=2 Boards=1 State=ALLOCATED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
    "Partitions=gpu  BootTime=2026-12-02T03:13:56 SlurmdStartTime=2026-12-02T03:17:55 "
    "LastBusyTime=2026-12-02T03:17:55 CfgTRES=cpu=2,mem=1M,billing=2 AllocTRES=cpu=2 CapWatts=n/a CurrentWatts=0 "
    "AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=maint [root@2026-12-02T03:18:34] "
    "Comment=c\nNodeName=gpu05 State=IDLE x Extra=e State=IDLE Reason=none\n"
)
MIXED_GPU05 = FORGED_BY_A_COMMENT.split("\n")[0].replace("State=ALLOCATED ", "State=MIXED ") + "\n"
# Names as users give them to `sbatch -J` (Slurm 22.05 takes every one of these and squeue prints it
# as it is), and what nvls-tui shows of each: the name, less its control characters (text is data).
ODD_NAMES = {"llama|finetune": "llama|finetune", "new\nline|x": "new\nline|x",
             "tr \"7b\" 'q' ünï 訓練": "tr \"7b\" 'q' ünï 訓練", "\x1b[31mred\x07|": "red|",
             "|5|root|NONE|RUNNING|gpu05|": "|5|root|NONE|RUNNING|gpu05|", "ends in a newline\n": "ends in a newline\n"}


def states_of(slurm, hosts=("gpu05", "gpu06")):
    import asyncio

    return asyncio.run(slurm.states(list(hosts)))


def test_jobs_named_with_bars_newlines_quotes_and_any_letters_are_read_whole_on_their_node():
    from tests.slurm_clients import FakeSlurm, QueuedJob

    jobs = [QueuedJob(10 + i, "alice", name, nodes="gpu05" if i % 2 else "gpu06") for i, name in enumerate(ODD_NAMES)]
    found = states_of(FakeSlurm(MIXED_GPU05 + FORGED_BY_A_COMMENT.split("\n")[1] + "\n", jobs))
    assert found["gpu05"].error is None and found["gpu06"].error is None
    names = {host: sorted(j.name for j in found[host].jobs) for host in found}
    shown = list(ODD_NAMES.values())
    assert names == {"gpu05": sorted(shown[1::2]), "gpu06": sorted(shown[0::2])}
    assert {j.id for j in found["gpu05"].jobs} == {11, 13, 15}


def test_an_array_task_and_a_suspended_job_are_jobs_of_the_node_by_their_own_ids():
    from tests.slurm_clients import FakeSlurm, QueuedJob

    jobs = [QueuedJob(7, "bob", "arr", nodes="gpu05", array="6_0"),
            QueuedJob(6, "bob", "arr", state="SUSPENDED", nodes="gpu05", array="6_1")]
    (found,) = states_of(FakeSlurm(MIXED_GPU05, jobs), ["gpu05"]).values()
    assert sorted((j.id, j.state) for j in found.jobs) == [(6, "SUSPENDED"), (7, "RUNNING")]


def test_a_squeue_line_that_cannot_be_read_makes_every_nodes_scheduler_evidence_missing():
    from tests.slurm_clients import FakeSlurm, QueuedJob

    # A user name with a '|' (NSS names are not Slurm's to check) shifts every field after it.
    jobs = [QueuedJob(12, "al|ice", "train", nodes="gpu05"), QueuedJob(13, "bob", "eval", nodes="gpu06")]
    found = states_of(FakeSlurm(MIXED_GPU05 + FORGED_BY_A_COMMENT.split("\n")[1] + "\n", jobs))
    assert {h: s.state for h, s in found.items()} == {"gpu05": "unknown", "gpu06": "unknown"}
    assert all(s.error and "squeue printed a job that could not be read" in s.error for s in found.values())
    finding = next(f for f in diagnose(NodeState("gpu05", scheduler=found["gpu05"])).findings
                   if f.code == "EVIDENCE_MISSING")
    assert (finding.section, finding.reason) == ("scheduler", "unparseable")


def test_a_comment_with_a_newline_cannot_pass_for_another_nodes_line():
    from tests.slurm_clients import FakeSlurm

    found = states_of(FakeSlurm(FORGED_BY_A_COMMENT))
    assert {h: s.state for h, s in found.items()} == {"gpu05": "unknown", "gpu06": "unknown"}
    assert "gpu05 twice" in (found["gpu05"].error or "")


def test_a_field_that_only_a_free_text_or_a_repeat_would_give_is_never_taken_for_the_state():
    comment = MIXED_GPU05.rstrip("\n") + " Comment=ok State=IDLE Extra=State=IDLE\n"
    nodes = parse_show_node(comment)
    assert nodes.warnings == () and nodes.value["gpu05"]["State"] == "MIXED"
    os_said = MIXED_GPU05.replace("OS=Linux 6.18.44-fc-v1045", "OS=Linux State=IDLE")
    again = parse_show_node(os_said)
    assert again.value == {} and again.warnings == ("a field twice (State) in the line of gpu05",)
    no_state = parse_show_node("NodeName=gpu05 Arch=x86_64 Reason=State=IDLE\n")
    assert no_state.value == {} and no_state.warnings == ("no State= in the line of gpu05",)


def test_a_reason_ends_where_the_comment_begins():
    nodes = parse_show_node(MIXED_GPU05.rstrip("\n") + " Reason=PSU swap [root@2026-12-02T03:18:34] Comment=rack 4\n")
    assert nodes.value["gpu05"]["Reason"] == "PSU swap [root@2026-12-02T03:18:34]"


def test_a_node_slurm_calls_busy_with_no_job_read_is_missing_evidence_never_healthy():
    for raw, word in (("MIXED", "mixed"), ("ALLOCATED", "allocated"), ("MIXED+DRAIN", "draining"),
                      ("ALLOCATED+NOT_RESPONDING", "down")):
        state = NodeState("gpu05", scheduler=SchedulerState("slurm", "gpu05", word, raw=raw))
        found = [f for f in diagnose(state).findings if f.code == "EVIDENCE_MISSING"]
        assert [(f.section, f.severity.value) for f in found] == [("scheduler", "warning")], raw
        assert f"Slurm has gpu05 {word} ({raw}) but no job on it was read" in found[0].message
        assert diagnose(state).verdict.value != "healthy"
    idle = NodeState("gpu05", scheduler=SchedulerState("slurm", "gpu05", "idle", raw="IDLE"))
    assert not [f for f in diagnose(idle).findings if f.code == "EVIDENCE_MISSING"]
    with_job = NodeState("gpu05", scheduler=SchedulerState("slurm", "gpu05", "mixed", jobs=(Job(7, "a", "b"),),
                                                           raw="MIXED"))
    assert not [f for f in diagnose(with_job).findings if f.code == "EVIDENCE_MISSING"]


@settings(max_examples=300, deadline=None)
@given(reason=st.text().filter(lambda t: "\n" not in t), comment=st.text().filter(lambda t: "\n" not in t))
def test_no_reason_or_comment_on_one_line_changes_what_a_node_line_says(reason, comment):
    """Free text that stays on its line (anything but a newline: `State=IDLE`, `NodeName=gpu06`, '\\x85',
    '\\u2028'...) never makes the node another state or another node, and never hides the other line."""
    gpu06 = FORGED_BY_A_COMMENT.split("\n")[1]
    text = MIXED_GPU05.rstrip("\n") + f" Reason={reason} Comment={comment}\n" + gpu06 + "\n"
    nodes = parse_show_node(text)
    assert nodes.warnings == ()
    assert {name: f["State"] for name, f in nodes.value.items()} == {"gpu05": "MIXED", "gpu06": "ALLOCATED+DRAIN"}
