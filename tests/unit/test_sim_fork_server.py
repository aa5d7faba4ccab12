"""The shims' fork server: one Python per node answers its simulated commands, and the node behaves as it
did with one Python per command (exit statuses, streaming, signals, a killed command's end, its parent)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from nvls_tui.sim.shims import write_shims
from nvls_tui.sim.store import NodeStore
from tests.sshd_rig import fork_servers, live_children
from tests.waiting import scaled, until

AR_ARGV = "all_reduce_perf -b 8M -e 128M -f 2 -g 8"


def _env(root: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{root}/bin:{os.environ['PATH']}", "LC_ALL": "C", **extra}


def servers_of(root: Path) -> list[psutil.Process]:
    """Live fork servers serving ``root`` (not their forked children, which share their command line)."""
    return fork_servers([root])


@pytest.fixture
def hgx01(tmp_path: Path):
    root = write_shims(tmp_path / "hgx01", "healthy", "hgx01", speed=2)
    yield root
    shutil.rmtree(root, ignore_errors=True)  # the server goes with its DIR


def _stream(root: Path, script: str = AR_ARGV) -> subprocess.Popen:
    """A streaming all_reduce_perf, its shim exec'd by the shell (the Popen's PID is the client's)."""
    return subprocess.Popen(["/bin/sh", "-c", f"exec {script}"], stdout=subprocess.PIPE, text=True,
                            env=_env(root, NCCL_NVLS_ENABLE="1"), start_new_session=True)


def _first_row(proc: subprocess.Popen) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip()[:1].isdigit():
            return
    raise AssertionError("all_reduce_perf ended before its first row")


def test_one_server_answers_every_command_of_a_node_and_forks_a_child_each(hgx01):
    first = subprocess.run(["/bin/sh", "-c", "hostname; systemctl is-active nvidia-fabricmanager"],
                           capture_output=True, text=True, env=_env(hgx01), timeout=30)
    assert first.stdout == "hgx01\nactive\n" and first.returncode == 0
    [server] = servers_of(hgx01)
    proc = _stream(hgx01)
    _first_row(proc)
    # The command runs in a child of the node's server, not in a Python of its own.
    [child] = live_children(server)
    assert "shim_main" not in " ".join(psutil.Process(proc.pid).cmdline())
    assert "shim_client.py" in " ".join(psutil.Process(proc.pid).cmdline())
    assert child.pid != proc.pid
    assert proc.wait(timeout=scaled(30)) == 0
    assert servers_of(hgx01) == [server]


def test_exit_statuses_and_stderr_are_the_tools(hgx01):
    result = subprocess.run(["/bin/sh", "-c", "nvidia-smi -r; echo rc=$?; systemctl is-active nope; echo rc=$?"],
                            capture_output=True, text=True, env=_env(hgx01), timeout=30)
    codes = [line for line in result.stdout.splitlines() if line.startswith("rc=")]
    direct = [subprocess.run([str(hgx01 / "bin" / tool), *args], capture_output=True, env=_env(hgx01),
                             timeout=30).returncode for tool, args in (("nvidia-smi", ["-r"]),
                                                                       ("systemctl", ["is-active", "nope"]))]
    assert codes == [f"rc={direct[0]}", f"rc={direct[1]}"] and direct[1] != 0


def test_the_smoke_process_names_the_shell_that_ran_it_as_its_parent(hgx01):
    proc = subprocess.Popen(["/bin/sh", "-c", f"{AR_ARGV}; :"], stdout=subprocess.PIPE, text=True,
                            env=_env(hgx01, NCCL_NVLS_ENABLE="1"))
    _first_row(proc)
    node, _clock = NodeStore(hgx01).load()
    [smoke] = node.alive("smoke")
    assert smoke.ppid == proc.pid  # the sh that ran the shim, as os.getppid() said in a Python of its own
    proc.stdout.read()
    assert proc.wait(timeout=scaled(30)) == 0


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGHUP])
def test_a_hangup_or_term_is_passed_on_and_the_command_unwinds(hgx01, signo):
    proc = _stream(hgx01)
    _first_row(proc)
    proc.send_signal(signo)
    assert proc.wait(timeout=scaled(30)) == 128 + 15  # shim_main's unwind_on_hangup
    node, _clock = NodeStore(hgx01).load()
    assert node.alive("smoke") == []  # its finally block ran: the smoke process left the node's table


def test_an_interrupt_ends_the_command_by_sigint_as_python_does(hgx01):
    proc = _stream(hgx01)
    _first_row(proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=scaled(30)) == -signal.SIGINT


async def test_killing_the_commands_process_group_ends_the_forked_child_too(hgx01):
    subprocess.run(["/bin/sh", "-c", "hostname"], capture_output=True, env=_env(hgx01), timeout=30, check=True)
    [server] = servers_of(hgx01)
    proc = _stream(hgx01)
    _first_row(proc)
    [child] = live_children(server)
    os.killpg(proc.pid, signal.SIGKILL)  # a timeout's kill: no handler runs in the client
    assert proc.wait(timeout=scaled(30)) == -signal.SIGKILL
    await until(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, scaled(10),
                "the server killed the command of a client that died")
    await until(lambda: live_children(server) == [], scaled(10), "the server reaped it")



def remove_dir(root) -> None:
    """Remove a node's DIR while its server may still be running: the server removes its own socket when it sees
    the DIR go, so a file rmtree listed may be gone by the time it unlinks it (that is not an error here)."""
    def gone_already(_func, _path, exc_info) -> None:
        if not isinstance(exc_info[1], FileNotFoundError):
            raise exc_info[1]

    shutil.rmtree(root, onerror=gone_already)

async def test_a_hung_nvidia_smi_ends_with_its_killed_client(tmp_path):
    root = write_shims(tmp_path / "w", "wedged", "gpu-wedged01", speed=0)
    proc = subprocess.Popen(["/bin/sh", "-c", "exec nvidia-smi -q"], stdout=subprocess.PIPE,
                            env=_env(root), start_new_session=True)
    await until(lambda: servers_of(root) and live_children(servers_of(root)[0]), scaled(30), "the hang is running")
    [server] = servers_of(root)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=scaled(10))
    await until(lambda: live_children(server) == [], scaled(10), "the hung command is gone with its client")
    assert proc.stdout is not None and proc.stdout.read() == b""  # nothing holds the pipe: EOF at once
    remove_dir(root)


async def test_the_server_goes_when_its_directory_goes(tmp_path):
    root = write_shims(tmp_path / "gone", "healthy", "hgx01")
    subprocess.run(["/bin/sh", "-c", "hostname"], capture_output=True, env=_env(root), timeout=30, check=True)
    [server] = servers_of(root)
    remove_dir(root)
    await until(lambda: not server.is_running() or server.status() == psutil.STATUS_ZOMBIE, scaled(10),
                "the server of a removed DIR exited")


def test_a_node_without_a_server_that_can_start_answers_the_old_way(hgx01):
    # A socket path the server cannot bind (a directory in its place): the client runs shim_main itself.
    (hgx01 / "shim.sock").mkdir()
    result = subprocess.run(["/bin/sh", "-c", "hostname; nvidia-smi -r; echo rc=$?"], capture_output=True,
                            text=True, env=_env(hgx01), timeout=scaled(60))
    assert result.stdout.startswith("hgx01\n") and result.stdout.endswith("rc=255\n")
    assert servers_of(hgx01) == []
