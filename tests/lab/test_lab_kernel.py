"""A lab node's real kernel journal (issue 26 item 1, real parts): the simulated hardware's kernel lines
become a real journal file (systemd-journal-remote) that the node's real ``journalctl -k`` reads and the real
``journalctl --vacuum-files`` vacuums, and a ring buffer file that util-linux ``dmesg --file`` reads.

The first tests run the real tools over :mod:`nvls_tui.lab.kernel_log`'s forms on this machine. The lab
tests boot one node acting ``journal-rotated`` (``rotlab*`` on 127.0.17.x, this file's own): its journal
was vacuumed after the out-of-sync fault, and ``check --json`` over real SSH reads the fault from the ring
buffer and says where the journal starts, as the simulator's ``sim:journal-rotated`` does.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nvls_tui.lab import kernel_log
from nvls_tui.lab.acts import LATER_KERNEL_LINE
from nvls_tui.sim.state import LogLine
from tests.lab.own_lab import own_lab

NODE = "gpu-rot01"
BOOT = 1_786_000_000.0
OOS = ("NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync "
       "[NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from _memMulticastFabricGpuAttach")
FELL_OFF = ("NVRM: The NVIDIA GPU 0000:5a:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\n"
            "NVRM: fallen off the bus and is not responding to commands.")
LINES = [LogLine(BOOT, "kernel", "Linux version 6.1.0-28-amd64", seq=1),
         LogLine(BOOT + 301.5, "kernel", OOS, seq=2),
         LogLine(BOOT + 600.25, "kernel", FELL_OFF, seq=3)]
needs_tools = pytest.mark.skipif(not Path(kernel_log.JOURNAL_REMOTE).exists() or shutil.which("journalctl") is None
                                 or shutil.which("dmesg") is None,
                                 reason="systemd-journal-remote, journalctl and dmesg are needed (scripts/system-deps.sh)")


def _journal(folder: Path, lines: list[LogLine], name: str = kernel_log.ACTIVE) -> Path:
    data = kernel_log.export_entries(lines, boot_epoch=BOOT, boot_id="0123456789abcdef0123456789abcdef",
                                     machine_id="fedcba9876543210fedcba9876543210", hostname="gpu07")
    subprocess.run([kernel_log.JOURNAL_REMOTE, "-o", str(folder / name), "-"], input=data, check=True,
                   capture_output=True)
    return folder / name


def _journalctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["journalctl", "--no-pager", *args], capture_output=True, text=True, check=False)


@needs_tools
def test_the_real_journalctl_reads_the_entries_as_kernel_lines_of_their_boot(tmp_path):
    _journal(tmp_path, LINES)
    done = _journalctl("-D", str(tmp_path), "-k", "-b", "-o", "short-iso", "--utc")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "2026-08-06T07:06:40+0000 gpu07 kernel: Linux version 6.1.0-28-amd64"  # BOOT, UTC
    assert lines[1] == f"2026-08-06T07:11:41+0000 gpu07 kernel: {OOS}"
    # A record of three lines: journalctl indents the later two under the first.
    head = "2026-08-06T07:16:40+0000 gpu07 kernel: "
    assert lines[2:] == [head + "NVRM: The NVIDIA GPU 0000:5a:00.0",
                         " " * len(head) + "NVRM: (PCI ID: 10de:2330) installed in this system has",
                         " " * len(head) + "NVRM: fallen off the bus and is not responding to commands."]
    fields = json.loads(_journalctl("-D", str(tmp_path), "-k", "-o", "json", "-n", "1", "-g", "OUT_OF_SYNC").stdout)
    assert {k: fields[k] for k in ("_TRANSPORT", "PRIORITY", "SYSLOG_IDENTIFIER", "__MONOTONIC_TIMESTAMP")} == {
        "_TRANSPORT": "kernel", "PRIORITY": "3", "SYSLOG_IDENTIFIER": "kernel", "__MONOTONIC_TIMESTAMP": "301500000"}
    # Another boot's lines are not this one's.
    other = _journalctl("-D", str(tmp_path), "-k", "-b", "11111111111111111111111111111111")
    assert other.returncode == 1 and "No such boot ID in journal" in other.stderr


@needs_tools
def test_a_rotated_kernel_journal_is_vacuumed_by_the_real_journalctl(tmp_path):
    active = _journal(tmp_path, LINES[:2])
    name = kernel_log.archived_name(active.read_bytes()[:256])
    assert re.fullmatch(r"kernel@[0-9a-f]{32}-0000000000000001-[0-9a-f]{16}\.journal", name)
    assert int(name[-24:-8], 16) == round(BOOT * 1e6)  # the head entry's realtime, as journald names it
    active.rename(tmp_path / name)
    _journal(tmp_path, LINES[2:])
    assert "OUT_OF_SYNC" in _journalctl("-D", str(tmp_path), "-k").stdout
    vacuum = _journalctl("-D", str(tmp_path), "--vacuum-files=1")
    assert vacuum.returncode == 0 and f"Deleted archived journal {tmp_path / name}" in vacuum.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [kernel_log.ACTIVE]
    left = _journalctl("-D", str(tmp_path), "-k", "-o", "short-iso").stdout
    assert "OUT_OF_SYNC" not in left and "fallen off the bus" in left


def test_a_file_that_is_no_journal_has_no_archived_name():
    with pytest.raises(kernel_log.KernelLogError, match="no journal header"):
        kernel_log.archived_name(b"\0" * 256)


@needs_tools
def test_util_linux_dmesg_reads_the_ring_buffer_file_and_a_wrapped_one_drops_whole_records(tmp_path):
    ring = kernel_log.ring_records(LINES, boot_epoch=BOOT)
    assert ring.splitlines()[:2] == ["<5>[    0.000000] Linux version 6.1.0-28-amd64", f"<3>[  301.500000] {OOS}"]
    (tmp_path / "kmsg").write_text(ring)
    done = subprocess.run(["dmesg", "--file", str(tmp_path / "kmsg")], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[    0.000000] Linux version 6.1.0-28-amd64", f"[  301.500000] {OOS}",
                                        "[  600.250000] NVRM: The NVIDIA GPU 0000:5a:00.0",
                                        " " * 15 + "NVRM: (PCI ID: 10de:2330) installed in this system has",
                                        " " * 15 + "NVRM: fallen off the bus and is not responding to commands."]
    assert kernel_log.wrapped(ring, 301.5) == kernel_log.ring_records(LINES[1:], boot_epoch=BOOT)
    assert kernel_log.wrapped(ring, 301.6) == kernel_log.ring_records(LINES[2:], boot_epoch=BOOT)


# ----- the lab node ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rot_lab(tmp_path_factory):
    """One lab node acting ``journal-rotated``: ``(folder, LabNode)``."""
    with own_lab(tmp_path_factory, "rotlab", [NODE], "journal-rotated") as (folder, (node,)):
        yield folder, node


def _shape(message: str) -> str:
    """A finding's words with its times taken out (the lab's and the simulator's clocks differ)."""
    message = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[+-]\d\d:?\d\d|Z)?", "TIME", message)
    return re.sub(r"\((?:just now|\d+ (?:min|h|days) ago)\)", "(AGO)", message)


def _time(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


@pytest.mark.lab
@pytest.mark.xdist_group("lab-kernel")
def test_check_on_the_vacuumed_node_reads_the_fault_from_the_ring_buffer_as_the_simulator_does(rot_lab):
    from tests.lab.test_lab import check_json, cli

    folder, _node = rot_lab
    real = check_json(folder, NODE)[NODE]
    sim = json.loads(cli("check", "--json", "sim:journal-rotated").stdout)["nodes"][0]
    for node in (real, sim):
        cov = node["kernel_coverage"]
        assert (cov["sources"], cov["complete_since_boot"]) == (["journal", "dmesg"], False), cov
        (oos,) = [e for e in node["kernel_events"] if e["code"] == "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"]
        assert re.match(r"\[ *\d+\.\d{6}\] NVRM: ", oos["line"]), oos  # the ring buffer's line, not the journal's
        # Read from the ring buffer, before the journal's first entry; the coverage starts no later than it.
        assert _time(cov["since"]) <= _time(oos["timestamp"]) < _time(cov["journal_since"]), (cov, oos)
    assert [f["code"] for f in real["findings"]] == [f["code"] for f in sim["findings"]]
    assert "KERNEL_COVERAGE" in [f["code"] for f in real["findings"]]
    # The kernel's findings in the same words (the holders' count differs: the lab runs fewer daemons).
    kernel = ("FABRIC_OUT_OF_SYNC", "KERNEL_COVERAGE")
    assert [_shape(f["message"]) for f in real["findings"] if f["code"] in kernel] == [
        _shape(f["message"]) for f in sim["findings"] if f["code"] in kernel]


@pytest.mark.lab
@pytest.mark.xdist_group("lab-kernel")
def test_the_nodes_journalctl_and_dmesg_are_the_real_tools_over_the_kernel_files(rot_lab):
    from nvls_tui.lab.machine import node_run

    _folder, node = rot_lab
    probe = ("-k", "-b", "--no-pager", "-o", "short-iso")
    wrapped_out = node_run(node, "journalctl", *probe)
    real_out = node_run(node, "/usr/bin/journalctl", *probe)
    assert (wrapped_out.returncode, wrapped_out.stdout) == (real_out.returncode, real_out.stdout) == (0, real_out.stdout)
    # The journal starts with the line logged after the vacuum; the archived file is gone.
    assert real_out.stdout.splitlines()[0].endswith(f" {NODE} kernel: {LATER_KERNEL_LINE}"), real_out.stdout
    mid = node_run(node, "cat", "/etc/machine-id").stdout.strip()
    files = node_run(node, "ls", f"/var/log/journal/{mid}").stdout.split()
    assert kernel_log.ACTIVE in files and not [f for f in files if f.startswith("kernel@")], files
    # dmesg is util-linux's over the ring buffer file: the same lines, and -T maps its stamps to wall time
    # by this machine's boot, as the poll maps them.
    ours = node_run(node, "dmesg")
    assert ours.stdout == node_run(node, "/usr/bin/dmesg", "--file", kernel_log.RING_FILE).stdout
    assert "NV_ERR_FABRIC_STATE_OUT_OF_SYNC" in ours.stdout and "Linux version" not in ours.stdout
    (line,) = [ln for ln in node_run(node, "dmesg", "-T").stdout.splitlines() if "OUT_OF_SYNC" in ln]
    (stamp,) = [ln for ln in ours.stdout.splitlines() if "OUT_OF_SYNC" in ln]
    now, uptime = node_run(node, "sh", "-c", "date +%s.%N; cut -d' ' -f1 /proc/uptime").stdout.split()
    boot = float(now) - float(uptime)
    mapped = dt.datetime.fromtimestamp(boot + float(stamp[1:stamp.index("]")]))
    shown = dt.datetime.strptime(line[1:line.index("]")], "%a %b %d %H:%M:%S %Y")
    assert abs((shown - mapped).total_seconds()) <= 2, (line, mapped)


@pytest.mark.lab
@pytest.mark.xdist_group("lab-kernel")
def test_a_failed_hand_on_fails_the_read_never_a_silent_gap(rot_lab):
    from nvls_tui.lab.machine import node_run

    _folder, node = rot_lab
    journal = node_run(node, "sh", "-c", "echo /var/log/journal/$(cat /etc/machine-id)/kernel.journal").stdout.strip()
    xid = "NVRM: Xid (PCI:0000:34:00): 74, pid=1, NVLink: fatal error"
    # systemd-journal-remote cannot write where a folder stands in the file's place.
    node_run(node, "sh", "-c", f"mv {journal} {journal}.aside && mkdir {journal}")
    try:
        logged = node_run(node, kernel_log.TOOL, "print", xid, check=False)
        assert logged.returncode == 1 and logged.stderr.startswith("kernel-log: systemd-journal-remote exited "), logged
        for argv in (("journalctl", "-k", "-b", "--no-pager"), ("dmesg",)):
            done = node_run(node, *argv, check=False)
            assert (done.returncode, done.stdout) == (1, ""), (argv, done)
            assert done.stderr.startswith("kernel-log: systemd-journal-remote exited "), (argv, done)
    finally:
        node_run(node, "sh", "-c", f"rmdir {journal} && mv {journal}.aside {journal}")
    # The line stayed pending: the next read hands it on, to both.
    assert xid in node_run(node, "journalctl", "-k", "-b", "--no-pager").stdout
    assert xid in node_run(node, "dmesg").stdout
