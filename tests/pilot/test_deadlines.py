"""Deadlines of the repair's waits: how a waiting step reads ("8× In Progress, 1:31 of 5:00"), what a
step says when its deadline passes, and how long the plan says a repair takes.

The runbook tests run on frozen simulated fleets (speed 0): every pause moves the simulated clock, so
a five-minute wait for Fabric Manager ends in a fraction of a real second, always at the same point.
"""

from __future__ import annotations

import asyncio
import io
import json

from rich.console import Console

from nvls_tui.backends.base import CommandTimeout
from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.console.widgets.step_list import StepList, step_lines
from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.model import Holder, HolderKind
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.describe import describe
from nvls_tui.runbook.events import (
    CommandFinished,
    CommandStarted,
    FabricProgress,
    HoldersRemaining,
    RunbookEvent,
    StepFinished,
    StepStarted,
    WaitStarted,
)
from nvls_tui.runbook.fabric import (
    FABRIC_QUERY,
    RESET_STATE,
    fabric_counts,
    registration_deadline_message,
    reset_deadline_message,
)
from nvls_tui.runbook.quiesce import holders_deadline_message
from nvls_tui.runbook.smoke import smoke_deadline_message
from nvls_tui.runbook.steps import clock_text
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.deadlines import (
    WaitReminders,
    duration_line,
    node_worst_case,
    wait_line,
)
from nvls_tui.views.runbook import NodeRun, repair_options
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until

SIZE = (160, 48)
WORKLOAD = Holder(pid=4242, user="alice", command="python3 train.py", kind=HolderKind.CUDA_APP,
                  pod="research/train-0")
EXPORTER = Holder(pid=5151, user="root", command="/usr/bin/dcgm-exporter", kind=HolderKind.DCGM_EXPORTER,
                  unit="dcgm-exporter.service")


def plain(renderable) -> str:
    """A Rich renderable as plain text, wide enough not to wrap."""
    console = Console(width=300, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def frozen(spec: str):
    """A frozen simulated fleet, its backends, and the console's options for them (the sim clock)."""
    fleet = load_fleet(spec, speed=0)
    backends = sim_backends(fleet)
    return fleet, backends, repair_options(backends)


# ---- the words of a wait ------------------------------------------------------------------------

def test_a_span_reads_as_a_clock_does():
    assert clock_text(91) == "1:31"
    assert clock_text(300) == "5:00" and clock_text(600) == "10:00"
    assert clock_text(59.9) == "0:59"  # a minute is not up until it is
    assert clock_text(3725) == "1:02:05"
    assert clock_text(-3) == "0:00"


def test_a_wait_line_says_where_the_wait_stands_then_its_time_against_the_deadline():
    assert wait_line("8× In Progress", 91, 300) == "8× In Progress, 1:31 of 5:00"
    assert wait_line("3 holders left", 42, 120) == "3 holders left, 0:42 of 2:00"
    assert wait_line("", 12, 180) == "0:12 of 3:00"
    assert fabric_counts({"In Progress/N/A": 6, "Completed/Success": 2}) == "6× In Progress 2× Completed"
    assert fabric_counts({}) == "no GPU answered"


# ---- what a step says when its deadline passes --------------------------------------------------

def test_fabric_manager_past_its_deadline_names_the_deadline_the_log_to_read_and_what_is_left():
    text = registration_deadline_message(300, "active", {"In Progress/N/A": 8})
    assert text.startswith("fabric registration did not finish within 5:00 (Fabric Manager active; 8× In Progress)")
    assert "check `journalctl -u nvidia-fabricmanager` on the node for the reason" in text
    assert "driver/FM version mismatch" in text and "NVSwitch that did not come back" in text
    assert text.endswith("the units it stopped are started again, and the node stays broken")


def test_holders_past_their_deadline_are_named_with_who_runs_them_and_the_next_move():
    text = holders_deadline_message(120, (WORKLOAD,), sigkill=False)
    assert text.startswith("1 process still holds /dev/nvidia* after 2:00: 4242 (python3, alice)")
    assert "stop it (or what runs it: pod research/train-0) and run the repair again" in text
    assert "--sigkill" not in text  # a workload is never signalled, not even with --sigkill

    both = holders_deadline_message(120, (WORKLOAD, EXPORTER), sigkill=False)
    assert both.startswith("2 processes still hold /dev/nvidia* after 2:00: 4242 (python3, alice), "
                           "5151 (/usr/bin/dcgm-exporter, root)")
    assert "stop them (or what runs them: pod research/train-0, unit dcgm-exporter.service)" in both
    assert "or run the repair with --sigkill to SIGKILL the management processes that ignore SIGTERM" in both
    assert "--sigkill" not in holders_deadline_message(120, (EXPORTER,), sigkill=True)  # it was allowed already


def test_a_reset_and_a_smoke_test_past_their_deadlines_say_what_to_check():
    reset = reset_deadline_message(180)
    assert reset.startswith("nvidia-smi -r did not finish within 3:00: a GPU or NVSwitch did not answer the reset")
    assert "`journalctl -k`" in reset and "Xid/SXid" in reset and "`lspci`" in reset and "reboot" in reset
    smoke = smoke_deadline_message(600)
    assert smoke.startswith("all_reduce_perf did not finish within 10:00 and was stopped")
    assert "`journalctl -k`" in smoke and "NCCL_DEBUG=INFO" in smoke
    assert smoke.endswith("the node is not repaired")


# ---- a waiting step in the column's state -------------------------------------------------------

def test_a_waiting_fabric_manager_step_ticks_against_its_deadline_on_the_columns_clock():
    run = NodeRun("gpu05")
    run.apply(StepStarted(host="gpu05", step="fabric-manager"), 80.0)
    run.apply(FabricProgress(host="gpu05", step="fabric-manager", unit="active", states={"In Progress/N/A": 8},
                             elapsed=12.0, limit=300.0), 100.0)
    assert "fabric-manager     8× In Progress, 1:43 of 5:00" in step_lines(run, 191.0, 80).plain
    assert "8× In Progress, 1:52 of 5:00" in step_lines(run, 200.0, 80).plain  # no event: the tick moves it
    run.apply(StepFinished(host="gpu05", step="fabric-manager", status="ok", duration=130.0), 210.0)
    assert run.wait is None and " of 5:00" not in step_lines(run, 220.0, 80).plain


def test_a_reset_wait_ends_with_its_command_and_a_holders_wait_when_they_are_gone():
    run = NodeRun("gpu05")
    run.apply(StepStarted(host="gpu05", step="reset"), 0.0)
    run.apply(WaitStarted(host="gpu05", step="reset", wait="reset", state=RESET_STATE, limit=180.0,
                          command=True), 1.0)
    run.apply(CommandStarted(host="gpu05", step="reset", argv=("nvidia-smi", "-r")), 1.0)
    assert "resetting every GPU and NVSwitch, 0:12 of 3:00" in step_lines(run, 13.0, 80).plain
    run.apply(CommandFinished(host="gpu05", step="reset", argv=("nvidia-smi", "-r"), exit_status=0), 20.0)
    assert run.wait is None

    run.apply(StepStarted(host="gpu05", step="verify-no-holders"), 30.0)
    changed, _ = run.apply(HoldersRemaining(host="gpu05", step="verify-no-holders", holders=(WORKLOAD,) * 3,
                                            waiting=True, elapsed=40.0, limit=120.0), 70.0)
    assert "steps" in changed and run.waiting
    assert "3 holders left, 0:42 of 2:00" in step_lines(run, 72.0, 80).plain
    changed, lines = run.apply(HoldersRemaining(host="gpu05", step="verify-no-holders", holders=(), elapsed=50.0,
                                                limit=120.0, message="every process that held /dev/nvidia* is gone"),
                               80.0)
    assert run.wait is None and not run.waiting and "holders" in changed
    assert lines[0].kind == "note"


# ---- headless: a wait line now and then, not one per poll ---------------------------------------

def test_headless_reminders_come_every_15_seconds_of_waiting_not_every_poll():
    reminders = WaitReminders(every=15.0)
    reminders.update(StepStarted(host="gpu05", step="fabric-manager"), 0.0)
    due = []
    for t in range(0, 40, 2):  # a poll every 2 s, each one reporting the registration
        reminders.update(FabricProgress(host="gpu05", step="fabric-manager", unit="active",
                                        states={"In Progress/N/A": 8}, elapsed=float(t), limit=300.0), float(t))
        due += reminders.due(float(t) + 0.5)
    assert due == [("gpu05", "8× In Progress, 0:16 of 5:00"), ("gpu05", "8× In Progress, 0:30 of 5:00")]
    reminders.update(StepFinished(host="gpu05", step="fabric-manager", status="ok"), 41.0)
    assert reminders.due(100.0) == []


def test_the_headless_progress_prints_the_wait_line_while_a_reset_runs_and_a_holder_list_once():
    now = [0.0]
    out = io.StringIO()
    printer = ProgressPrinter(out, clock=lambda: now[0])
    printer(StepStarted(host="gpu05", step="verify-no-holders"))
    for t in (0.0, 2.0, 4.0):
        now[0] = t
        printer(HoldersRemaining(host="gpu05", step="verify-no-holders", holders=(WORKLOAD,), waiting=True,
                                 elapsed=t, limit=120.0))
    printer(StepStarted(host="gpu05", step="reset"))
    printer(WaitStarted(host="gpu05", step="reset", wait="reset", state=RESET_STATE, limit=180.0, command=True))
    for t in (5.0, 10.0, 19.0, 21.0, 34.0):  # the ticks of a reset that takes a while: no event meanwhile
        now[0] = t
        printer.remind()
    lines = out.getvalue().splitlines()
    assert lines.count("gpu05          1 process still holds /dev/nvidia*: 4242 (python3, alice) (waiting for the "
                       "operator)") == 1
    assert [ln for ln in lines if "of 3:00" in ln] == [
        "gpu05          waiting: resetting every GPU and NVSwitch, 0:15 of 3:00",
        "gpu05          waiting: resetting every GPU and NVSwitch, 0:30 of 3:00"]


# ---- the runbook: deadlines in the events and in the failure messages ---------------------------

async def test_fabric_manager_that_never_registers_fails_at_its_deadline_saying_what_to_do():
    fleet, (backend,), options = frozen("sim:stuck-in-progress")
    events: list[RunbookEvent] = []
    outcome = await Runbook(backend, options, on_event=events.append).run()
    step = outcome.step("fabric-manager")
    assert outcome.result == "failed" and step.status == "failed"
    assert step.message.startswith("fabric registration did not finish within 5:00 "
                                   "(Fabric Manager active; 8× In Progress): check `journalctl -u nvidia-fabricmanager`")
    assert outcome.message == step.message  # the node's sentence (headless line, JSON, audit log) carries it
    finished = next(e for e in events if isinstance(e, StepFinished) and e.step == "fabric-manager")
    assert finished.message == step.message
    progress = [e for e in events if isinstance(e, FabricProgress)]
    assert {e.limit for e in progress} == {300.0}
    assert progress[0].elapsed < progress[-1].elapsed and progress[-1].elapsed >= 300.0
    assert outcome.step("restore").status == "ok"
    for event in events:
        json.dumps(event.to_dict())  # every event, new fields included, goes to the audit log as JSON


async def test_a_workload_holder_that_never_goes_fails_verify_no_holders_naming_it():
    fleet, (backend,), options = frozen("sim:seed-incident/gpu05")
    app = fleet.node("gpu05").spawn(ppid=1, user="alice", start=fleet.clock.now() - 60, argv=["python3", "train.py"],
                                    cgroup="0::/user.slice/user-1001.slice/session-4.scope", role="cuda-app",
                                    devices=["/dev/nvidia3", "/dev/nvidiactl"])
    events: list[RunbookEvent] = []
    outcome = await Runbook(backend, options, on_event=events.append).run()
    step = outcome.step("verify-no-holders")
    assert step.status == "failed" and outcome.step("reset").status == "skipped"
    assert step.message.startswith(f"1 process still holds /dev/nvidia* after 2:00: {app.pid} (python3, alice): "
                                   "stop it (or what runs it: unit session-4.scope) and run the repair again")
    assert step.message == outcome.message
    waits = [e for e in events if isinstance(e, HoldersRemaining) and e.waiting]
    assert waits and {e.limit for e in waits} == {120.0} and waits[-1].elapsed > waits[0].elapsed
    after_quiesce = next(e for e in events if isinstance(e, HoldersRemaining) and e.step == "quiesce")
    # Worded from its fields, as every place says it (was "1 processes still hold"):
    assert describe(after_quiesce).plain == f"  1 process still holds /dev/nvidia*: {app.pid} (python3, alice)"


class HungReset(SimulatedBackend):
    """A simulated node whose ``nvidia-smi -r`` runs past its timeout."""

    async def run(self, argv, timeout=None, **kw):
        if tuple(argv) == ("nvidia-smi", "-r"):
            raise CommandTimeout(f"`nvidia-smi -r` did not finish within {timeout:g} s")
        return await super().run(argv, timeout, **kw)


async def test_a_reset_past_its_deadline_announces_the_wait_and_fails_saying_what_to_check():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    backend = HungReset(fleet, "gpu05")
    events: list[RunbookEvent] = []
    outcome = await Runbook(backend, repair_options([backend]), on_event=events.append).run()
    assert outcome.step("reset").status == "failed" and outcome.step("fabric-manager").status == "skipped"
    assert outcome.message.startswith("nvidia-smi -r did not finish within 3:00: a GPU or NVSwitch did not answer")
    wait = next(e for e in events if isinstance(e, WaitStarted))
    assert (wait.step, wait.wait, wait.state, wait.limit, wait.command) == ("reset", "reset", RESET_STATE, 180.0, True)
    assert json.loads(json.dumps(wait.to_dict()))["event"] == "wait-started"


class HungSmoke(SimulatedBackend):
    """A simulated node whose all_reduce_perf prints its header, then hangs."""

    async def stream(self, argv, timeout=None, **kw):
        yield "# nThread 1 nGpus 8 minBytes 8388608 maxBytes 134217728 step: 2(factor) warmup iters: 5\n"
        await asyncio.sleep(3600)


async def test_a_smoke_test_past_its_limit_is_stopped_and_says_what_to_check():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    backend = HungSmoke(fleet, "gpu05")
    options = repair_options([backend], smoke_timeout=1.0)
    outcome = await Runbook(backend, options).run()
    step = outcome.step("smoke-test")
    assert step.status == "failed" and step.message == smoke_deadline_message(1.0)
    assert step.message.startswith("all_reduce_perf did not finish within 0:01 and was stopped")
    assert outcome.step("restore").status == "ok"


# ---- how long a repair takes --------------------------------------------------------------------

def test_the_expected_duration_comes_from_the_deadlines_and_the_strategy():
    options = RepairOptions()
    assert node_worst_case(options) == 2 * 120 + 180 + 300 + 600  # holders (checked twice), reset, FM, smoke
    assert node_worst_case(options, recheck=True) == node_worst_case(options) + 2 * 600 + 10
    assert duration_line(options, "parallel", [False]) == (
        "usually about 1–2 minutes; at most ~22 minutes if every wait runs to its deadline")
    assert duration_line(options, "parallel", [False, True]) == (
        "usually about 1–2 minutes, the nodes side by side; at most ~43 minutes if every wait runs to its deadline")
    assert duration_line(options, "serial", [False, False]) == (
        "usually about 1–2 minutes per node, 2–4 minutes in all, one node after another; "
        "at most ~44 minutes if every wait runs to its deadline")
    assert "at most ~3 hours" in duration_line(options, "canary", [False] * 8)  # 176 minutes, rounded up
    short = RepairOptions(holder_timeout=30, reset_timeout=60, fm_timeout=60, smoke_timeout=120)
    assert duration_line(short, "parallel", [False]).endswith("at most ~5 minutes if every wait runs to its deadline")


def test_the_dry_run_prints_the_expected_duration(tmp_path, monkeypatch, capsys):
    def dry_run(spec: str, *more: str) -> str:
        backends = sim_backends(load_fleet(spec, speed=0))
        assert main(["repair", spec, "--dry-run", *more, "--audit-dir", str(tmp_path)],
                    connect=lambda settings: backends) == 0
        return capsys.readouterr().out

    out = dry_run("sim:seed-incident/gpu[05-06]", "--strategy", "serial")
    assert ("expected duration: simulated: about 15 s on the simulator's clock per node, about 30 s in all, one node "
            "after another; a real HGX node usually takes 1–2 minutes; at most ~44 minutes if every wait runs to its "
            "deadline") in out
    assert "deadlines per node: holders 2:00 (checked twice), reset 3:00, Fabric Manager 5:00, smoke test 10:00\n" in out
    # A fabric that looks healthy is smoke-tested first, twice at worst: 22 minutes and 20:10 more.
    out = dry_run("sim:transient-802")
    assert ("expected duration: simulated: about 20 s on the simulator's clock; a real HGX node usually takes 1–2 "
            "minutes; at most ~43 minutes if every wait runs to its deadline") in out
    assert ("smoke test 10:00; first a smoke-test re-check of gpu-t802 (the fabric looks healthy): 10:00, "
            "up to twice") in out


# ---- the console --------------------------------------------------------------------------------

async def test_the_plan_says_how_long_the_repair_takes_and_the_total_follows_the_strategy(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await pilot.press("space", "space", "r")  # gpu05, gpu06, then the plan
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 2,
                         "the dry run")
        await pilot.pause()
        plan = app.screen
        gpu05 = plain(plan.query_one("#plan-body-0").content)
        assert gpu05.index("What this repair does:") < gpu05.index("How long: simulated: about 15 s on the "
                                                                   "simulator's clock; a real HGX node usually "
                                                                   "takes 1–2 minutes; at most ~22 minutes if every "
                                                                   "wait runs to its deadline") < gpu05.index("1. preflight")
        assert "holders 2:00 (checked twice), reset 3:00, Fabric Manager 5:00, smoke test 10:00" in gpu05
        note = plain(plan.query_one("#plan-duration").content)
        assert ("It takes simulated: about 15 s on the simulator's clock, the nodes side by side; a real HGX node "
                "usually takes 1–2 minutes; at most ~22 minutes if every wait runs to its deadline.") in note
        plan.query_one("#plan-strategy").value = "serial"
        await wait_until(pilot, lambda: "about 30 s in all" in plain(plan.query_one("#plan-duration").content),
                         "the total for one node after another")
        assert "one node after another; a real HGX node usually takes 1–2 minutes; at most ~44 minutes" in plain(
            plan.query_one("#plan-duration").content)


class GatedFabric(SimulatedBackend):
    """A simulated node that holds its ``poll``-th fabric query until the test opens the gate."""

    def __init__(self, fleet, name, *, poll: int):
        super().__init__(fleet, name)
        self.poll, self.seen = poll, 0
        self.gate, self.at_gate = asyncio.Event(), asyncio.Event()

    async def run(self, argv, timeout=None, **kw):
        if tuple(argv) == FABRIC_QUERY:
            self.seen += 1
            if self.seen == self.poll:
                self.at_gate.set()
                await self.gate.wait()
        return await super().run(argv, timeout, **kw)


async def test_a_waiting_fabric_manager_step_shows_the_counts_and_its_deadline_and_ticks(tmp_path):
    fleet = load_fleet("sim:stuck-in-progress", speed=0)
    backend = GatedFabric(fleet, "gpu-stuck01", poll=10)
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        app.screen.query_one(FleetGrid).move_cursor(row=0)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 1,
                         "the dry run")
        await pilot.pause()
        await pilot.press(*"gpu-stuck01", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook screen")
        screen = app.screen
        await wait_until(pilot, backend.at_gate.is_set, "the tenth poll of the fabric registration")
        steps = screen.query_one(RunbookColumn).query_one(StepList)
        # Nine polls reported, each followed by a two-second pause on the simulated clock: 0:18 waited.
        await wait_until(pilot, lambda: "fabric-manager     8× In Progress, 0:18 of 5:00" in plain(steps.content),
                         "the wait line of the fabric-manager step")
        fleet.clock.advance(73)  # no event meanwhile: only the screen's tick can move it
        await wait_until(pilot, lambda: "8× In Progress, 1:31 of 5:00" in plain(steps.content),
                         "the wait line to tick")
        backend.gate.set()
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end", timeout=60)
        run = screen.query_one(RunbookColumn).run
        assert run.result == "failed" and "check `journalctl -u nvidia-fabricmanager`" in run.message


def test_a_wait_line_too_long_for_a_narrow_column_goes_under_the_step_name_not_to_column_0():
    run = NodeRun("gpu05")
    run.apply(StepStarted(host="gpu05", step="fabric-manager"), 80.0)
    run.apply(FabricProgress(host="gpu05", step="fabric-manager", unit="active", states={"Not Started/N/A": 8},
                             elapsed=0.0, limit=300.0), 80.0)
    lines = step_lines(run, 81.0, 36).plain.splitlines()  # an 80x24 screen's column with two nodes
    at = next(i for i, line in enumerate(lines) if "fabric-manager" in line)
    assert lines[at].rstrip().endswith("fabric-manager")
    assert lines[at + 1] == "     8× Not Started, 0:01 of 5:00"
    wide = step_lines(run, 81.0, 80).plain
    assert "fabric-manager     8× Not Started, 0:01 of 5:00" in wide  # one line where it fits
