"""Issue 28 item 6: the fleet's top line says an answer is late only when it is older than the node's own interval
allows (the console's back-off makes calm answers old on purpose), and a big selection is shortened to ``+N more``
rather than cut off at 160 columns."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.fleet import FleetScreen
from nvls_tui.console.widgets.banner import FleetSummary
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.model import Fleet, NodeState
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.fleet_top import AnswerTimes, hosts_within, late_words
from tests.waiting import first_poll, wait_until


def fleet_at(**answers: float) -> Fleet:
    return Fleet(tuple(NodeState(host, polled_at=at) for host, at in answers.items()))


def test_a_calm_node_answering_every_30s_is_not_late_at_32s():
    times = AnswerTimes()
    times.note(fleet_at(gpu01=0.0, gpu02=0.0))
    times.note(fleet_at(gpu01=30.0, gpu02=5.0))  # gpu01 calm (every 30 s), gpu02 every 5 s
    late = times.late(fleet_at(gpu01=30.0, gpu02=50.0), 62.0)
    assert late == []  # 32 s after a 30 s interval, 12 s after a 5 s one: both as expected
    late = times.late(fleet_at(gpu01=30.0, gpu02=5.0), 120.0)
    assert [(x.host, round(x.age)) for x in late] == [("gpu02", 115), ("gpu01", 90)]
    assert late_words(late) == "late: gpu02 answered 1m55s ago (every ~5s before), +1 more"


def test_with_one_answer_only_a_long_silence_is_late():
    times = AnswerTimes()
    fleet = fleet_at(gpu01=100.0)
    times.note(fleet)
    assert times.late(fleet, 132.0) == []
    assert late_words(times.late(fleet, 200.0)) == "late: gpu01 answered 1m40s ago"


def test_a_selection_is_shortened_to_whole_hosts_and_a_count():
    hosts = [f"gpu{i:03d}" for i in range(1, 41)]
    assert hosts_within(hosts[:3], 80) == "gpu001 gpu002 gpu003"
    text = hosts_within(hosts, 60)
    assert text == "gpu001 gpu002 gpu003 gpu004 gpu005 gpu006 gpu007 +33 more" and len(text) <= 60
    assert hosts_within(hosts, 5) == "40 nodes"


async def test_the_top_line_is_quiet_on_a_calm_fleet_and_names_a_late_answer():
    now = [1_786_810_200.0]
    app = NvlsApp(sim_backends(load_fleet("sim:healthy", speed=0)), poll_interval=None, clock=lambda: now[0])
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_for_first_poll(timeout=30)
        screen = app.screen
        assert isinstance(screen, FleetScreen)

        def top() -> str:
            return screen.query_one(FleetSummary).content.plain

        now[0] += 32.0
        screen.refresh_grid()
        await pilot.pause()
        assert "oldest answer" not in top() and "late:" not in top(), top()
        now[0] += 200.0
        screen.refresh_grid()
        await wait_until(pilot, lambda: "late: hgx" in top(), "the late answer named")
        assert "answered 3m52s ago" in top(), top()


async def test_a_big_selection_stays_visible_at_160_columns(tmp_path):
    # 40 of fleet-256's first 48 nodes (two of them broken, so sorted first): a selection far past what the line
    # can name. The other 208 nodes were polled and drawn for nothing (3.7 of this file's 4.3 cpu-s).
    app = NvlsApp(sim_backends(load_fleet("sim:fleet-256/gpu[001-048]", speed=0)), poll_interval=None,
                  clock=lambda: 1_786_810_200.0, audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=60)
        screen = app.screen
        for _ in range(40):
            await pilot.press("space")
        await pilot.pause()
        screen.refresh_grid()
        await pilot.pause()
        line = screen.query_one(FleetSummary).content.plain
        assert len(line) <= 160, line
        assert line.rstrip().endswith("more (r repairs)"), line
        shown = line.split("selected for repair: ")[1].split(" +")[0].split()
        assert len(screen.selected) >= 30 and shown == screen.selected[:len(shown)], line
        assert f" +{len(screen.selected) - len(shown)} more (r repairs)" in line


async def test_the_selection_is_read_whole_at_120_columns(tmp_path):
    """The README's walkthrough at 120x40 (a fresh clone, by hand): `space`, `space` on gpu05 and gpu06 left the top
    line cut at "sorted by verdict · selected for", neither host named. The selection wins over the sort's words
    (the sorted column's header carries the arrow) and over its own long wording."""
    for width in (120,):  # (at 80 columns the counts alone fill the line: the ● marks in the grid say it)
        app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None,
                      clock=lambda: 1_786_810_200.0, audit_dir=str(tmp_path))
        async with app.run_test(size=(width, 40)) as pilot:
            await first_poll(app, timeout=60)
            screen = app.screen
            await pilot.press("space", "space")
            await pilot.pause()
            screen.refresh_grid()
            await pilot.pause()
            line = screen.query_one(FleetSummary).content.plain
            assert len(line) <= width, (width, line)
            assert "gpu05 gpu06" in line, (width, line)
            assert "healthy   selected" in line, (width, line)  # no stray " · " after the counts' blanks


async def test_picking_a_node_repaints_its_row_and_the_cursors_not_the_whole_grid(tmp_path):
    """Space on a node marked its host cell with DataTable's ``update_cell``, which bumps the update count every
    render cache keys on and repaints the whole table: each pick rendered every cell on screen again (at 1,024
    nodes, a whole grid per keystroke; in this file's big selection 1,300 lines for 40 picks), and the redraw set the
    grid's border title again, which repaints the whole grid even when its words are the same. The mark is now
    written as the grid's polls write (``bulk_rows.write_cells``), the title only when it changes: only the rows
    that changed paint again."""
    app = NvlsApp(sim_backends(load_fleet("sim:fleet-256/gpu[001-048]", speed=0)), poll_interval=None,
                  clock=lambda: 1_786_810_200.0, audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=60)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        grid = screen.query_one(FleetGrid)
        await pilot.pause()
        whole, count = [], grid._update_count
        original = grid.refresh
        grid.refresh = lambda *regions, **kwargs: (whole.append(kwargs) if not regions else None,
                                                   original(*regions, **kwargs))[1]
        first = grid.current_host
        await pilot.press("space")
        await wait_until(pilot, lambda: screen.selected == [first], "the pick")
        await pilot.pause()
        assert whole == [] and grid._update_count == count
        line = next(grid.render_line(y).text for y in range(grid.size.height) if f"● {first}" in grid.render_line(y).text)
        assert line.lstrip().startswith(f"● {first}")
        await pilot.press("up", "space")  # and the pick taken back: the host as the grid drew it
        await wait_until(pilot, lambda: screen.selected == [], "the pick taken back")
        await pilot.pause()
        assert whole == [] and grid._update_count == count
        assert not any("●" in grid.render_line(y).text for y in range(grid.size.height))
