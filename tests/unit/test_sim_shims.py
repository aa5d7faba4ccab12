"""Shims: DIR/bin commands run through /bin/sh (local subprocesses only) behave as one simulated node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nvls_tui.poll.probe import QUERY_FIELDS
from nvls_tui.sim.shims import write_shims
from nvls_tui.sim.store import NodeStore


def sh(root: Path, script: str, timeout: float = 20.0, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PATH": f"{root}/bin:{os.environ['PATH']}", "LC_ALL": "C", **(env or {})}
    return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=timeout, env=full)


@pytest.fixture
def gpu05(tmp_path: Path) -> Path:
    return write_shims(tmp_path / "gpu05", "seed-incident", "gpu05", speed=100)


def test_state_persists_across_invocations(gpu05):
    assert sh(gpu05, "systemctl is-active kubelet").stdout == "active\n"
    assert sh(gpu05, "sudo -n systemctl stop kubelet").returncode == 0
    assert sh(gpu05, "systemctl is-active kubelet").stdout == "inactive\n"
    node, _clock = NodeStore(gpu05).load()
    assert ["systemctl", "stop", "kubelet"] in [argv for _ts, argv in node.cmdlog]


def test_the_first_reset_is_refused_through_the_shims_with_exit_255(gpu05):
    result = sh(gpu05, "nvidia-smi -r")
    assert result.returncode == 255
    assert result.stdout.startswith("8 devices are currently being used")


def test_eight_parallel_queries_do_not_corrupt_the_state(gpu05):
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _i: sh(gpu05, "nvidia-smi -q"), range(8)))
    assert all(r.returncode == 0 and "==============NVSMI LOG==============" in r.stdout for r in results)
    data = json.loads((gpu05 / "state.json").read_text())
    logged = [argv for _ts, argv in data["node"]["cmdlog"]]
    assert logged.count(["nvidia-smi", "-q"]) == 8


def test_the_probe_glob_is_expanded_by_the_simulated_fuser(gpu05):
    result = sh(gpu05, "fuser -v /dev/nvidia* 2>&1")
    assert result.stdout.startswith("                     USER        PID ACCESS COMMAND\n")
    assert "924303 F...m nv-hostengine" in result.stdout


def test_the_state_directory_is_remapped_and_mkdir_is_the_lock(gpu05):
    script = ("mkdir -p /var/lib/nvls-tui && mkdir /var/lib/nvls-tui/lock && echo taken; "
              "mkdir /var/lib/nvls-tui/lock 2>/dev/null || echo busy; "
              "echo '{\"step\": 1}' | tee /var/lib/nvls-tui/repair.json.tmp >/dev/null; "
              "mv -f /var/lib/nvls-tui/repair.json.tmp /var/lib/nvls-tui/repair.json; "
              "cat /var/lib/nvls-tui/repair.json; rm -rf /var/lib/nvls-tui/lock; rmdir /var/lib/nvls-tui/lock || echo gone")
    result = sh(gpu05, script)
    assert result.stdout == 'taken\nbusy\n{"step": 1}\ngone\n'
    assert (gpu05 / "var/lib/nvls-tui/repair.json").read_text() == '{"step": 1}\n'


def test_all_reduce_perf_streams_rows_while_they_are_produced(tmp_path):
    root = write_shims(tmp_path / "hgx01", "healthy", "hgx01", speed=10)
    env = {**os.environ, "PATH": f"{root}/bin:{os.environ['PATH']}", "NCCL_NVLS_ENABLE": "1"}
    proc = subprocess.Popen(["/bin/sh", "-c", "all_reduce_perf -b 8M -e 128M -f 2 -g 8"], stdout=subprocess.PIPE,
                            text=True, env=env)
    arrivals = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip()[:1].isdigit():
            arrivals.append(time.monotonic())
    assert proc.wait(timeout=20) == 0
    assert len(arrivals) == 5 and arrivals[-1] - arrivals[0] > 0.1
    node, _clock = NodeStore(root).load()
    assert node.alive("smoke") == []


def test_sudo_never_runs_a_real_command(gpu05):
    result = sh(gpu05, "sudo -n reboot")
    assert result.returncode == 1 and "refused by the nvls-tui simulator" in result.stderr


def test_shims_work_from_a_copied_home_bin(gpu05, tmp_path):
    home_bin = tmp_path / "home" / "bin"
    shutil.copytree(gpu05 / "bin", home_bin)
    env = {**os.environ, "PATH": f"{home_bin}:{os.environ['PATH']}"}
    result = subprocess.run(["/bin/sh", "-c", "hostname; nv-fabricmanager --version"], capture_output=True,
                            text=True, timeout=20, env=env)
    assert result.stdout == "gpu05\nFabric Manager version is : 580.82.07\n"


def test_static_shims_print_pre_rendered_outputs_without_python(tmp_path):
    root = write_shims(tmp_path / "static", "seed-incident", "gpu06", static=True)
    # The poll's own query (its fields grow: MIG modes were added), pre-rendered; a reset is not.
    script = f"nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv; nvidia-smi -r"
    result = sh(root, script)
    assert result.stdout.startswith("index, pci.bus_id, name, uuid, driver_version, persistence_mode, mig.mode.current")
    assert result.stdout.count("\n") == 9  # the header and gpu06's eight GPUs
    assert "static simulator has no output for: -r" in result.stderr
    assert "python" not in (root / "bin" / "nvidia-smi").read_text()


def test_sim_cli_lists_scenarios_and_writes_shims(tmp_path, capsys):
    from nvls_tui.cli import main

    assert main(["sim", "list"]) == 0
    assert "seed-incident" in capsys.readouterr().out
    assert main(["sim", "shims", str(tmp_path / "x"), "--scenario", "wedged", "--node", "gpu-wedged01"]) == 0
    assert (tmp_path / "x" / "bin" / "nvidia-smi").exists()
    assert main(["sim", "shims", str(tmp_path / "y"), "--node", "nope"]) == 2


@pytest.mark.parametrize("static", [False, True])
def test_a_simulated_node_has_no_slurm_whatever_the_machine_behind_it_has(tmp_path, static):
    """The poll's `scontrol listpids` gets the same words every time (the real client of a machine
    without a Slurm configuration varied its DNS error under load), never the machine's own Slurm."""
    root = write_shims(tmp_path / "n", "fleet-256", "gpu001", static=static)
    runs = [sh(root, "scontrol listpids") for _ in range(3)]
    assert {(r.returncode, r.stdout, r.stderr) for r in runs} == {(1, "", (
        "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
        "scontrol: error: fetch_config: DNS SRV lookup failed\n"
        "scontrol: error: _establish_config_source: failed to fetch config\n"
        "scontrol: fatal: Could not establish a configuration source\n"))}
