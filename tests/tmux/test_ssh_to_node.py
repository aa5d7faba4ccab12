"""Issue 28 item 15: ``S`` runs the operator's own ``ssh`` to the node under the cursor, with the console's SSH
options, the console suspended meanwhile.

The argv is checked as built, then run for real (OpenSSH's ssh against the loopback sshd rig, with
``BatchMode=yes`` and ``true`` as its command): it must reach the node the console reaches, through a jump
host too, and refuse a host key the console would refuse. A tmux test runs the console on a rig node,
opens the shell with ``S``, types in it, leaves it, and finds the console intact.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvls_tui.backends.local import LocalBackend
from nvls_tui.backends.recorded import RecordedBackend
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.ssh_shell import NoShell, shell_for, ssh_argv, why_no_shell
from nvls_tui.sim.fleet import load_fleet
from tests.sshd_rig import LOOPBACK, backend_for, options_for
from tests.test_console_fakes import fixed_clock
from tests.tmux.test_e2e_tmux import Tmux
from tests.waiting import first_poll, open_node_screen

SSH = shutil.which("ssh")
needs_ssh = pytest.mark.skipif(SSH is None, reason="the OpenSSH client is not installed")


def _batch(argv: list[str], *command: str) -> list[str]:
    """``argv`` with BatchMode=yes before the host (a test must never wait on a prompt) and ``command`` after it."""
    cut = argv.index("--")
    return [*argv[:cut], "-o", "BatchMode=yes", "-o", "ConnectTimeout=20", *argv[cut:], *command]


@needs_ssh
def test_the_argv_carries_the_transports_options_and_reaches_the_node(sshd_fleet):
    rig = sshd_fleet(1)
    port = rig.nodes["gpu01"].port
    argv = shell_for(backend_for(rig, "gpu01"))
    assert argv == [SSH, "-F", str(rig.ssh_config), "-i", str(rig.client_key), "-o", "IdentitiesOnly=yes",
                    "-o", f"UserKnownHostsFile={rig.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                    "-o", "StrictHostKeyChecking=yes", "-l", rig.user, "-p", str(port), "--", LOOPBACK]
    done = subprocess.run(_batch(argv, "echo", "reached-$((6*7))"), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout.strip()) == (0, "reached-42"), done.stderr


@needs_ssh
def test_a_host_key_the_console_would_refuse_is_refused_whatever_the_ssh_config_says(sshd_fleet, tmp_path):
    rig = sshd_fleet(1)
    (target,) = parse_target(rig.target("gpu01"))
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    lax = tmp_path / "ssh_config"
    lax.write_text("Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n")
    argv = ssh_argv(target, options_for(rig, known_hosts=str(empty), ssh_config=str(lax)), SSH)
    done = subprocess.run(_batch(argv, "true"), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 255
    assert "Host key verification failed" in done.stderr
    assert empty.read_text() == ""  # nothing was learnt either


@needs_ssh
def test_a_known_hosts_path_with_a_space_reaches_ssh_whole(sshd_fleet, tmp_path):
    rig = sshd_fleet(1)
    (target,) = parse_target(rig.target("gpu01"))
    spaced = tmp_path / "my hosts" / "known hosts"
    spaced.parent.mkdir()
    spaced.write_text(rig.known_hosts.read_text())
    argv = ssh_argv(target, options_for(rig, known_hosts=str(spaced)), SSH)
    assert f'UserKnownHostsFile="{spaced}"' in argv
    done = subprocess.run(_batch(argv, "true"), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr


@needs_ssh
def test_a_jump_host_gets_the_same_options_through_a_proxy_command(sshd_fleet):
    rig = sshd_fleet(2)
    (target,) = parse_target(rig.target("gpu02"))
    argv = ssh_argv(target, options_for(rig, jump=rig.target("gpu01")), SSH)
    proxy = next(a for a in argv if a.startswith("ProxyCommand="))
    assert proxy == ("ProxyCommand=" + " ".join(shlex.quote(w) for w in (
        SSH, "-F", str(rig.ssh_config), "-i", str(rig.client_key), "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={rig.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes", "-l", rig.user, "-p", str(rig.nodes["gpu01"].port))) + " -W [%h]:%p -- "
        + LOOPBACK)
    # The shell runs on gpu02 (its port's PATH puts gpu02's directory first), reached through gpu01.
    done = subprocess.run(_batch(argv, "echo node=$NVLS_TUI_SIM_NODE"), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout.strip()) == (0, "node=gpu02"), done.stderr


def test_a_node_not_reached_over_ssh_says_why_in_one_line(tmp_path):
    sim = sim_backends(load_fleet("seed-incident"))[4]
    with pytest.raises(NoShell, match=r"^gpu05 is simulated: there is no machine to ssh to"):
        shell_for(sim)
    local = LocalBackend()
    assert why_no_shell(local) == f"{local.host} is this machine, read through NVML and /proc: there is nothing to ssh to."
    replay = RecordedBackend("gpu07", "", path=tmp_path / "probe.txt")
    assert why_no_shell(replay) == "gpu07 is a replay of a captured probe output: it reaches no machine."
    (target,) = parse_target("gpu01")
    with pytest.raises(NoShell, match="double quote"):
        ssh_argv(target, options_for_path(known_hosts='/tmp/a "b'), "ssh")


def options_for_path(**values):
    from nvls_tui.backends.base import BackendOptions

    return BackendOptions(**values)


async def test_s_on_a_simulated_node_says_why_and_read_only_keeps_the_key():
    app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock, read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()
        toasts = [str(n.message) for n in app._notifications]
        assert ("ssh gpu05: gpu05 is simulated: there is no machine to ssh to (the simulator answers inside "
                "nvls-tui).") in toasts
        screen = await open_node_screen(app, pilot, "gpu06")
        assert screen.check_action("ssh", ()) is True  # read-only keeps it: the shell is the operator's own
        titles = [title for title, _, _ in screen.palette_commands()]
        assert "node: ssh to gpu06" in titles and "node: Show the logs of gpu06" in titles


@needs_ssh
async def test_s_where_the_terminal_cannot_suspend_says_the_command_to_run(sshd_fleet):
    rig = sshd_fleet(1)
    backend = backend_for(rig, "gpu01")
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=60)
        await pilot.press("S")
        await pilot.pause()
        toasts = [str(n.message) for n in app._notifications]
        expected = "This terminal cannot suspend the console; run it yourself: " + shlex.join(shell_for(backend))
        assert expected in toasts, toasts
    await backend.close()


@pytest.mark.skipif(shutil.which("tmux") is None or SSH is None, reason="tmux and ssh are needed")
def test_ssh_from_the_console_in_tmux_then_back_to_the_console(sshd_fleet, tmp_path):
    rig = sshd_fleet(1, scenario="seed-incident")
    exe = Path(sys.executable).with_name("nvls-tui")
    session = Tmux(f"nvls-ssh-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "TERM": "xterm-256color", "PS1": "rig-shell$ "}
    command = ["env", "-u", "COLUMNS", "-u", "LINES", *(f"{k}={v}" for k, v in env.items()), str(exe),
               rig.target("gpu01"), *rig.cli_args(), "--timeout", "30"]
    try:
        session.start(shlex.join(command))
        host = rig.target("gpu01")
        session.wait_for("the console with the rig node", lambda s: host in s and "healthy" in s, timeout=60)
        session.keys("S")
        shown = session.wait_for("ssh's command line on the terminal", lambda s: "nvls-tui: " in s and " -- " in s,
                                 timeout=30)
        assert f"-p {rig.nodes['gpu01'].port} -- {LOOPBACK}" in shown
        # The shell is the node's: its PATH starts with the node's shim directory.
        session.keys("echo node=$NVLS_TUI_SIM_NODE sum=$((6*7))", literal=True)
        session.keys("Enter")
        session.wait_for("the remote shell's answer", lambda s: "node=gpu01 sum=42" in s, timeout=30)
        session.keys("exit", literal=True)
        session.keys("Enter")
        back = session.wait_for("the console drawn again", lambda s: host in s and "Back from ssh" in s, timeout=30)
        assert re.search(r"Back from ssh \S+ \(exit 0\)", back), back
        session.keys("?")
        session.wait_for("the help: the console still answers keys", lambda s: "Keys  (" in s, timeout=15)
    finally:
        session.kill()
