"""Issue 28 item 6: ``restored:`` names persistence mode when the repair turned it off and the restore turned it
back on (the console's summary, the restore step's line, headless progress); a run that never touched it says
nothing of it."""

from __future__ import annotations

import io

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.screens.runbook_column import summary_text
from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.events import Restored, RunFinished, RunStarted
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.runbook import NodeRun

FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)
UNITS = ("nvidia-dcgm.service", "kubelet.service")


def restored_run(gpus: tuple[int, ...]) -> NodeRun:
    run = NodeRun("gpu-pm01")
    for event in (RunStarted(host="gpu-pm01", run_id="r1"),
                  Restored(host="gpu-pm01", step="restore", units=UNITS, persistence_gpus=gpus),
                  RunFinished(host="gpu-pm01", result="repaired", message="NVLS works again")):
        run.apply(event, 0.0)
    return run


def test_the_console_summary_names_persistence_mode_put_back():
    text = summary_text(restored_run(tuple(range(8)))).plain
    assert "restored: nvidia-dcgm, kubelet; persistence mode on 8 GPUs" in text, text


def test_the_console_summary_says_nothing_of_persistence_mode_left_alone():
    text = summary_text(restored_run(())).plain
    assert "restored: nvidia-dcgm, kubelet" in text and "persistence" not in text, text


def test_headless_progress_names_persistence_mode_put_back():
    line = ProgressPrinter(io.StringIO()).format(
        Restored(host="gpu-pm01", step="restore", units=UNITS, persistence_gpus=(3,)))
    assert line == "  restored nvidia-dcgm.service, kubelet.service; persistence mode back on for 1 GPU"


async def test_the_restore_step_names_persistence_mode_after_a_repair_that_turned_it_off():
    fleet = load_fleet("sim:persistence-blocks-reset", speed=2000.0)
    (backend,) = sim_backends(fleet)
    outcome = await Runbook(backend, FAST).run()
    assert outcome.step("quiesce").status == "ok", outcome.message
    # The step's message says what its `restored` event says (runbook/describe.restored_parts).
    assert "persistence mode back on for 8 GPUs" in outcome.step("restore").message, outcome.step("restore").message
