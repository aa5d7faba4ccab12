"""Tests never read the host's devices (issue 37 item 0).

On a machine with an NVIDIA driver (or where NVML once ran as root) ``/dev/nvidiactl`` exists, and 13
SSH-tier tests failed there: the loopback sshd's shimmed nodes expanded the poll's ``fuser -v
/dev/nvidia*`` against the host's ``/dev``, so the node's holders were those of the host's files (the
static simulator: "no output for: -v /dev/nvidiactl", holders read as failed). Each shimmed node now
sees a ``/dev`` of its own, holding the device files its simulated node has (``Node.device_files()``).

``scripts/with-host-gpu-devices.sh`` makes ``/dev/nvidiactl`` and ``/dev/nvidia0`` appear in a private
mount namespace (never in the real ``/dev``); here a few of the tests that failed run under it, in a
pytest of their own. ``scripts/with-host-gpu-devices.sh .venv/bin/python -m pytest -m ssh`` runs the
whole SSH tier so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sshd_rig import find_sshd

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "with-host-gpu-devices.sh"

# Some of the tests that failed with /dev/nvidiactl on the host, one per kind of node: dynamic and
# static shims, a repair's preflight and a poll, one node and eight.
FAILED_BEFORE = [
    "tests/sshd/test_security.py::test_a_repair_plan_over_ssh_logs_and_reports_no_key_material_and_no_environment_secret",
    "tests/sshd/test_hung_section.py::test_over_a_real_sshd_a_hung_nvidia_smi_ends_only_its_section_and_the_node_reads_the_same",
    "tests/sshd/test_ssh_fleet.py::test_check_over_eight_shimmed_nodes_matches_the_built_in_simulated_fleet",
    "tests/sshd/test_faults_ssh.py::test_a_wedged_nvidia_smi_times_out_alone_is_stopped_on_the_node_and_both_nodes_answer",
]

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                       reason="needs root and util-linux unshare (a private mount namespace)"),
    pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed"),
]


def test_the_script_shows_the_files_only_inside_its_namespace():
    before = {p: os.path.lexists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0")}
    inside = subprocess.run([str(SCRIPT), "sh", "-c", "ls -d /dev/nvidia*; echo x > /dev/null && echo null ok"],
                            capture_output=True, text=True, timeout=60)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.split() == ["/dev/nvidia0", "/dev/nvidiactl", "null", "ok"]
    assert {p: os.path.lexists(p) for p in before} == before  # the real /dev is as it was


def test_ssh_tier_tests_pass_on_a_host_with_nvidia_device_files(tmp_path):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([str(SCRIPT), sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", "0", "-q",
                           "-x", "--basetemp", str(tmp_path / "inner"), *FAILED_BEFORE],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
    assert done.returncode == 0, tail
    assert f"{len(FAILED_BEFORE)} passed" in done.stdout, tail
