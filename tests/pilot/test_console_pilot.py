"""Pilot tests of the console on hand-built nodes: keys, modals, read-only, palette, responsiveness."""

from __future__ import annotations

import json

from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.help import HelpScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.model import NodeState, Verdict
from nvls_tui.poll.probe import LOCK_DIR, STATE_DIR
from tests.test_console_fakes import FakeBackend, fixed_clock, make_node
from tests.waiting import click_shown, first_poll, open_node_screen, palette_settled, wait_until

SIZE = (160, 48)


def fleet(**kwargs) -> tuple[NvlsApp, dict[str, FakeBackend]]:
    """gpu05 broken with 3 holders, gpu06 healthy; polled once, clock fixed."""
    backends = {"gpu05": FakeBackend(make_node("gpu05", broken=True, holders=3, fm="failed")),
                "gpu06": FakeBackend(make_node("gpu06"))}
    app = NvlsApp(list(backends.values()), poll_interval=None, clock=fixed_clock, **kwargs)
    return app, backends




async def test_the_fleet_puts_the_broken_node_first_and_enter_opens_it():
    app, _ = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        assert grid.visible_hosts == ("gpu05", "gpu06")
        assert app.verdict("gpu05") is Verdict.BROKEN
        assert grid.get_cell("gpu05", "verdict").plain == "✖ broken"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen")
        assert app.screen.host == "gpu05"
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, NodeScreen), "the fleet again")


async def test_a_repoll_writes_only_the_cells_that_changed_and_keeps_the_cursor():
    app, backends = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        await pilot.press("down")
        assert grid.current_host == "gpu06"
        assert grid.show(app.fleet, app.diagnoses, grid.visible_hosts, fixed_clock()) == 0
        backends["gpu06"].state = backends["gpu06"].state.replace(holders=())
        app.poll_now("gpu06")
        await wait_until(pilot, lambda: grid.get_cell("gpu06", "holders").plain == "0", "the new holder count")
        assert grid.current_host == "gpu06"


async def test_a_poll_folded_into_the_fleet_does_not_repaint_the_whole_screen():
    # Every poll of 1,024 nodes used to repaint the screen (the app's fleet was a repainting
    # reactive): ~30 full renders a second, the console's longest stalls (bench/ui_bench.py).
    app, backends = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        repaints = []
        original = app.screen.refresh

        def counted(*regions, **kwargs):
            if not regions:
                repaints.append(kwargs)
            return original(*regions, **kwargs)

        app.screen.refresh = counted
        backends["gpu06"].state = backends["gpu06"].state.replace(holders=())
        app.poll_now("gpu06")
        await wait_until(pilot, lambda: grid.get_cell("gpu06", "holders").plain == "0", "the new holder count")
        assert repaints == []


async def test_selecting_and_sigterming_holders_removes_them():
    app, backends = fleet()
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await pilot.press("space", "down", "space")
        assert sorted(node.selected) == [4000, 4001]
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        modal = app.screen
        assert modal.title_text == "Send SIGTERM to 2 processes on gpu05?"
        assert modal.lines[0] == "4000(root) /usr/bin/dcgm-exporter --instance 0"
        assert app.focused.id == "cancel"  # a stray Enter changes nothing
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: len(app.fleet.get("gpu05").holders) == 1, "the re-poll")
        assert backends["gpu05"].signalled == [4000, 4001]
        assert [h.pid for h in app.fleet.get("gpu05").holders] == [4002]
        assert node.selected == {}


async def test_the_default_answer_of_the_confirmation_is_cancel():
    app, backends = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("a", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")
        assert backends["gpu05"].signalled == []


async def test_a_pid_that_changed_is_reported_and_not_signalled():
    app, backends = fleet()
    notes = []
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        app.notify = lambda message, **kw: notes.append((message, kw.get("severity")))
        backends["gpu05"].changed_pids = {4001}
        await pilot.press("a", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: notes, "the outcome notification")
        message, severity = notes[0]
        assert backends["gpu05"].signalled == [4000, 4002]
        assert "4001(root) /usr/bin/dcgm-exporter --instance 1: changed since selected, refused" in message
        assert "2 of 3 signalled" in message
        assert severity == "warning"


async def test_read_only_hides_and_refuses_every_action_that_changes_a_node():
    from nvls_tui.console.messages import ActionFailed
    from nvls_tui.console.screens.node import READ_ONLY_REFUSAL
    from tests.pilot.test_console_workers import Flow

    app, backends = fleet(read_only=True)
    notes, flow = [], Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await pilot.press("a")
        assert node.check_action("sigterm", ()) is False
        await pilot.press("t")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        app.notify = lambda message, **kw: notes.append((message, kw.get("severity")))
        node.action_sigterm()
        node.action_stop_unit("kubelet.service")
        await wait_until(pilot, lambda: len(notes) == 2, "both refusals to be said")
        # Each refusal is a message that names the action and says why; nothing started (no ActionStarted).
        assert [(type(m), m.description, m.error, m.refused, m.hosts) for m in flow] == [
            (ActionFailed, "SIGTERM on gpu05", READ_ONLY_REFUSAL, True, ("gpu05",)),
            (ActionFailed, "stop kubelet.service on gpu05", READ_ONLY_REFUSAL, True, ("gpu05",))]
        assert notes == [(READ_ONLY_REFUSAL, "warning")] * 2
        assert backends["gpu05"].signalled == [] and backends["gpu05"].ran == []
        footer_keys = {b.binding.id for b in app.active_bindings.values() if b.enabled}
        assert "node.sigterm" not in footer_keys


async def confirmation_from_the_palette(app, pilot, typed: str, match: str) -> None:
    """``typed`` in the palette, its entry (``match``) chosen with Enter, until its confirmation is up."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*typed)
    await palette_settled(pilot, typed, match)
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")


async def test_the_palette_runs_the_same_action_as_the_key():
    app, _ = fleet()
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await pilot.press("a")
        assert len(node.selected) == 3
        await confirmation_from_the_palette(app, pilot, "SIGTERM selected on gpu05", "SIGTERM selected on gpu05")
        assert app.screen.title_text == "Send SIGTERM to 3 processes on gpu05?"


async def stop_kubelet_from_the_palette(app, pilot, *, shown: list[str] | None = None) -> None:
    """On gpu05's node screen, ``unit: Stop kubelet`` from the palette; its confirmation shown, then confirmed."""
    await open_node_screen(app, pilot, "gpu05")
    await confirmation_from_the_palette(app, pilot, "unit: Stop kubelet", "Stop kubelet")
    if shown is not None:  # what the confirmation lists, read before it is confirmed
        shown.extend(app.screen.lines)
    await click_shown(pilot, "#confirm")


async def test_the_palette_stops_a_unit_after_a_confirmation(tmp_path):
    app, backends = fleet()
    async with app.run_test(size=SIZE) as pilot:
        shown: list[str] = []
        await stop_kubelet_from_the_palette(app, pilot, shown=shown)
        assert shown == ["systemctl stop kubelet.service"]
        await wait_until(pilot, lambda: ("systemctl", "stop", "kubelet.service") in backends["gpu05"].ran,
                         "systemctl")
        # Under the node's lock (taken first, given back after), the state before is asked first (it goes to the
        # ledger and the audit log), then the stop.
        await wait_until(pilot, lambda: backends["gpu05"].ran[-1][0] == "rmdir", "the lock given back")
        ran = backends["gpu05"].ran
        assert [argv for argv in ran if argv[0] == "systemctl"] == [("systemctl", "is-active", "kubelet.service"),
                                                                    ("systemctl", "stop", "kubelet.service")]
        assert ran[1] == ("mkdir", LOCK_DIR) and ran[-1] == ("rmdir", LOCK_DIR)
        assert backends["gpu05"].dirs == {STATE_DIR}
        await wait_until(pilot, lambda: app.fleet.get("gpu05").service("kubelet").active == "inactive",
                         "the re-poll")
    # From the palette as from the key: the stop is in the session's audit log.
    (log,) = (tmp_path / "xdg-state" / "nvls-tui" / "audit").glob("session-*.jsonl")
    assert '"argv": ["systemctl", "stop", "kubelet.service"]' in log.read_text()


async def test_a_unit_stop_on_a_node_another_run_holds_is_refused_with_its_owner_named():
    # Another operator's repair (from another bastion) holds gpu05's lock: the stop is refused before it is sent.
    app, backends = fleet()
    held = backends["gpu05"]
    held.dirs |= {STATE_DIR, LOCK_DIR}
    held.files[f"{LOCK_DIR}/owner.json"] = json.dumps({
        "run_id": "run-kim", "bastion": "bastion-2", "operator": "kim", "tool_pid": 4242,
        "since": "2026-12-07T03:00:00+00:00", "heartbeat": "2026-12-07T03:01:00+00:00", "beat": 3})
    async with app.run_test(size=SIZE) as pilot:
        await stop_kubelet_from_the_palette(app, pilot)
        said = lambda: [str(n.message) for n in app._notifications if "was not done" in str(n.message)]  # noqa: E731
        await wait_until(pilot, said, "the refusal")
        assert "another run holds the lock of gpu05" in said()[0] and "run-kim" in said()[0]
        assert not [argv for argv in held.ran if argv[0] == "systemctl"]  # nothing of the stop was sent
        assert held.files[f"{LOCK_DIR}/owner.json"].count("run-kim") == 1  # the other run's lock left as it was


async def test_a_remapped_key_runs_the_action_and_the_help_shows_it():
    app, _ = fleet(keymap={"node.sigterm": "k"})
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("a", "k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        table = app.screen.query_one("#help-table")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["node", "k"] == rows[[r[3] for r in rows].index("node.sigterm")][:2]


async def test_an_unreachable_node_keeps_its_last_state_greyed_with_the_reason():
    app, backends = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        backends["gpu06"].state = NodeState("gpu06", reachable=False, simulated=True,
                                            error="ssh: connection refused")
        app.poll_now("gpu06")
        await wait_until(pilot, lambda: app.verdict("gpu06") is Verdict.UNREACHABLE, "the failed poll")
        grid = app.screen.query_one(FleetGrid)
        # The grid redraws in batches (at most every REDRAW_EVERY, later under load): wait for the row's.
        await wait_until(pilot, lambda: grid.get_cell("gpu06", "note").plain.startswith("stale:"),
                         "the grid's redraw of gpu06")
        # The story column takes the room the other columns leave: the whole reason shows.
        assert grid.get_cell("gpu06", "note").plain == "stale: ssh: connection refused"
        assert grid.get_cell("gpu06", "holders").plain == "2"  # last known, not forgotten
        assert grid.visible_hosts == ("gpu05", "gpu06")


async def test_a_key_is_answered_while_a_node_hangs():
    # How fast is a benchmark's question (bench/ui_bench.py keys: p50/p99 under 256 polling nodes);
    # here only that the key's action ran while the hung poll still hung.
    wedged = FakeBackend(make_node("gpu09"), hang=True)
    good = FakeBackend(make_node("gpu01"))
    app = NvlsApp([good, wedged], poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.verdict("gpu01") is not None, "the good node")
        await wait_until(pilot, lambda: wedged.snapshots == 1, "the wedged poll to start")
        assert app.verdict("gpu09") is None
        screen = app.screen
        app.simulate_key("v")
        await wait_until(pilot, lambda: screen.sort_by_verdict, "the key's action")
        assert app.verdict("gpu09") is None  # still hanging, and nobody waited for it


async def test_quit_asks_first_while_an_action_is_running():
    app, _ = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        gate = __import__("asyncio").Event()
        app.start_action("SIGTERM on gpu05", gate.wait())
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the quit question")
        assert app.screen.lines == ["SIGTERM on gpu05"]
        await pilot.press("escape")
        gate.set()
        await wait_until(pilot, lambda: not app.actions_running, "the action to end")
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_code is not None or not app.is_running, "the exit")


async def test_the_filter_narrows_the_grid_and_escape_clears_it():
    app, _ = fleet()
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        await pilot.press("slash", *"healthy", "enter")
        await pilot.pause()
        assert grid.visible_hosts == ("gpu06",)
        await pilot.press("escape")
        await pilot.pause()
        assert grid.visible_hosts == ("gpu05", "gpu06")


async def test_read_only_r_shows_the_dry_run_plan_and_offers_nothing_to_start():
    from nvls_tui.console.screens.plan import PlanScreen

    app, backends = fleet(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await pilot.pause()
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        plan = app.screen
        await wait_until(pilot, lambda: len(plan.outcomes) == 1, "the dry run")
        await pilot.pause()
        note = str(plan.query_one("#plan-note").render())
        assert "Read-only mode" in note
        assert not plan.query_one("#plan-typed").display and not plan.query_one("#plan-go").display
        assert plan.typed_ok("gpu05") is False
        changing = [argv for argv in backends["gpu05"].ran if argv[:2] in (("systemctl", "stop"), ("nvidia-smi", "-r"))]
        assert changing == []


async def test_R_with_holders_left_is_refused_up_front_naming_them():
    from nvls_tui.console.messages import ActionFailed
    from tests.pilot.test_console_workers import Flow

    app, backends = fleet()
    notes: list[str] = []
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        app.notify = lambda message, **kw: notes.append(message)
        await pilot.press("R")
        await wait_until(pilot, lambda: notes, "the refusal to be said")
        assert not isinstance(app.screen, ConfirmScreen)
        assert len(notes) == 1 and notes[0].startswith("Reset refused: 3 processes still hold /dev/nvidia*")
        (refused,) = flow
        assert isinstance(refused, ActionFailed) and refused.refused
        assert (refused.description, refused.error, refused.hosts) == ("Reset every GPU and NVSwitch on gpu05",
                                                                        notes[0], ("gpu05",))
        assert backends["gpu05"].ran == []
