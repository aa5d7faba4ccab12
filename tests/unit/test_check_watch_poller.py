"""Issue 30: ``check --watch`` reads its rounds through the poller process (one poller, several consumers).

Each round is one poll of every node by the process the console also uses, over the connections it
kept from the round before; what a round prints is what a single ``check`` prints. The process ends
with the command however it ends (Ctrl-C, SIGTERM, SIGKILL): none is ever left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvls_tui.headless.polled_rounds import not_read as _not_read
from nvls_tui.model import NodeState
from tests.unit.test_check_watch import _read_until
from tests.waiting import scaled

REPO = Path(__file__).parents[2]
NVLS_TUI = [sys.executable, "-m", "nvls_tui.cli"]
MODULE = "nvls_tui.poller"


def _pollers_of(pid: int) -> list[int]:
    """The poller processes started by process ``pid`` (their command line ends with its PID)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if MODULE in argv and argv[-1] == str(pid):
            found.append(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "zombie" in status


def _wait_gone(pid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.1)
    return _gone(pid)


def _watch(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([*NVLS_TUI, "check", "--watch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, cwd=REPO, env=env)


def _docs(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_every_round_through_the_poller_reads_what_a_single_check_reads():
    # Both on a frozen simulated clock: each process's clock starts when it does and a node is built at its
    # first read, so on a slow machine the two read different moments of the simulated nodes (processes started
    # seconds later by the clock, the minutely nvidia-snapshot run over, with its nvidia-smi holder gone).
    frozen = {**os.environ, "NVLS_TUI_SIM_SPEED": "0"}
    single = subprocess.run([*NVLS_TUI, "check", "--json", "sim:seed-incident"], capture_output=True, text=True,
                            timeout=scaled(120), check=False, stdin=subprocess.DEVNULL, cwd=REPO, env=frozen)
    assert single.returncode == 1, single.stderr
    once = json.loads(single.stdout)["nodes"]
    proc = _watch("0.2", "--json", "sim:seed-incident", env=frozen)
    try:
        assert proc.stdout is not None
        seen = _read_until(proc.stdout.fileno(), lambda t: t.count("\n") >= 3)
        pollers = _pollers_of(proc.pid)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert len(pollers) == 1, pollers  # the rounds came from one poller process of this command
    rounds = _docs(seen + out.decode())
    assert len(rounds) >= 3
    for doc in rounds:
        assert doc["nodes"] == once  # every node, its findings, verdict, facts: as the single check read them
    assert proc.returncode == 1 and "Traceback" not in err.decode()


def test_a_round_polls_every_node_once_more_over_the_process_it_started_with():
    proc = _watch("0.2", "--json", "sim:healthy/hgx[01-02]")
    try:
        assert proc.stdout is not None
        _read_until(proc.stdout.fileno(), lambda t: t.count("\n") >= 1)
        first = _pollers_of(proc.pid)
        _read_until(proc.stdout.fileno(), lambda t: t.count("\n") >= 3)
        assert _pollers_of(proc.pid) == first and len(first) == 1  # the same process round after round
    finally:
        proc.kill()
        proc.wait(30)
    assert _wait_gone(first[0])


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_the_poller_process_ends_with_the_watch_however_it_ends(how):
    proc = _watch("0.2", "sim:seed-incident/gpu[05-06]")
    try:
        assert proc.stdout is not None
        _read_until(proc.stdout.fileno(), lambda t: t.count("check --watch: round") >= 2 and "broken" in t[-200:])
        pollers = _pollers_of(proc.pid)
        assert len(pollers) == 1
        proc.send_signal(how)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert _wait_gone(pollers[0]), f"poller {pollers[0]} left behind after {how!r}"
    if how is signal.SIGINT:
        assert proc.returncode == 1 and "Traceback" not in err.decode()  # the last round's status
    else:
        assert proc.returncode == -how


def test_ctrl_c_in_a_round_that_waits_ends_the_poller_too_and_the_wait_is_named_from_the_process():
    proc = _watch("5", "--timeout", "30", "sim:wedged")
    try:
        assert proc.stderr is not None
        said = _read_until(proc.stderr.fileno(), lambda t: "waiting for 1 of 2 nodes" in t)
        pollers = _pollers_of(proc.pid)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    # What the node waits on is read in the poller process (its transport's activity), not guessed here.
    assert "`" in said.split("waiting for 1 of 2 nodes", 1)[1].splitlines()[0], said
    assert proc.returncode == 130 and "Traceback" not in err.decode()
    assert len(pollers) == 1 and _wait_gone(pollers[0])


def test_a_node_a_round_could_not_read_is_unknown_with_the_reason_and_no_fact_of_an_earlier_round():
    earlier = NodeState(host="gpu05", reachable=False, simulated=True, driver="580.82.07", error="connection lost")
    shown = _not_read(earlier)
    assert shown == NodeState(host="gpu05", reachable=False, simulated=True, error="connection lost")
    assert shown.driver is None
