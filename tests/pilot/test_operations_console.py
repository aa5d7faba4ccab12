"""The operations layer seen from the console: every node-changing action audited, polls paused,
the manual-change ledger carried into the repair, honest aborts, plan drift caught.

Each of these began as a defect reproduced here first (issue 12): a SIGTERM and a unit stop left no
audit record; a repair after a manual stop "restored" only kubelet; a single-action reset let polls
run; an abort during the smoke test could read "repaired".
"""

from __future__ import annotations

import asyncio
import json

from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.messages import NodePolled
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.runbook.drift import steady_units
from nvls_tui.runbook.steps import unit_states
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import gpu_devices
from nvls_tui.sim.systemd import stop
from tests.pilot.test_console_repair import (
    SIZE,
    FaultBackend,
    plain,
    start_repair,
    wait_until,
)
from tests.pilot.test_console_repair_actions import confirm
from tests.test_console_fakes import fixed_clock
from tests.waiting import click_shown, first_poll, open_node_screen

DCGM = "nvidia-dcgm.service"


def records(folder, pattern: str = "*.jsonl") -> list[dict]:
    """Every audit record under ``folder`` whose file matches ``pattern``."""
    out: list[dict] = []
    for path in sorted(folder.glob(pattern)):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def commands(recs: list[dict], node: str) -> list[list[str]]:
    """The argv of every command-started record of ``node``."""
    return [r["argv"] for r in recs if r.get("event") == "command-started" and r.get("node") == node]


async def pick_unit(node: NodeScreen, pilot, unit: str) -> None:
    """Give the units table the focus (s and u act only there) and put its cursor on ``unit``."""
    table = node.query_one("#units")
    table.focus()
    table.move_cursor(row=table.get_row_index(unit))
    await wait_until(pilot, lambda: node.focused is table and table.cursor_row == table.get_row_index(unit),
                     f"the Units table focused on {unit}")


async def unit_by_hand(app, pilot, node: NodeScreen, key: str, unit: str, after: str) -> None:
    """Put the cursor on ``unit``, press ``key`` (s or u), confirm, wait until the poll shows ``after``."""
    await pick_unit(node, pilot, unit)
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), f"the {key} confirmation")
    await click_shown(pilot, "#confirm")
    await wait_until(pilot, lambda: app.fleet.get(node.host).service(unit).active == after, f"{unit} {after}")


async def abort_confirmed(app, pilot, key: str = "a") -> None:
    """Press the abort ``key`` on the runbook screen and confirm it."""
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the abort confirmation")
    await click_shown(pilot, "#confirm")
    await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook again")


async def test_a_sigterm_from_the_node_screen_is_in_the_session_audit_log(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        victim = app.fleet.get("gpu05").holders[0]
        await pilot.press("space", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: any(r.get("event") == "process-signalled" for r in records(tmp_path)),
                         "the signal's audit record")
        assert isinstance(app.screen, NodeScreen) and node.selected == {}
    recs = records(tmp_path, "session-*.jsonl")
    signalled = [r for r in recs if r.get("event") == "process-signalled"]
    assert [(r["node"], r["pid"], r["signal"], r["outcome"]) for r in signalled] == [
        ("gpu05", victim.pid, "SIGTERM", "signalled")]
    assert signalled[0]["argv"] == ["kill", "-TERM", str(victim.pid)]
    # The intent was on disk before the signal: its note comes first.
    intent = next(i for i, r in enumerate(recs) if r.get("event") == "note" and "sending SIGTERM" in r["message"])
    assert intent < recs.index(signalled[0])
    finished = [r for r in recs if r.get("event") == "run-finished" and r.get("node") == "gpu05"]
    assert finished and finished[-1]["result"] == "ok"


async def test_stopping_and_starting_a_unit_by_hand_is_audited_with_the_state_before(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await unit_by_hand(app, pilot, node, "s", DCGM, "inactive")
        await unit_by_hand(app, pilot, node, "u", DCGM, "active")
    recs = records(tmp_path, "session-*.jsonl")
    argvs = commands(recs, "gpu05")
    assert ["systemctl", "is-active", DCGM] in argvs
    assert argvs.index(["systemctl", "stop", DCGM]) < argvs.index(["systemctl", "start", DCGM])
    changes = [r for r in recs if r.get("event") == "manual-change"]
    assert [(c["what"], c["unit"], c["before"]) for c in changes] == [("stopped", DCGM, "active"),
                                                                      ("started", DCGM, "inactive")]


async def test_a_repair_after_a_manual_stop_puts_the_unit_back_and_says_so_in_plan_and_report(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await unit_by_hand(app, pilot, node, "s", DCGM, "inactive")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, NodeScreen), "the fleet")
        app.poll_now("gpu05")
        await pilot.press("r")  # the cursor is on gpu05, the broken node listed first
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes, "the plan")
        await pilot.pause()
        body = plain(app.screen.query_one("#plan-body-0"))
        assert "stopped by hand" in body and "nvidia-dcgm" in body
        assert f"$ systemctl start {DCGM}" in body  # the restore's commands include it
        await pilot.press(*"gpu05", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook")
        screen = app.screen
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end")
        run = screen.query_one(RunbookColumn).run
        assert run.result == "repaired", run.message
        assert DCGM in run.restored
        await pilot.press("e")
        await wait_until(pilot, lambda: screen.report_path is not None, "the report")
        report = screen.report_path.read_text()
    state = await SimulatedBackend(fleet, "gpu05").snapshot()
    assert unit_states(state)[DCGM] == "active"  # not left down, as before the fix
    assert "Changed by hand" in report and DCGM in report


class GatedStream(SimulatedBackend):
    """A simulated node whose smoke test stops after its first lines until the test opens the gate."""

    def __init__(self, fleet, name, gate: asyncio.Event, after: int = 30) -> None:
        super().__init__(fleet, name)
        self.gate, self.after = gate, after
        self.streaming = asyncio.Event()

    async def stream(self, argv, **kw):
        n = 0
        async for line in super().stream(argv, **kw):
            yield line
            n += 1
            if n == self.after:
                self.streaming.set()
                await self.gate.wait()


async def test_an_abort_during_the_smoke_test_ends_aborted_with_the_honest_words(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()
    backend = GatedStream(fleet, "gpu05", gate)
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: backend.streaming.is_set() and column.run.current == "smoke-test",
                         "the smoke test to stream")
        await abort_confirmed(app, pilot)
        gate.set()
        await wait_until(pilot, lambda: screen.finished_at is not None, "the aborted run to end")
        await pilot.pause()
        run = column.run
        assert run.result == "aborted", run.message
        assert run.message.startswith("aborted at smoke-test: GPUs reset and fabric verified, "
                                      "NVLS not smoke-tested — run the repair again")
        summary = plain(column.query_one(".summary"))
        assert "aborted" in summary and "repaired" not in summary


async def test_an_abort_during_fabric_manager_says_the_fabric_was_not_verified(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()

    class HeldFM(SimulatedBackend):
        at_gate = asyncio.Event()

        async def run(self, argv, timeout=None, **kw):
            if tuple(argv) == ("systemctl", "reset-failed", "nvidia-fabricmanager.service") and not gate.is_set():
                self.at_gate.set()
                await gate.wait()
            return await super().run(argv, timeout, **kw)

    backend = HeldFM(fleet, "gpu05")
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, backend.at_gate.is_set, "fabric-manager to be under way")
        await abort_confirmed(app, pilot)
        gate.set()
        await wait_until(pilot, lambda: screen.finished_at is not None, "the aborted run to end")
        run = column.run
        assert run.result == "aborted"
        assert run.message.startswith("aborted at fabric-manager: GPUs reset, fabric not verified "
                                      "— run the repair again"), run.message
    recs = records(tmp_path, "repair-*.jsonl")
    assert any(r.get("event") == "run-finished" and r["result"] == "aborted" for r in recs)


async def test_a_poll_during_a_single_action_reset_does_not_run(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    node = fleet.node("gpu01")
    stop(node, "nvidia-snapshot.timer", fleet.clock.now())  # the operator quiesced the node first:
    for proc in node.alive():  # nothing holds a device, so the reset may go on
        proc.devices = []
    gate = asyncio.Event()
    backend = FaultBackend(fleet, "gpu01", gate=gate)  # holds `nvidia-smi -r` at the gate
    snapshots: list[float] = []
    real_snapshot = backend.snapshot

    async def counted():
        snapshots.append(fleet.clock.now())
        return await real_snapshot()

    polled: list[str] = []  # the NodePolled messages that flowed, as the app saw them

    def hook(message) -> None:
        if isinstance(message, NodePolled):
            polled.append(message.state.host)

    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await open_node_screen(app, pilot, "gpu01")
        await pilot.press("R")
        await confirm(app, pilot, typed="gpu01")
        pane = app.screen
        await wait_until(pilot, backend.at_gate.is_set, "the reset to be under way")
        backend.snapshot = counted  # from here on, count the poller's reads
        seen = len(polled)
        app.poll_now("gpu01")
        # The poller's loop takes the poke (clears it) and, in the same step, queues its poll on the
        # node's lock, which the reset holds: from then on a poll that was not held back would have run.
        poller = app.pollers["gpu01"]
        await wait_until(pilot, lambda: not poller._poke.is_set(), "the poller to take the poke")
        assert snapshots == [], "a poll ran while the reset was in flight"
        assert len(polled) == seen, "a poll result reached the app while the reset was in flight"
        gate.set()
        await wait_until(pilot, lambda: pane.column.run.result is not None, "the reset to end")
        assert pane.column.run.result == "ok", pane.column.run.message
        await wait_until(pilot, lambda: snapshots, "the poll held back until the reset ended")
        await wait_until(pilot, lambda: len(polled) > seen, "its NodePolled message")
    recs = records(tmp_path, "session-*.jsonl")
    assert ["nvidia-smi", "-r"] in commands(recs, "gpu01")


async def test_a_holder_that_appears_between_plan_and_apply_is_caught_and_the_console_asks_again(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes, "the plan")
        node = fleet.node("gpu05")
        job = node.spawn(ppid=1, user="alice", start=fleet.clock.now(), argv=["python3", "train.py"],
                         cgroup="0::/user.slice/user-1000.slice/session-5.scope", role="app",
                         devices=gpu_devices(node, ("/dev/nvidiactl",)))
        await pilot.press(*"gpu05", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question asked again")
        question = app.screen
        assert "changed since the plan" in question.title_text
        assert any(str(job.pid) in line and "appeared" in line for line in question.lines)
        await click_shown(pilot, "#confirm")  # plan again
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes, "a new plan")
    assert not any(argv[:2] in (["nvidia-smi", "-r"], ["systemctl", "stop"]) for _, argv in node.cmdlog)


async def plan_with(app, pilot, names: list[str], strategy: str) -> RunbookScreen:
    """Select ``names`` on the fleet, r, pick ``strategy`` on the plan screen, type the names."""
    from nvls_tui.console.widgets.fleet_grid import FleetGrid

    await first_poll(app, timeout=30)
    await pilot.pause()
    grid = app.screen.query_one(FleetGrid)
    for name in names:
        grid.move_cursor(row=grid.visible_hosts.index(name))
        await pilot.press("space")
    await pilot.press("r")
    await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == len(names),
                     "the plan")
    app.screen.query_one("#plan-strategy").value = strategy
    await pilot.pause()
    app.screen.query_one("#plan-typed").focus()
    await pilot.press(*" ".join(names), "enter")
    await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook")
    return app.screen


async def test_canary_in_the_console_stops_after_a_failed_first_node_and_leaves_the_rest_untouched(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    backends = [FaultBackend(fleet, n, refuse_reset=True) if n == "gpu05" else SimulatedBackend(fleet, n)
                for n in fleet.names]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await plan_with(app, pilot, ["gpu05", "gpu06"], "canary")
        assert screen.approval.strategy == "canary"
        await wait_until(pilot, lambda: screen.finished_at is not None, "the canary run to end")
        await pilot.pause()
        results = {o.host: o.result for o in screen.outcomes}
        assert results == {"gpu05": "failed", "gpu06": "refused"}
        assert "not attempted: the canary (gpu05) ended failed" in screen.outcomes[1].message
        assert "canary" in plain(screen.query_one("#runbook-header"))
    assert not any(argv[:2] == ["systemctl", "stop"] for _, argv in fleet.node("gpu06").cmdlog)


async def test_a_aborts_only_the_focused_node_and_the_other_goes_on_to_be_repaired(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()
    backends = [FaultBackend(fleet, n, gate=gate) if n == "gpu05" else SimulatedBackend(fleet, n) for n in fleet.names]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    gpu05 = backends[fleet.names.index("gpu05")]
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05", "gpu06"])
        await wait_until(pilot, gpu05.at_gate.is_set, "gpu05's reset to be under way")
        screen.columns["gpu05"].focus()
        await pilot.pause()
        assert screen.abort_target() == "gpu05"
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the abort confirmation")
        assert app.screen.title_text == "Abort the repair of gpu05?"
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook again")
        gate.set()
        await wait_until(pilot, lambda: screen.finished_at is not None, "both runs to end")
        results = {o.host: o.result for o in screen.outcomes}
        assert results == {"gpu05": "aborted", "gpu06": "repaired"}
    recs = records(tmp_path, "repair-*.jsonl")
    assert [r["node"] for r in recs if r.get("event") == "run-finished" and r["result"] == "aborted"] == ["gpu05"]


async def test_quitting_mid_repair_asks_then_aborts_restores_and_exits_with_a_summary(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()
    backends = [FaultBackend(fleet, n, gate=gate) if n == "gpu05" else SimulatedBackend(fleet, n) for n in fleet.names]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    gpu05 = backends[fleet.names.index("gpu05")]
    before = steady_units(await gpu05.snapshot())  # the snapshot oneshot is its timer's (drift.FLAPPING_UNITS)
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        await wait_until(pilot, gpu05.at_gate.is_set, "the reset to be under way")
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the quit question")
        question = app.screen
        assert "Abort it, restore every node, then quit?" in question.title_text
        assert str(question.query_one("#cancel").label) == "Stay"
        await pilot.click("#cancel")  # stay: nothing happens to the run
        await wait_until(pilot, lambda: app.screen is screen, "the runbook again")
        assert screen.running
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the quit question again")
        await click_shown(pilot, "#confirm")
        gate.set()
        await wait_until(pilot, lambda: app.return_code is not None, "the console to exit")
        summary = app.exit_summary()
    assert app.return_code == 1
    assert "gpu05: aborted - aborted at reset: the reset may have begun, fabric not verified" in summary
    assert "audit log: " + str(tmp_path) in summary
    assert steady_units(await gpu05.snapshot()) == before  # everything the repair stopped is back


async def test_a_fabric_manager_restart_from_the_node_screen_is_in_the_session_audit_log(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("F")
        await confirm(app, pilot, typed="gpu05")
        pane = app.screen
        await wait_until(pilot, lambda: pane.column.run.result is not None, "the FM restart to end")
    recs = records(tmp_path, "session-*.jsonl")
    argvs = commands(recs, "gpu05")
    assert ["systemctl", "stop", "nvidia-fabricmanager.service"] in argvs
    assert ["systemctl", "start", "nvidia-fabricmanager.service"] in argvs
    finished = [r for r in recs if r.get("event") == "run-finished" and r.get("node") == "gpu05"]
    assert finished and finished[-1]["result"] == "ok" and finished[-1]["message"]


async def test_a_sigterm_from_a_waiting_runbook_column_is_in_the_repair_audit_log(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    node = fleet.node("gpu05")
    job = node.spawn(ppid=1, user="alice", start=fleet.clock.now() - 600, argv=["python3", "train.py"],
                     cgroup="0::/user.slice/user-1000.slice/session-5.scope", role="app",
                     devices=gpu_devices(node, ("/dev/nvidiactl",)))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking, "the runbook to wait on the workload")
        await pilot.press("space", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the SIGTERM confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end")
    recs = records(tmp_path, "repair-*.jsonl")
    signalled = [r for r in recs if r.get("event") == "process-signalled" and r.get("pid") == job.pid]
    assert [(r["signal"], r["outcome"], r["step"]) for r in signalled] == [("SIGTERM", "signalled",
                                                                          "verify-no-holders")]
