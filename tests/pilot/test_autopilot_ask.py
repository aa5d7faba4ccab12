"""The console's autopilot ask mode (issue 40 item 3), on the simulated seed incident.

gpu05 (FM killed) and gpu06 (out of sync) are both repairable by the default policy. The console judges a
round once every node the policy calls repairable was polled again, so each ``poll_now`` below is one round:
the first poll is round 1 (debounce: seen 1 of 2), the second proposes gpu05 (gpu06 waits: the canary). The
simulated clock is frozen (speed 0): a whole repair takes a fraction of a real second.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from nvls_tui.autopilot.state import Breaker, State, StateStore
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.ask import NOTHING_RUNS, AskMode
from nvls_tui.console.screens.ask_plan import AskPlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.widgets.banner import FleetSummary, ModeBanner
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.settings import AutopilotSettings
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_console_repair import plain
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until

SIZE = (160, 48)


def ask_app(tmp_path: Path, fleet, *, read_only: bool = False, **limits) -> NvlsApp:
    """The console over ``fleet`` in ask mode, its state and autopilot audit log under ``tmp_path``."""
    settings = AutopilotSettings(mode="ask", state_dir=str(tmp_path / "state"), limits=limits)
    backends = sim_backends(fleet)
    ask = AskMode.open(settings, [b.host for b in backends], audit_dir=str(tmp_path / "audit"), every=0)
    return NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path / "repairs"),
                   read_only=read_only, ask=ask)


def with_gpu_lost(host: str):
    """The seed incident with an Xid 79 on ``host`` (the GPU fell off the bus: GPU_LOST, NVIDIA's RESTART_BM):
    never unattended, whatever else the node has."""
    fleet = load_fleet("sim:seed-incident", speed=0)
    fleet.node(host).log_kernel(fleet.clock.now() - 60, "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
                                "GPU has fallen off the bus.")
    return fleet


def records(tmp_path: Path) -> list[dict]:
    """Every record of the autopilot's audit logs."""
    out = []
    for path in sorted((tmp_path / "audit").glob("autopilot-*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines()]
    return out


def toasts(app: NvlsApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def next_round(app: NvlsApp, pilot) -> None:
    """Poll every node again and wait for the round it makes."""
    before = app.ask.pilot.number
    app.poll_now()
    await wait_until(pilot, lambda: app.ask.pilot.number > before, "the next autopilot round")
    app.screen.refresh_grid()
    await pilot.pause()


async def first_round(app: NvlsApp, pilot) -> None:
    """Wait for the fleet's first poll and the round it makes (round 1: the debounce's first)."""
    await first_poll(app, timeout=30)
    await wait_until(pilot, lambda: app.ask.pilot.number == 1, "the first round")


async def plan_of_proposal(app: NvlsApp, pilot, host: str) -> AskPlanScreen:
    """Two rounds (``host`` proposed), the cursor on it, ``a``: its plan, read."""
    if app.ask.pilot.number == 0:
        await first_round(app, pilot)
    await next_round(app, pilot)
    await on_row(app, pilot, host)
    await pilot.press("a")
    await wait_until(pilot, lambda: isinstance(app.screen, AskPlanScreen) and app.screen.outcomes,
                     f"the plan of {host}'s proposed repair")
    return app.screen


async def on_row(app: NvlsApp, pilot, host: str) -> None:
    grid = app.screen.query_one(FleetGrid)
    grid.move_cursor(row=grid.visible_hosts.index(host))
    await pilot.pause()


async def test_a_proposal_appears_after_the_debounce_marked_on_its_row_and_labelled(tmp_path):
    # A breaker of 50 % (4 of 8 nodes): two broken nodes do not trip it, so the canary holds gpu06.
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0), breaker_percent=50.0)
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        # Round 1: both broken nodes seen once, neither proposed yet (the debounce).
        assert app.ask.proposed == []
        assert {h: p.limit for h, p in app.ask.proposals.items()} == {"gpu05": "debounce", "gpu06": "debounce"}
        assert "⚑" not in str(app.screen.query_one(FleetGrid).get_cell("gpu05", "host"))

        await next_round(app, pilot)
        assert app.ask.proposed == ["gpu05"]
        assert app.ask.proposals["gpu06"].limit == "canary"  # the first repair runs alone
        grid = app.screen.query_one(FleetGrid)
        assert str(grid.get_cell("gpu05", "host")) == "⚑ gpu05"
        assert str(grid.get_cell("gpu06", "host")) == "gpu06"
        from nvls_tui.console.export import grid_view

        assert [row[0] for row in grid_view(grid, simulated=True).rows][:2] == ["gpu05", "gpu06"]  # no mark
        await pilot.press("v")  # fleet order: the grid re-sorts its rows by their host cells, a marked one too
        await pilot.pause()
        assert list(grid.visible_hosts[:6]) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06"]
        await pilot.press("v")
        await pilot.pause()
        top = plain(app.screen.query_one(FleetSummary))
        assert "autopilot ask: ⚑ gpu05 proposed (a approves)" in top
        assert "nothing runs without your approval" in plain(app.screen.query_one(ModeBanner))
        await on_row(app, pilot, "gpu05")
        preview = plain(app.screen.query_one("#preview"))
        assert "autopilot proposes a repair" in preview and NOTHING_RUNS in preview
        assert "why safe: FM_NOT_RUNNING, FABRIC_MANAGER_NOT_PRESENT" in preview
        assert "budget 0 of 3 repairs in 7 days" in preview and "breaker closed: 0 of 4 repairs started" in preview
        assert "canary: the first repair runs alone" in preview
        # Which limit approving it brings to bear: the canary holds gpu06 until gpu05's smoke test passes.
        assert "approving it binds: canary: the others wait until this one passes its smoke test" in preview
        assert "breaker: this repair reaches" not in preview  # 0 + 1 of a bound of 4
        await on_row(app, pilot, "gpu06")
        assert "autopilot holds its repair: canary" in plain(app.screen.query_one("#preview"))
    proposed = [r for r in records(tmp_path) if r.get("action") == "propose"]
    assert [(r["node"], r["round"], r["mode"]) for r in proposed] == [("gpu05", 2, "ask")]
    assert not StateStore(tmp_path / "state").load().repairs  # proposing changes nothing


async def test_the_key_opens_the_plan_and_the_approval_runs_the_repair_counted_in_the_state(tmp_path):
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0))
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        await on_row(app, pilot, "gpu03")
        await pilot.press("space")  # picked for an r repair of the operator's own: an approval leaves it picked
        plan = await plan_of_proposal(app, pilot, "gpu05")
        assert plan.hosts == ["gpu05"]
        assert "Autopilot proposal" in plain(plan.query_one("#plan-header"))
        assert "$ nvidia-smi -r" in plain(plan.query_one("#plan-body-0"))  # the same plan as r
        await pilot.press(*"gpu05", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook screen")
        runbook = app.screen
        await wait_until(pilot, lambda: runbook.finished_at is not None, "the repair to end")
        assert runbook.columns["gpu05"].run.result == "repaired"
        await wait_until(pilot, lambda: not app.ask.approved, "the repair's result recorded")
        state = StateStore(tmp_path / "state").load()
        assert [(r.host, r.ok) for r in state.repairs] == [("gpu05", True)]  # counts against budget and breaker
        assert state.canary_passed

        # gpu06 passed the breaker's bound (1 repair in the window for 8 nodes) in the round that proposed gpu05:
        # the breaker tripped then (gpu05, proposed before it, still ran, as auto would have started it), the
        # top line says so, and no later round proposes anything.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RunbookScreen), "back on the fleet")
        assert app.screen.selected == ["gpu03"]
        for _ in range(2):
            await next_round(app, pilot)
        assert app.ask.tripped and app.ask.proposed == []
        assert app.ask.proposals["gpu06"].limit == "breaker"
        assert "autopilot ask: BREAKER TRIPPED · nothing proposed" in plain(app.screen.query_one(FleetSummary))
        assert StateStore(tmp_path / "state").load().breaker.tripped  # saved: the headless autopilot sees it
    said = [(r.get("node"), r.get("action")) for r in records(tmp_path)]
    assert said.index(("gpu05", "propose")) < said.index(("gpu05", "approved")) < said.index(("gpu05", "repaired"))
    assert ("gpu06", "skip") in said and (None, "breaker-tripped") in said
    approved = next(r for r in records(tmp_path) if r.get("action") == "approved")
    assert approved["by"] == approved["operator"] and approved["by"] in approved["message"]
    repairs = list((tmp_path / "repairs").glob("repair-*.jsonl"))
    assert repairs, "the console's own repair audit log"


async def test_closing_the_plan_declines_and_nothing_runs(tmp_path):
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0))
    async with app.run_test(size=SIZE) as pilot:
        await plan_of_proposal(app, pilot, "gpu05")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, AskPlanScreen), "the plan closed")
        await wait_until(pilot, lambda: any(r.get("action") == "declined" for r in records(tmp_path)),
                         "the decline recorded")
        assert not app.session.repairs
    assert not StateStore(tmp_path / "state").load().repairs


async def test_a_node_with_a_hardware_xid_is_never_proposed(tmp_path):
    app = ask_app(tmp_path, with_gpu_lost("gpu06"), budget=5)
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        for _ in range(3):
            await next_round(app, pilot)
            assert "gpu06" not in app.ask.proposals
        assert app.ask.proposed == ["gpu05"]
        assert "GPU_LOST" in app.ask.unsafe["gpu06"]
        await on_row(app, pilot, "gpu06")
        assert "not proposed, for a person" in plain(app.screen.query_one("#preview"))
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, AskPlanScreen)
        assert any("proposes no repair of gpu06" in t for t in toasts(app))
    assert not any(r.get("node") == "gpu06" and r.get("action") == "propose" for r in records(tmp_path))
    assert any(r.get("node") == "gpu06" and r.get("reason") == "unsafe" for r in records(tmp_path))


async def test_a_tripped_breaker_shows_and_proposes_nothing(tmp_path):
    StateStore(tmp_path / "state").save(State(breaker=Breaker(True, time.time() - 60, "3 repairs in 3600 s")))
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0))
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        for _ in range(2):
            await next_round(app, pilot)
        assert app.ask.proposed == []
        assert {h: p.limit for h, p in app.ask.proposals.items()} == {"gpu05": "breaker", "gpu06": "breaker"}
        assert "BREAKER TRIPPED" in plain(app.screen.query_one(FleetSummary))
        await on_row(app, pilot, "gpu05")
        preview = plain(app.screen.query_one("#preview"))
        assert "autopilot holds its repair: breaker" in preview and "breaker TRIPPED" in preview
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, AskPlanScreen)


async def test_read_only_shows_the_proposal_and_refuses_the_approval_in_one_line(tmp_path):
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0), read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        await next_round(app, pilot)
        assert app.ask.proposed == ["gpu05"]
        assert str(app.screen.query_one(FleetGrid).get_cell("gpu05", "host")) == "⚑ gpu05"
        await on_row(app, pilot, "gpu05")
        await pilot.press("a")
        await wait_until(pilot, lambda: any("Read-only mode" in t for t in toasts(app)), "the refusal")
        assert not isinstance(app.screen, AskPlanScreen)
        (said,) = [t for t in toasts(app) if "Read-only mode" in t]
        assert "\n" not in said
    assert not any(r.get("action") == "approved" for r in records(tmp_path))


async def test_the_proposals_list_names_each_node_and_its_limit_and_enter_goes_to_it(tmp_path):
    from textual.widgets import OptionList

    from nvls_tui.console.screens.pickers import ProposalsPicker

    app = ask_app(tmp_path, with_gpu_lost("gpu07"), breaker_percent=50.0)
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        await next_round(app, pilot)
        await on_row(app, pilot, "gpu01")
        await pilot.press("P")
        await wait_until(pilot, lambda: isinstance(app.screen, ProposalsPicker), "the proposals list")
        title = plain(app.screen.query_one("#picker-title"))
        assert "Autopilot proposals" in title and NOTHING_RUNS in title and "BREAKER" not in title
        options = app.screen.query_one(OptionList)
        lines = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert lines[0].startswith("⚑ gpu05") and "proposed" in lines[0] and "canary: the others wait" in lines[0]
        assert lines[1].split()[:3] == ["gpu06", "held:", "canary"]
        assert lines[2].split()[:4] == ["gpu07", "for", "a", "person"] and "GPU_LOST" in lines[2]
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, ProposalsPicker), "back on the fleet")
        assert app.screen.query_one(FleetGrid).current_host == "gpu06"


async def test_a_state_file_that_cannot_be_read_mid_run_drops_the_proposals_and_says_so_once(tmp_path):
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0))
    async with app.run_test(size=SIZE) as pilot:
        await first_round(app, pilot)
        await next_round(app, pilot)
        assert app.ask.proposed == ["gpu05"]
        (tmp_path / "state" / "autopilot-state.json").write_text("{")  # a broken disk, a bad hand edit
        failed = "Autopilot round not recorded"
        for _ in range(3):  # three polls of the whole fleet, each a round that fails
            before = {h: app.fleet.get(h) for h in app.fleet.hosts}
            app.poll_now()
            await wait_until(pilot, lambda seen=before: all(app.fleet.get(h) is not s for h, s in seen.items()),
                             "every node polled again")
            await pilot.pause()
        assert app.ask.proposals == {}  # fail closed: nothing to approve
        app.screen.refresh_grid()
        await pilot.pause()
        assert str(app.screen.query_one(FleetGrid).get_cell("gpu05", "host")) == "gpu05"
        assert len([t for t in toasts(app) if failed in t]) == 1
        await on_row(app, pilot, "gpu05")
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, AskPlanScreen)


async def test_at_80_columns_the_banner_names_a_tripped_breaker_and_a_pause(tmp_path):
    """Found at 80x24: the top line's counts take the whole width, so '· autopilot ask: ... BREAKER TRIPPED' never
    showed; the banner, which wraps, said only 'AUTOPILOT ASK — nothing runs without your approval'. It names
    the breaker and the pause while they hold, and goes back when the operator closes and removes them."""
    StateStore(tmp_path / "state").save(State(breaker=Breaker(True, time.time() - 60, "gpu06 would be repair 2")))
    # A bound of 4 (50 %): once closed, the two broken nodes do not trip it again.
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0), breaker_percent=50.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await first_round(app, pilot)
        app.ask.pilot.pause_path.touch()
        await next_round(app, pilot)
        banner = app.screen.query_one(ModeBanner)
        assert "AUTOPILOT ASK — BREAKER TRIPPED · PAUSED — nothing runs without your approval" in plain(banner)
        app.ask.pilot.pause_path.unlink()
        app.ask.autopilot.close_breaker(time.time())
        StateStore(tmp_path / "state").save(app.ask.autopilot.state)
        await next_round(app, pilot)
        assert "AUTOPILOT ASK — nothing runs without your approval" in plain(banner)


async def test_a_decline_says_what_it_did_and_that_the_proposal_comes_back(tmp_path):
    """Found declining gpu06 (Esc on its plan): the plan closed, the ⚑ stayed and nothing said the decline was
    taken; the next round proposed it again. One line says both."""
    app = ask_app(tmp_path, load_fleet("sim:seed-incident", speed=0))
    async with app.run_test(size=SIZE) as pilot:
        await plan_of_proposal(app, pilot, "gpu05")
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("Declined" in t for t in toasts(app)), "the decline's toast")
        (said,) = [t for t in toasts(app) if "Declined" in t]
        assert said == ("Declined: gpu05's repair did not run (recorded in the autopilot's audit log); while the "
                        "node stays repairable, the next round proposes it again.")
