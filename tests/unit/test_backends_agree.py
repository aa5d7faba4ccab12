"""One node, one truth: the same real facts read through the SSH path and the local (NVML) path give
the same diagnosis.

On the real H200 (tests/fixtures/real/nvidia-h200) ``check local`` said degraded and ``check`` over SSH
said broken with FABRIC_NOT_COMPLETED, because nvidia-smi prints ``N/A`` where NVML says "Not
Supported". Each case below hands the SSH backend the probe sections that machine printed, and the
local backend the NVML numbers and /proc facts of the same moment (its other sections are the same
commands, so the same results), and compares what comes out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from nvls_tui.backends import local as local_module
from nvls_tui.backends.base import BackendOptions, CommandResult
from nvls_tui.backends.local import LocalBackend
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import GpuState
from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.parsers.nvml import fabric_from_nvml
from nvls_tui.parsers.ps import PsEntry, cgroup_column, parse_ps
from nvls_tui.poll.probe import section_argv

REAL = Path(__file__).parents[1] / "fixtures" / "real"
ABSENT = "cat: {}: No such file or directory\n"


def missing_tool(name: str, tool: str) -> CommandResult:
    return CommandResult(section_argv(name), 127, f"sh: 1: {tool}: not found\n")


def vm_sections(nvswitches: CommandResult) -> dict[str, CommandResult]:
    """What both captured VMs answered alike: root, no FM, no systemd, no journal, no nvls-tui files.

    The ring buffer is the real H200 VM's dmesg lines; needrestart's and apt's files are not captured, and
    stand as on a node without them (grep's "No such file", no apt-config): the same for both paths."""
    return {
        "identity": CommandResult(section_argv("identity"), 0, "0\n"),
        "fm_version": missing_tool("fm_version", "nv-fabricmanager"),
        "units": missing_tool("units", "systemctl"),
        "nvswitches": nvswitches,
        "kernel": missing_tool("kernel", "journalctl"),
        "ring": CommandResult(section_argv("ring"), 0, (REAL / "nvidia-h200" / "dmesg-nvidia-lines.txt").read_text()),
        "fm_log": missing_tool("fm_log", "journalctl"),
        "needrestart": CommandResult(section_argv("needrestart"), 2,
                                     "grep: /etc/needrestart/needrestart.conf: No such file or directory\n"
                                     "grep: /etc/needrestart/conf.d: No such file or directory\n"),
        "apt": missing_tool("apt", "apt-config"),
        "record": CommandResult(section_argv("record"), 1, ABSENT.format("/var/lib/nvls-tui/repair.json")),
        "smoke": CommandResult(section_argv("smoke"), 1, ABSENT.format("/var/lib/nvls-tui/last-smoke.json")),
        "simulated": CommandResult(section_argv("simulated"), 1, ABSENT.format("/var/lib/nvls-tui/SIMULATED")),
        "boot": CommandResult(section_argv("boot"), 0, "cf690d7f-224f-4c84-832f-868162b32091\n1458.07 11020.42\n"),
        "clock": CommandResult(section_argv("clock"), 0, "2026-12-01T08:20:00Z\n"),
    }


def h200_vm_case() -> dict:
    """The one-GPU H200 VM: no NVSwitch, no systemd, no lspci, one CUDA process (PID 516)."""
    d = REAL / "nvidia-h200"
    identity = parse_ps((d / "ps-holder-identity.txt").read_text()).value[0]  # cgroup column cut by procps
    cgroup_file = (d / "proc-pid-cgroup-stat-fd.txt").read_text().splitlines()[1]  # "0::/process_api/..."
    ps_line = f"  516   429 root{' ' * 29} Tue Dec  1 08:18:02 2026 {identity.args}\n"
    common = vm_sections(missing_tool("nvswitches", "lspci"))
    ssh = {**common,
           "gpus": CommandResult(section_argv("gpus"), 0, (d / "query-gpu-probe-fields.csv").read_text()),
           "holders": CommandResult(section_argv("holders"), 0, (d / "fuser-v-one-cuda-process.txt").read_text()),
           "processes": CommandResult(section_argv("processes"), 0, ps_line),
           "cgroups": CommandResult(section_argv("cgroups"), 0, f"  516 {cgroup_file}\n")}
    # NVML read state 0, status 0, cliqueId 0, an all-zero cluster UUID, healthSummary 0 (nvml-fabric-v3.txt).
    fabric = fabric_from_nvml(0, 0, 0, bytes(16), health_summary=0)
    gpus = (GpuState(0, "00000000:00:06.0", "NVIDIA H200", "GPU-4c92883e-14e5-36c3-30b6-025e29fe6609", fabric,
                     "Enabled"),)
    fuser = parse_fuser_v((d / "fuser-v-one-cuda-process.txt").read_text()).value
    entries = (PsEntry(516, 429, "root", identity.lstart, cgroup_column(cgroup_file), identity.args),)
    return {"ssh": ssh, "common": common, "driver": "580.159.04", "gpus": gpus, "fuser": fuser, "entries": entries}


def h200x2_case() -> dict:
    """Two H200s in a VM attached to an NVSwitch fabric managed outside it (Completed/Success)."""
    d = REAL / "h200x2-nvswitch"
    common = vm_sections(CommandResult(section_argv("nvswitches"), 0, ""))  # the switches are outside the VM
    ssh = {**common,
           "gpus": CommandResult(section_argv("gpus"), 0, (d / "query-gpu-fabric.csv").read_text()),
           "holders": CommandResult(section_argv("holders"), 0, (d / "fuser-v-two-cuda-processes.txt").read_text()),
           "processes": CommandResult(section_argv("processes"), 1, ""),  # not captured: exited, for both paths
           "cgroups": CommandResult(section_argv("cgroups"), 1, "")}
    # pynvml-fabric.txt: v3 state 3, status 0, cliqueId 0, zero cluster UUID, healthSummary 0, on both GPUs.
    fabric = fabric_from_nvml(3, 0, 0, bytes(16))
    gpus = (GpuState(0, "00000000:00:06.0", "NVIDIA H200", "GPU-60ca8147-127f-46f0-9366-eba40a41b09d", fabric),
            GpuState(1, "00000000:00:07.0", "NVIDIA H200", "GPU-0a3df10b-faf5-5512-4744-8c9f8b5bb5da", fabric))
    fuser = parse_fuser_v((d / "fuser-v-two-cuda-processes.txt").read_text()).value
    return {"ssh": ssh, "common": common, "driver": "580.159.04", "gpus": gpus, "fuser": fuser, "entries": ()}


CASES = {"nvidia-h200 (1 GPU, no NVSwitch)": h200_vm_case, "h200x2-nvswitch (fabric outside the VM)": h200x2_case}


def through_ssh(case: dict, monkeypatch):
    (target,) = parse_target("root@127.0.0.1:22")
    backend = SshBackend(target, BackendOptions())

    async def read_sections():
        return dict(case["ssh"])

    monkeypatch.setattr(backend, "read_sections", read_sections)
    return asyncio.run(backend.snapshot())


def through_local(case: dict, monkeypatch):
    backend = LocalBackend(BackendOptions())
    backend.host = "root@127.0.0.1:22"
    monkeypatch.setattr(local_module, "read_nvml", lambda: (case["driver"], case["gpus"]))
    monkeypatch.setattr(local_module, "scan_holders", lambda root: (case["fuser"], case["entries"], None))
    monkeypatch.setattr(local_module.os, "geteuid", lambda: 0)

    async def run(argv, timeout=None, *, privileged=False, env=None, stdin=None):
        for name, result in case["common"].items():
            if tuple(argv) == section_argv(name):
                return dataclasses.replace(result, argv=tuple(argv))
        raise AssertionError(f"the local backend ran an unexpected command: {argv}")

    monkeypatch.setattr(backend, "run", run)
    return asyncio.run(backend.snapshot())


def summary(state):
    diag = diagnose(state)
    return {
        "verdict": diag.verdict,
        "findings": sorted((f.code, str(f.severity), f.section or "") for f in diag.findings),
        "platform": state.platform,
        "gpus": [(g.index, g.bus_id, g.uuid, g.fabric.state, g.fabric.status, g.fabric.clique_id,
                  g.fabric.cluster_uuid) for g in state.gpus],
        "holders": [(h.pid, h.ppid, h.user, " ".join((h.start_time or "").split()), h.command, h.kind, h.unit,
                     h.pod, h.devices) for h in state.holders],
        "missing": sorted((m.section, m.reason) for m in state.missing),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_the_ssh_and_local_paths_read_the_same_real_node_the_same_way(name, monkeypatch):
    case = CASES[name]()
    ssh, local = summary(through_ssh(case, monkeypatch)), summary(through_local(case, monkeypatch))
    assert ssh == local
    # No host FM unit on these VMs: their unreadable FM journal is in missing, and adds no finding.
    assert ("fm_log", "tool missing") in ssh["missing"]
    assert not [f for f in ssh["findings"] if f[2] == "fm_log"]


def test_the_real_h200_without_nvswitch_is_degraded_by_both_paths_not_broken(monkeypatch):
    case = h200_vm_case()
    state = through_ssh(case, monkeypatch)
    diag = diagnose(state)
    assert diag.verdict.value == "degraded"
    assert "FABRIC_NOT_COMPLETED" not in {f.code for f in diag.findings}
    (gpu,) = state.gpus
    assert (gpu.fabric.state, gpu.fabric.status, gpu.fabric.clique_id, gpu.fabric.cluster_uuid) == \
        ("N/A", "N/A", None, None)  # what nvidia-smi -q printed there, field for field
    (holder,) = state.holders
    assert (holder.pid, holder.ppid, holder.user, holder.kind) == (516, 429, "root", "cuda-app")
    assert holder.command.startswith("python3 -c import torch,time;") and holder.start_time
    assert time.strptime(" ".join(holder.start_time.split()), "%a %b %d %H:%M:%S %Y").tm_hour == 8


def test_before_the_fix_the_two_real_checks_disagreed():
    """The captured outputs of the bug, kept as the record of what the fix is for."""
    import json

    local = json.loads((REAL / "nvidia-h200" / "check-local-before-fix.json").read_text())["nodes"][0]
    ssh = json.loads((REAL / "nvidia-h200" / "check-ssh-before-fix.json").read_text())["nodes"][0]
    assert (local["verdict"], ssh["verdict"]) == ("degraded", "broken")
    assert ssh["holders"][0]["start_time"] is None and ssh["holders"][0]["command"] == "python3"


def test_on_the_real_h200_after_the_fix_check_local_and_check_over_ssh_agree():
    """Captured on the device (nvidia-h200) with this code: NVML and /proc vs the probe over SSH."""
    import json

    def facts(name):
        (node,) = json.loads((REAL / "nvidia-h200" / name).read_text())["nodes"]
        return {"verdict": node["verdict"], "platform": node["platform"],
                "findings": sorted((f["code"], f["severity"], f.get("section")) for f in node["findings"]),
                "gpus": [(g["bus_id"], g["uuid"], g["fabric"]["state"], g["fabric"]["status"], g["fabric"]["clique_id"],
                          g["fabric"]["cluster_uuid"]) for g in node["gpus"]],
                "holders": [(h["pid"], h["ppid"], h["user"], " ".join(h["start_time"].split()), h["command"], h["kind"])
                            for h in node["holders"] if h["kind"] == "cuda-app"],
                "missing": sorted((m["section"], m["reason"]) for m in node["missing"])}

    local, ssh = facts("check-local-after-fix.json"), facts("check-ssh-after-fix.json")
    assert local == ssh
    assert local["verdict"] == "degraded" and local["platform"] == "no-nvswitch"
    assert local["gpus"] == [("00000000:00:06.0", "GPU-349b81cf-b65c-a238-4269-a4db9a4cbf8f", "N/A", "N/A", None, None)]
    (holder,) = local["holders"]
    assert holder[:3] == (515, 428, "root") and holder[3] == "Tue Dec 1 09:46:13 2026"
    assert holder[4].startswith('python3 -c import torch,time; x=torch.ones(1024, device="cuda");')
    # The probe's cgroups section on that machine: the whole cgroup (60 characters), not procps's 27.
    probe = (REAL / "nvidia-h200" / "probe-output-after-fix.txt").read_text()
    assert "  515 0::/process_api/7e65a1adf240fd430c3576c98b676aeb\n" in probe
