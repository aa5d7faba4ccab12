"""The shims serve ``grep`` and ``apt-config``: a simulated node behind the real-sshd rig answers the poll's
needrestart and apt sections from its own files and settings, never from this machine's (whose /etc has no
needrestart and whose apt-config dumps this machine's APT::Periodic)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nvls_tui.cli import main
from nvls_tui.poll.probe import APT_PERIODIC_ARGV, NEEDRESTART_ARGV
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import find_sshd

NVLS = [sys.executable, "-m", "nvls_tui.cli"]
NODE = "gpu-nr01"


def run(bin_dir, argv: tuple[str, ...]) -> subprocess.CompletedProcess:
    script = " ".join(f"'{a}'" for a in argv)
    return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("argv", [NEEDRESTART_ARGV, APT_PERIODIC_ARGV], ids=["grep", "apt-config"])
def test_the_shims_answer_the_restarter_sections_as_the_simulated_node(tmp_path, argv, static):
    root = write_shims(tmp_path / "n", "fm-restarters", NODE, static=static, speed=0)
    assert (root / "bin" / argv[0]).exists()
    shim = run(root / "bin", argv)
    sim = load_fleet(f"sim:fm-restarters/{NODE}", speed=0).sh(NODE, *argv)
    assert (shim.returncode, shim.stdout, shim.stderr) == (sim.exit_status, sim.stdout, sim.stderr)
    # The node's own configuration, not this machine's (it has no /etc/needrestart).
    assert "needrestart" in shim.stdout if argv[0] == "grep" else "Unattended-Upgrade" in shim.stdout


def in_process() -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", f"sim:fm-restarters/{NODE}", "--json"])
    return json.loads(out.getvalue())["nodes"][0]


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
def test_check_over_ssh_reads_the_node_s_restarters_as_in_process(sshd_fleet):
    rig = sshd_fleet([NODE], scenario="fm-restarters", speed=0)
    done = subprocess.run([*NVLS, "check", rig.target(NODE), "--json", *rig.cli_args()],
                          capture_output=True, text=True, timeout=180)
    assert done.stdout, done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    local = in_process()
    assert node["restarters"] == local["restarters"]
    assert node["restarters"]["needrestart"]["mode"] == "a" and node["restarters"]["unattended_upgrades"] is True
    restarter = [f for f in node["findings"] if f["code"] == "FM_RESTARTER"]
    assert restarter and restarter == [f for f in local["findings"] if f["code"] == "FM_RESTARTER"]
    assert not [f for f in node["findings"] if f["code"] == "EVIDENCE_MISSING"]
