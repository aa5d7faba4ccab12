"""gpu05 of the seed incident, driven command by command through the write-up's repair.

The clock is frozen (speed 0) and moved by hand, so every step is deterministic.
"""

from __future__ import annotations

import re

import pytest

from nvls_tui.sim.fleet import SimFleet, load_fleet

SMOKE = ("all_reduce_perf", "-b", "8M", "-e", "128M", "-f", "2", "-g", "8")
NVLS_ENV = {"NCCL_NVLS_ENABLE": "1", "NCCL_ALGO": "NVLS", "NCCL_DEBUG": "INFO"}
POD_PATTERN = "dcgm-exporter|nv-hostengine|nvidia-device-plugin|nvidia-mig-manager|gpu-feature-discovery"


@pytest.fixture
def fleet() -> SimFleet:
    return load_fleet("sim:seed-incident/gpu05", speed=0)


def pids_of(fleet: SimFleet, pattern: str) -> dict[str, int]:
    """``pgrep -af`` as {command: pid}."""
    out = fleet.sh("gpu05", "pgrep", "-af", pattern).stdout
    return {line.split(" ", 1)[1]: int(line.split(" ", 1)[0]) for line in out.splitlines()}


def fabric_states(fleet: SimFleet) -> set[str]:
    out = fleet.sh("gpu05", "nvidia-smi", "--query-gpu=fabric.state,fabric.status", "--format=csv,noheader").stdout
    return set(out.splitlines())


def quiesce(fleet: SimFleet, node: str = "gpu05") -> None:
    """The write-up's second attempt: services down, watch loop and children killed, pods SIGTERMed."""
    for unit in ("nvidia-snapshot.timer", "nvidia-snapshot.service", "kubelet", "nvidia-fabricmanager",
                 "nvidia-dcgm"):
        assert fleet.sh(node, "systemctl", "stop", unit).exit_status == 0
    for line in fleet.sh(node, "pgrep", "-af", "[w]atch.*nvidia-smi").stdout.splitlines():
        fleet.sh(node, "kill", "-TERM", line.split()[0])
    for pid in fleet.sh(node, "pgrep", "-x", "nvidia-smi").stdout.split():
        fleet.sh(node, "kill", pid)
    for line in fleet.sh(node, "pgrep", "-af", POD_PATTERN).stdout.splitlines():
        fleet.sh(node, "kill", "-15", line.split()[0])


def test_fabric_manager_was_killed_days_ago_and_is_still_failed(fleet):
    status = fleet.sh("gpu05", "systemctl", "status", "nvidia-fabricmanager", "--no-pager", "-l")
    assert status.exit_status == 3
    assert "Active: failed (Result: signal) since Mon 2026-08-10 15:45:34 UTC; 5 days ago" in status.stdout
    assert "Main PID: 9946 (code=killed, signal=KILL)" in status.stdout
    assert fleet.sh("gpu05", "systemctl", "is-active", "nvidia-fabricmanager").stdout == "failed\n"


def test_smoke_test_before_the_fix_fails_with_the_802_warn_and_exit_3(fleet):
    before = len(fleet.node("gpu05").kernel)
    run = fleet.sh("gpu05", *SMOKE, env=NVLS_ENV)
    assert run.exit_status == 3
    assert ("transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory "
            "of size 2097152 : CUDA error 802 'system not yet initialized'.") in run.stdout
    assert "This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches." in run.stdout
    assert re.search(r"^ \.\. gpu05 pid \d+: Test failure common\.cu:893$", run.stdout, re.M)
    kernel = fleet.sh("gpu05", "journalctl", "-k", "--no-pager").stdout
    assert len(fleet.node("gpu05").kernel) == before + 1
    assert kernel.rstrip().endswith("mem_multicast_fabric.c:3039")
    assert "NV_ERR_FABRIC_MANAGER_NOT_PRESENT" in kernel.splitlines()[-1]


def test_the_first_reset_is_refused_while_management_processes_hold_the_devices(fleet):
    reset = fleet.sh("gpu05", "nvidia-smi", "-r")
    assert reset.exit_status == 255
    assert reset.stdout.startswith("8 devices are currently being used by one or more other processes (e.g., Fabric "
                                   "Manager, CUDA application,")
    assert fabric_states(fleet) == {"Completed, Success"}


def test_killed_pods_come_back_with_new_pids_while_kubelet_runs(fleet):
    before = pids_of(fleet, "nvidia-device-plugin")
    assert before == {"nvidia-device-plugin": 38668}
    assert fleet.sh("gpu05", "kill", "38668").exit_status == 0
    assert pids_of(fleet, "nvidia-device-plugin") == {}
    fleet.clock.advance(6)
    after = pids_of(fleet, "nvidia-device-plugin")
    assert list(after) == ["nvidia-device-plugin"] and after["nvidia-device-plugin"] > 900000


def test_stopping_kubelet_leaves_running_pods_but_stops_recreating_killed_ones(fleet):
    fleet.sh("gpu05", "systemctl", "stop", "kubelet")
    assert set(pids_of(fleet, POD_PATTERN)) >= {"nvidia-mig-manager", "/usr/bin/dcgm-exporter"}
    fleet.sh("gpu05", "kill", "-TERM", "37464")
    fleet.clock.advance(60)
    assert "nvidia-mig-manager" not in pids_of(fleet, POD_PATTERN)


def test_the_watch_loop_keeps_spawning_nvidia_smi_until_the_watch_process_is_gone(fleet):
    first = fleet.sh("gpu05", "pgrep", "-x", "nvidia-smi", "-u", "ubuntu").stdout.split()
    fleet.sh("gpu05", "kill", first[0])
    fleet.clock.advance(2.5)
    second = fleet.sh("gpu05", "pgrep", "-x", "nvidia-smi", "-u", "ubuntu").stdout.split()
    assert second and second != first
    watch = fleet.sh("gpu05", "pgrep", "-f", "^watch").stdout.split()
    fleet.sh("gpu05", "kill", watch[0])
    fleet.clock.advance(5)
    assert fleet.sh("gpu05", "pgrep", "-x", "nvidia-smi", "-u", "ubuntu").exit_status == 1


def test_the_whole_repair_of_gpu05_ends_with_a_passing_nvls_smoke_test(fleet):
    quiesce(fleet)
    services = fleet.sh("gpu05", "systemctl", "is-active", "kubelet", "nvidia-fabricmanager")
    assert services.stdout == "inactive\nfailed\n"
    assert fleet.sh("gpu05", "pgrep", "-af", POD_PATTERN).stdout == ""
    fuser = fleet.sh("gpu05", "fuser", "-v", "/dev/nvidia*")
    assert (fuser.exit_status, fuser.stdout, fuser.stderr) == (1, "", "")
    repair_started = fleet.sh("gpu05", "date", "+%Y-%m-%d %H:%M:%S").stdout.strip()
    fleet.clock.advance(1)

    reset = fleet.sh("gpu05", "nvidia-smi", "-r")
    assert reset.exit_status == 0
    lines = reset.stdout.splitlines()
    assert lines[0] == "GPU 00000000:0F:00.0 was successfully reset."
    assert lines[7] == "GPU 00000000:D8:00.0 was successfully reset."
    assert lines[8].startswith("Note: The operation has successfully reset all GPUs and NVSwitches.")
    assert lines[9] == "All done."
    assert fabric_states(fleet) == {"Not Started, N/A"}

    assert fleet.sh("gpu05", "systemctl", "reset-failed", "nvidia-fabricmanager").exit_status == 0
    assert fleet.sh("gpu05", "systemctl", "start", "nvidia-fabricmanager").exit_status == 0
    assert fabric_states(fleet) == {"Not Started, N/A"}
    fleet.clock.advance(2)
    assert fabric_states(fleet) == {"In Progress, N/A"}
    fleet.clock.advance(4)
    assert fabric_states(fleet) == {"Completed, Success"}
    assert fleet.sh("gpu05", "systemctl", "is-active", "nvidia-fabricmanager").stdout == "active\n"

    smoke = fleet.sh("gpu05", *SMOKE, env=NVLS_ENV)
    assert smoke.exit_status == 0
    assert "# Out of bounds values : 0 OK\n" in smoke.stdout
    avg = float(re.search(r"^# Avg bus bandwidth    : (\d+\.\d{3}) $", smoke.stdout, re.M).group(1))
    assert 289.0 < avg < 295.0
    assert "NVLS multicast support is available on dev 7" in smoke.stdout
    new_errors = fleet.sh("gpu05", "journalctl", "-k", "--since", repair_started, "--no-pager").stdout
    assert "FABRIC" not in new_errors

    for unit in ("kubelet", "nvidia-snapshot.timer", "nvidia-dcgm"):
        assert fleet.sh("gpu05", "systemctl", "start", unit).exit_status == 0
    fleet.clock.advance(6)
    assert set(pids_of(fleet, POD_PATTERN)) >= {"nvidia-device-plugin", "gpu-feature-discovery"}


def test_fm_started_without_a_reset_registers_the_gpus_but_nvls_stays_out_of_sync(fleet):
    quiesce(fleet)
    fleet.sh("gpu05", "systemctl", "reset-failed", "nvidia-fabricmanager")
    assert fleet.sh("gpu05", "systemctl", "start", "nvidia-fabricmanager").exit_status == 0
    fleet.clock.advance(10)
    assert fabric_states(fleet) == {"Completed, Success"}
    smoke = fleet.sh("gpu05", *SMOKE, env=NVLS_ENV)
    assert smoke.exit_status == 3
    kernel = fleet.sh("gpu05", "journalctl", "-k", "-n", "1", "--no-pager").stdout
    assert "NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync" in kernel
    assert "NV_ERR_FABRIC_STATE_OUT_OF_SYNC" in kernel


def test_a_failed_fm_unit_starts_again_as_real_systemd_starts_it(fleet):
    # Real systemd starts a unit that failed with Result: signal (the lab's golden comparison);
    # the simulator used to refuse until reset-failed.
    start = fleet.sh("gpu05", "systemctl", "start", "nvidia-fabricmanager")
    assert (start.exit_status, start.stderr) == (0, "")
    assert fleet.sh("gpu05", "systemctl", "is-active", "nvidia-fabricmanager").stdout == "active\n"


def test_every_command_is_logged_and_a_read_only_command_changes_no_unit(fleet):
    node = fleet.node("gpu05")
    fleet.sh("gpu05", "hostname")  # state advances lazily: bring it to "now" before the baseline
    units_before = {k: (u.active, u.main_pid) for k, u in node.units.items()}
    fleet.sh("gpu05", "nvidia-smi", "-q")
    fleet.sh("gpu05", "systemctl", "status", "kubelet")
    assert [argv for _ts, argv in node.cmdlog[-2:]] == [["nvidia-smi", "-q"], ["systemctl", "status", "kubelet"]]
    assert {k: (u.active, u.main_pid) for k, u in node.units.items()} == units_before
