"""The poller process ends with the console on every exit path (issue 30), with real processes and signals.

The console runs as the operator starts it (``nvls-tui sim:seed-incident`` in a tmux terminal, its
poller process started by it); the test finds the poller among the console's children and checks it
is gone after the console quits with ``q``, after SIGTERM, SIGHUP, SIGINT and SIGKILL of the console, and
after a console that raised or died without any clean-up (``os._exit``) in a script. The poller runs in
a session of its own, so no signal of the terminal reaches it: each test sees the poller's own way of
ending (the pane's shell outlives the console for the same reason). An orphan that ended but was not yet
reaped (a zombie under this container's init) counts as gone: it runs nothing.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.tmux.test_e2e_tmux import Tmux

tmux_only = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
MODULE = "nvls_tui.poller"


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def poller_of(parent: int, timeout: float = 30.0) -> int:
    """The poller process the console ``parent`` started (found by its parent and command line)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if int(stat[1]) == parent and MODULE.encode() in cmdline:
                return int(entry.name)
        time.sleep(0.1)
    pytest.fail(f"no poller process under the console {parent}")


def wait_gone(pid: int, what: str, timeout: float = 15.0) -> float:
    began = time.monotonic()
    while running(pid):
        if time.monotonic() - began > timeout:
            os.kill(pid, signal.SIGKILL)  # never leave one behind, even when the test fails
            pytest.fail(f"the poller process {pid} outlived {what}")
        time.sleep(0.05)
    return time.monotonic() - began


def console_line(pid_file: Path, tmp_path: Path) -> str:
    exe = Path(sys.executable).with_name("nvls-tui")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "TERM": "xterm-256color"}
    argv = [str(exe), "sim:seed-incident", "--poll", "1", "--audit-dir", str(tmp_path / "audit")]
    inner = "echo $$ > {pid}; exec env -u COLUMNS -u LINES {env} {argv}".format(
        pid=shlex.quote(str(pid_file)), env=" ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()),
        argv=shlex.join(argv))
    # The pane's shell outlives the console: a pane that closed would hang up the whole process group
    # (SIGHUP from the terminal), and the poller's own way of ending would go untested.
    return f"sh -c {shlex.quote(inner)}; sleep 600"


@pytest.fixture
def console(tmp_path):
    """Start the console in tmux; yields (tmux, console pid, poller pid). Both are ended afterwards."""
    tmux = Tmux(f"nvls-poller-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    pid_file = tmp_path / "console.pid"
    pids: list[int] = []
    try:
        tmux.start(console_line(pid_file, tmp_path))
        # gpu05's row with its verdict: the console has the poller's polls, so the poller is up.
        tmux.wait_for("gpu05 shown broken", lambda s: re.search(r"gpu05\s+✖ broken", s), timeout=60)
        console_pid = int(pid_file.read_text())
        poller = poller_of(console_pid)
        pids += [console_pid, poller]
        assert running(poller)
        yield tmux, console_pid, poller
    finally:
        for pid in pids:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        tmux.kill()


@tmux_only
def test_quitting_with_q_ends_the_poller_process(console):
    tmux, console_pid, poller = console
    tmux.keys("q")
    wait_gone(console_pid, "q", timeout=20)
    wait_gone(poller, "the console's q")


@tmux_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_that_ends_the_console_ends_the_poller_process(console, sig):
    _, console_pid, poller = console
    os.kill(console_pid, sig)
    wait_gone(console_pid, sig.name, timeout=20)
    wait_gone(poller, f"{sig.name} of the console")


@tmux_only
def test_sigint_to_the_console_ends_both(console):
    # Textual takes the terminal raw, so a Ctrl-C key is a key; a SIGINT sent to the process still ends it
    # (KeyboardInterrupt), and the poller, which ignores SIGINT itself, goes with it.
    _, console_pid, poller = console
    os.kill(poller, signal.SIGINT)
    time.sleep(0.5)
    assert running(poller), "the poller ignores SIGINT: a terminal's Ctrl-C is the console's to act on"
    os.kill(console_pid, signal.SIGINT)
    wait_gone(console_pid, "SIGINT", timeout=20)
    wait_gone(poller, "SIGINT of the console")


SCRIPT = textwrap.dedent("""
    import asyncio, os, sys
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.settings import Settings

    async def main(how):
        app = NvlsApp.from_settings(Settings(command="console", targets=("sim:seed-incident",), poll_interval=1.0))
        async with app.run_test(size=(120, 40)):
            await app.wait_for_first_poll(60)
            print(app.poller.pid, flush=True)
            await asyncio.sleep(0.5)
            if how == "raise":
                raise RuntimeError("a bug in the console")
            os._exit(3)  # no clean-up at all: only the pipe's end and the kernel's parent-death signal are left

    asyncio.run(main(sys.argv[1]))
""")


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_console_that_crashes_leaves_no_poller_behind(how, tmp_path):
    script = tmp_path / "console.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=str(Path(__file__).resolve().parents[2]))
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (1 if how == "raise" else 3), err[-2000:]
    if how == "raise":
        assert "RuntimeError: a bug in the console" in err
    poller = int(out.split()[0])
    wait_gone(poller, f"a console that ended by {how}")
