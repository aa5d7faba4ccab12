"""The repair console's pure parts: folding runbook events into a column's state, the step list text,
the bandwidth plot's data, and the console's RepairOptions for simulated fleets."""

from __future__ import annotations

import asyncio

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.widgets.bandwidth_plot import SWEEP, size_label
from nvls_tui.console.widgets.step_list import duration_text, spinner, step_lines
from nvls_tui.model import Holder, HolderKind, SmokeResult
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.events import (
    CommandFinished,
    CommandStarted,
    FabricProgress,
    HoldersRemaining,
    Restored,
    RunFinished,
    RunStarted,
    SmokeFinished,
    SmokeRow,
    StepFinished,
    StepStarted,
)
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.runbook import NodeRun, repair_options, short_command


def recorded(spec: str = "sim:seed-incident/gpu05") -> list:
    """Every event of a real repair on a frozen simulated node."""
    fleet = load_fleet(spec, speed=0)
    backends = sim_backends(fleet)
    events: list = []
    asyncio.run(Runbook(backends[0], repair_options(backends), on_event=events.append).run())
    return events


def test_a_whole_recorded_repair_folds_into_eight_ok_steps_five_smoke_rows_and_the_result():
    run = NodeRun("gpu05")
    lines = []
    for i, event in enumerate(recorded()):
        lines += run.apply(event, float(i))[1]
    assert run.result == "repaired" and not run.running
    assert [s.status for s in run.steps.values()] == ["ok"] * 8
    assert [size for size, _, _ in run.smoke.rows] == list(SWEEP)
    assert run.smoke.result.passed and run.smoke.result.avg_busbw == pytest.approx(292, abs=5)
    assert "kubelet.service" in run.restored
    assert any(line.kind == "cmd" and line.text == "$ nvidia-smi -r" for line in lines)
    assert lines[-1].text.startswith("⇒ run finished: repaired NVLS works again")


def test_steps_never_reached_end_skipped_and_a_failed_step_says_why():
    run = NodeRun("gpu-pm01")
    run.apply(RunStarted(host="gpu-pm01", run_id="x"), 0.0)
    run.apply(StepStarted(host="gpu-pm01", step="reset"), 1.0)
    _, lines = run.apply(StepFinished(host="gpu-pm01", step="reset", status="failed", duration=2.5,
                                      message="nvidia-smi -r was refused"), 3.5)
    run.apply(RunFinished(host="gpu-pm01", result="failed", message="refused"), 4.0)
    assert run.steps["reset"].status == "failed" and run.steps["reset"].duration == 2.5
    assert run.steps["smoke-test"].status == "skipped"
    assert lines[0].kind == "err" and "refused" in lines[0].text
    assert run.elapsed(100.0) == 4.0  # frozen at the end


def test_the_running_step_shows_a_spinner_its_elapsed_time_and_the_command_running_now():
    run = NodeRun("gpu05")
    run.apply(RunStarted(host="gpu05", run_id="x"), 10.0)
    run.apply(StepStarted(host="gpu05", step="reset"), 10.0)
    run.apply(CommandStarted(host="gpu05", step="reset", argv=("nvidia-smi", "-r")), 11.0)
    text = step_lines(run, 13.25, 60).plain
    assert f"{spinner(13.25)} reset" in text and "running 3.2 s" in text
    assert "$ nvidia-smi -r  2.2 s" in text
    assert "· smoke-test" in text and "pending" in text


def test_fabric_registration_progress_shows_on_the_running_fabric_manager_step():
    run = NodeRun("gpu05")
    run.apply(StepStarted(host="gpu05", step="fabric-manager"), 0.0)
    run.apply(FabricProgress(host="gpu05", step="fabric-manager", unit="active",
                             states={"In Progress/N/A": 6, "Completed/Success": 2}), 1.0)
    assert "6× In Progress 2× Completed" in step_lines(run, 2.0).plain


def test_holders_remaining_with_waiting_show_and_leave_when_the_step_ends():
    run = NodeRun("gpu05")
    holder = Holder(pid=4242, user="alice", command="python train.py", kind=HolderKind.CUDA_APP)
    changed, lines = run.apply(HoldersRemaining(host="gpu05", step="verify-no-holders", holders=(holder,),
                                                waiting=True, message="1 processes still hold"), 0.0)
    assert "holders" in changed and run.waiting and run.holders == (holder,)
    assert lines[0].kind == "warn"
    run.apply(StepFinished(host="gpu05", step="verify-no-holders", status="ok"), 1.0)
    assert not run.waiting


def test_a_repeated_poll_output_is_said_once_not_printed_again():
    run = NodeRun("gpu05")
    argv = ("systemctl", "is-active", "nvidia-fabricmanager.service")
    first = run._finished_lines(CommandFinished(host="gpu05", argv=argv, exit_status=0, output="activating\n"))
    again = run._finished_lines(CommandFinished(host="gpu05", argv=argv, exit_status=0, output="activating\n"))
    assert [line.text for line in first] == ["activating"]
    assert [line.text for line in again] == ["  (same output as the last time)"]


def test_a_smoke_run_starts_a_new_plot_and_the_judged_result_lands_on_it():
    run = NodeRun("gpu06")
    run.apply(CommandStarted(host="gpu06", step="preflight", argv=("all_reduce_perf", "-g", "8")), 0.0)
    run.apply(SmokeRow(host="gpu06", step="preflight", size=8388608, busbw=10.0,
                       row={"oop_busbw": 10.0, "ip_busbw": 11.0}), 1.0)
    run.apply(CommandStarted(host="gpu06", step="smoke-test", argv=("all_reduce_perf", "-g", "8")), 2.0)
    run.apply(SmokeRow(host="gpu06", step="smoke-test", size=8388608, busbw=238.4,
                       row={"oop_busbw": 238.4, "ip_busbw": 238.7}), 3.0)
    result = SmokeResult(avg_busbw=291.0, passed=True, threshold=250.0)
    _, lines = run.apply(SmokeFinished(host="gpu06", step="smoke-test", smoke=result), 4.0)
    assert [s.step for s in run.smokes] == ["preflight", "smoke-test"]
    assert run.smoke.rows == [(8388608, 238.4, 238.7)] and run.smoke.result is result
    assert lines[0].text == "smoke test passed: avg 291.0 GB/s"


def test_a_failed_restore_is_said_in_red():
    run = NodeRun("gpu05")
    _, lines = run.apply(Restored(host="gpu05", step="restore", units=("kubelet.service",),
                                  failed=("nvidia-dcgm.service",)), 0.0)
    assert run.restore_failed == ("nvidia-dcgm.service",)
    assert lines[0].kind == "err" and "could not restore nvidia-dcgm.service" in lines[0].text


def test_long_commands_are_shortened_in_the_middle_for_the_pane():
    argv = ("fuser", "-v", *(f"/dev/nvidia{i}" for i in range(40)))
    text = short_command(argv, width=60)
    assert len(text) <= 60 and text.startswith("fuser -v /dev/nvidia0") and text.endswith("/dev/nvidia39")
    assert short_command(("nvidia-smi", "-r")) == "nvidia-smi -r"


def test_sizes_and_durations_read_as_an_operator_writes_them():
    assert [size_label(s) for s in SWEEP] == ["8M", "16M", "32M", "64M", "128M"]
    assert size_label(1024**3) == "1G" and size_label(1000) == "1000"
    assert duration_text(0.04) == "0.0 s" and duration_text(12.34) == "12.3 s" and duration_text(125) == "2 m 05 s"


def test_a_simulated_fleet_repairs_on_its_own_clock_and_other_backends_on_the_real_one():
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=0)
    options = repair_options(sim_backends(fleet), 7.0)
    before = options.clock()
    asyncio.run(options.sleep(30.0))  # a frozen simulated clock moves when the runbook waits
    assert options.clock() - before == pytest.approx(30.0)
    assert options.command_timeout == 7.0

    class Remote:
        simulated = False

    assert repair_options([Remote()]).sleep is asyncio.sleep
