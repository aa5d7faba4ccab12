"""The kernel section's journalctl dates every line as an instant: against the real systemd of this machine.

The stale-line rule (nvls_tui.diagnosis.node) compares a kernel line's time with the smoke record's as
instants, so the offset must survive from journalctl to the parser. A real systemd-journald runs here in
a private mount namespace (its sockets and journal on tmpfs, nothing of the host's changed), reading the
host kernel's own messages; the probe's journalctl reads them in a zone with DST, and the parser keeps
each line's offset. The simulator's journalctl must print the same form.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from nvls_tui.diagnosis.story import node_time
from nvls_tui.parsers.kernel_log import parse_kernel_log
from nvls_tui.poll.kernel_tail import kernel_argv
from nvls_tui.sim.fleet import load_fleet

JOURNALD = Path("/lib/systemd/systemd-journald")
# short-iso as systemd 252 prints it: the zone's offset, no colon; then the host and the identifier
# (``kernel`` for the kernel's own lines; a program that writes to /dev/kmsg has its name and PID).
ISO_ENTRY = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}) (\S+) (\S+?): ")
ZONE = "America/New_York"
# The driver's words, after the prefix journalctl printed for a real kernel entry.
OUT_OF_SYNC = ("NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync "
               "[NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087)")
SETUP = ("mount -t tmpfs nvls-test /run/systemd && mkdir -p /run/log /var/log/journal"
         " && mount -t tmpfs nvls-test /run/log && mount -t tmpfs nvls-test /var/log/journal"
         f" && exec {JOURNALD}")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "a private journald needs root (mount namespaces)"
    tools = [t for t in ("unshare", "nsenter", "journalctl") if shutil.which(t) is None]
    if tools or not JOURNALD.exists():
        return f"systemd's journald and util-linux are needed: missing {', '.join(tools) or JOURNALD}"
    if not os.access("/dev/kmsg", os.R_OK):
        return "the kernel's messages (/dev/kmsg) cannot be read here"
    return None


@pytest.fixture(scope="module")
def journal():
    """``run(*journalctl args, tz=ZONE) -> stdout`` against a real journald of the host kernel's messages."""
    problem = _missing()
    if problem:
        pytest.skip(problem)
    # journald logs about itself to /dev/kmsg: told to stay quiet, it writes nothing into the host's log.
    quiet = {**os.environ, "SYSTEMD_LOG_TARGET": "null", "SYSTEMD_LOG_LEVEL": "emerg"}
    daemon = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", SETUP], env=quiet,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def run(*args: str, tz: str = ZONE) -> str:
        done = subprocess.run(["nsenter", "-t", str(daemon.pid), "-m", "--", "journalctl", *args],
                              capture_output=True, text=True, timeout=30, env={**os.environ, "TZ": tz})
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        deadline = time.monotonic() + 30  # journald reads the kernel's buffer a moment after it starts
        while not kernel_lines(run("-k", "-b", "--no-pager", "-o", "short-iso")):
            assert daemon.poll() is None, "systemd-journald exited"
            assert time.monotonic() < deadline, "journald never stored a kernel message"
            time.sleep(0.1)
        yield run
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def entries(text: str) -> list[str]:
    """journalctl's entries: not its ``--`` lines, nor a multi-line message's indented continuation lines
    (the probe's filter keeps only lines that begin with a date: kernel_tail._ENTRY)."""
    return [line for line in text.splitlines() if line and not line.startswith(("-- ", " "))]


def kernel_lines(text: str) -> list[str]:
    """The entries the kernel itself logged (``HOST kernel: ...``)."""
    return [line for line in entries(text) if (m := ISO_ENTRY.match(line)) and m.group(3) == "kernel"]


def test_the_probe_s_journalctl_dates_every_kernel_line_with_its_offset_in_a_dst_zone(journal):
    lines = entries(journal(*kernel_argv()[1:]))
    assert lines, "the kernel logged nothing this boot"
    stamps = [ISO_ENTRY.match(line) for line in lines]
    assert all(stamps), [line for line, m in zip(lines, stamps, strict=True) if not m][:3]
    assert {m.group(1)[-5:] for m in stamps if m} <= {"-0400", "-0500"}


def test_the_parser_keeps_the_offset_and_reads_the_instant_journald_stored(journal):
    iso = kernel_lines(journal("-k", "-b", "--no-pager", "-o", "short-iso"))
    # The same entries as epoch seconds (journald adds entries only at the end: the two reads agree as far
    # as the shorter goes).
    unix = [line for line in entries(journal("-k", "-b", "--no-pager", "-o", "short-unix"))
            if line.split()[2:3] == ["kernel:"]]
    count = min(len(iso), len(unix))
    assert count > 0
    for shown, epoch in zip(iso[:count], unix[:count], strict=True):
        prefix = ISO_ENTRY.match(shown)
        assert prefix is not None
        (event,) = parse_kernel_log(prefix.group(0) + OUT_OF_SYNC).value
        assert event.timestamp == prefix.group(1)
        assert node_time(event.timestamp) == int(float(epoch.split()[0]))


def test_one_entry_read_in_two_zones_is_the_same_instant(journal):
    east = kernel_lines(journal("-k", "-b", "--no-pager", "-o", "short-iso", tz=ZONE))[0]
    india = kernel_lines(journal("-k", "-b", "--no-pager", "-o", "short-iso", tz="Asia/Kolkata"))[0]
    a, b = ISO_ENTRY.match(east), ISO_ENTRY.match(india)
    assert a is not None and b is not None
    assert a.group(1) != b.group(1) and b.group(1).endswith("+0530")
    assert node_time(a.group(1)) == node_time(b.group(1))


def test_the_simulator_s_journalctl_prints_the_same_form(journal):
    real = kernel_lines(journal("-k", "-b", "--no-pager", "-o", "short-iso"))
    fleet = load_fleet("sim:clock-step/gpu-ntp01", speed=0)
    assert fleet.node("gpu-ntp01").tz == ZONE
    simulated = entries(fleet.run("gpu-ntp01", list(kernel_argv())).stdout)
    assert real and simulated
    assert all((m := ISO_ENTRY.match(line)) and m.group(3) == "kernel" for line in real + simulated)
