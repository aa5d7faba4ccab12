"""Issue 40 item 3 in a real terminal (tmux, 160x48): ``nvls-tui sim:seed-incident --autopilot ask`` through the
command line, its poller process and its state directory. The proposal is marked on gpu05's row after the
debounce, ``a`` opens its plan, the typed name runs the repair, and the state file counts it.

The simulated clock runs 50x real time (``NVLS_TUI_SIM_SPEED``); every wait polls the screen with a deadline.
"""

from __future__ import annotations

import json
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


@pytest.fixture
def session():
    tmux = Tmux(f"nvls-ask-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    yield tmux
    tmux.kill()


def test_ask_mode_proposes_and_one_key_and_the_typed_name_repair_counted_in_the_state(session, tmp_path):
    exe = Path(sys.executable).with_name("nvls-tui")
    state = tmp_path / "autopilot"
    env = {"NVLS_TUI_SIM_SPEED": "50", "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    command = (f"{shlex.quote(str(exe))} sim:seed-incident --autopilot ask --poll 1 --breaker-percent 50 "
               f"--state-dir {shlex.quote(str(state))}")
    session.start("env -u COLUMNS -u LINES " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
                  + f" {command}; echo 'console exited with status '$?; sleep 600")
    screen = session.wait_for("gpu05 proposed", lambda s: "⚑ gpu05" in s, timeout=scaled(60))
    assert "AUTOPILOT ASK — nothing runs without your approval" in screen
    assert re.search(r"autopilot ask: ⚑ gpu05 proposed \(a approves\)", screen)
    # Broken first: gpu05 is the first row, where the cursor starts.
    session.keys("a")
    session.wait_for("the plan of the proposal", lambda s: "Autopilot proposal" in s and "type gpu05" in s,
                     timeout=scaled(30))
    session.keys("gpu05", literal=True)
    session.keys("Enter")
    session.wait_for("the repair's end", lambda s: re.search(r"✔ gpu05 repaired", s), timeout=scaled(120))

    def counted() -> bool:
        path = state / "autopilot-state.json"
        repairs = json.loads(path.read_text())["repairs"] if path.exists() else []
        return [(r["host"], r["ok"]) for r in repairs] == [("gpu05", True)]

    deadline = time.monotonic() + scaled(30)
    while not counted():
        assert time.monotonic() < deadline, "the state file never counted gpu05's repair as passed"
        time.sleep(0.2)
    session.keys("Escape")  # alone: an Escape and a q in one burst read as alt+q
    session.wait_for("the fleet again", lambda s: "AUTOPILOT ASK" in s and "Repair   gpu05" not in s,
                     timeout=scaled(30))
    session.keys("q")
    session.wait_for("the console to exit", lambda s: "console exited with status 0" in s, timeout=scaled(30))
    actions = [r["action"] for f in (state / "audit").glob("autopilot-*.jsonl")
               for r in map(json.loads, f.read_text().splitlines()) if r.get("node") == "gpu05"]
    assert actions.index("propose") < actions.index("approved") < actions.index("repaired")
