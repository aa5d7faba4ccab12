"""Issue 28 item 10: logs on a key. ``l`` in the node screen opens the node's logs in three tabs: Fabric
Manager's journal of this boot, the kernel log since the boot (with the coverage it has; the ring buffer
where the journal falls short or is missing), and the node's past repairs opened as reports.

The simulated nodes answer the reads with the simulator's journalctl and dmesg (checked against the real
tools elsewhere: tests/lab/test_fm_journal.py, tests/sshd/test_kernel_coverage.py); each tab is compared with what
the node's own transport prints for the same command.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from nvls_tui.backends.base import Unreachable
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.logs import REPORT_BYTES, LogsScreen
from nvls_tui.model import CommandResult
from nvls_tui.model.node import KernelCoverage
from nvls_tui.sim.faults import HOSTILE_TEXT
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.node_logs import (
    FM_ARGV,
    KERNEL_ARGV,
    LINES,
    RING_ARGV,
    LogRead,
    bounded_lines,
    read_result,
    ring_reason,
)
from nvls_tui.views.report_text import readable_lines
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen, wait_until

FIXTURES = Path(__file__).parents[1] / "fixtures" / "audit-v1"


def _app(scenario: str, **kwargs) -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet(scenario)), poll_interval=None, clock=fixed_clock, **kwargs)


async def _open_logs(app, pilot, host: str) -> LogsScreen:
    """The node screen of ``host``, then ``l``; waits until every tab has been read."""
    await open_node_screen(app, pilot, host)
    await pilot.press("l")
    await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen), "the logs screen")
    screen = app.screen
    await wait_until(pilot, lambda: not any(w.group.startswith("logs-") and not w.is_finished for w in screen.workers)
                     and all(screen.status.values()), "every tab read")
    await pilot.pause()
    return screen


async def _node_says(app, host: str, argv) -> list[str]:
    result = await app.backend_for(host).run(list(argv), 20, privileged=True)
    return result.stdout.splitlines()


async def test_l_opens_fm_journal_kernel_log_and_past_repairs_of_the_node(tmp_path):
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    shutil.copy(FIXTURES / "repair-seed-incident-gpu05.jsonl", audit / "repair-20261202T040128Z-dd76ff.jsonl")
    app = _app("seed-incident", audit_dir=str(audit))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_logs(app, pilot, "gpu05")
        assert screen.active_tab == "fm"
        # FM's journal is what the node's journalctl prints for the same command, line for line.
        fm = await _node_says(app, "gpu05", FM_ARGV)
        assert fm and screen.shown["fm"] == fm
        assert screen.status["fm"].startswith(f"`journalctl -u nvidia-fabricmanager.service -b -o short-iso "
                                              f"--no-pager -n {LINES}`: {len(fm)} lines")
        # The kernel log: the journal covers the boot (the last poll said so), so no ring buffer.
        kernel = await _node_says(app, "gpu05", KERNEL_ARGV)
        assert screen.shown["kernel"] == [f"── journal: {' '.join(KERNEL_ARGV)} ──", *kernel]
        assert screen.status["kernel"] == ("coverage (last poll): the lines read reach back to the boot; read from "
                                           "the journal")
        # The past repairs: the audit log naming gpu05, opened as its report, read as text (no Markdown marks).
        expected = readable_lines((FIXTURES / "repair-seed-incident-gpu05.md").read_text())
        assert screen.shown["past"][0] == "── repair: repair-20261202T040128Z-dd76ff.jsonl ──"
        headings = [text for text, kind in expected if kind == "heading"]
        assert screen.shown["past"][1] == headings[0] == "NVLS repair incident report"
        assert [line for line in screen.shown["past"] if line in headings] == headings  # every section, in order
        assert "1 audit log in" in screen.status["past"] and "name gpu05" in screen.status["past"]
        await pilot.press("2")
        await pilot.pause()
        assert screen.active_tab == "kernel"
        await pilot.press("3")
        await pilot.pause()
        assert screen.active_tab == "past"
        await pilot.press("escape")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeScreen", "back on the node screen")


async def test_a_node_without_journalctl_says_so_and_the_kernel_tab_reads_the_ring_buffer():
    app = _app("no-journal")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_logs(app, pilot, "gpu-nojrnl01")
        assert screen.shown["fm"] == []
        assert screen.status["fm"] == (
            f"journalctl is not installed on gpu-nojrnl01: `{' '.join(FM_ARGV)}` exited 127 (sh: 1: journalctl: not "
            "found). FM's journal cannot be read there; 2 shows the kernel ring buffer (dmesg).")
        ring = await _node_says(app, "gpu-nojrnl01", RING_ARGV)
        assert screen.shown["kernel"] == ["── ring buffer: dmesg ──", *ring]
        assert any("Fabric state out of sync" in line or "out of sync" in line.lower() for line in ring), ring
        assert "journalctl is not on this node: the kernel ring buffer (dmesg) is read instead" in screen.status["kernel"]


async def test_a_rotated_journal_reads_the_ring_buffer_as_well_and_says_why():
    app = _app("journal-rotated")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_logs(app, pilot, "gpu-rot01")
        journal = await _node_says(app, "gpu-rot01", KERNEL_ARGV)
        ring = await _node_says(app, "gpu-rot01", RING_ARGV)
        assert screen.shown["kernel"] == [f"── journal: {' '.join(KERNEL_ARGV)} ──", *journal,
                                          "── ring buffer: dmesg ──", *ring]
        status = screen.status["kernel"]
        assert "not to the boot" in status
        assert "the journal does not reach back to the boot: the kernel ring buffer (dmesg) is read as well" in status
        # The out-of-sync line is in the ring buffer only (the journal was vacuumed after it).
        assert not any("out of sync" in line.lower() for line in journal)
        assert any("out of sync" in line.lower() for line in ring)


async def test_hostile_node_text_in_the_logs_is_shown_as_data():
    app = _app("hostile")
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await _open_logs(app, pilot, "gpu-evil01")
        await pilot.press("2")
        await pilot.pause()
        lines = [line for line in screen.shown["kernel"] if "Xid" in line]
        assert lines, screen.shown["kernel"]
        assert all("\x1b" not in line and "\x07" not in line for line in screen.shown["kernel"])
        assert "[bold red]PWNED[/]" in lines[0] and "[@click=app.quit]click me[/]" in lines[0]
        # Drawn as written: the markup is on the screen as text, and no click action came with it.
        pane = screen.query_one("#log-kernel")
        drawn = "\n".join(strip.text for strip in pane.lines)
        assert "[bold red]PWNED[/]" in drawn
        assert all(not seg.style or not seg.style.meta for strip in pane.lines for seg in strip)
        assert app.is_running  # the [@click=app.quit] text did nothing


async def test_the_logs_key_works_in_read_only_mode_and_sends_the_node_reads_only():
    app = _app("seed-incident", read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_node_screen(app, pilot, "gpu06")
        cmdlog = app.backend_for("gpu06").node.cmdlog
        before = len(cmdlog)
        screen = await _open_logs(app, pilot, "gpu06")
        assert screen.shown["fm"] and screen.shown["kernel"]
        # Every command the logs screen sent the node was one of its reads (sudo -n where the poll asks it).
        sent = {tuple(argv[2:]) if argv[:2] == ["sudo", "-n"] else tuple(argv) for _, argv in cmdlog[before:]}
        assert sent == {FM_ARGV, KERNEL_ARGV}


async def test_past_repairs_an_unlistable_directory_is_unknown_and_a_huge_log_is_named_not_opened(tmp_path):
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    huge = audit / "repair-huge.jsonl"
    line = '{"event": "step", "node": "gpu06", "pad": "' + "x" * 4000 + '"}\n'
    with huge.open("w") as fh:
        for _ in range(REPORT_BYTES // len(line) + 2):
            fh.write(line)
    app = _app("seed-incident", audit_dir=str(audit))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_logs(app, pilot, "gpu06")
        assert screen.shown["past"][1].startswith(f"{huge} is 8.0 MiB, too large to open here: nvls-tui report {huge}")


async def test_past_repairs_of_an_audit_directory_that_cannot_be_listed_are_unknown(tmp_path):
    not_a_dir = tmp_path / "audit"
    not_a_dir.write_text("a file where the audit directory should be\n")  # root or not, it cannot be listed
    app = _app("seed-incident", audit_dir=str(not_a_dir))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_logs(app, pilot, "gpu06")
        assert screen.status["past"] == (f"the audit directory {not_a_dir} cannot be listed (Not a directory): the "
                                         "past repairs of gpu06 are unknown")
        assert screen.shown["past"] == []


async def test_an_unreachable_node_is_one_line_per_tab():
    app = _app("seed-incident")
    async with app.run_test(size=(160, 48)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        backend = app.backend_for("gpu05")

        async def refused(*_args, **_kwargs):
            raise Unreachable("gpu05: connection refused (is sshd running on that port?)")

        backend.run = refused  # the transport fails after the node was polled
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.status["fm"]
                         and not app.screen.status["fm"].startswith("reading"), "the FM tab's error")
        screen = app.screen
        assert screen.status["fm"] == (f"`{' '.join(FM_ARGV)}` could not be run on gpu05: gpu05: connection refused "
                                       "(is sshd running on that port?)")
        await wait_until(pilot, lambda: "── ring buffer: dmesg ──" in screen.shown["kernel"], "the kernel tab")
        assert "the journal could not be read: the kernel ring buffer (dmesg) is read instead" in screen.status["kernel"]


def test_read_result_says_in_one_line_what_went_wrong():
    argv = list(FM_ARGV)
    missing = read_result("n1", argv, CommandResult(tuple(argv), 127, "", "bash: line 1: journalctl: command not found\n"))
    assert missing.missing_tool and missing.lines == ()
    assert missing.error == (f"journalctl is not installed on n1: `{' '.join(argv)}` exited 127 (bash: line 1: "
                             "journalctl: command not found)")
    denied = read_result("n1", argv, CommandResult(tuple(argv), 1, "", "No journal files were opened due to "
                                                   "insufficient permissions.\n"))
    assert denied.error == (f"`{' '.join(argv)}` exited 1 on n1: No journal files were opened due to insufficient "
                            "permissions.") and not denied.missing_tool
    hint = read_result("n1", argv, CommandResult(tuple(argv), 0, "-- No entries --\n", "Hint: You are currently not "
                                                 "seeing messages from other users and the system.\n"))
    assert hint.lines == ("-- No entries --",) and hint.error.startswith("Hint: You are currently not seeing")
    cut = read_result("n1", argv, CommandResult(tuple(argv), -1, "a\nb\n", "", truncated=True))
    assert cut.lines == ("a", "b") and "printed more than the console keeps" in cut.error


def test_lines_are_bounded_and_each_line_is_cut():
    lines, left_out = bounded_lines("\n".join(f"l{i}" for i in range(LINES + 5)) + "\n" + "x" * 5000)
    assert left_out == 6 and len(lines) == LINES and lines[0] == "l6"
    assert len(lines[-1]) == 2000 and lines[-1].endswith("…")


def test_the_ring_buffer_is_read_where_coverage_is_unknown_or_short():
    whole = KernelCoverage(since="2026-12-01T00:00:00+00:00", sources=("journal",), complete_since_boot=True)
    short = KernelCoverage(since="2026-12-01T10:00:00+00:00", sources=("journal", "dmesg"), complete_since_boot=False)
    fine = LogRead(("line",))
    assert ring_reason(whole, fine) is None
    assert ring_reason(None, fine) is not None  # unknown is never "the journal covers the boot"
    assert ring_reason(short, fine).startswith("the journal does not reach back to the boot")
    assert ring_reason(whole, LogRead(error="x", missing_tool=True)).startswith("journalctl is not on this node")
    assert ring_reason(whole, LogRead(error="timed out")).startswith("the journal could not be read")
    assert HOSTILE_TEXT  # the hostile scenario's text is what test_hostile_node_text... draws


async def test_a_read_in_flight_shows_the_loading_indicator_and_its_command_at_80x24():
    app = _app("seed-incident")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        backend = app.backend_for("gpu05")
        real_run, release = backend.run, __import__("asyncio").Event()

        async def slow(argv, *args, **kwargs):
            await release.wait()
            return await real_run(argv, *args, **kwargs)

        backend.run = slow
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen), "the logs screen")
        screen = app.screen
        await pilot.pause()
        pane = screen.query_one("#log-fm")
        assert pane.loading is True
        assert screen.status["fm"] == f"reading `{' '.join(FM_ARGV)}` …"
        # At 80x24 the header and the status line are on screen above the footer (the pane is covered by
        # Textual's loading indicator meanwhile), and so is the pane once the read is in.
        await wait_until(pilot, lambda: screen.query_one("#status-fm").region.height > 0, "the status laid out")
        for selector in ("#logs-header", "#status-fm"):
            region = screen.query_one(selector).region
            assert region.height > 0 and region.bottom <= 23, selector
        assert pane.loading is True  # still reading
        release.set()
        await wait_until(pilot, lambda: pane.loading is False and screen.shown["fm"], "the FM tab read")
        # A RichLog keeps what it is given until it has a size, and writes it on a later refresh: under load
        # the pane was laid out with its lines still to come. Wait for them, then hold where the pane is.
        await wait_until(pilot, lambda: pane.region.height > 0 and len(pane.lines) > 0, "the pane shown with its lines")
        assert pane.region.bottom <= 23 and len(pane.lines) > 0


async def test_slash_searches_the_tab_shown_and_n_steps_through_its_matches():
    app = _app("journal-rotated")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_logs(app, pilot, "gpu-rot01")
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("/", *"NVRM")
        await pilot.pause()
        hits = screen.search_state.hits
        assert hits and all(where[0] == "log-kernel" for where in hits)
        assert len(hits) == sum("NVRM" in strip.text for strip in screen.query_one("#log-kernel").lines)
        await pilot.press("enter")
        first = screen.search_state.current
        await pilot.press("n")
        assert len(hits) == 1 or screen.search_state.current != first
        await pilot.press("escape")  # ends the search, the logs screen stays
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)


async def test_the_console_as_started_reads_the_logs_through_its_poller_process():
    from nvls_tui.settings import Settings

    app = NvlsApp.from_settings(Settings(command="console", targets=("sim:no-journal",), poll_interval=5.0))
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_for_first_poll(60)
        screen = await _open_logs(app, pilot, "gpu-nojrnl01")
        assert type(app.backend_for("gpu-nojrnl01")).__name__ == "PollerHeldBackend"  # the simulator lives there
        assert screen.status["fm"].startswith("journalctl is not installed on gpu-nojrnl01")
        assert screen.shown["kernel"][0] == "── ring buffer: dmesg ──"
        assert any("out of sync" in line.lower() for line in screen.shown["kernel"])
