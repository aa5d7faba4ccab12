"""The lab's Slurm tracks jobs by cgroups where the host allows it (issue 37 item 6): the conf files each
way, the host's choice, and the node's own v1 cgroups (pure parts; tests/lab/test_lab_slurm.py boots it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvls_tui.lab import machine
from nvls_tui.lab import slurm as lab_slurm
from nvls_tui.lab.image import CGROUP_MOUNT, SlurmImage, slurm_units
from nvls_tui.lab.machine import LabNode

NODES = [LabNode("gpu05", "127.0.9.10", "/x/nodes/gpu05"), LabNode("gpu06", "127.0.9.11", "/x/nodes/gpu06")]


def test_cgroup_tracking_names_the_cgroup_plugins_and_a_mount_point_slurmd_mounts_itself():
    conf = lab_slurm.slurm_conf(Path("/x"), NODES, 9, 8, "cgroup").splitlines()
    assert "ProctrackType=proctrack/cgroup" in conf and "TaskPlugin=task/cgroup" in conf
    assert not any("linuxproc" in line or line == "TaskPlugin=task/none" for line in conf)
    cgroup = lab_slurm.cgroup_conf("cgroup").splitlines()
    assert {"CgroupPlugin=cgroup/v1", f"CgroupMountpoint={CGROUP_MOUNT}", "CgroupAutomount=yes",
            "ConstrainCores=yes", "ConstrainDevices=no"} <= set(cgroup)
    # slurmd.service makes the mount point's folder before slurmd starts (its /run is a fresh tmpfs).
    image = SlurmImage(munged=("munged",), slurmd=("slurmd",), conf="/x/slurm.conf", pid_file="/p", spool="/s")
    assert f"ExecStartPre=/bin/mkdir -p /s {CGROUP_MOUNT}\n" in slurm_units(image)["slurmd.service"]


def test_linuxproc_tracking_is_the_lab_as_it_was():
    conf = lab_slurm.slurm_conf(Path("/x"), NODES, 9, 8, "linuxproc").splitlines()
    assert "ProctrackType=proctrack/linuxproc" in conf and "TaskPlugin=task/none" in conf
    assert [line for line in lab_slurm.cgroup_conf("linuxproc").splitlines() if not line.startswith("#")] == [
        "CgroupPlugin=cgroup/v1"]


@pytest.mark.parametrize(("controllers", "expected"), [
    (["cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids"], "cgroup"),
    (["cpuset", "memory"], "linuxproc"),   # no freezer: proctrack/cgroup cannot load
    ([], "linuxproc"),                     # the unified hierarchy only
])
def test_the_host_decides_the_tracking(monkeypatch, controllers, expected):
    monkeypatch.setattr(lab_slurm, "v1_controllers", lambda: controllers)
    assert lab_slurm.host_tracking() == expected


def test_tracking_of_reads_the_conf(tmp_path):
    assert lab_slurm.tracking_of(tmp_path) is None
    for tracking in lab_slurm.TRACKING:
        (tmp_path / "slurm.conf").write_text(lab_slurm.slurm_conf(tmp_path, NODES, 9, 8, tracking))
        assert lab_slurm.tracking_of(tmp_path) == tracking


HYBRID_CGROUP = ("9:name=systemd:/\n6:freezer:/\n4:memory:/process_api/s1\n3:cpuset:/\n2:cpu,cpuacct:/\n"
                 "0::/\n")


def hybrid_mounts(root: Path) -> str:
    rows = [f"cgroup {root}/cpuset cgroup rw,relatime,cpuset 0 0", f"cgroup {root}/memory cgroup rw,relatime,memory 0 0",
            f"cgroup {root}/freezer cgroup rw,relatime,freezer 0 0",
            f"cgroup {root}/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0",
            f"cgroup {root}/systemd cgroup rw,relatime,name=systemd 0 0", f"cgroup2 {root}/unified cgroup2 rw 0 0"]
    return "\n".join(rows) + "\n"


def fake_proc(monkeypatch, root: Path) -> None:
    real = Path.read_text
    files = {"/proc/self/cgroup": HYBRID_CGROUP, "/proc/self/mounts": hybrid_mounts(root)}
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: files[str(self)] if str(self) in files
                        else real(self, *a, **k))


def test_v1_controllers_are_read_from_proc_self_cgroup(monkeypatch, tmp_path):
    fake_proc(monkeypatch, tmp_path)
    assert machine.v1_controllers() == ["freezer", "memory", "cpuset", "cpu", "cpuacct"]


def test_a_node_gets_its_own_freezer_and_cpuset_under_this_process_and_a_cpuset_with_cpus(monkeypatch, tmp_path):
    fake_proc(monkeypatch, tmp_path)
    for sub in ("cpuset", "memory/process_api/s1", "freezer", "cpu,cpuacct", "systemd", "unified"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    # A new v1 cpuset's knobs are empty (the kernel makes them; here the test stands in for it).
    (tmp_path / "cpuset" / "nvls-lab-gpu05-x").mkdir()
    for knob in ("cpuset.cpus", "cpuset.mems"):
        (tmp_path / "cpuset" / "nvls-lab-gpu05-x" / knob).write_text("")
    made = machine.make_cgroups("gpu05-x", lab_slurm.JOB_CONTROLLERS)
    assert sorted(made) == sorted(str(tmp_path / sub / "nvls-lab-gpu05-x") for sub in
                                  ("cpuset", "freezer", "systemd", "unified"))
    assert (tmp_path / "cpuset" / "nvls-lab-gpu05-x" / "cpuset.cpus").read_text() == "0-1\n"
    assert (tmp_path / "cpuset" / "nvls-lab-gpu05-x" / "cpuset.mems").read_text() == "0\n"
    # Without v1 controllers (a lab without --slurm), only the hierarchies systemd uses.
    assert sorted(machine.make_cgroups("gpu06-y")) == sorted(str(tmp_path / s / "nvls-lab-gpu06-y")
                                                             for s in ("systemd", "unified"))
