"""Issue 38 item 4: the first ``t`` after ``space`` at verify-no-holders was lost.

On ``sim:hostile`` (twice in a row, and after Esc, Down, space) ``t`` did nothing the first time. The cause:
the runbook asks the column for a decision for 2 s at a time, then re-reads the holders (find, fuser, ps,
and a SIGTERM with its grace for a watch loop's nvidia-smi that came back) before it asks again. While it
re-read, the column was not ``asking``: ``t`` was disabled (the key dropped) and a SIGTERM confirmed then was
thrown away, though the box still listed the holders and the deadline ran. Now the column waits for the
operator for the whole wait: ``t`` applies whenever the box lists holders, and a decision made between two
asks is the answer to the next one.

The re-read is held open here (the node's ``fuser`` waits on a gate), so the key lands in it every time.
"""

from __future__ import annotations

import asyncio

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_console_repair import SIZE, start_repair
from tests.test_console_fakes import fixed_clock
from tests.waiting import click_shown, wait_until

HOST = "gpu-evil01"


def gated_fuser(backend, gate: asyncio.Event, held: list[int]):
    """Make ``backend``'s next ``fuser`` wait on ``gate`` once armed (``held[0]`` 0); it sets ``held[0]`` to 1."""
    run = backend.run

    async def gated(argv, *args, **kwargs):
        if held[0] == 0 and any("fuser" in word for word in argv):
            held[0] = 1
            await gate.wait()
        return await run(argv, *args, **kwargs)

    backend.run = gated


async def test_space_then_t_while_the_runbook_rereads_the_holders_opens_the_sigterm_confirmation(tmp_path, monkeypatch):
    monkeypatch.setattr("nvls_tui.console.screens.runbook.HOLDER_RECHECK", 0.2)  # the first ask ends soon
    fleet = load_fleet("sim:hostile", speed=0)
    node = fleet.node(HOST)
    node.files.pop(RECORD_FILE)  # the scenario's interrupted repair, put back by hand (U) before this repair
    backends = sim_backends(fleet)
    gate, held = asyncio.Event(), [-1]  # -1: not armed yet
    gated_fuser(next(b for b in backends if b.host == HOST), gate, held)
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, [HOST], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking and column.run.holders, "the runbook to wait on the workloads")
        workloads = {h.pid for h in column.run.holders}
        assert workloads and all(node.procs[p].user == "mallory" for p in workloads)
        held[0] = 0  # the next re-read's fuser waits: the runbook is between two asks
        await wait_until(pilot, lambda: held[0] == 1, "the runbook to re-read the holders")
        assert column.query_one(".holders-box").display  # the box still lists them; the deadline runs
        assert app.focused is column.query_one(".holders")
        await pilot.press("space", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the SIGTERM confirmation", timeout=5)
        first = column.run.holders[0].pid
        assert f"{first}(mallory)" in "\n".join(map(str, app.screen.lines))
        await click_shown(pilot, "#confirm")  # confirmed while the re-read still runs
        await pilot.pause()
        gate.set()
        await wait_until(pilot, lambda: first not in node.procs, "the SIGTERM to reach the picked process")
        assert workloads - {first} <= set(node.procs)  # only the one picked


async def test_space_picks_the_holder_at_once_so_a_t_right_behind_it_sees_the_pick():
    """In a real terminal (tests/tmux/test_e2e_console_keys.py) ``space`` and ``t`` typed together lost the ``t``
    about one run in two: SelectionList's ``space`` only posts OptionSelected and picks when that message is
    handled, after the ``t`` behind it was checked against no pick (greyed, dropped). The pick is made in the
    key's own action now."""
    from textual.app import App
    from textual.widgets.selection_list import Selection

    from nvls_tui.console.widgets.holder_picks import HolderPicks

    class Box(App[None]):
        def compose(self):
            yield HolderPicks(Selection("2168(mallory) python3", 2168), Selection("2183(mallory) job", 2183))

    app = Box()
    async with app.run_test() as pilot:
        picks = app.query_one(HolderPicks)
        picks.focus()
        picks.highlighted = 0
        await pilot.pause()
        picks.action_select()  # what space runs
        assert picks.selected == [2168]  # now, not at the next message
        await pilot.pause()
        assert picks.selected == [2168]  # and only once (no second toggle from a message)
        picks.action_select()
        assert picks.selected == []  # space again unpicks
