"""The console's workers: a newer request supersedes an older one, and each tells how it ended in a message.

The plan screen plans again when the operator changes what the restore puts back. Two quick toggles
used to start two dry runs side by side; when the first (stale) one finished last, its plan was shown
under a checkbox that said the opposite, and typing the names approved a plan nobody saw.

An action posts past-tense messages (``ActionStarted``, then ``ActionFinished``, ``RepairFinished`` or
``ActionFailed``), and the plan's typed confirmation ``PlanApproved``: the tests below assert the messages
that flowed, and where they went, as Harlequin's do.
"""

from __future__ import annotations

import asyncio

from textual.message_pump import active_message_pump
from textual.widgets import Checkbox

from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.messages import ActionFailed, ActionFinished, ActionStarted, PlanApproved, RepairFinished
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.fleet import FleetScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_console_repair import SIZE, plain, start_repair
from tests.pilot.test_console_repair_actions import confirm
from tests.pilot.test_operations_console import DCGM, unit_by_hand
from tests.test_console_fakes import fixed_clock
from tests.waiting import click_shown, first_poll, open_node_screen, wait_until


class GatedReadBackend(SimulatedBackend):
    """A simulated node whose next read, once a gate is set, waits at that gate (a slow node).

    Attributes:
        gate: the event the next ``snapshot()`` waits for; used once, then cleared.
        at_gate: set when a read reached the gate.
        reads: how many reads ended.
    """

    def __init__(self, fleet, name) -> None:
        super().__init__(fleet, name)
        self.gate: asyncio.Event | None = None
        self.at_gate = asyncio.Event()
        self.reads = 0

    async def snapshot(self):
        gate, self.gate = self.gate, None
        if gate is not None:
            self.at_gate.set()
            await gate.wait()
        state = await super().snapshot()
        self.reads += 1
        return state


class Flow(list):
    """The action messages that flowed, once each (a message bubbling from a screen to the app is seen twice)."""

    KINDS = (ActionStarted, ActionFinished, ActionFailed, RepairFinished, PlanApproved)

    def __init__(self) -> None:
        super().__init__()
        self.route: list[tuple[str, str]] = []  # (message, the pump that handled it), every arrival

    def __call__(self, message) -> None:
        if isinstance(message, self.KINDS):
            self.route.append((type(message).__name__, type(active_message_pump.get()).__name__))
            if not any(m is message for m in self):
                self.append(message)

    def of(self, kind) -> list:
        """The messages of ``kind``, in order."""
        return [m for m in self if isinstance(m, kind)]


def plan_workers(app) -> list:
    """The plan screen's dry runs still running."""
    return [w for w in app.workers if w.group == "plan" and not w.is_finished]


async def test_two_quick_toggles_of_put_back_show_the_plan_of_the_last_choice_even_when_the_first_ends_last(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    backends = [GatedReadBackend(fleet, name) if name == "gpu05" else SimulatedBackend(fleet, name)
                for name in fleet.names]
    gpu05 = next(b for b in backends if b.host == "gpu05")
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await unit_by_hand(app, pilot, node, "s", DCGM, "inactive")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, NodeScreen), "the fleet")
        await pilot.press("r")  # the cursor is on gpu05, the broken node listed first
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes
                         and not plan_workers(app), "the first plan")
        screen = app.screen
        put_back = screen.query_one("#plan-put-back", Checkbox)
        assert put_back.value and f"$ systemctl start {DCGM}" in plain(screen.query_one("#plan-body-0"))

        gate = gpu05.gate = asyncio.Event()
        put_back.toggle()  # leave it stopped: this dry run is slow
        await wait_until(pilot, lambda: gpu05.at_gate.is_set(), "the slow dry run to read the node")
        (slow,), reads = plan_workers(app), gpu05.reads
        put_back.toggle()  # put it back after all: this dry run is quick
        await wait_until(pilot, lambda: gpu05.reads > reads and all(w is slow for w in plan_workers(app)),
                         "the quick dry run to end")
        gate.set()
        await wait_until(pilot, lambda: not plan_workers(app), "every dry run to end")
        await pilot.pause()

        assert put_back.value
        assert f"$ systemctl start {DCGM}" in plain(screen.query_one("#plan-body-0"))


async def test_a_sigterm_from_the_node_screen_posts_action_started_then_finished_with_the_signalled_outcome(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        victim = app.fleet.get("gpu05").holders[0]
        await pilot.press("space", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: flow.of(ActionFinished), "the action's end")
    assert [type(m) for m in flow] == [ActionStarted, ActionFinished]
    started, finished = flow
    assert (started.description, started.hosts) == ("SIGTERM on gpu05", ("gpu05",))
    done = finished.outcome
    assert (done.host, done.action, done.ok, done.severity) == ("gpu05", "sigterm", True, "information")
    assert str(victim.pid) in done.message


async def test_a_unit_stopped_by_hand_posts_its_outcome_and_the_poll_that_follows_shows_it_stopped(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await unit_by_hand(app, pilot, node, "s", DCGM, "inactive")  # waits for the re-poll the app starts
    (finished,) = flow.of(ActionFinished)
    assert (finished.outcome.action, finished.outcome.ok) == ("unit-stop", True)
    assert [m.description for m in flow.of(ActionStarted)] == [f"stop {DCGM} on gpu05"]


async def test_a_smoke_test_in_the_side_pane_posts_its_outcome_with_the_runbook_result(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await open_node_screen(app, pilot, "gpu01")
        await pilot.press("T")
        await confirm(app, pilot)
        pane = app.screen
        await wait_until(pilot, lambda: flow.of(ActionFinished), "the smoke test's end")
        await pilot.pause()
        assert pane.outcome is not None and pane.outcome.result == "ok"
    (finished,) = flow.of(ActionFinished)
    assert (finished.outcome.host, finished.outcome.action, finished.outcome.ok) == ("gpu01", "smoke", True)
    assert finished.outcome.outcome is pane.outcome


async def test_a_repair_from_the_console_posts_plan_approved_then_action_started_then_repair_finished(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"])
        await wait_until(pilot, lambda: flow.of(RepairFinished), "the repair's end")
        assert screen.finished_at is not None
    assert [type(m) for m in flow] == [PlanApproved, ActionStarted, RepairFinished]
    assert [m.description for m in flow.of(ActionStarted)] == ["repair gpu05"]
    (finished,) = flow.of(RepairFinished)
    assert finished.hosts == ("gpu05",) and finished.error is None
    assert finished.results == {"gpu05": "repaired"} and finished.ok


async def test_an_action_that_raises_posts_action_failed_and_the_operator_reads_why(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow, said = Flow(), []

    async def broken() -> None:
        raise RuntimeError("the transport fell over")

    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await first_poll(app, timeout=30)
        app.notify = lambda message, **kw: said.append((message, kw.get("severity")))
        app.start_action("restore on gpu05", broken(), hosts=["gpu05"])
        await wait_until(pilot, lambda: said, "the failure to be said")
    assert [type(m) for m in flow] == [ActionStarted, ActionFailed]
    failed = flow[1]
    assert (failed.description, failed.error, failed.hosts) == ("restore on gpu05", "the transport fell over",
                                                                ("gpu05",))
    assert said == [("restore on gpu05 failed: the transport fell over", "error")]


async def test_the_plans_confirmation_goes_to_the_fleet_first_which_clears_its_selection_then_to_the_app(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        fleet_screen = app.screen
        assert isinstance(fleet_screen, FleetScreen)
        await pilot.press("space", "space", "r")  # gpu05 and gpu06, the two broken nodes listed first
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 2,
                         "the dry run of both")
        assert fleet_screen.selected == ["gpu05", "gpu06"]
        await pilot.press(*"gpu06 gpu05")
        await wait_until(pilot, lambda: not app.screen.query_one("#plan-go").disabled, "the names to be typed")
        await pilot.click("#plan-go")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook screen")
        runbook = app.screen
        (approved,) = flow.of(PlanApproved)
        # The fleet heard it, then the app (which opened the runbook with that very approval).
        assert [r for r in flow.route if r[0] == "PlanApproved"] == [("PlanApproved", "FleetScreen"),
                                                                     ("PlanApproved", "NvlsApp")]
        assert fleet_screen.selected == []
        assert approved.approval.hosts == ("gpu05", "gpu06") and approved.approval.strategy == "parallel"
        assert sorted(approved.approval.bases) == ["gpu05", "gpu06"]
        assert runbook.approval is approved.approval and runbook.hosts == ["gpu05", "gpu06"]
        await wait_until(pilot, lambda: len(flow.of(RepairFinished)) == 1, "the repair's end")


async def test_a_cancelled_plan_posts_no_approval_opens_no_runbook_and_keeps_the_selection(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        fleet_screen = app.screen
        await pilot.press("space", "r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes, "the dry run")
        await pilot.press(*"gpu05")
        await pilot.click("#plan-cancel")
        await wait_until(pilot, lambda: app.screen is fleet_screen, "the fleet again")
        await pilot.pause()
        assert fleet_screen.selected == ["gpu05"]
        assert not any(isinstance(s, RunbookScreen) for s in app.screen_stack)
    assert list(flow) == []
    assert not any(argv[:2] == ["systemctl", "stop"] for _, argv in fleet.node("gpu05").cmdlog)
