"""The runbook against simulated nodes: the acceptance list of issue 5.

Each fault test ends with every unit and setting as it was before. The simulated clock runs 2000x
real time and the runbook polls every 10 ms, so each repair takes a fraction of a second.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from nvls_tui.backends.base import Unreachable
from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import Verdict
from nvls_tui.poll.probe import LOCK_DIR, RECORD_FILE
from nvls_tui.runbook import STEPS, RepairOptions, Runbook, restore_node, run_many
from nvls_tui.runbook.context import NodeContext, StepFailed
from nvls_tui.runbook.events import StepStarted
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.quiesce import read_holders
from nvls_tui.runbook.steps import persistence_modes, unit_states
from nvls_tui.sim.fleet import load_fleet

SPEED = 2000.0
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)
CHANGING = {"mkdir", "tee", "mv", "rm", "rmdir", "kill", "pkill", "all_reduce_perf"}


def fleet_of(spec: str):
    fleet = load_fleet(spec, speed=SPEED)
    return fleet, sim_backends(fleet)


async def units_and_pm(backend) -> tuple[dict, dict]:
    """Every unit's state and every GPU's persistence mode (the timer's oneshot flips every minute: left out)."""
    state = await backend.snapshot()
    units = {u: a for u, a in unit_states(state).items() if u != "nvidia-snapshot.service"}
    return units, persistence_modes(state)


def changing_commands(fleet, name: str) -> list[list[str]]:
    """Commands in the node's log that change something (the dry-run must have none)."""
    bad = []
    for _, argv in fleet.node(name).cmdlog:
        head, rest = argv[0], argv[1:]
        if head in CHANGING or (head == "systemctl" and rest[:1] and rest[0] not in ("show", "status", "is-active",
                                                                                      "is-enabled")):
            bad.append(argv)
        elif head == "nvidia-smi" and ("-r" in rest or "-pm" in rest):
            bad.append(argv)
    return bad


class FaultBackend(SimulatedBackend):
    """A simulated node with one injected fault: a command answered differently, or a dead link."""

    def __init__(self, fleet, name, *, answer=None, drop_at=None, drops=0, die_at=None):
        super().__init__(fleet, name)
        self.answer = answer or {}
        self.drop_at, self.drops, self.die_at = drop_at, drops, die_at
        self.dead = False

    def _check_link(self, argv):
        if self.die_at and tuple(argv[:len(self.die_at)]) == self.die_at:
            self.dead = True
        if self.dead:
            raise Unreachable(f"{self.host}: the process running the repair is gone")
        if self.drop_at and tuple(argv[:len(self.drop_at)]) == self.drop_at:
            self.drop_at = None
        if self.drop_at is None and self.drops > 0:
            self.drops -= 1
            raise Unreachable(f"connection to {self.host} lost")

    async def run(self, argv, timeout=None, **kw):
        self._check_link(tuple(argv))
        if tuple(argv) in self.answer:
            from nvls_tui.backends.base import CommandResult

            status, out = self.answer[tuple(argv)]
            return CommandResult(tuple(argv), status, out, "")
        return await super().run(argv, timeout, **kw)

    async def snapshot(self):
        if self.dead or (self.drop_at is None and self.drops > 0):
            raise Unreachable(f"connection to {self.host} lost")
        return await super().snapshot()

    async def signal(self, pid, sig, expected, fence=None):
        self._check_link(("kill",))
        return await super().signal(pid, sig, expected, fence)


async def test_repairing_the_two_incident_nodes_ends_repaired_and_a_check_right_after_is_healthy():
    fleet, backends = fleet_of("sim:seed-incident/gpu[05-06]")
    outcomes = await run_many(backends, FAST, strategy="parallel")
    for outcome, backend in zip(outcomes, backends, strict=True):
        assert outcome.result == "repaired", outcome.message
        assert [s.name for s in outcome.steps] == list(STEPS)
        assert all(s.status == "ok" for s in outcome.steps)
        assert outcome.smoke.avg_busbw == pytest.approx(292, abs=5) and outcome.smoke.passed
        assert "kubelet.service" in outcome.restored and "nvidia-snapshot.timer" in outcome.restored
        state = await backend.snapshot()
        assert diagnose(state).verdict is Verdict.HEALTHY
        units = unit_states(state)
        assert units["kubelet.service"] == "active" and units["nvidia-snapshot.timer"] == "active"
        assert units["nvidia-fabricmanager.service"] == "active"
        assert state.repair_record is None and LOCK_DIR not in fleet.node(backend.host).dirs


def test_the_repair_command_prints_the_contract_json_and_exits_0(monkeypatch, tmp_path, capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu[05-06]")
    code = main(["repair", "sim:seed-incident/gpu[05-06]", "--yes", "--json", "--audit-dir", str(tmp_path)],
                connect=lambda settings: backends)
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [n["host"] for n in data["nodes"]] == ["gpu05", "gpu06"]
    for node in data["nodes"]:
        assert node["result"] == "repaired" and node["dry_run"] is False
        assert [s["name"] for s in node["steps"]] == list(STEPS)
        assert node["smoke"]["passed"] is True and 285 < node["smoke"]["avg_busbw"] < 300
        assert "nvidia-smi -r" in next(s for s in node["steps"] if s["name"] == "reset")["commands"]
        assert node["audit_log"].startswith(str(tmp_path))
    records = [json.loads(line) for line in open(data["nodes"][0]["audit_log"])]
    assert {r["node"] for r in records if r["node"]} == {"gpu05", "gpu06"}
    assert any(r.get("argv") == ["nvidia-smi", "-r"] and r.get("exit_status") == 0 for r in records)


def test_without_yes_and_without_a_terminal_the_repair_is_refused_in_one_line(monkeypatch, capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    assert main(["repair", "sim:seed-incident/gpu05"], connect=lambda settings: backends) == 2
    err = capsys.readouterr().err
    assert "refusing to repair without --yes" in err and "Traceback" not in err
    assert fleet.node("gpu05").cmdlog == []


async def test_a_dry_run_prints_the_plan_and_runs_nothing_that_changes_the_node():
    fleet, backends = fleet_of("sim:seed-incident/gpu[05-06]")
    outcomes = await run_many(backends, RepairOptions(dry_run=True), strategy="serial")
    for outcome in outcomes:
        assert outcome.result == "planned" and outcome.dry_run
        assert all(s.status == "planned" for s in outcome.steps)
        assert "nvidia-smi -r" in outcome.step("reset").commands
        assert changing_commands(fleet, outcome.host) == []
        assert fleet.node(outcome.host).cmdlog, "the plan is built from a fresh read of the node"
    quiesce = outcomes[0].step("quiesce").commands
    assert quiesce[0] == "systemctl stop nvidia-snapshot.timer"
    assert any(c.startswith("kill -TERM 37538") for c in quiesce)  # the incident's dcgm-exporter


async def test_two_concurrent_repairs_of_one_node_the_second_is_refused_by_the_lock():
    fleet, _ = fleet_of("sim:seed-incident/gpu05")
    first, second = SimulatedBackend(fleet, "gpu05"), SimulatedBackend(fleet, "gpu05")
    locked = asyncio.Event()

    def on_first(event):
        if isinstance(event, StepStarted) and event.step == "quiesce":
            locked.set()

    async def later():
        await asyncio.wait_for(locked.wait(), 10)
        return await Runbook(second, FAST).run()

    one, two = await asyncio.gather(Runbook(first, FAST, on_event=on_first).run(), later())
    assert one.result == "repaired"
    assert two.result == "refused" and "holds the lock" in two.message
    assert two.step("quiesce").status == "skipped"


@pytest.mark.parametrize("scenario, words", [("sim:version-mismatch", "differs from driver"),
                                             ("sim:gb200-no-fm", "unsupported platform")])
async def test_preflight_refuses_a_version_mismatch_and_an_unsupported_platform_changing_nothing(scenario, words):
    fleet, (backend,) = fleet_of(scenario)
    before = await units_and_pm(backend)
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "refused" and words in outcome.message
    assert changing_commands(fleet, backend.host) == []
    assert await units_and_pm(backend) == before


async def test_insufficient_resources_is_reported_for_escalation_not_repaired():
    fleet, (backend,) = fleet_of("sim:insufficient-resources")
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "failed" and outcome.escalate and "escalate" in outcome.message
    assert changing_commands(fleet, backend.host) == []


async def test_a_transient_802_ends_skipped_as_healthy_with_no_reset():
    fleet, (backend,) = fleet_of("sim:transient-802")
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "skipped" and outcome.no_repair_needed and outcome.ok
    assert outcome.reason == outcome.message and "passed" in outcome.message and "on re-check" in outcome.message
    assert "nothing was reset" in outcome.message
    assert outcome.step("reset").status == "skipped"
    assert not any(argv[:2] == ["nvidia-smi", "-r"] for _, argv in fleet.node(backend.host).cmdlog)
    assert diagnose(await backend.snapshot()).verdict is Verdict.HEALTHY


REFUSAL = ("The following GPUs could not be reset:\n  GPU 00000000:18:00.0: In use by another client\n\n"
           "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
           "application, graphics application such as an X server, or a monitoring application such as another "
           "instance of nvidia-smi). Please first kill all processes using this device and all compute applications "
           "running in the system.\n")


async def _assert_restored(backend, before, outcome):
    """Every unit and setting as before; except that a Fabric Manager the repair started stays up
    (after a reset, a running FM is the repair itself, never something to undo)."""
    units, pm = await units_and_pm(backend)
    if outcome.step("fabric-manager").status != "skipped":
        assert units.pop("nvidia-fabricmanager.service") == "active"
        before = ({u: a for u, a in before[0].items() if u != "nvidia-fabricmanager.service"}, before[1])
    assert (units, pm) == before, outcome.message
    state = await backend.snapshot()
    assert state.repair_record is None
    assert LOCK_DIR not in backend.fleet.node(backend.host).dirs


async def test_a_refused_reset_sends_the_runbook_to_restore_and_every_unit_comes_back():
    fleet = load_fleet("sim:persistence-blocks-reset", speed=SPEED)
    backend = FaultBackend(fleet, "gpu-pm01", answer={("nvidia-smi", "-r"): (255, REFUSAL)})
    before = await units_and_pm(backend)
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "failed" and "refused" in outcome.message and "In use by another client" in outcome.message
    assert outcome.step("reset").status == "failed" and outcome.step("fabric-manager").status == "skipped"
    assert outcome.step("restore").status == "ok"
    assert before[1] and all(mode == "Enabled" for mode in before[1].values())  # persistence mode came back too
    await _assert_restored(backend, before, outcome)


async def test_fabric_manager_stuck_in_progress_fails_after_the_bounded_wait_and_restores():
    fleet, (backend,) = fleet_of("sim:stuck-in-progress")
    before = await units_and_pm(backend)
    outcome = await Runbook(backend, RepairOptions(**{**FAST.__dict__, "fm_timeout": 0.3})).run()
    assert outcome.result == "failed" and "did not finish within" in outcome.message
    assert outcome.step("fabric-manager").status == "failed"
    await _assert_restored(backend, before, outcome)


async def test_a_smoke_test_below_the_threshold_fails_the_repair_and_restores():
    fleet, (backend,) = fleet_of("sim:seed-incident/gpu05")
    before = await units_and_pm(backend)
    outcome = await Runbook(backend, RepairOptions(**{**FAST.__dict__, "smoke_threshold": 400.0})).run()
    assert outcome.result == "failed" and "below the 400 GB/s threshold" in outcome.message
    assert outcome.smoke.avg_busbw == pytest.approx(292, abs=5) and not outcome.smoke.passed
    await _assert_restored(backend, before, outcome)


async def test_the_operator_aborting_mid_run_restores_everything():
    fleet, (backend,) = fleet_of("sim:seed-incident/gpu05")
    before = await units_and_pm(backend)
    book = Runbook(backend, FAST, on_event=lambda e: isinstance(e, StepStarted) and e.step == "reset" and book.abort())
    outcome = await book.run()
    assert outcome.result == "aborted" and "aborted by the operator" in outcome.message
    assert not any(argv[:2] == ["nvidia-smi", "-r"] for _, argv in fleet.node("gpu05").cmdlog)
    await _assert_restored(backend, before, outcome)


async def test_cancelling_the_run_during_the_smoke_test_still_restores_then_re_raises():
    fleet, (backend,) = fleet_of("sim:seed-incident/gpu05")
    before = await units_and_pm(backend)
    streaming = asyncio.Event()
    book = Runbook(backend, FAST, on_event=lambda e: getattr(e, "kind", "") == "smoke-row" and streaming.set())
    task = asyncio.ensure_future(book.run())
    await asyncio.wait_for(streaming.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert book.outcome.result == "failed" and book.outcome.step("restore").status == "ok"
    await _assert_restored(backend, before, book.outcome)


async def test_a_connection_drop_mid_step_is_ridden_out_by_the_restore():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    backend = FaultBackend(fleet, "gpu05", drop_at=("nvidia-smi", "-r"), drops=2)
    before = await units_and_pm(backend)
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "failed" and "lost the node during reset" in outcome.message
    await _assert_restored(backend, before, outcome)


async def test_a_holder_that_respawns_after_quiesce_is_re_checked_and_stopped():
    fleet, (backend,) = fleet_of("sim:seed-incident/gpu05")
    node = fleet.node("gpu05")

    def respawn(event):
        if isinstance(event, StepStarted) and event.step == "verify-no-holders":
            node.spawn(ppid=1, user="root", start=fleet.clock.now(), argv=["/usr/bin/dcgm-exporter"],
                       cgroup="0::/system.slice/containerd.service", role="respawned",
                       devices=["/dev/nvidia0", "/dev/nvidiactl"])

    notes = []
    outcome = await Runbook(backend, FAST, on_event=lambda e: (respawn(e), notes.append(e))).run()
    assert outcome.result == "repaired", outcome.message
    assert any("hold devices again" in getattr(e, "message", "") for e in notes)


async def test_a_workload_holder_is_never_signalled_and_the_wait_gives_up_and_restores():
    fleet, (backend,) = fleet_of("sim:seed-incident/gpu05")
    node = fleet.node("gpu05")
    app = node.spawn(ppid=1, user="alice", start=fleet.clock.now() - 60, argv=["python3", "train.py"],
                     cgroup="0::/user.slice/user-1001.slice/session-4.scope", role="cuda-app",
                     devices=["/dev/nvidia3", "/dev/nvidiactl"])
    before = await units_and_pm(backend)
    outcome = await Runbook(backend, RepairOptions(**{**FAST.__dict__, "holder_timeout": 0.2})).run()
    assert outcome.result == "failed" and str(app.pid) in outcome.message
    assert not any(argv[:1] == ["kill"] and str(app.pid) in argv for _, argv in node.cmdlog)
    await _assert_restored(backend, before, outcome)


async def test_a_run_killed_mid_repair_leaves_a_record_that_check_reports_and_restore_undoes(tmp_path):
    from nvls_tui.audit.log import AuditLog

    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    before = await units_and_pm(SimulatedBackend(fleet, "gpu05"))
    dying = FaultBackend(fleet, "gpu05", die_at=("nvidia-smi", "-r"))
    with AuditLog(tmp_path / "kill.jsonl", operator="kim") as audit:
        outcome = await Runbook(dying, FAST, on_event=audit).run()
    assert outcome.result == "failed"
    records = [json.loads(line) for line in open(tmp_path / "kill.jsonl")]
    assert any(r.get("argv") == ["systemctl", "stop", "kubelet.service"] for r in records)
    assert fleet.node("gpu05").files.get(RECORD_FILE)

    fresh = SimulatedBackend(fleet, "gpu05")
    state = await fresh.snapshot()
    assert "INTERRUPTED_REPAIR" in [f.code for f in diagnose(state).findings]
    assert unit_states(state)["kubelet.service"] == "inactive"
    again = await Runbook(fresh, FAST).run()
    assert again.result == "refused" and "--restore" in again.message

    # Its lock names a run of this process that ended without releasing it: stale, taken over only with force.
    refused = await restore_node(fresh, FAST)
    assert refused.result == "refused" and "stale" in refused.message and "--force" in refused.message
    restored = await restore_node(fresh, FAST, force=True)
    assert restored.result == "restored" and "kubelet.service" in restored.restored
    await _assert_restored(fresh, before, restored)
    assert "INTERRUPTED_REPAIR" not in [f.code for f in diagnose(await fresh.snapshot()).findings]


async def test_canary_stops_after_a_failed_first_node_and_leaves_the_rest_untouched():
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=SPEED)
    first = FaultBackend(fleet, "gpu05", answer={("nvidia-smi", "-r"): (255, REFUSAL)})
    outcomes = await run_many([first, SimulatedBackend(fleet, "gpu06")], FAST, strategy="canary")
    assert [o.result for o in outcomes] == ["failed", "refused"]
    assert "canary" in outcomes[1].message
    assert changing_commands(fleet, "gpu06") == [] and fleet.node("gpu06").cmdlog == []


async def test_a_node_without_some_shared_device_files_is_repaired_and_fuser_names_only_the_files_it_has():
    # The real H200's /dev has no nvidia-modeset, nvidia-nvlink or nvidia-nvswitchctl: naming them made
    # fuser answer only "does not exist" once the node was free, and verify-no-holders failed every time.
    fleet, (backend,) = fleet_of("sim:missing-device-files")
    outcome = (await run_many([backend], FAST, strategy="parallel"))[0]
    assert outcome.result == "repaired", outcome.message
    absent = set(fleet.node("gpu-h200-01").absent_devices)
    # The runbook's own (the poll's fuser names the glob, which the node's shell expands).
    fusers = [argv for _, argv in fleet.node("gpu-h200-01").cmdlog if argv[:2] == ["fuser", "-v"]
              and "/dev/nvidia*" not in argv]
    assert fusers and not any(absent & set(argv) for argv in fusers)
    assert all("/dev/nvidia7" in argv and "/dev/nvidia-nvswitch3" in argv for argv in fusers)
    assert diagnose(await backend.snapshot()).verdict is Verdict.HEALTHY


async def test_a_node_with_no_device_file_at_all_is_not_proven_free_and_fuser_is_not_asked():
    fleet, (backend,) = fleet_of("sim:missing-device-files")
    state = await backend.snapshot()
    node = fleet.node("gpu-h200-01")
    # The driver unloaded between the snapshot and the check: no /dev/nvidia* is left to ask fuser about.
    node.absent_devices = []
    node.absent_devices = node.device_files()
    ctx = NodeContext(backend, FAST, None, NodeOutcome(host=backend.host))
    ctx.step = "verify-no-holders"
    with pytest.raises(StepFailed, match=r"no /dev/nvidia\* device file exists on the node"):
        await read_holders(ctx, state)
    assert ctx.outcome.step("verify-no-holders").commands == ["find /dev -maxdepth 1 -name 'nvidia*' '!' -type d"]
