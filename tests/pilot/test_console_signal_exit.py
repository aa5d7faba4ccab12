"""The console's answer to SIGINT, SIGTERM and SIGHUP, in process (issue 34 item 7; the real process in a real
terminal is tests/tmux/test_e2e_console_signals.py).

``NvlsApp.interrupted`` is what the installed handlers call: mid-repair it aborts every node, waits for the
restores and exits 1 with the abort in the audit log; a second signal says the restore goes on and how to finish
it should the console be killed; with nothing running the console exits at once. The pieces that keep a
hung-up terminal harmless are checked on a real pseudo-terminal whose other end is closed.
"""

from __future__ import annotations

import asyncio
import os
import pty

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.signals import TerminalStream, hung_up, to_devnull
from nvls_tui.runbook.drift import steady_units
from nvls_tui.runbook.session import Session
from nvls_tui.runbook.steps import RepairOptions
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_console_repair import SIZE, FaultBackend, start_repair, wait_until
from tests.pilot.test_operations_console import records
from tests.test_console_fakes import fixed_clock


async def test_a_signal_mid_repair_aborts_restores_and_exits_1_with_the_abort_in_the_audit_log(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()
    backends = [FaultBackend(fleet, n, gate=gate) if n == "gpu05" else SimulatedBackend(fleet, n) for n in fleet.names]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    gpu05 = backends[fleet.names.index("gpu05")]
    before = steady_units(await gpu05.snapshot())  # the snapshot oneshot is its timer's (drift.FLAPPING_UNITS)
    async with app.run_test(size=SIZE) as pilot:
        await start_repair(app, pilot, ["gpu05"], select=False)
        await wait_until(pilot, gpu05.at_gate.is_set, "the reset to be under way")
        app.interrupted("SIGTERM", first=True)
        app.interrupted("SIGTERM", first=False)
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert any("the restore goes on" in m and "nvls-tui repair --restore --force gpu05" in m for m in said), said
        gate.set()
        await wait_until(pilot, lambda: app.return_code is not None, "the console to exit")
        summary = app.exit_summary()
    assert app.return_code == 1
    assert "gpu05: aborted" in summary and "SIGTERM received" in summary
    assert steady_units(await gpu05.snapshot()) == before
    finished = [r for r in records(tmp_path, "repair-*.jsonl") if r.get("event") == "run-finished"]
    assert finished[-1]["result"] == "aborted" and "SIGTERM received" in finished[-1]["message"]


async def test_a_signal_with_nothing_running_exits_at_once_as_if_it_was_not_caught(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp([SimulatedBackend(fleet, n) for n in fleet.names], poll_interval=None, clock=fixed_clock,
                  audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.interrupted("SIGHUP", first=True)
        await wait_until(pilot, lambda: app.return_code is not None, "the console to exit")
    assert app.return_code == 128 + 1


async def test_a_repair_registered_after_the_interrupt_never_starts(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    backend = SimulatedBackend(fleet, "gpu05")
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path))
    session.interrupt("SIGHUP received")
    run = session.start_repair(["gpu05"])  # a runbook screen that opened as the signal came
    (outcome,) = await session.repair(run, RepairOptions(sleep=fleet.clock.sleep, clock=fleet.clock.now))
    assert outcome.result == "aborted" and "SIGHUP received" in outcome.message
    assert not any(list(argv[:2]) == ["systemctl", "stop"] for _, argv in fleet.node("gpu05").cmdlog)


def test_the_screen_stream_drops_what_a_hung_up_terminal_no_longer_takes():
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w")
    screen = TerminalStream(stream)
    screen.write("drawn\n")
    screen.flush()
    os.close(master)  # the terminal hangs up: its writes fail with EIO
    screen.write("x" * 10_000)
    screen.flush()
    assert screen.gone and not screen.isatty()
    screen.write("more")  # nothing raises, nothing is tried
    try:
        stream.close()
    except OSError:
        pass  # its buffer holds what the dead terminal refused


def test_a_terminal_that_hung_up_is_found_and_its_descriptor_pointed_at_dev_null():
    master, slave = pty.openpty()
    was = frozenset({slave})
    assert hung_up(was) == frozenset()
    os.close(master)
    assert hung_up(was) == was
    try:
        os.write(slave, b"x")
        raise AssertionError("a hung-up terminal took a write")
    except OSError:
        pass
    to_devnull(was)
    assert os.write(slave, b"after the hang-up") == len(b"after the hang-up")  # dropped, never an error
    os.close(slave)
