"""Keys that arrive together (a paste, typing over a laggy SSH link) are applied in the order typed.

Textual 8.2 delivers a burst's printable keys to an Input at once but runs its bindings (Backspace,
Home, Enter...) only after them (docs/textual-key-order.md): ``gpu12`` + 5 Backspaces + ``broken`` in
one burst left the filter at "gpu12b". Each test sends one burst with tmux ``send-keys``, as a
terminal delivers a paste, and reads back what the console holds.
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

from tests.test_e2e_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def console(tmp_path):
    session = Tmux(f"nvls-burst-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    exe = Path(sys.executable).with_name("nvls-tui")
    env = {"NVLS_TUI_SIM_SPEED": "50", "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    session.start("env -u COLUMNS -u LINES " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
                  + f" {shlex.quote(str(exe))} --demo")
    session.wait_for("the fleet", lambda s: re.search(r"gpu05\s+✖ broken", s), timeout=25)
    yield session
    session.kill()


def test_a_burst_with_backspaces_in_the_filter_leaves_exactly_what_was_typed(console):
    console.keys("/")
    console.wait_for("the filter box", lambda s: "filter:" in s, timeout=5)
    console.keys(*"gpu12", *["BSpace"] * 5, *"broken")  # one send-keys: one burst
    console.wait_for("the filter to settle", lambda s: "filter “broken”" in s or "filter “gpu" in s, timeout=5)
    time.sleep(0.5)  # anything still queued in the burst lands now
    done = console.screen()
    assert "filter “broken”" in done, done
    assert re.search(r"gpu05\s+✖ broken", done) and re.search(r"gpu06\s+✖ broken", done)


def test_a_burst_in_the_typed_confirmation_is_exactly_what_was_typed(console):
    console.keys("Space", "Space")
    console.wait_for("both selected", lambda s: "selected for repair: gpu05 gpu06" in s, timeout=5)
    console.keys("r")
    console.wait_for("the plan", lambda s: "Type gpu05 gpu06 to go on" in s, timeout=15)
    # A typo fixed inside the burst, then Enter: the bytes a terminal sends, in one write (-H).
    console.keys("-H", *(f"{b:02x}" for b in b"gpu05 gpu0X\x7f6\r"))
    done = console.wait_for("the repair to start (the names typed matched)",
                            lambda s: "Type gpu05 gpu06 to go on" not in s and "✔ preflight" in s, timeout=30)
    assert re.search(r"Repair\s+gpu05 gpu06\s+parallel", done), done
