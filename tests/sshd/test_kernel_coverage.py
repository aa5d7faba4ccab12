"""Kernel evidence that knows its coverage (issue 26 item 1): a journal that does not reach back to the boot
is read with the ring buffer beside it, and the node says from when its kernel lines cover this boot."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from nvls_tui.model import CommandResult, KernelEvent
from nvls_tui.poll.kernel_coverage import merge, read_kernel
from nvls_tui.poll.kernel_tail import RING_SKIPPED, filter_journal, filter_ring
from nvls_tui.poll.probe import JOURNAL_ROOT_ENV
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.sim.commands import execute
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_probe_journal_dirs import journal_in

NVLS = [".venv/bin/nvls-tui"]


def _check(target: str) -> dict:
    done = subprocess.run([*NVLS, "check", target, "--json"], capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)["nodes"][0]


def test_check_on_a_rotated_journal_reports_the_out_of_sync_line_from_the_ring_buffer_and_the_coverage():
    node = _check("sim:journal-rotated")
    codes = [f["code"] for f in node["findings"]]
    assert "FABRIC_OUT_OF_SYNC" in codes and "KERNEL_COVERAGE" in codes
    cov = node["kernel_coverage"]
    assert cov["sources"] == ["journal", "dmesg"] and cov["complete_since_boot"] is False
    assert cov["journal_since"] is not None and cov["since"] < cov["journal_since"].replace("+0000", "+00:00")
    (finding,) = [f for f in node["findings"] if f["code"] == "KERNEL_COVERAGE"]
    assert finding["severity"] == "warning"
    assert f"the journal starts at {cov['journal_since']}; earlier lines rotated away" in finding["message"]
    assert "the ring buffer was read as well" in finding["message"]


def test_without_journalctl_the_ring_buffer_reads_the_whole_boot():
    node = _check("sim:no-journal")
    assert "FABRIC_OUT_OF_SYNC" in [f["code"] for f in node["findings"]]
    # The kernel log is read whole (FM's own journal, journalctl -u, is another section's evidence).
    assert not [f for f in node["findings"] if f["code"] == "KERNEL_COVERAGE"
                or (f["code"] == "EVIDENCE_MISSING" and f.get("section") in ("kernel", "ring"))]
    assert node["kernel_coverage"]["sources"] == ["dmesg"] and node["kernel_coverage"]["complete_since_boot"] is True


def test_a_whole_journal_needs_no_ring_buffer_and_no_finding():
    node = _check("sim:healthy/hgx01")
    assert node["verdict"] == "healthy"
    assert node["kernel_coverage"]["sources"] == ["journal"] and node["kernel_coverage"]["complete_since_boot"]


def test_the_fell_off_scenario_is_gpu_lost():
    node = _check("sim:gpu-fell-off")
    assert node["findings"][0]["code"] == "GPU_LOST" and node["findings"][0]["message"].startswith("GPU 3 ")


@pytest.mark.skipif(shutil.which("dmesg") is None, reason="util-linux dmesg is not installed")
def test_the_simulated_dmesg_prints_what_util_linux_dmesg_prints(tmp_path):
    fleet = load_fleet("sim:gpu-fell-off", speed=0.0)
    node = fleet.node("gpu-lost01")
    now = fleet.clock.now()
    node.log_kernel(now - 5, "NVRM: Xid (PCI:0000:34:00): 74, pid=1, NVLink: fatal error")
    ours = execute(node, ["dmesg"], now)
    # The same ring buffer in the syslog format util-linux reads with --file.
    lines = []
    for e in node.kernel:
        if node.boot <= e.ts <= now:
            us = round((e.ts - node.boot) * 1e6)
            lines.append(f"<3>[{us // 1000000:5d}.{us % 1000000:06d}] {e.text}\n")
    (tmp_path / "ring").write_text("".join(lines))
    real = subprocess.run(["dmesg", "--file", str(tmp_path / "ring")], capture_output=True, text=True, check=True)
    assert ours.stdout == real.stdout
    assert "\n" + " " * 15 + "NVRM: (PCI ID" in ours.stdout  # dmesg's indent under the stamp
    bad = execute(node, ["dmesg", "--bogus"], now)
    real_bad = subprocess.run(["dmesg", "--bogus"], capture_output=True, text=True)
    assert (bad.exit_status, bad.stderr) == (real_bad.returncode, real_bad.stderr)


def _node_script(tmp_path, journal: str, ring: str) -> dict:
    """The probe's kernel and ring sections, run by the real sh and awk over canned tool outputs."""
    for name, text in (("journalctl", journal), ("dmesg", ring)):
        (tmp_path / f"{name}.out").write_text(text)
        (tmp_path / name).write_text(f"#!/bin/sh\ncat {tmp_path / name}.out\n")
        (tmp_path / name).chmod(0o755)
    done = subprocess.run(["sh", "-c", probe_script(only=("kernel", "ring"))], capture_output=True, text=True,
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))}, check=True)
    return split_probe_output(done.stdout)


def test_the_node_reads_the_ring_buffer_only_where_the_journal_falls_short(tmp_path):
    fleet = load_fleet("sim:journal-rotated", speed=0.0)
    node, now = fleet.node("gpu-rot01"), fleet.clock.now()
    journal = execute(node, ["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso", "--show-cursor"], now).stdout
    ring = execute(node, ["dmesg"], now).stdout
    sections = _node_script(tmp_path, journal, ring)
    assert sections["kernel"][1] == filter_journal(journal)
    assert sections["ring"] == (0, filter_ring(ring))
    assert "NV_ERR_FABRIC_STATE_OUT_OF_SYNC" in sections["ring"][1]
    whole = load_fleet("sim:healthy/hgx01", speed=0.0)
    journal = execute(whole.node("hgx01"), ["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso",
                                            "--show-cursor"], whole.clock.now()).stdout
    assert _node_script(tmp_path, journal, ring)["ring"] == (0, RING_SKIPPED + "\n")


def _event(code: str, line: str, ts: str) -> KernelEvent:
    return KernelEvent(code, line, timestamp=ts)


def test_a_line_in_both_sources_is_kept_once_and_a_repeat_twice():
    line = "NVRM: x [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from y"
    journal = (_event("OOS", f"2026-08-15T16:00:01+0000 h kernel: {line}", "2026-08-15T16:00:01+0000"),)
    ring = (_event("OOS", f"[  100.000000] {line}", "2026-08-15T15:00:00+00:00"),
            _event("OOS", f"[  200.000000] {line}", "2026-08-15T16:00:00+00:00"))
    merged = merge(journal, ring)
    assert [e.timestamp for e in merged] == ["2026-08-15T15:00:00+00:00", "2026-08-15T16:00:01+0000"]


def test_the_kernel_log_is_missing_only_when_neither_source_reads():
    denied = CommandResult(("journalctl",), 1, "No journal files were opened due to insufficient permissions.\n")
    no_ring = CommandResult(("dmesg",), 1, "dmesg: read kernel buffer failed: Operation not permitted\n")
    read = read_kernel(denied, no_ring, root=True, boot=1_786_000_000.0)
    assert read.missing is not None and read.missing.section == "kernel" and read.coverage is None
    ring = CommandResult(("dmesg",), 0, "[    0.000000] Linux version 6.1\n[  100.500000] NVRM: Xid (PCI:0000:34:00): 74, x\n")
    read = read_kernel(denied, ring, root=True, boot=1_786_000_000.0)
    assert read.missing is None
    assert read.coverage is not None and read.coverage.sources == ("dmesg",) and read.coverage.complete_since_boot
    (event,) = read.events
    assert event.timestamp == "2026-08-06T07:08:20+00:00" and event.xid == 74  # 1786000000 is 07:06:40 UTC


def test_the_kernel_log_missing_names_why_neither_source_read():
    # It named journalctl alone, as if dmesg had not been tried: the operator fixed the journal's
    # permissions and still had no kernel log.
    denied = CommandResult(("journalctl",), 1, "No journal files were opened due to insufficient permissions.\n")
    no_ring = CommandResult(("dmesg",), 1, "dmesg: read kernel buffer failed: Operation not permitted\n")
    read = read_kernel(denied, no_ring, root=True, boot=1_786_000_000.0)
    assert read.missing is not None and read.missing.reason == "permission denied"
    assert read.missing.detail == (
        "the kernel log could not be read: journalctl cannot read the system journal: No journal files were opened "
        "due to insufficient permissions; the kernel ring buffer (dmesg) could not be read: `dmesg`: dmesg: read "
        "kernel buffer failed: Operation not permitted")
    hung = CommandResult(("journalctl",), 124, "")
    read = read_kernel(hung, None, root=True, boot=None)  # the ring buffer never ran
    assert read.missing is not None and read.missing.reason == "timed out"
    assert read.missing.detail == ("the kernel log could not be read: `journalctl` did not finish; "
                                   "the kernel ring buffer (dmesg) could not be read: the poll ended before it ran")


def test_ring_lines_without_a_boot_time_date_nothing():
    ring = CommandResult(("dmesg",), 0, "[  100.500000] NVRM: Xid (PCI:0000:34:00): 74, x\n")
    denied = CommandResult(("journalctl",), 127, "sh: 1: journalctl: not found\n")
    read = read_kernel(denied, ring, root=True, boot=None)
    assert read.events[0].timestamp == "100.500000"
    assert read.coverage is not None and read.coverage.since is None and not read.coverage.complete_since_boot
    assert any("boot time could not be read" in n for n in read.coverage.notes)


def test_a_simulated_node_behind_sshd_serves_its_own_ring_buffer(sshd_fleet):
    """The shims serve ``dmesg``: a node behind the real-sshd rig never runs this machine's dmesg, and check
    over SSH reads the out-of-sync line from the node's ring buffer as it does in process."""
    rig = sshd_fleet(["gpu-rot01"], scenario="journal-rotated", speed=0)
    assert (rig.nodes["gpu-rot01"].bin / "dmesg").exists()
    ring = subprocess.run(["/bin/sh", "-c", "dmesg"], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{rig.nodes['gpu-rot01'].bin}:/usr/bin:/bin"})
    assert ring.returncode == 0 and "NV_ERR_FABRIC_STATE_OUT_OF_SYNC" in ring.stdout
    done = subprocess.run([*NVLS, "check", rig.target("gpu-rot01"), "--json", *rig.cli_args()],
                          capture_output=True, text=True, timeout=180)
    (node,) = json.loads(done.stdout)["nodes"]
    over_ssh = {k: node["kernel_coverage"][k] for k in ("sources", "complete_since_boot")}
    assert over_ssh == {"sources": ["journal", "dmesg"], "complete_since_boot": False}
    codes = [f["code"] for f in node["findings"]]
    assert "FABRIC_OUT_OF_SYNC" in codes and "KERNEL_COVERAGE" in codes
    assert codes == [f["code"] for f in _check("sim:journal-rotated")["findings"]]


async def _node_screen_coverage(tmp_path, scenario: str, host: str) -> tuple[bool, str]:
    """The node screen of ``host`` in ``sim:scenario``: whether the coverage line shows, and its words."""
    from textual.widgets import Static

    from nvls_tui.backends.simulated import SimulatedBackend
    from nvls_tui.console.app import NvlsApp
    from tests.waiting import open_node_screen

    fleet = load_fleet(f"sim:{scenario}", speed=0.0)
    app = NvlsApp([SimulatedBackend(fleet, host)], poll_interval=None, audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, host)
        line = screen.query_one("#kernel-coverage", Static)
        return bool(line.display), str(line.render())


async def test_the_node_screen_says_from_when_a_rotated_journal_covers_the_boot(tmp_path):
    shown, words = await _node_screen_coverage(tmp_path, "journal-rotated", "gpu-rot01")
    assert shown
    # The simulated clock: the out-of-sync line 30 min ago (15:40) starts the ring buffer's lines, the journal
    # starts 10 min ago (16:00).
    assert words.strip() == ("kernel log since 15:40 (30 min ago); the journal starts at 16:00, earlier lines "
                             "rotated away; ring buffer read as well")


async def test_the_node_screen_says_a_node_without_journal_is_read_from_the_ring_buffer(tmp_path):
    shown, words = await _node_screen_coverage(tmp_path, "no-journal", "gpu-nojrnl01")
    assert shown and words.strip() == "kernel log since the boot; no journal read; ring buffer read as well"


async def test_the_node_screen_says_nothing_of_a_journal_that_covers_the_boot(tmp_path):
    shown, _words = await _node_screen_coverage(tmp_path, "healthy", "hgx01")
    assert not shown


# ----- verify-fabric where the journal does not reach back to T0 ------------------------------------------


def _repair(spec: str, host: str, on_verify=None):
    """Repair ``host``; ``on_verify(node, now)`` runs as verify-fabric starts. Returns verify-fabric's step."""
    from tests.unit.test_verify_fabric_cursor import repair

    def at_verify(step, node, now):
        if step == "verify-fabric" and on_verify is not None:
            on_verify(node, now)

    outcome, _fleet = repair(spec, host, at_verify)
    return outcome, outcome.step("verify-fabric")


def test_verify_fabric_sees_a_fresh_out_of_sync_line_in_the_ring_buffer_when_the_journal_lost_it():
    from nvls_tui.sim import fabric

    def fault_then_vacuum(node, now):
        node.log_kernel(now, fabric.OUT_OF_SYNC_LINE)
        node.journal_since = now + 0.5  # vacuumed right after: the journal no longer reaches back to T0

    outcome, step = _repair("sim:journal-rotated", "gpu-rot01", fault_then_vacuum)
    assert (outcome.result, step.status) == ("failed", "failed"), step.message
    assert step.message.startswith("1 new fabric/Xid kernel lines since "), step.message
    assert "in the kernel ring buffer (dmesg) as well: the journal does not reach back to T0" in step.message
    assert "NV_ERR_FABRIC_STATE_OUT_OF_SYNC" in step.message


def test_verify_fabric_counts_no_ring_line_logged_before_t0():
    # The ring buffer still holds the incident's out-of-sync line (30 min before T0): not news.
    def vacuum(node, now):
        node.journal_since = now + 0.5

    outcome, step = _repair("sim:journal-rotated", "gpu-rot01", vacuum)
    assert step.status == "ok", step.message
    assert "in the kernel ring buffer (dmesg) as well" in step.message


def test_verify_fabric_on_a_node_without_journal_reads_the_ring_buffer():
    outcome, step = _repair("sim:no-journal", "gpu-nojrnl01")
    assert (outcome.result, step.status) == ("repaired", "ok"), step.message
    assert step.message.startswith("no new fabric or Xid kernel lines in the kernel ring buffer (dmesg) since "), \
        step.message


def test_verify_fabric_on_a_node_without_journal_sees_a_fresh_line_in_the_ring_buffer():
    from nvls_tui.sim import fabric

    outcome, step = _repair("sim:no-journal", "gpu-nojrnl01", lambda node, now: node.log_kernel(now, fabric.OUT_OF_SYNC_LINE))
    assert (outcome.result, step.status) == ("failed", "failed")
    assert "NV_ERR_FABRIC_STATE_OUT_OF_SYNC" in step.message and "ring buffer" in step.message


def test_verify_fabric_refuses_when_neither_the_journal_nor_the_ring_buffer_reads():
    outcome, step = _repair("sim:no-journal", "gpu-nojrnl01", lambda node, now: node.missing_tools.append("dmesg"))
    assert (outcome.result, step.status) == ("failed", "failed")
    assert step.message.startswith("cannot verify that the kernel logged no new fabric error: "), step.message
    assert "dmesg" in step.message


def test_ring_lines_are_dated_against_t0_by_the_nodes_clock_less_its_uptime():
    from nvls_tui.runbook.fabric import ring_faults_since

    ring = ("[  100.000000] Linux version 6.1\n"
            "[ 3597.000000] NVRM: Xid (PCI:0000:34:00): 74, pid=1, NVLink: fatal error\n"  # 2 s before T0
            "[ 3599.500000] NVRM: Xid (PCI:0000:34:00): 79, pid=1, GPU has fallen off the bus.\n"  # within the slack
            "[ 3700.000000] NVRM: Xid (PCI:0000:34:00): 74, pid=1, NVLink: fatal error\n")
    # Booted at 11:00:00 by the clock (uptime 4000 s at 12:06:40); T0 at 12:00:00 is 3600 s after the boot.
    fresh = ring_faults_since(ring, "2026-08-15 12:00:00", "2026-08-15 12:06:40", 4000.0)
    assert fresh is not None and [e.xid for e in fresh] == [79, 74]
    assert ring_faults_since(ring, "2026-08-15 12:00:00", "", 4000.0) is None  # the clock unread: undatable
    assert ring_faults_since(ring, "2026-08-15 12:00:00", "2026-08-15 12:06:40", None) is None
