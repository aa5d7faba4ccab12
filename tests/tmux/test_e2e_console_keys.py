"""Issue 38's acceptance in a real terminal (tmux), at 160x48 and at 80x24: the keys and the layout of item 8 (the
``:`` command line: ``:node gpu06`` jumps, completion, ``:q`` quits; ``d`` describe with the node's events, ``x``
x-ray, the logs' ``f`` follow), item 9 (the node footer at 160 columns shows ``l``, ``S``, ``y`` and Esc; the column
picker marks a hidden column apart from a shown one without colour), item 3 (the holders' command column is in view
at both widths on sim:k8s-incident) and item 4 (the first ``t`` after ``space`` at verify-no-holders opens the
SIGTERM confirmation on sim:hostile).

Keys are sent as tmux ``send-keys`` writes; one write of several keys is one burst, as a paste or a laggy SSH link
delivers them. Every wait polls the screen with a deadline (tests/tmux/test_e2e_tmux.py's Tmux).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.tmux.test_e2e_tmux import Tmux
from tests.waiting import scaled

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SIZES = [pytest.param((160, 48), id="160x48"), pytest.param((80, 24), id="80x24")]
EXITED = "console exited with status "


class SizedTmux(Tmux):
    """A Tmux session at a size of the test's choosing (Tmux's own is 160x48)."""

    def __init__(self, name: str, width: int, height: int) -> None:
        super().__init__(name)
        self.width, self.height = width, height

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(self.width), "-y", str(self.height), command)
        self.tmux("set-option", "-t", self.name, "window-size", "manual")
        self.tmux("resize-window", "-t", self.name, "-x", str(self.width), "-y", str(self.height))


@pytest.fixture
def console(tmp_path, request):
    """``console(TARGET, speed)``: the console on TARGET in tmux at the test's size; the line after it says how it
    ended (the pane stays to be read)."""
    width, height = request.node.callspec.params["size"]
    sessions: list[SizedTmux] = []

    def start(target: str, speed: str = "50") -> SizedTmux:
        session = SizedTmux(f"nvls-keys-{os.getpid()}-{int(time.time() * 1000) % 100000}", width, height)
        sessions.append(session)
        exe = Path(sys.executable).with_name("nvls-tui")
        env = {"NVLS_TUI_SIM_SPEED": speed, "XDG_STATE_HOME": str(tmp_path / "state"),
               "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
        session.start("env -u COLUMNS -u LINES " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
                      + f" {shlex.quote(str(exe))} console {target}; echo '{EXITED}'$?; sleep 600")
        return session

    yield start
    for session in sessions:
        session.kill()


def header(screen: str) -> str:
    """The screen's first line."""
    return screen.splitlines()[0] if screen else ""


@pytest.mark.parametrize("size", SIZES)
def test_the_command_line_describe_xray_follow_and_quit(console, size):
    tmux = console("sim:k8s-incident")
    tmux.wait_for("the fleet", lambda s: re.search(r"gpu06\s+✖ broken", s), timeout=scaled(30))
    # one burst: the colon, a typo fixed with Backspace, Enter (a paste, typing over a laggy link)
    tmux.keys(":", *"node gpu05", "BSpace", "6", "Enter")
    tmux.wait_for("gpu06's node screen", lambda s: header(s).lstrip().startswith("gpu06 "), timeout=scaled(15))

    tmux.keys("d")
    tmux.wait_for("the describe view", lambda s: "Describe gpu06" in s, timeout=scaled(10))
    tmux.keys("End")  # the events come last, as kubectl describe's do
    shown = tmux.wait_for("gpu06's events, read from the cluster",
                          lambda s: "Events (" in s and "Rebooted" in s, timeout=scaled(15))
    assert re.search(r"\d+h\d\dm\s+Warning\s+Rebooted", shown), shown
    tmux.keys("Escape")
    tmux.wait_for("the node again", lambda s: header(s).lstrip().startswith("gpu06 "), timeout=scaled(10))

    tmux.keys("x")
    shown = tmux.wait_for("the x-ray", lambda s: "X-ray of gpu06" in s and "GPU 0 " in s, timeout=scaled(10))
    assert "holder" in shown
    tmux.keys("Escape")
    tmux.wait_for("the node again", lambda s: header(s).lstrip().startswith("gpu06 "), timeout=scaled(10))

    tmux.keys("l")
    tmux.wait_for("the logs", lambda s: "nvidia-fabricmanager" in s or "FM journal" in s, timeout=scaled(15))
    tmux.keys("f")
    tmux.wait_for("the follow mode said", lambda s: "Following the" in s, timeout=scaled(10))
    tmux.keys("Escape")
    tmux.wait_for("the node again", lambda s: header(s).lstrip().startswith("gpu06 "), timeout=scaled(10))
    tmux.keys("Escape")
    tmux.wait_for("the fleet again", lambda s: "SIMULATED FLEET" in s and "nodes" in header(s), timeout=scaled(10))

    # completion: Tab takes the one shown
    tmux.keys(":", *"logs gp")
    tmux.wait_for("the command line", lambda s: "Tab completes" in s, timeout=scaled(10))
    tmux.keys("Tab")
    tmux.wait_for("the completed command", lambda s: re.search(r"logs gpu0\d", s), timeout=scaled(10))
    tmux.keys("Escape")
    tmux.wait_for("the fleet again", lambda s: "Tab completes" not in s and "SIMULATED FLEET" in s,
                  timeout=scaled(10))

    tmux.keys(":", "q", "Enter")
    tmux.wait_for("the console to quit", lambda s: EXITED + "0" in s, timeout=scaled(15))


@pytest.mark.parametrize("size", SIZES)
def test_the_holders_command_is_in_view_on_kubernetes(console, size):
    width, _ = size
    tmux = console("sim:k8s-incident")
    tmux.wait_for("the fleet", lambda s: re.search(r"gpu06\s+✖ broken", s), timeout=scaled(30))
    tmux.keys(":", *"node gpu06", "Enter")
    tmux.wait_for("gpu06's node screen", lambda s: header(s).lstrip().startswith("gpu06 "), timeout=scaled(15))
    # The holders table has the focus on a node with holders; its rows are the vLLM worker's and the operands'.
    shown = tmux.wait_for("the holders table with its command column",
                          lambda s: "command" in s and "vllm.entrypoints" in s, timeout=scaled(15))
    row = next(line for line in shown.splitlines() if "vllm.entrypoints" in line)
    assert "python3 -m vllm.entrypoints" in row, row
    if width >= 160:
        assert "inference/" in row, row  # the pod as ns/pod on the same row as the command
    # (at 80 columns the pod column gives way to the command; the line under the table names the pod of the row)


@pytest.mark.parametrize("size", SIZES)
def test_the_node_footer_and_the_column_picker_marks(console, size):
    width, _ = size
    tmux = console("sim:seed-incident")
    tmux.wait_for("the fleet", lambda s: re.search(r"gpu05\s+✖ broken", s), timeout=scaled(30))
    tmux.keys("c")
    shown = tmux.wait_for("the column picker", lambda s: "▐X▌" in s, timeout=scaled(10))
    assert "▐ ▌" not in shown  # every optional column shows at first
    tmux.keys("space")
    shown = tmux.wait_for("a hidden column's empty box", lambda s: "▐ ▌" in s, timeout=scaled(10))
    assert shown.count("▐ ▌") == 1, shown
    tmux.keys("Escape")
    tmux.wait_for("the fleet again", lambda s: "▐" not in s and "SIMULATED FLEET" in s, timeout=scaled(10))
    tmux.keys(":", *"node gpu05", "Enter")
    shown = tmux.wait_for("gpu05's node screen and its footer", lambda s: header(s).lstrip().startswith("gpu05 ")
                          and "esc Back" in s.rstrip("\n").splitlines()[-1], timeout=scaled(15))
    footer = shown.rstrip("\n").splitlines()[-1]
    if width >= 160:
        for key in ("esc Back", "y Yank", "l Logs", "S ssh", "q Quit"):
            assert key in footer, footer
    else:
        assert "? Help" in footer, footer  # the rest is one key away


@pytest.mark.parametrize("size", SIZES)
def test_the_first_t_after_space_at_verify_no_holders_opens_the_sigterm_confirmation(console, size):
    # slower than the other tests: the two minutes the runbook waits for the holders are a minute here
    tmux = console("sim:hostile", speed="2")
    tmux.wait_for("the fleet", lambda s: re.search(r"gpu-evil01\s+✖ broken", s), timeout=scaled(30))
    tmux.keys(":", *"node gpu-evil01", "Enter")
    tmux.wait_for("the node", lambda s: header(s).lstrip().startswith("gpu-evil01 "), timeout=scaled(15))
    tmux.keys("U")  # the scenario's interrupted repair, put back first
    tmux.wait_for("the restore's confirmation", lambda s: "Restore gpu-evil01" in s, timeout=scaled(10))
    tmux.keys("Tab", "Enter")
    tmux.wait_for("the restore", lambda s: "Restore gpu-evil01" not in s, timeout=scaled(30))
    tmux.wait_for("the restore's outcome", lambda s: "restored" in s, timeout=scaled(30))
    tmux.keys("Escape")
    tmux.wait_for("the fleet again", lambda s: "nodes" in header(s), timeout=scaled(10))
    tmux.keys("r")  # the cursor is on the broken node, listed first
    tmux.wait_for("the plan", lambda s: "Type gpu-evil01 to go on" in s, timeout=scaled(30))
    tmux.keys(*"gpu-evil01", "Enter")
    tmux.wait_for("the runbook to wait on the users' holders, listed in its box",
                  lambda s: "still hold a device" in s and "[ ] 2168(mallory)" in s, timeout=scaled(60))
    tmux.keys("space")  # two writes, as a person types them, with no wait between
    tmux.keys("t")
    shown = tmux.wait_for("the SIGTERM confirmation after the first t", lambda s: "Send SIGTERM to 1 process?" in s,
                          timeout=scaled(10))
    dialog = shown[shown.index("Send SIGTERM to 1 process?"):]
    assert "gpu-evil01: 2168(mallory)" in dialog, shown  # the one selected with space, not both
