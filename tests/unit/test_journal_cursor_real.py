"""verify-fabric's journal cursor commands against the real journald of this machine, and the simulator's
journalctl answering them the same way (output, errors, exit status).

A real systemd-journald runs in a private mount namespace (as in tests/unit/test_journal_offsets.py), reading
the host kernel's own messages. Nothing here writes to the kernel's log, so the entries after a cursor are
taken from the boot's start (they never change) rather than logged by the test.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import pytest

from nvls_tui.poll.kernel_tail import CURSOR, last_cursor
from nvls_tui.runbook.fabric import SEEK_REFUSED
from nvls_tui.runbook.steps import KERNEL_CURSOR_ARGV, kernel_after_argv, kernel_cursor_check_argv
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_journal_offsets import SETUP, _missing, entries

Journal = Callable[..., tuple[int, str, str]]
# A cursor in journalctl's form that no journal here wrote (another seqnum id), placed by its realtime.
FOREIGN = "s={:032x};i=5;b={:032x};m=1;t={:x};x=1"


@pytest.fixture(scope="module")
def real() -> Journal:
    """``run(*argv) -> (exit status, stdout, stderr)`` of the real journalctl over a private journald."""
    problem = _missing()
    if problem:
        pytest.skip(problem)
    quiet = {**os.environ, "SYSTEMD_LOG_TARGET": "null", "SYSTEMD_LOG_LEVEL": "emerg"}
    daemon = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", SETUP], env=quiet,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def run(*argv: str) -> tuple[int, str, str]:
        done = subprocess.run(["nsenter", "-t", str(daemon.pid), "-m", "--", *argv], capture_output=True,
                              text=True, timeout=30)
        return done.returncode, done.stdout, done.stderr

    try:
        deadline = time.monotonic() + 30  # journald reads the kernel's buffer a moment after it starts
        while len(entries(run("journalctl", "-k", "--no-pager", "-o", "short-iso")[1])) < 2:
            assert daemon.poll() is None, "systemd-journald exited"
            assert time.monotonic() < deadline, "journald never stored two kernel messages"
            time.sleep(0.1)
        yield run
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


@pytest.fixture
def sim() -> Journal:
    """The same, answered by the simulator's journalctl on a node whose clock stepped back."""
    fleet = load_fleet("sim:clock-step/gpu-ahead01", speed=0)

    def run(*argv: str) -> tuple[int, str, str]:
        result = fleet.run("gpu-ahead01", list(argv))
        return result.exit_status, result.stdout, result.stderr

    return run


def first_two(journal: Journal) -> tuple[str, str]:
    """The boot's first kernel entry's cursor (where a seek placed before every entry lands), and the
    second entry as short-iso prints it."""
    status, out, _ = journal(*kernel_cursor_check_argv(FOREIGN.format(1, 1, 1)))
    first = last_cursor(out)
    assert status == 0 and first is not None
    listing = entries(journal("journalctl", "-k", "--no-pager", "-o", "short-iso")[1])
    return first, listing[1]


def _kinds(request) -> list[Journal]:
    return [request.getfixturevalue("sim"), request.getfixturevalue("real")]


def test_t0_s_cursor_read_prints_only_the_last_kernel_entry_s_cursor_in_journalctl_s_form(request):
    for journal in _kinds(request):
        status, out, err = journal(*KERNEL_CURSOR_ARGV)
        assert (status, err) == (0, "")
        (line,) = out.splitlines()
        cursor = last_cursor(out)
        assert line.startswith("-- cursor: ") and cursor is not None and CURSOR.fullmatch(cursor), out


def test_a_cursor_the_journal_still_holds_is_where_its_seek_lands(request):
    for journal in _kinds(request):
        cursor, _ = first_two(journal)
        assert journal(*kernel_cursor_check_argv(cursor)) == (0, f"-- cursor: {cursor}\n", "")


def test_the_read_after_a_cursor_starts_with_the_entry_logged_next(request):
    for journal in _kinds(request):
        cursor, second = first_two(journal)
        status, out, err = journal(*kernel_after_argv(cursor))
        assert (status, err) == (0, "")
        assert entries(out)[0] == second


def test_a_cursor_of_another_journal_lands_elsewhere_or_nowhere(request):
    for journal in _kinds(request):
        before_all = FOREIGN.format(1, 1, 1)
        status, out, err = journal(*kernel_cursor_check_argv(before_all))
        landed = last_cursor(out)
        assert (status, err) == (0, "") and landed is not None and landed != before_all
        # Placed after every entry: journalctl visits none, prints nothing (-q) and exits 1.
        assert journal(*kernel_cursor_check_argv(FOREIGN.format(1, 1, 2**62))) == (1, "", "")


def test_a_cursor_journalctl_cannot_parse_is_refused_in_its_words(request):
    for journal in _kinds(request):
        status, out, err = journal(*kernel_after_argv("s=zz"))
        assert (status, out) == (1, "") and err.startswith(SEEK_REFUSED), err
        assert journal(*kernel_cursor_check_argv("s=zz"))[0] == 1
