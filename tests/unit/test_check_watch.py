"""Issue 28 item 12: ``check --watch [SECONDS]`` polls again and again until Ctrl-C.

On a terminal each round's table replaces the last (cursor home, clear below: the screen does not
scroll); piped, every round is printed after the last with a header line naming the round, so a log
keeps them all. Ctrl-C ends the watch with the exit status of the last finished round (contract.md);
a Ctrl-C before any round finished is 130, as for any interrupted command.
"""

from __future__ import annotations

import json
import os
import pty
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from nvls_tui.cli import build_parser, build_settings, split_watch

REPO = Path(__file__).parents[2]
NVLS_TUI = [sys.executable, "-m", "nvls_tui.cli"]
ROUND = "nvls-tui check --watch: round "
HOME_CLEAR = "\x1b[H\x1b[J"
SGR = re.compile("\x1b\\[[0-9;]*m")  # colours, which a terminal gets


def _read_until(fd: int, wanted, timeout: float = 90) -> str:
    """What ``fd`` says until ``wanted(text)`` holds (AssertionError with the text after ``timeout``)."""
    text = ""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while not wanted(text):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                raise AssertionError(f"not seen within {timeout:g}s: {text[-2000:]!r}")
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # a pty's reader gets EIO once the writer is gone
                chunk = b""
            if not chunk:
                raise AssertionError(f"ended before it was seen: {text[-2000:]!r}")
            text += chunk.decode("utf-8", "replace")
    finally:
        sel.close()
    return text


def _watch_piped(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*NVLS_TUI, "check", "--watch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, cwd=REPO)


def _interrupt(proc: subprocess.Popen) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return out.decode(), err.decode()


def test_piped_every_round_is_printed_after_the_last_with_its_header_and_ctrl_c_keeps_the_last_status():
    proc = _watch_piped("0.2", "sim:seed-incident/gpu[05-06]")
    try:
        assert proc.stdout is not None
        seen = _read_until(proc.stdout.fileno(), lambda t: t.count(ROUND) >= 3 and t.rstrip().endswith("broken"))
        out, err = _interrupt(proc)
    finally:
        proc.kill()
    text = seen + out
    assert HOME_CLEAR not in text  # a pipe gets no cursor moves
    headers = [line for line in text.splitlines() if line.startswith(ROUND)]
    assert [h.split()[4].rstrip(",") for h in headers[:3]] == ["1", "2", "3"], headers
    assert text.count("gpu05 FM_NOT_RUNNING") >= 3  # each round's whole table and lines, not a diff
    assert proc.returncode == 1, err  # the demo's gpu05 and gpu06 are broken: the last round said 1
    assert "Traceback" not in err


def test_a_healthy_fleet_watched_ends_0_on_ctrl_c():
    proc = _watch_piped("0.2", "sim:healthy/hgx01")
    try:
        assert proc.stdout is not None
        _read_until(proc.stdout.fileno(), lambda t: t.count(ROUND) >= 2 and "1 healthy" in t.split(ROUND)[-1])
        _, err = _interrupt(proc)
    finally:
        proc.kill()
    assert proc.returncode == 0, err


def test_json_watch_prints_one_document_per_line_per_round():
    proc = _watch_piped("0.2", "--json", "sim:healthy/hgx01")
    try:
        assert proc.stdout is not None
        seen = _read_until(proc.stdout.fileno(), lambda t: t.count("\n") >= 2)
        out, _ = _interrupt(proc)
    finally:
        proc.kill()
    lines = [line for line in (seen + out).splitlines() if line]
    docs = [json.loads(line) for line in lines]  # every line one whole document: `jq -c` reads them
    assert len(docs) >= 2 and all([n["host"] for n in d["nodes"]] == ["hgx01"] for d in docs)


def test_on_a_terminal_each_round_redraws_the_table_in_place():
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"}
    proc = subprocess.Popen([*NVLS_TUI, "check", "--watch", "0.2", "sim:seed-incident/gpu[05-06]"], stdout=slave,
                            stderr=slave, stdin=subprocess.DEVNULL, cwd=REPO, env=env, start_new_session=True)
    os.close(slave)
    try:
        seen = _read_until(master, lambda t: t.count(HOME_CLEAR) >= 3 and SGR.sub("", t).rstrip().endswith("broken"))
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        os.close(master)
    rounds = seen.split(HOME_CLEAR)[1:]
    assert all("gpu05" in r and "gpu06" in r for r in rounds[:2]), rounds[:2]
    assert "round 2" in rounds[1] and "Ctrl-C stops" in rounds[1]
    assert proc.returncode == 1


def test_ctrl_c_before_the_first_round_ends_is_130_without_a_traceback():
    proc = _watch_piped("5", "--timeout", "30", "sim:wedged")
    try:
        assert proc.stderr is not None
        _read_until(proc.stderr.fileno(), lambda t: "waiting for" in t)
        _, err = _interrupt(proc)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_watch_takes_a_default_interval_and_refuses_a_bad_one():
    parser = build_parser()
    args = parser.parse_args(["check", "--watch", "sim:healthy", "hgx01"])
    split_watch(args, parser)  # the word after --watch is no number: it is the first target
    settings = build_settings(args)
    assert settings.watch == 5.0 and settings.targets == ("sim:healthy", "hgx01")
    args = parser.parse_args(["check", "--watch", "2.5", "hgx01"])
    split_watch(args, parser)
    assert (build_settings(args).watch, build_settings(args).targets) == (2.5, ("hgx01",))
    assert build_settings(build_parser().parse_args(["check", "sim:healthy"])).watch is None
    done = subprocess.run([*NVLS_TUI, "check", "--watch", "0", "sim:healthy"], capture_output=True, text=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL, cwd=REPO)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
