"""The repair around a scheduler (issue 15), the runbook's side: drain first, refuse while jobs run,
put the drain back the way it was, stay drained with the failed step's name. The scheduler here is a
recording double of the runbook's SchedulerHook; the same runbook against real slurmctld and slurmd is
tests/test_lab_slurm_repair.py."""

from __future__ import annotations

from dataclasses import replace

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.model.scheduler import Job, SchedulerState
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.changes import DrainNode, TakeLock, WriteOwner
from nvls_tui.runbook.events import CommandStarted, RunbookEvent
from nvls_tui.runbook.scheduling import JobDecision, drain_argv, resume_argv, run_reason
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.runbook import repair_options
from tests.waiting import first_poll, open_node_screen


class RecordingSlurm:
    """A node's scheduler that remembers every command and changes its state as scontrol would."""

    def __init__(self, node: str, state: str = "idle", reason: str | None = None, jobs: tuple[Job, ...] = (),
                 jobs_end_after_reads: int | None = None, error: str | None = None, absent: bool = False,
                 unseen: bool = False) -> None:
        self.node = node
        self.absent = absent
        self.unseen = unseen  # Slurm holds the node for jobs that its squeue does not list
        self.state, self.reason, self.jobs, self.error = state, reason, jobs, error
        self.commands: list[tuple[str, ...]] = []
        self.reads = 0
        self.jobs_end_after_reads = jobs_end_after_reads

    async def read(self) -> SchedulerState:
        self.reads += 1
        if self.jobs_end_after_reads is not None and self.reads > self.jobs_end_after_reads:
            self.jobs = ()
        if self.absent:
            return None
        if self.error:
            return SchedulerState("slurm", self.node, "unknown", error=self.error)
        if not self.jobs and not self.unseen:  # the last job ended: Slurm frees the node
            self.state = {"draining": "drained", "mixed": "idle", "allocated": "idle"}.get(self.state, self.state)
        return SchedulerState("slurm", self.node, self.state, self.reason, self.jobs)

    async def command(self, argv):
        self.commands.append(tuple(argv))
        words = dict(w.split("=", 1) for w in argv[2:] if "=" in w)
        if words.get("State") == "DRAIN":
            self.state, self.reason = ("draining" if self.jobs or self.unseen else "drained"), words.get("Reason")
        elif words.get("State") == "RESUME":
            self.state, self.reason = "idle", None
        elif argv[0] == "scancel":
            self.jobs = tuple(j for j in self.jobs if str(j.id) not in argv[1:])
        return 0, ""


async def repair(spec: str, host: str, hook: RecordingSlurm, **options):
    fleet = load_fleet(spec, speed=0)
    (backend,) = sim_backends(fleet)
    events: list[RunbookEvent] = []
    book = Runbook(backend, repair_options([backend], **options), on_event=events.append, run_id="run1",
                   scheduler=hook)
    outcome = await book.run()
    ran = [e.argv for e in events if isinstance(e, CommandStarted)]
    return outcome, ran, fleet.node(host)


JOB = Job(1234, "alice", "train", "2026-08-15T20:00:00")


async def test_running_jobs_refuse_the_repair_with_no_reset_and_no_drain_left_behind():
    hook = RecordingSlurm("gpu05", jobs=(JOB,))
    outcome, ran, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "refused"
    assert "gpu05 still runs 1 Slurm job: 1234 (alice/train)" in outcome.message
    assert ("nvidia-smi", "-r") not in ran
    assert hook.commands == [drain_argv("gpu05", run_reason("run1")), resume_argv("gpu05")]
    assert hook.state == "idle" and hook.reason is None  # no DRAIN it did not have


async def test_an_idle_node_is_drained_repaired_and_resumed_and_each_scontrol_is_a_command_of_the_run():
    hook = RecordingSlurm("gpu05")
    outcome, ran, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "repaired" and outcome.message.endswith("gpu05 resumed in Slurm")
    assert hook.commands == [drain_argv("gpu05", "nvls-tui run1: NVLS repair"), resume_argv("gpu05")]
    # The drain comes before anything is stopped, the resume after the units are back.
    assert ran.index(hook.commands[0]) < ran.index(("nvidia-smi", "-r")) < ran.index(hook.commands[1])
    assert ran.index(("systemctl", "start", "kubelet.service")) < ran.index(hook.commands[1])


async def test_jobs_that_end_within_wait_jobs_let_the_repair_go_on():
    hook = RecordingSlurm("gpu05", jobs=(JOB,), jobs_end_after_reads=3)
    outcome, _, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook, wait_jobs=60.0)
    assert outcome.result == "repaired" and hook.state == "idle"


async def test_a_failed_repair_stays_drained_with_the_step_it_failed_at():
    hook = RecordingSlurm("gpu-stuck01")
    outcome, _, _ = await repair("sim:stuck-in-progress", "gpu-stuck01", hook)
    assert outcome.result == "failed"
    failed = next(s.name for s in outcome.steps if s.status == "failed")
    assert hook.state == "drained" and hook.reason == f"nvls-tui: repair failed at {failed}"
    kept = (f"gpu-stuck01 stays drained in Slurm (nvls-tui: repair failed at {failed}): "
            "`scontrol update NodeName=gpu-stuck01 State=RESUME` once it is repaired")
    assert outcome.message.endswith(kept) and outcome.stays == [kept]  # with the command that lifts it


async def test_a_drain_someone_else_set_is_left_alone():
    hook = RecordingSlurm("gpu05", state="drained", reason="maintenance: PSU swap")
    outcome, _, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "repaired" and hook.commands == []
    assert (hook.state, hook.reason) == ("drained", "maintenance: PSU swap")
    # ... and the end line says it stays so, and what lifts it (issue 38 item 5; before, nothing was said)
    kept = ("gpu05 stays drained in Slurm (before the repair, not by nvls-tui: maintenance: PSU swap): "
            "`scontrol update NodeName=gpu05 State=RESUME` once whoever set it agrees")
    assert outcome.message.endswith(kept) and outcome.stays == [kept]


async def test_keep_drained_leaves_the_repaired_node_drained():
    hook = RecordingSlurm("gpu05")
    outcome, _, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook, keep_drained=True)
    assert outcome.result == "repaired" and hook.commands == [drain_argv("gpu05", run_reason("run1"))]
    assert hook.state == "drained" and outcome.message.endswith(
        "stays drained in Slurm (--keep-drained): `scontrol update NodeName=gpu05 State=RESUME` puts it back "
        "in service")


async def test_a_scheduler_that_cannot_be_read_refuses_the_repair():
    hook = RecordingSlurm("gpu05", error="scontrol: error: Unable to contact slurm controller")
    outcome, ran, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "refused" and "the scheduler could not be read" in outcome.message
    assert ("nvidia-smi", "-r") not in ran and hook.commands == []


async def test_a_node_the_cluster_does_not_have_is_repaired_without_the_scheduler_and_says_so():
    hook = RecordingSlurm("gpu05", absent=True)
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    (backend,) = sim_backends(fleet)
    events: list[RunbookEvent] = []
    outcome = await Runbook(backend, repair_options([backend]), on_event=events.append, scheduler=hook).run()
    assert outcome.result == "repaired" and hook.commands == []
    notes = [e.message for e in events if e.kind == "note"]
    assert any(n.startswith("the Slurm cluster has no node gpu05: repaired without draining it") for n in notes)


async def test_the_dry_run_shows_the_drain_and_the_resume():
    hook = RecordingSlurm("gpu05")
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    (backend,) = sim_backends(fleet)
    options = replace(repair_options([backend]), dry_run=True)
    outcome = await Runbook(backend, options, run_id="run1", scheduler=hook).run()
    preflight, restore = outcome.step("preflight").commands, outcome.step("restore").commands
    # The drain is listed where the run makes it: right after the lock is taken (the bastion's command goes out
    # with the node's lock proven on the node first).
    assert outcome.step("preflight").entries[:3] == [TakeLock(), WriteOwner(), DrainNode("gpu05", run_reason("run1"))]
    drain = next(i for i, c in enumerate(preflight) if c.startswith("scontrol "))
    assert drain == len(TakeLock().argvs()) + len(WriteOwner().argvs())
    assert preflight[drain].startswith("scontrol update NodeName=gpu05 State=DRAIN 'Reason=nvls-tui run1: NVLS repair'")
    assert restore[-1].startswith("scontrol update NodeName=gpu05 State=RESUME")
    assert hook.commands == []  # a dry run changes nothing, the scheduler included


# ---- the console asks the operator ------------------------------------------------------------
async def console_repair_with_jobs(hook: RecordingSlurm, answer):
    """A console repair of gpu05 whose preflight meets a running job; ``answer(pilot, app)`` replies."""
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.screens.confirm import ConfirmScreen
    from nvls_tui.console.screens.plan import PlanScreen
    from nvls_tui.console.screens.runbook import RunbookScreen
    from tests.test_console_fakes import fixed_clock
    from tests.waiting import wait_until

    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    app.session.schedulers = {"gpu05": hook}
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.press("space", "r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 1,
                         "the dry run")
        await pilot.press(*"gpu05", "enter")
        # The question comes over the runbook screen as soon as preflight has drained the node.
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question about the job")
        screen = next(s for s in app.screen_stack if isinstance(s, RunbookScreen))
        assert app.screen.title_text == "gpu05 still runs 1 Slurm job"
        assert app.screen.lines == ["job 1234 alice/train, time limit ends 2026-08-15T20:00:00"]
        await answer(pilot, app)
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end", timeout=60)
        return screen.columns["gpu05"].run


async def test_the_console_offers_scancel_of_the_jobs_after_their_ids_are_typed():
    from nvls_tui.console.screens.confirm import ConfirmScreen
    from tests.waiting import wait_until

    hook = RecordingSlurm("gpu05", jobs=(JOB,))

    async def scancel(pilot, app):
        first = app.screen
        first.query_one("#confirm").press()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen is not first,
                         "the typed confirmation")
        assert app.screen.type_to_confirm == "1234"
        # Keys typed before the box has focus would go elsewhere (a loaded machine mounts it late).
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "confirm-typed",
                         "the typed box focused")
        await pilot.press("1", "2", "3", "4", "enter")

    run = await console_repair_with_jobs(hook, scancel)
    assert run.result == "repaired", run.message
    assert ("scancel", "1234") in hook.commands and hook.commands[-1] == resume_argv("gpu05")
    assert hook.commands.index(("scancel", "1234")) < hook.commands.index(resume_argv("gpu05"))


async def test_the_console_waits_for_the_jobs_when_asked_to():
    hook = RecordingSlurm("gpu05", jobs=(JOB,), jobs_end_after_reads=4)

    async def wait(pilot, app):
        app.screen.query_one("#cancel").press()  # "Wait for them"

    run = await console_repair_with_jobs(hook, wait)
    assert run.result == "repaired", run.message
    assert not any(c[0] == "scancel" for c in hook.commands) and hook.state == "idle"


async def test_the_node_screen_refuses_to_sigterm_a_slurm_jobs_process():
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.screens.confirm import ConfirmScreen
    from tests.test_console_fakes import FakeBackend, fixed_clock, make_node

    state = make_node("gpu05", broken=True)
    job_holder = replace(state.holders[0], job=JOB)
    backend = FakeBackend(state.replace(holders=(job_holder,)))
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("space", "t")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen) and backend.signalled == []
        (note,) = list(app._notifications)
        assert note.message.startswith(f"PID {job_holder.pid} belongs to Slurm job 1234: nvls-tui never signals")


async def test_a_drain_an_earlier_nvls_tui_run_left_is_resumed_once_a_repair_passes():
    hook = RecordingSlurm("gpu05", state="drained", reason="nvls-tui: repair failed at fabric-manager")
    outcome, _, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "repaired"
    assert hook.commands == [resume_argv("gpu05")] and hook.state == "idle"


async def test_an_earlier_runs_drain_stays_when_this_run_is_refused():
    hook = RecordingSlurm("gpu05", state="drained", reason="nvls-tui: repair failed at reset", jobs=(JOB,))
    outcome, _, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "refused" and hook.commands == []
    assert (hook.state, hook.reason) == ("drained", "nvls-tui: repair failed at reset")  # as it was


# ---- a node Slurm calls busy with no job read (item B) ------------------------------------------
async def test_a_node_slurm_calls_mixed_with_no_job_read_is_refused_with_no_reset():
    hook = RecordingSlurm("gpu05", state="mixed", unseen=True)
    outcome, ran, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook)
    assert outcome.result == "refused", outcome.message
    assert "Slurm has gpu05 draining but no job on it could be read" in outcome.message
    assert ("nvidia-smi", "-r") not in ran
    assert hook.commands == [drain_argv("gpu05", run_reason("run1")), resume_argv("gpu05")]


async def test_a_node_slurm_calls_allocated_with_no_job_read_is_refused_even_with_wait_jobs_and_a_console():
    class Asking:  # an operator who would be asked about jobs: there are none to ask about
        asked = 0

        async def resolve_jobs(self, host, jobs):
            Asking.asked += 1
            return JobDecision()

    hook = RecordingSlurm("gpu05", state="allocated", unseen=True)
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    (backend,) = sim_backends(fleet)
    events: list[RunbookEvent] = []
    book = Runbook(backend, repair_options([backend], wait_jobs=6.0), on_event=events.append, run_id="run1",
                   scheduler=hook, operator=Asking())
    outcome = await book.run()
    assert outcome.result == "refused" and "no job on it could be read" in outcome.message
    assert ("nvidia-smi", "-r") not in [e.argv for e in events if isinstance(e, CommandStarted)]
    assert Asking.asked == 0 and hook.reads >= 3  # read again while --wait-jobs lasted, then refused


async def test_a_node_whose_jobs_show_again_after_a_busy_read_with_none_waits_for_them():
    class Flicker(RecordingSlurm):
        """Slurm's two reads disagree once (a job started between scontrol and squeue), then agree."""

        async def read(self):
            state = await super().read()
            return replace(state, state="mixed", jobs=()) if self.reads == 1 else state

    hook = Flicker("gpu05")
    outcome, _, _ = await repair("sim:seed-incident/gpu05", "gpu05", hook, wait_jobs=10.0)
    assert outcome.result == "repaired", outcome.message


async def test_the_consoles_question_shows_a_job_named_with_a_newline_and_an_escape_on_one_clean_line():
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.screens.confirm import ConfirmScreen
    from nvls_tui.console.screens.plan import PlanScreen
    from tests.test_console_fakes import fixed_clock
    from tests.waiting import wait_until

    hook = RecordingSlurm("gpu05", jobs=(Job(77, "alice", "llama|fine\ntune\x1b[2J"),))
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    app.session.schedulers = {"gpu05": hook}
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.press("space", "r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 1,
                         "the dry run")
        await pilot.press(*"gpu05", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question about the job")
        assert app.screen.lines == ["job 77 alice/llama|fine tune"]
        app.screen.query_one("#cancel").press()  # wait for it; then abort the run
        await pilot.press("A")
