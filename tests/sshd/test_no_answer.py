"""``sim:no-answer`` (issue 25): a node that does not answer at all. sim:wedged's node now answers with a
section missing, so this one keeps the case of a node of which nothing can be read: every command it is
asked hangs, and behind the real-sshd rig not even its shell answers. check, the console and check over
SSH read it UNREACHABLE, never healthy and never a partial state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.model import Verdict
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import find_sshd
from tests.test_console_fakes import fixed_clock
from tests.waiting import wait_until

NODE = "gpu-silent01"
NVLS = [sys.executable, "-m", "nvls_tui.cli"]


def test_sim_list_names_the_scenario(capsys):
    assert main(["sim", "list"]) == 0
    out = capsys.readouterr().out
    assert "no-answer" in out and NODE in out


def test_every_command_the_node_is_asked_hangs():
    fleet = load_fleet(f"sim:no-answer/{NODE}", speed=0)
    from nvls_tui.sim.commands import HANG, execute

    node = fleet.node(NODE)
    for argv in (("id", "-u"), ("nvidia-smi",), ("cat", "/proc/uptime"), ("hostname",), ("journalctl", "-k")):
        assert execute(node, argv, fleet.clock.now()) is HANG, argv


def test_check_reads_it_unreachable_and_exits_2(capsys):
    code = main(["check", "sim:no-answer", "--json", "--timeout", "0.5"])
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert code == 2
    assert (node["host"], node["reachable"], node["verdict"]) == (NODE, False, "unreachable")
    assert [f["code"] for f in node["findings"]] == ["UNREACHABLE"]
    assert "no answer within 1.5 s" in node["findings"][0]["message"]
    assert node["gpus"] == [] and node["holders"] == []


async def test_the_console_shows_it_unreachable_with_the_reason():
    from nvls_tui.console.widgets.fleet_grid import FleetGrid

    app = NvlsApp(sim_backends(load_fleet("sim:no-answer", speed=0)), poll_interval=None, clock=fixed_clock,
                  poll_timeout=0.5)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.verdict(NODE) is Verdict.UNREACHABLE, "the failed poll")
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        assert "no answer within 0.5 s" in grid.get_cell(NODE, "note").plain


def test_the_shims_shell_never_answers(tmp_path):
    root = write_shims(tmp_path / "n", "no-answer", NODE, speed=0)
    # A session of its own, stopped whole as the SSH transport stops a command's process group.
    shell = subprocess.Popen(["/bin/sh", "-c", "sh -c 'echo answered'"], stdout=subprocess.PIPE, text=True,
                             env={"PATH": f"{root / 'bin'}:/usr/bin:/bin"}, start_new_session=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            shell.communicate(timeout=2)
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        out, _ = shell.communicate()
    assert out == ""


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
def test_check_over_ssh_reads_it_unreachable(sshd_fleet):
    rig = sshd_fleet([NODE], scenario="no-answer", speed=0)
    done = subprocess.run([*NVLS, "check", rig.target(NODE), "--json", "--timeout", "2", *rig.cli_args()],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout, done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    assert done.returncode == 2
    assert (node["reachable"], node["verdict"]) == (False, "unreachable")
    assert [f["code"] for f in node["findings"]] == ["UNREACHABLE"]
    assert "did not finish within 2s" in node["findings"][0]["message"], node["findings"]
    assert "Traceback" not in done.stderr
