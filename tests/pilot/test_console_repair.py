"""Pilot tests of the repair console: plan, typed confirmation, side-by-side runbook, abort, report.

The simulated fleets run on a frozen clock (speed 0): the runbook then waits in simulated time
(each pause moves the clock), so a whole repair takes a fraction of a real second and always ends
the same way. Where a test must act mid-run, a gate holds one command until the test lets it go.
"""

from __future__ import annotations

import asyncio
import io
import re

import pytest
from rich.console import Console

from nvls_tui.backends.base import CommandResult
from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.console.widgets.bandwidth_plot import BandwidthPlot
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.console.widgets.output_pane import OutputPane
from nvls_tui.model import Verdict
from nvls_tui.runbook.drift import steady_units
from nvls_tui.runbook.steps import persistence_modes, unit_states
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import click_shown, first_poll, wait_until

SIZE = (160, 48)
REFUSAL = ("The following GPUs could not be reset:\n  GPU 00000000:18:00.0: In use by another client\n\n"
           "1 device is currently being used by one or more other processes. Please first kill all processes "
           "using this device and all compute applications running in the system.\n")




class FaultBackend(SimulatedBackend):
    """A simulated node whose ``nvidia-smi -r`` is refused, or held at a gate until the test opens it."""

    def __init__(self, fleet, name, *, refuse_reset: bool = False, gate: asyncio.Event | None = None):
        super().__init__(fleet, name)
        self.refuse_reset = refuse_reset
        self.gate = gate
        self.at_gate = asyncio.Event()

    async def run(self, argv, timeout=None, **kw):
        if tuple(argv) == ("nvidia-smi", "-r"):
            if self.gate is not None:
                self.at_gate.set()
                await self.gate.wait()
            if self.refuse_reset:
                return CommandResult(tuple(argv), 255, REFUSAL, "")
        return await super().run(argv, timeout, **kw)


def plain(static) -> str:
    """What a Static shows, as plain text (its content rendered by Rich, wide enough not to wrap)."""
    console = Console(width=300, file=io.StringIO(), color_system=None)
    console.print(static.content)
    return console.file.getvalue()


def texts(widget) -> str:
    """Every line an OutputPane (RichLog) holds, as plain text."""
    return "\n".join(strip.text for strip in widget.lines)


async def start_repair(app, pilot, names: list[str], select: bool = True) -> RunbookScreen:
    """From the fleet: select ``names`` (space), r, wait for the plan, type the names, Enter."""
    await first_poll(app, timeout=30)
    await pilot.pause()
    grid = app.screen.query_one(FleetGrid)
    if select:
        for name in names:
            grid.move_cursor(row=grid.visible_hosts.index(name))
            await pilot.press("space")
    await pilot.press("r")
    await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == len(names),
                     "the dry run of every selected node")
    await pilot.pause()
    await pilot.press(*" ".join(names))
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook screen")
    return app.screen


async def test_repairing_gpu05_and_gpu06_side_by_side_ends_repaired_with_the_plot_filled(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05", "gpu06"])
        await wait_until(pilot, lambda: screen.finished_at is not None, "both repairs to end")
        await pilot.pause()
        columns = screen.columns
        assert list(columns) == ["gpu05", "gpu06"]
        assert not screen.query("TabbedContent")  # two nodes sit side by side, not in tabs
        for column in columns.values():
            run = column.run
            assert run.result == "repaired", run.message
            assert [s.status for s in run.steps.values()] == ["ok"] * 8
            plot = column.query_one(BandwidthPlot)
            assert len(plot.rows) == 5 and all(oop and ip for _, oop, ip in plot.rows)  # 8M..128M, both series
            assert plot.result is not None and plot.result.passed
            assert plot.result.avg_busbw == pytest.approx(292, abs=5)
            assert "GB/s" in plot.title_text() and "PASSED" in plot.title_text()
            summary = plain(column.query_one(".summary"))
            assert "repaired" in summary and f"{plot.result.avg_busbw:.1f} GB/s" in summary
            assert "nvidia-smi -r" in texts(column.query_one(OutputPane))
        # The nodes are polled again at the end: both now healthy on the fleet.
        await wait_until(pilot, lambda: all(app.verdict(h) is Verdict.HEALTHY for h in ("gpu05", "gpu06")),
                         "the re-poll after the repair")

        await pilot.press("e")
        await wait_until(pilot, lambda: screen.report_path is not None, "the incident report")
        report = screen.report_path.read_text()
        assert screen.report_path.parent == tmp_path
        assert "# NVLS repair incident report" in report and "## gpu05" in report and "## gpu06" in report
        assert "repaired" in report


async def test_the_plan_lists_the_exact_commands_in_order_and_needs_the_typed_names(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await pilot.press("space", "space", "r")  # gpu05, gpu06 (broken first), then the plan
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 2,
                         "the dry run")
        plan = app.screen
        body = plain(plan.query_one("#plan-body-0"))
        assert plan.hosts == ["gpu05", "gpu06"]
        assert body.index("$ systemctl stop nvidia-snapshot.timer") < body.index("$ nvidia-smi -r") \
            < body.index("$ systemctl start nvidia-fabricmanager.service")
        go = plan.query_one("#plan-go")
        await pilot.press(*"gpu05")
        assert go.disabled  # one name of two does not confirm
        await pilot.press("enter")
        assert isinstance(app.screen, PlanScreen)
        await pilot.press(*" gpu06")
        assert not go.disabled
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PlanScreen), "the fleet again")
        # Cancelling ran nothing that changes a node: no reset, no unit stopped.
        for host in ("gpu05", "gpu06"):
            assert not any(argv[:2] in (["nvidia-smi", "-r"], ["systemctl", "stop"])
                           for _, argv in fleet.node(host).cmdlog)


async def test_a_refused_reset_shows_the_failure_and_the_restore_and_leaves_services_as_they_were(tmp_path):
    fleet = load_fleet("sim:persistence-blocks-reset", speed=0)
    backend = FaultBackend(fleet, "gpu-pm01", refuse_reset=True)
    before = await backend.snapshot()
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu-pm01"], select=False)
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end")
        await pilot.pause()
        column = screen.query_one(RunbookColumn)
        run = column.run
        assert run.result == "failed" and "In use by another client" in run.message
        statuses = {name: s.status for name, s in run.steps.items()}
        assert statuses["reset"] == "failed" and statuses["restore"] == "ok"
        assert statuses["fabric-manager"] == statuses["smoke-test"] == "skipped"
        output = texts(column.query_one(OutputPane))
        assert re.search(r"✖ reset failed in \d+\.\d s: nvidia-smi -r was refused", output) and "restored " in output
        summary = plain(column.query_one(".summary"))
        assert "failed" in summary and "restored:" in summary and "kubelet" in summary
        assert column.has_class("-failed")
    after = await backend.snapshot()
    # The snapshot oneshot reads activating or inactive by the second (runbook.drift.FLAPPING_UNITS): the restore
    # leaves it to its timer, which runs again as before.
    assert steady_units(after) == steady_units(before) and unit_states(after)["nvidia-snapshot.timer"] == "active"
    assert persistence_modes(after) == persistence_modes(before) and set(persistence_modes(after).values()) == {
        "Enabled"}


async def test_aborting_mid_run_restores_everything_and_never_starts_fabric_manager(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()
    backends = [FaultBackend(fleet, n, gate=gate) if n == "gpu05" else SimulatedBackend(fleet, n) for n in fleet.names]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    gpu05 = backends[fleet.names.index("gpu05")]
    before = await gpu05.snapshot()
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        await wait_until(pilot, gpu05.at_gate.is_set, "the reset to be under way")
        column = screen.query_one(RunbookColumn)
        assert column.run.current == "reset" and column.run.running
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the abort confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook again")
        gate.set()
        await wait_until(pilot, lambda: screen.finished_at is not None, "the aborted run to end")
        await pilot.pause()
        run = column.run
        assert run.result == "aborted" and "aborted by the operator" in run.message
        assert run.steps["reset"].status == "ok" and run.steps["restore"].status == "ok"
        # The abort lands before fabric-manager's first command: that step stops there, unstarted.
        fm = run.steps["fabric-manager"]
        assert fm.status == "failed" and "aborted by the operator" in fm.message
        assert [run.steps[s].status for s in ("verify-fabric", "smoke-test")] == ["skipped", "skipped"]
        assert "kubelet.service" in run.restored and "nvidia-snapshot.timer" in run.restored
    after = await gpu05.snapshot()
    units_before, units_after = steady_units(before), steady_units(after)  # the snapshot oneshot: its timer's
    assert units_after == units_before  # FM was failed before; the aborted run never started it
    assert not any(argv[:3] == ["systemctl", "start", "nvidia-fabricmanager.service"]
                   for _, argv in fleet.node("gpu05").cmdlog)


async def test_read_only_mode_shows_the_plan_and_refuses_the_repair():
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        app.screen.action_repair()
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the dry-run plan")
        plan = app.screen
        assert plan.dry_run_only
        await wait_until(pilot, lambda: len(plan.outcomes) == 1, "the dry run")
        assert plan.typed_ok("gpu05") is False and not plan.query_one("#plan-go").display
        assert not any(argv[:2] == ["systemctl", "stop"] for _, argv in fleet.node("gpu05").cmdlog)


async def test_five_nodes_go_to_tabs_instead_of_columns(tmp_path):
    fleet = load_fleet("sim:healthy", speed=0)
    extra = load_fleet("sim:seed-incident/gpu05", speed=0)
    app = NvlsApp(sim_backends(fleet) + sim_backends(extra), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        screen = RunbookScreen(list(app.backends), start=False, clock=lambda: 0.0, services=app.services)
        app.push_screen(screen)
        await wait_until(pilot, lambda: app.screen is screen and len(screen.columns) == 5, "five columns")
        assert screen.query("TabbedContent") and not screen.query("#runbook-columns")
