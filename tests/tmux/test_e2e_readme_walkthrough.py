"""The README's five-minute walkthrough, done in a real terminal (tmux at 160x48) on the demo fleet.

Each numbered step of the README's "Five minutes on the demo incident" is read from the README itself: the
keys this test presses must be the keys the step names (in backticks), and every other backticked span of
the step (the words it quotes from the screen; "..." leaves a part out) must be seen on the screen while
the step runs. Times and bandwidths are matched as numbers of their form (``0:01``, ``291.9``), since they
depend on when the screen is read. So a console change that makes a step untrue fails here, and so does a
README edit that names other keys or words than the console shows.
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

from tests.tmux.test_e2e_tmux import Tmux
from tests.waiting import scaled

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

README = Path(__file__).resolve().parents[2] / "README.md"
TICKED = re.compile(r"`([^`]+)`")
# Key names as the README writes them -> as tmux send-keys takes them.
TMUX_KEYS = {"Enter": "Enter", "Esc": "Escape", "space": "Space"}
# Spans of a step that are not screen words: the command that starts the demo.
NOT_ON_SCREEN = {"make demo"}


def steps() -> list[str]:
    """The walkthrough's numbered steps, each as one line of text."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Five minutes on the demo incident\n")
    body = text[start: text.index("\n## ", start + 1)]
    found = re.findall(r"^\d+\. (.*?)(?=^\d+\. |^\S|\Z)", body, re.M | re.S)
    return [" ".join(step.split()) for step in found]


def pattern(quote: str) -> re.Pattern[str]:
    """A quote as a pattern over the screen's text with its runs of blanks made one: its pieces around
    "..." in order, times (0:01) and decimals (291.9) as any number of that form."""
    pieces = []
    for piece in (p.strip() for p in quote.split("...")):
        if piece:
            escaped = re.escape(piece)
            escaped = re.sub(r"\d+\\?:\d+", r"\\d+:\\d\\d", escaped)
            escaped = re.sub(r"\d+\\?\.\d+", r"\\d+\\.\\d+", escaped)
            pieces.append(escaped)
    return re.compile(".*?".join(pieces))


class DemoTmux(Tmux):
    def alive(self) -> bool:
        """Whether the session still runs (it ends when the console does)."""
        argv = ["tmux", "-L", self.name, "-f", os.devnull, "has-session", "-t", self.name]
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0


class Walk:
    """The demo in tmux, with every screen read since a step began kept to look for its words in."""

    def __init__(self, tmux: DemoTmux) -> None:
        self.tmux = tmux
        self.seen: list[str] = []

    def read(self) -> str:
        text = " ".join(self.tmux.screen().split())
        self.seen.append(text)
        return text

    def wait_for(self, what, condition, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + scaled(timeout)  # bounds a hang on a busy machine; no claim on speed
        self.read()
        while not condition():
            if time.monotonic() > deadline:
                what = what() if callable(what) else what
                pytest.fail(f"timed out waiting for {what}; the screen was:\n{self.tmux.screen()}")
            time.sleep(0.15)
            self.read()

    def press(self, keys: list[str]) -> None:
        for key in keys:
            if key.startswith("type:"):
                self.tmux.keys(key.removeprefix("type:"), literal=True)
            else:
                self.tmux.keys(TMUX_KEYS.get(key, key))

    def step(self, text: str, actions: list[tuple[list[str], str | None]], quotes_after: int = 0) -> None:
        """Do a step: each action's keys (README names; ``type:TEXT`` typed as text), then wait for its words;
        once action ``quotes_after`` is done (-1: before any), wait until every quote of the step was seen on
        a screen read since the step began."""
        named = TICKED.findall(text)
        pressed = {key.removeprefix("type:") for keys, _ in actions for key in keys}
        assert sorted(pressed - set(named)) == [], f"the step does not name these keys: {text}"
        quotes = {q: pattern(q) for q in named if q not in pressed and q not in NOT_ON_SCREEN}
        self.seen.clear()

        def all_quoted() -> bool:
            for quote, pat in list(quotes.items()):
                if any(pat.search(screen) for screen in self.seen):
                    del quotes[quote]
            return not quotes

        if quotes_after == -1:
            self.wait_for(lambda: f"the words of step {text[:50]!r}: {list(quotes)}", all_quoted)
        for n, (keys, words) in enumerate(actions):
            mark = len(self.seen)
            self.press(keys)
            if words:
                self.wait_for(repr(words), lambda w=words, m=mark: any(w in s for s in self.seen[m:]))
            if n == quotes_after:
                self.wait_for(lambda: f"the words of step {text[:50]!r}: {list(quotes)}", all_quoted)


@pytest.fixture
def walk(tmp_path):
    tmux = DemoTmux(f"nvls-readme-{os.getpid()}-{int(time.time() * 1000) % 100000}")
    exe = Path(sys.executable).with_name("nvls-tui")
    # The simulator at its own speed, as `make demo` runs it: the plan's "How long" names any other speed.
    env = {"XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    tmux.start("env -u COLUMNS -u LINES -u NVLS_TUI_SIM_SPEED " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
               + f" {shlex.quote(str(exe))} --demo")
    yield Walk(tmux)
    tmux.kill()


def test_the_readme_walkthrough_is_what_the_console_does(walk):
    one, two, three, four, five, six = steps()
    walk.step(one, [], quotes_after=-1)
    walk.step(two, [(["Enter"], None), (["l"], "FM journal"), (["Esc"], "Kernel fabric events"),
                    (["Esc"], "sorted by verdict")])
    walk.step(three, [(["n"], "FABRIC_OUT_OF_SYNC"), (["g"], None), (["space", "space"], None)], quotes_after=2)
    walk.step(four, [(["r"], None), (["type:gpu05 gpu06"], None), (["Enter"], None)])
    walk.step(five, [], quotes_after=-1)
    walk.step(six, [(["e"], "Incident report written"), (["Esc"], None), (["q"], None)], quotes_after=1)
    deadline = time.monotonic() + scaled(30)
    while walk.tmux.alive():  # q quits: the console ends, and its tmux session with it
        assert time.monotonic() < deadline, walk.tmux.screen()
        time.sleep(0.15)
