"""Journal cursors: the simulator's journalctl against the real journalctl and journald of a lab node.

The probe reads the kernel log from a cursor (``nvls_tui.poll.kernel_tail``), so the simulator's
journalctl must hand out and seek to cursors as systemd does. The lab's kernel transport is itself
simulated, so the real side is a tag of the node's real journal (``logger -t``) and the simulated
side a unit's journal of the simulated node: the entries differ, their shapes must not (exit status,
how many entries, the ``--`` lines, the cursor's form, stderr).
"""

from __future__ import annotations

import time
import uuid

import pytest

from nvls_tui.lab.machine import node_run
from nvls_tui.poll.kernel_tail import CURSOR, CURSOR_LINE
from nvls_tui.sim.fleet import load_fleet

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab")]

GONE = "s=00000000000000000000000000000001;i=5;b=00000000000000000000000000000002;m=1;t=1;x=1"


def shape(status: int, out: str, err: str) -> tuple:
    """What must agree: exit status, entry count, the ``--`` lines (cursors by form), stderr."""
    lines = out.splitlines()
    marks = ["-- cursor: FORM" if ln.startswith(CURSOR_LINE) and CURSOR.fullmatch(ln[len(CURSOR_LINE):])
             else ln for ln in lines if ln.startswith("-- ")]
    return status, sum(not ln.startswith("-- ") for ln in lines), marks, err


def cursor(out: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith(CURSOR_LINE)]
    return line[len(CURSOR_LINE):]


@pytest.fixture(scope="module")
def real(lab):
    """journalctl of a fresh tag on gpu06's real journal: ``run(*args) -> (status, out, err)``, entry count."""
    _folder, nodes = lab
    node, tag = nodes["gpu06"], f"nvls-cursor-{uuid.uuid4().hex[:8]}"
    for i in range(3):
        node_run(node, "logger", "-t", tag, f"entry {i}")
    base = ["/usr/bin/journalctl", "-t", tag, "--no-pager", "-o", "short-iso"]
    deadline = time.monotonic() + 10  # journald writes a moment later
    while node_run(node, *base, check=False).stdout.count(tag) < 3:
        assert time.monotonic() < deadline, "journald never wrote the test's entries"
        time.sleep(0.1)

    def run(*args: str) -> tuple[int, str, str]:
        done = node_run(node, *base, *args, check=False)
        return done.returncode, done.stdout, done.stderr

    return run, 3


@pytest.fixture(scope="module")
def sim():
    """The same for the simulator: a unit's journal of simulated gpu06."""
    fleet = load_fleet("seed-incident", speed=0)
    base = ["journalctl", "-u", "nvidia-fabricmanager", "--no-pager", "-o", "short-iso"]

    def run(*args: str) -> tuple[int, str, str]:
        done = fleet.run("gpu06", [*base, *args])
        return done.exit_status, done.stdout, done.stderr

    count = shape(*run())[1]
    assert count >= 2, "the simulated unit has a journal to seek in"
    return run, count


@pytest.mark.parametrize("side", ["real", "sim"])
def test_a_cursor_seeks_as_systemd_does(side, request):
    run, n = request.getfixturevalue(side)
    whole = run("--show-cursor")
    last = cursor(whole[1])
    assert shape(*whole) == (0, n, ["-- cursor: FORM"], "")
    # After the last entry: nothing, and the same cursor again.
    after = run("--show-cursor", f"--after-cursor={last}")
    assert shape(*after) == (0, 0, ["-- No entries --", "-- cursor: FORM"], "") and cursor(after[1]) == last
    # At the last entry: that entry again.
    at = run("--show-cursor", f"--cursor={last}")
    assert shape(*at) == (0, 1, ["-- cursor: FORM"], "") and at[1].splitlines()[0] == whole[1].splitlines()[n - 1]
    # A cursor whose entry is gone (another seqnum id): placed by its time; --after-cursor steps over one more.
    assert shape(*run("--show-cursor", f"--cursor={GONE}")) == (0, n, ["-- cursor: FORM"], "")
    assert shape(*run("--show-cursor", f"--after-cursor={GONE}")) == (0, n - 1, ["-- cursor: FORM"], "")
    # One journalctl cannot parse.
    assert shape(*run("--show-cursor", "--after-cursor=garbage")) == (
        1, 0, [], "Failed to seek to cursor: Invalid argument\n")
    # --grep that matches nothing: exit 1, and the cursor of the last entry visited.
    nothing = run("--show-cursor", "-g", "no-such-text-anywhere")
    assert shape(*nothing) == (1, 0, ["-- No entries --", "-- cursor: FORM"], "") and cursor(nothing[1]) == last
