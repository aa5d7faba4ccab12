"""Issue 28 item 13, the rest: a running repair that stops to wait for the operator rings the bell and
raises a desktop notification (OSC 9/777), once per wait, as a long repair's end does; never with
``--no-notify`` / ``notify = false``.

The waits: verify-no-holders asking which remaining holders to SIGTERM (re-asked every few seconds
while it waits: still one notification), and preflight asking about a drained node's Slurm jobs.
"""

from __future__ import annotations

import asyncio

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.notify import Notifier, desktop_sequence
from nvls_tui.console.screens import runbook
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.model.scheduler import Job
from nvls_tui.runbook.scheduling import JobDecision
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import gpu_devices
from tests.pilot.test_console_repair import SIZE, start_repair
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until

NEEDS_YOU = "nvls-tui: repair needs you"


def test_a_wait_for_the_operator_notifies_at_once_and_never_when_turned_off():
    written: list[str] = []
    notifier = Notifier(True, written.append, lambda: 0.0)
    assert notifier.operator_needed("gpu05", "pick holders to SIGTERM") is True
    assert written == [desktop_sequence(NEEDS_YOU, "gpu05: pick holders to SIGTERM")]
    off = Notifier(False, written.append, lambda: 0.0)
    assert off.operator_needed("gpu05", "pick holders to SIGTERM") is False
    assert len(written) == 1


def _fleet_with_workloads(hosts: tuple[str, ...]):
    """The seed incident with a user's training job on each of ``hosts``: verify-no-holders waits on it."""
    fleet = load_fleet("sim:seed-incident", speed=0)
    for host in hosts:
        node = fleet.node(host)
        node.spawn(ppid=1, user="alice", start=fleet.clock.now() - 600, argv=["python3", "train.py"],
                   cgroup="0::/user.slice/user-1000.slice/session-5.scope", role="app",
                   devices=gpu_devices(node, ("/dev/nvidiactl", "/dev/nvidia-uvm")))
    return fleet


async def test_each_nodes_holders_wait_notifies_once_however_often_it_is_asked_again(tmp_path, monkeypatch):
    monkeypatch.setattr(runbook, "HOLDER_RECHECK", 0.05)  # asked again every 50 ms instead of 2 s
    fleet = _fleet_with_workloads(("gpu05", "gpu06"))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        written: list[str] = []
        app.notifier.write = written.append
        screen = await start_repair(app, pilot, ["gpu05", "gpu06"])
        columns = list(screen.query(RunbookColumn))
        await wait_until(pilot, lambda: all(c.asking for c in columns), "both nodes to wait on the workload")
        asked = {c.host: 0 for c in columns}
        original = screen.resolve_holders

        async def counting(host, holders):
            asked[host] += 1
            return await original(host, holders)

        screen.resolve_holders = counting  # type: ignore[method-assign]
        await wait_until(pilot, lambda: min(asked.values()) >= 3, "each node to be asked again three times")
        assert len(written) == 2, written
        for host, sequence in zip(("gpu05", "gpu06"), sorted(written), strict=True):
            assert sequence.startswith(f"\a\x1b]9;{NEEDS_YOU}: {host}: ")
            assert "verify-no-holders" in sequence and "SIGTERM" in sequence


async def test_the_holders_wait_is_silent_with_notifications_off(tmp_path, monkeypatch):
    monkeypatch.setattr(runbook, "HOLDER_RECHECK", 0.05)
    fleet = _fleet_with_workloads(("gpu05",))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path),
                  notify=False)
    async with app.run_test(size=SIZE) as pilot:
        written: list[str] = []
        app.notifier.write = written.append
        screen = await start_repair(app, pilot, ["gpu05"])
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking, "the runbook to wait on the workload")
        await pilot.pause(0.3)
        assert written == []


async def test_the_slurm_jobs_question_notifies_once_while_it_waits_for_the_answer(tmp_path):
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None, clock=fixed_clock,
                  audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        written: list[str] = []
        app.notifier.write = written.append
        screen = RunbookScreen(["gpu05"], start=False, services=app.services)
        await app.push_screen(screen)
        await pilot.pause()
        answer = asyncio.ensure_future(screen.resolve_jobs("gpu05", (Job(id=4242, user="carol", name="train"),)))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question about the jobs")
        await pilot.pause(0.2)
        assert len(written) == 1
        assert written[0].startswith(f"\a\x1b]9;{NEEDS_YOU}: gpu05: ") and "Slurm job" in written[0]
        await pilot.press("escape")  # wait for them
        assert await asyncio.wait_for(answer, 5) == JobDecision()
        assert len(written) == 1
