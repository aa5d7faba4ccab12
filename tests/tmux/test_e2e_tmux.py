"""End to end in a real terminal: tmux at 160x48 runs ``nvls-tui --demo`` and an operator's keys repair
gpu05 and gpu06 side by side; ``capture-pane`` must show both repaired with their bandwidth.

The simulated clock runs 50x real time (``NVLS_TUI_SIM_SPEED``), so the whole repair takes seconds.
Every wait polls the screen with a deadline; the tmux session is killed whatever happens.
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

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

WIDTH, HEIGHT = 160, 48


class Tmux:
    """One detached tmux session running a command, on a tmux server of its own.

    A private socket (``-L``) and no config file (``-f /dev/null``) keep other tmux users' servers
    and settings (a default size of 80x24, say) out of the picture.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def tmux(self, *args: str) -> str:
        argv = ["tmux", "-L", self.name, "-f", os.devnull, *args]
        return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=10).stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(WIDTH), "-y", str(HEIGHT), command)
        self.tmux("set-option", "-t", self.name, "window-size", "manual")
        self.tmux("resize-window", "-t", self.name, "-x", str(WIDTH), "-y", str(HEIGHT))

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, what: str, condition, timeout: float) -> str:
        """Poll the screen (every 0.2 s) until ``condition(screen)``; fail with the last screen."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; the screen was:\n{text}")
            time.sleep(0.2)

    def kill(self) -> None:
        """End the session and its private server (only ours: the socket is named after the test)."""
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def session(tmp_path):
    tmux = Tmux(f"nvls-e2e-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    yield tmux
    tmux.kill()


def test_the_demo_repairs_gpu05_and_gpu06_side_by_side_in_a_real_terminal(session, tmp_path):
    exe = Path(sys.executable).with_name("nvls-tui")
    env = {"NVLS_TUI_SIM_SPEED": "50", "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    # -u: a COLUMNS/LINES inherited from the test runner would override the real terminal size.
    session.start("env -u COLUMNS -u LINES " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + f" {shlex.quote(str(exe))} --demo")

    session.wait_for("the fleet with both broken nodes",
                     lambda s: "SIMULATED FLEET" in s and re.search(r"gpu05\s+✖ broken", s)
                     and re.search(r"gpu06\s+✖ broken", s), timeout=25)
    session.keys("Space", "Space")  # broken first: gpu05 then gpu06; space steps down
    session.wait_for("both nodes selected", lambda s: "selected for repair: gpu05 gpu06" in s, timeout=5)
    session.keys("r")
    session.wait_for("the plan", lambda s: "Type gpu05 gpu06 to go on" in s and "nvidia-smi -r" in s, timeout=15)
    session.keys("gpu05 gpu06", literal=True)
    session.keys("Enter")
    # The header says "repaired" a frame before each column draws its summary: wait for both.
    done = session.wait_for("both repairs to end with their summaries",
                            lambda s: "✔ gpu05 repaired" in s and "✔ gpu06 repaired" in s
                            and len(re.findall(r"✔ repaired\s+\d+\.\d GB/s", s)) == 2, timeout=30)
    bandwidths = [float(b) for b in re.findall(r"✔ repaired\s+(\d+\.\d) GB/s", done)]
    assert len(bandwidths) == 2, done
    assert all(280 < b < 300 for b in bandwidths), bandwidths
    assert done.count("avg busbw") == 2 and "PASSED" in done
