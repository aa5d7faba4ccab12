"""Golden comparisons: the in-process simulator's tools against the real ones on a lab node.

For every tool the simulator still emulates (systemctl, journalctl -u, ps, pgrep, kill, fuser), the
same argv runs through the SSH backend (the path a poll takes: the node's shell, the real tool) on a
lab node and through the simulator on a simulated node in the same state; the exit status and the
output must agree, byte for byte where the state is the same, and in format where only PIDs and
times differ.
"""

from __future__ import annotations

import re
import time

import pytest

from nvls_tui.backends.base import BackendOptions
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import SshTarget
from nvls_tui.lab.machine import node_run
from nvls_tui.sim.fleet import load_fleet
from tests.conftest import LAB_COMMAND_TIMEOUT
from tests.waiting import scaled

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab")]

FM = "nvidia-fabricmanager.service"
SAME_STATE = [
    # A unit nobody has: every verb's own error and status.
    ["systemctl", "is-active", "nosuch.service"],
    ["systemctl", "is-failed", "nosuch.service"],
    ["systemctl", "start", "nosuch.service"],
    ["systemctl", "stop", "nosuch.service"],
    ["systemctl", "show", "-p", "Id,LoadState,ActiveState,SubState,MainPID,Result", "nosuch.service"],
    ["journalctl", "-u", "nosuch.service", "--no-pager"],
    ["systemctl", "is-enabled", "nvidia-fabricmanager.service", "nvidia-persistenced.service"],
    ["systemctl", "is-enabled", "nvidia-fabricmanager.service", "nosuch.service"],
    # Processes nobody has.
    ["ps", "-o", "pid=", "-p", "4000000"],
    ["ps", "-o", "pid=,ppid=", "-p", "1,,2"],
    ["pgrep", "-x", "nosuchprogram"],
    ["kill", "-TERM", "4000000"],
    ["kill", "-0", "4000000"],
    ["fuser", "-v", "/nonexistent/nvidia9"],
]


async def _real(folder, name: str, argv: list[str]):
    ssh = SshBackend(SshTarget(name), BackendOptions(timeout=scaled(LAB_COMMAND_TIMEOUT), ssh_config=str(folder / "ssh_config")))
    try:
        return await ssh.run(argv)
    finally:
        await ssh.close()


def _sim(name: str, argv: list[str], prepare=None):
    fleet = load_fleet("seed-incident", speed=0)
    if prepare:
        prepare(fleet)
    return fleet.run(name, argv)


@pytest.mark.parametrize("argv", SAME_STATE, ids=lambda a: " ".join(a))
async def test_the_simulator_answers_as_the_real_tool_does(lab, argv):
    folder, _nodes = lab
    real = await _real(folder, "gpu06", argv)
    sim = _sim("gpu06", argv)
    assert (sim.exit_status, sim.stdout, sim.stderr) == (real.exit_status, real.stdout, real.stderr)


def kill_fm(node) -> None:
    """SIGKILL FM's main process (started first if it is not running: ``kill -KILL 0`` would hit us)."""
    node_run(node, "systemctl", "start", FM)
    pid = int(node_run(node, "systemctl", "show", "-p", "MainPID", "--value", FM).stdout.strip())
    assert pid > 1
    node_run(node, "kill", "-KILL", str(pid))
    deadline = time.monotonic() + 10  # systemd sees the death a moment later
    while node_run(node, "systemctl", "is-failed", FM, check=False).stdout.strip() != "failed":
        assert time.monotonic() < deadline, "systemd never marked FM failed"
        time.sleep(0.1)


def _shape(text: str) -> str:
    """Output with PIDs, times and durations replaced: what only the format decides."""
    text = re.sub(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+", "TIME", text)
    text = re.sub(r"; [\w\s]+ ago", "; AGO", text)
    return re.sub(r"\d+", "N", text)


async def test_systemctl_show_of_a_unit_killed_by_sigkill_has_the_real_shape(lab):
    folder, nodes = lab
    props = ["systemctl", "show", "-p", "Id,LoadState,ActiveState,SubState,MainPID,Result,ExecMainCode,ExecMainStatus",
             FM]
    node = nodes["gpu05"]
    kill_fm(node)
    try:
        real = await _real(folder, "gpu05", props)
        sim = _sim("gpu05", props)
        assert sim.exit_status == real.exit_status == 0
        assert _shape(sim.stdout) == _shape(real.stdout)
        assert "ActiveState=failed" in real.stdout and "Result=signal" in real.stdout
    finally:
        node_run(node, "systemctl", "start", FM, check=False)


async def test_a_unit_failed_by_a_signal_starts_again_without_reset_failed(lab):
    # Real systemd starts a failed unit; the simulator refused until reset-failed (the finding).
    folder, nodes = lab
    node = nodes["gpu05"]
    kill_fm(node)
    real = await _real(folder, "gpu05", ["systemctl", "start", FM])
    sim = _sim("gpu05", ["systemctl", "start", FM])
    assert (sim.exit_status, sim.stderr) == (real.exit_status, real.stderr) == (0, "")
    assert node_run(node, "systemctl", "is-active", FM, check=False).stdout.strip() == "active"


async def test_systemctl_status_of_a_unit_killed_by_sigkill_says_what_the_real_one_says(lab):
    # The simulator prints systemd 249's status (the incident's Ubuntu 22.04: "vendor preset", no
    # Duration/Process lines); the lab runs systemd 252. The lines both versions print must agree.
    folder, nodes = lab
    kill_fm(nodes["gpu05"])
    try:
        real = await _real(folder, "gpu05", ["systemctl", "status", FM, "--no-pager"])
        sim = _sim("gpu05", ["systemctl", "status", FM, "--no-pager"])
        assert sim.exit_status == real.exit_status == 3

        def lines(text: str) -> list[str]:
            keep = ("× ", "     Active:", "   Main PID:")
            return [_shape(line) for line in text.splitlines() if line.startswith(keep)]

        assert lines(sim.stdout) == lines(real.stdout)
        assert len(lines(real.stdout)) == 3
    finally:
        node_run(nodes["gpu05"], "systemctl", "start", FM, check=False)


async def test_ps_columns_are_padded_as_the_real_procps_pads_them(lab):
    # The probe's own ps line for a live process: the PID and PPID columns are as wide as pid_max's
    # digits, the user column 32 wide, lstart fixed. Only PIDs, names and times differ between nodes.
    folder, _nodes = lab
    from nvls_tui.poll.probe import ps_argv

    real = await _real(folder, "gpu06", list(ps_argv([1])))
    fleet = load_fleet("seed-incident", speed=0)
    sim_pid = fleet.node("gpu06").units["nvidia-dcgm.service"].main_pid
    sim = fleet.run("gpu06", list(ps_argv([sim_pid])))
    layout = re.compile(r"^( *\d+) ( *\d+) (\S+ *) (\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}) ")
    real_cols, sim_cols = layout.match(real.stdout), layout.match(sim.stdout)
    assert real_cols and sim_cols, (real.stdout, sim.stdout)
    pid_max = int((await _real(folder, "gpu06", ["cat", "/proc/sys/kernel/pid_max"])).stdout)
    assert len(real_cols.group(1)) == len(str(pid_max))
    assert [len(g) for g in sim_cols.groups()[2:]] == [len(g) for g in real_cols.groups()[2:]]
    assert (sim.exit_status, sim.stderr) == (real.exit_status, real.stderr) == (0, "")


async def test_fuser_v_lays_out_its_table_as_the_real_psmisc_does(lab):
    folder, _nodes = lab
    argv = ["fuser", "-v", "/dev/nvidia0"]
    real = await _real(folder, "gpu06", argv)
    sim = _sim("gpu06", argv)
    assert sim.exit_status == real.exit_status == 0
    # fuser -v writes the PIDs to stdout and the rest of its table to stderr (the split the probe
    # had to learn): the header, then a row per process with its PID cut out.
    assert sim.stderr.splitlines()[0] == real.stderr.splitlines()[0]
    row = re.compile(r"^(/dev/nvidia0:)? +(\S+) +(\S{5}) (\S+)$")
    assert all(row.match(line) for line in real.stderr.splitlines()[1:]), real.stderr
    assert all(row.match(line) for line in sim.stderr.splitlines()[1:]), sim.stderr
    assert real.stderr.splitlines()[1].index(" root ") == sim.stderr.splitlines()[1].index(" root ")
    # The access flags of the same kinds of holder agree (F: open read-write, m: mapped).
    def access(text: str) -> dict[str, str]:
        return {m.group(4): m.group(3) for m in map(row.match, text.splitlines()[1:]) if m}

    assert access(real.stderr)["nv-hostengine"] == access(sim.stderr)["nv-hostengine"] == "F...m"
    assert re.fullmatch(r"( +\d+)+", real.stdout) and re.fullmatch(r"( +\d+)+", sim.stdout), (real.stdout, sim.stdout)
