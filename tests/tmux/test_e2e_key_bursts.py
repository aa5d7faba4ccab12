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

from tests.tmux.test_e2e_tmux import Tmux
from tests.waiting import scaled

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
    # The filter reads “broken” only once the burst's last key landed, each in order: a key lost or
    # reordered leaves another filter, and the wait fails showing it.
    console.wait_for("the filter “broken” and its two rows",
                     lambda s: "filter “broken”" in s and re.search(r"gpu05\s+✖ broken", s) is not None
                     and re.search(r"gpu06\s+✖ broken", s) is not None, timeout=scaled(15))


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


def burst(text: str) -> list[str]:
    """``send-keys -H`` arguments for ``text`` as a terminal writes it: one write, ``\\r`` for Enter."""
    return ["-H", *(f"{b:02x}" for b in text.encode())]


def settled(console) -> str:
    """Esc after a burst, and wait for its effect (the filter cleared, back on the fleet): keys are handled
    in order, so once it shows, every key of the burst has landed (no fixed sleep). A plan or node screen
    that a key of the burst opened would take this Esc and leave the filter standing."""
    console.keys("Escape")
    return console.wait_for("Esc to clear the filter on the fleet",
                            lambda s: "sorted by verdict" in s and "filter “" not in s and "Repair plan" not in s,
                            timeout=10)


def test_a_filter_typed_in_the_same_burst_as_the_slash_lands_in_the_filter(console):
    console.keys(*burst("/broken\r"))  # the `r` of broken used to open "Repair plan gpu05"
    done = console.wait_for("the filter", lambda s: "filter “broken”: 2 of 8 shown" in s, timeout=10)
    assert "Repair plan" not in done, done
    settled(console)


def test_a_burst_with_n_in_the_filter_does_not_jump_or_open_a_node(console):
    console.keys(*burst("/out_of_sync\r"))  # `n` jumped to the next broken node, Enter opened it
    done = console.wait_for("the filter", lambda s: "filter “out_of_sync”: 1 of 8 shown" in s, timeout=10)
    assert re.search(r"gpu06\s+✖ broken", done) and not re.search(r"gpu05\s+✖ broken", done), done
    settled(console)


def test_a_host_name_typed_in_the_same_burst_as_the_slash_is_the_filter(console):
    console.keys(*burst("/gpu05"))  # used to leave the filter empty (g went to the grid, p polled)
    done = console.wait_for("the filter", lambda s: "filter “gpu05”: 1 of 8 shown" in s, timeout=10)
    assert re.search(r"gpu05\s+✖ broken", done) and not re.search(r"gpu06\s+✖ broken", done), done
    settled(console)


def test_names_typed_in_the_same_burst_as_r_land_in_the_typed_confirmation(console):
    console.keys(*burst("rgpu05"))  # gpu05 is under the cursor (broken first)
    done = console.wait_for("the plan with the names typed", lambda s: "Type gpu05 to go on" in s
                            and re.search(r"▊\s+gpu05\s", s), timeout=20)
    assert "type gpu05 to confirm" not in done, done  # the placeholder is gone: the box holds the names
    console.keys("Enter")
    console.wait_for("the repair to start", lambda s: "Type gpu05 to go on" not in s and "preflight" in s,
                     timeout=30)


def test_enter_typed_before_the_plan_was_shown_does_not_approve_it(console):
    console.keys(*burst("rgpu05\r"))
    # The notice is drawn a frame after the names: wait for both.
    console.wait_for("the plan with the names typed, and the notice", lambda s: "Type gpu05 to go on" in s
                     and re.search(r"▊\s+gpu05\s", s) and "Enter was typed before the plan" in s, timeout=20)
    # Still on the plan: a key sent now is typed into the confirmation after the names.
    console.keys("x")
    done = console.wait_for("the x typed after the names", lambda s: re.search(r"▊\s+gpu05x\s", s), timeout=10)
    assert "Type gpu05 to go on" in done, done



def test_a_key_typed_while_the_console_starts_acts_on_the_fleet_not_a_hidden_filter(tmp_path):
    # The filter box was the screen's first focusable widget: keys typed before the grid took the focus
    # went into it while it was hidden (`q` left "filter “q”: 0 of 8 shown" above an empty grid).
    session = Tmux(f"nvls-start-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    exe = Path(sys.executable).with_name("nvls-tui")
    env = {"NVLS_TUI_SIM_SPEED": "50", "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    command = ("env -u COLUMNS -u LINES " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
               + f" {shlex.quote(str(exe))} --demo; echo console-exited-$?; sleep 60")
    try:
        session.start(f"sh -c {shlex.quote(command)}")
        session.keys("q")  # at once: the console is still starting (it takes a few seconds to draw)
        done = session.wait_for("q to quit the console", lambda s: "console-exited-" in s or "filter “q”" in s,
                                timeout=45)
        assert "console-exited-0" in done, done
    finally:
        session.kill()
