"""Issue 28 item 6: an abort after the runbook SIGTERMed a job never says "the node is as it was"; it says
which processes were stopped (the restore does not start them again), while a run stopped before any signal still says so."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.events import ProcessSignalled, StepStarted
from nvls_tui.sim.fleet import load_fleet

FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)


def gpu05():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    return sim_backends(fleet)[0]


async def test_an_abort_after_sigterm_names_the_processes_stopped():
    signalled: list[ProcessSignalled] = []

    def on_event(event) -> None:
        if isinstance(event, ProcessSignalled) and event.outcome == "signalled":
            signalled.append(event)
        if isinstance(event, StepStarted) and event.step == "verify-no-holders":
            book.abort()

    book = Runbook(gpu05(), FAST, on_event=on_event)
    outcome = await book.run()
    assert outcome.result == "aborted" and signalled, outcome.message
    assert "as it was" not in outcome.message
    n = len(signalled)
    assert f"nothing was reset; {n} processes were stopped with SIGTERM" in outcome.message, outcome.message
    for event in signalled[:3]:
        assert f"{event.pid} {event.command[:40]}" in outcome.message
    assert f"+{n - 3} more" in outcome.message
    assert "the restore does not start processes again" in outcome.message


async def test_an_abort_before_any_signal_still_says_the_node_is_as_it_was():
    book = Runbook(gpu05(), FAST, on_event=lambda e: isinstance(e, StepStarted) and e.step == "quiesce" and book.abort())
    outcome = await book.run()
    assert outcome.result == "aborted"
    assert "nothing was reset; the node is as it was" in outcome.message, outcome.message
