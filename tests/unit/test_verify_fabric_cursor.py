"""verify-fabric reads the kernel lines logged after the repair began in the journal's own order (the cursor
preflight read at T0), not by the node's clock: a clock stepped back neither fails a good repair on a line
logged before it (sim:clock-step/gpu-ahead01) nor hides a fresh fabric error logged after T0."""

from __future__ import annotations

import asyncio
import json

from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.cli import main
from nvls_tui.model import CommandResult
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.events import StepStarted
from nvls_tui.runbook.plan import plan_commands
from nvls_tui.runbook.steps import KERNEL_CURSOR_ARGV
from nvls_tui.sim import fabric
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_runbook_sim import FAST, SPEED
from tests.unit.test_runbook_units import incident_node


def repair(spec: str, host: str, on_step=None):
    """Repair ``host`` of ``spec``; ``on_step(step, node, now)`` runs as each step starts."""
    fleet = load_fleet(spec, speed=SPEED)
    node = fleet.node(host)

    def sink(event):
        if on_step is not None and isinstance(event, StepStarted):
            on_step(event.step, node, fleet.clock.now())

    return asyncio.run(Runbook(sim_backends(fleet)[0], FAST, on_event=sink).run()), fleet


def journal_reads(fleet, host: str) -> list[list[str]]:
    return [argv for _, argv in fleet.node(host).cmdlog if argv[:1] == ["journalctl"] and "-b" not in argv]


def test_a_node_whose_clock_stepped_back_is_repaired_despite_a_line_dated_after_t0_but_logged_before(capsys,
                                                                                                    monkeypatch):
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")  # the repair's waits move the frozen clock on, not real time
    code = main(["repair", "sim:clock-step/gpu-ahead01", "--yes", "--json"])
    doc = json.loads(capsys.readouterr().out)
    (node,) = doc["nodes"]
    assert (code, node["result"]) == (0, "repaired"), node


def test_verify_fabric_reads_after_the_cursor_taken_at_t0_and_says_so():
    outcome, fleet = repair("sim:clock-step/gpu-ahead01", "gpu-ahead01")
    step = outcome.step("verify-fabric")
    assert step.status == "ok" and "after the journal cursor read at" in step.message, step.message
    reads = journal_reads(fleet, "gpu-ahead01")
    assert any(a.startswith("--after-cursor=s=") for argv in reads for a in argv), reads
    assert not any("--since" in argv for argv in reads), reads


def test_a_fresh_out_of_sync_line_logged_after_t0_still_fails_verify_fabric_and_alone():
    def fault_comes_back(step, node, now):
        if step == "verify-fabric":
            node.log_kernel(now, fabric.OUT_OF_SYNC_LINE)

    outcome, _ = repair("sim:clock-step/gpu-ahead01", "gpu-ahead01", fault_comes_back)
    step = outcome.step("verify-fabric")
    assert outcome.result == "failed" and step.status == "failed"
    assert step.message.startswith("1 new fabric/Xid kernel lines after the journal cursor read at "), step.message
    assert "OUT_OF_SYNC" in step.message


def test_a_fresh_line_logged_after_the_clock_stepped_back_during_the_repair_is_not_hidden():
    def step_back_then_fault(step, node, now):
        if step == "reset":
            node.step_clock(now, -3600.0)  # NTP steps the clock back mid-repair: T0 is now an hour ahead
        if step == "verify-fabric":
            node.log_kernel(now, fabric.OUT_OF_SYNC_LINE)

    outcome, _ = repair("sim:clock-step/gpu-ntp01", "gpu-ntp01", step_back_then_fault)
    step = outcome.step("verify-fabric")
    assert (outcome.result, step.status) == ("failed", "failed"), step.message
    assert "OUT_OF_SYNC" in step.message


class NoKernelEntryAtT0(SimulatedBackend):
    """A node whose kernel journal answers T0's cursor read as journalctl does when it visits no entry."""

    async def run(self, argv, timeout=None, **kw):
        if tuple(argv) == KERNEL_CURSOR_ARGV:
            return CommandResult(tuple(argv), 1, "", "")
        return await super().run(argv, timeout, **kw)


def test_without_a_cursor_at_t0_verify_fabric_falls_back_to_the_node_s_clock_and_says_so():
    fleet = load_fleet("sim:clock-step/gpu-ntp01", speed=SPEED)
    outcome = asyncio.run(Runbook(NoKernelEntryAtT0(fleet, "gpu-ntp01"), FAST).run())
    step = outcome.step("verify-fabric")
    assert step.status == "ok" and "by the node's clock" in step.message and "no journal cursor" in step.message
    assert any("--since" in argv for argv in journal_reads(fleet, "gpu-ntp01"))


def test_a_cursor_the_journal_no_longer_holds_falls_back_to_the_node_s_clock_and_says_so():
    def vacuumed(step, node, now):
        if step == "verify-fabric":
            node.kernel[:] = [e for e in node.kernel if e.ts > now - 60]  # the entries up to T0 rotated away
            node.log_kernel(now, "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)")

    outcome, _ = repair("sim:clock-step/gpu-ntp01", "gpu-ntp01", vacuumed)
    step = outcome.step("verify-fabric")
    assert step.status == "ok" and "by the node's clock" in step.message
    assert "no longer holds" in step.message, step.message


class RejectingJournal(SimulatedBackend):
    """A node whose journalctl refuses to seek to the cursor it handed out (as journalctl words it)."""

    async def run(self, argv, timeout=None, **kw):
        if argv[:1] == ("journalctl",) and any(a.startswith(("--cursor=", "--after-cursor=")) for a in argv):
            return CommandResult(tuple(argv), 1, "", "Failed to seek to cursor: Invalid argument\n")
        return await super().run(argv, timeout, **kw)


def test_a_cursor_the_journal_rejects_fails_verify_fabric_closed():
    fleet = load_fleet("sim:clock-step/gpu-ntp01", speed=SPEED)
    outcome = asyncio.run(Runbook(RejectingJournal(fleet, "gpu-ntp01"), FAST).run())
    step = outcome.step("verify-fabric")
    assert (outcome.result, step.status) == ("failed", "failed")
    assert "cannot verify" in step.message and "Failed to seek to cursor" in step.message, step.message


def test_the_dry_run_shows_the_cursor_read_at_t0_and_the_read_after_it():
    commands = plan_commands(incident_node())
    assert "journalctl -k -n 0 --show-cursor -q --no-pager" in commands["preflight"]
    *reads, fallback = commands["verify-fabric"]
    assert reads[-1] == "journalctl -k '--after-cursor=<CURSOR>' --no-pager -o short-iso"
    # The step's decision point (runbook/program.py KERNEL_SINCE_T0) is shown: where it reads by the clock instead.
    assert fallback.startswith("# where no cursor was read at T0") and "ring buffer" in fallback
