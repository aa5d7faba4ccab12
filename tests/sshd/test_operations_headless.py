"""The headless repair through the same session as the console: plan -> apply, progress, audit.

A plan binds: the node a repair meets must be the node the operator approved. Headless, a node
that drifted is refused with exit 1 and the reason, both for a saved plan (``--plan FILE``) and for
the plan shown before the typed confirmation.
"""

from __future__ import annotations

import io
import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import gpu_devices

SPEED = 400.0


def fleet_of(spec: str):
    fleet = load_fleet(spec, speed=SPEED)
    return fleet, sim_backends(fleet)


def changing(fleet, host: str) -> list[list[str]]:
    return [argv for _, argv in fleet.node(host).cmdlog
            if argv[:2] in (["nvidia-smi", "-r"], ["systemctl", "stop"]) or argv[:1] == ["kill"]]


def start_job(fleet, host: str):
    node = fleet.node(host)
    return node.spawn(ppid=1, user="alice", start=fleet.clock.now(), argv=["python3", "train.py", "--tp", "8"],
                      cgroup="0::/user.slice/user-1000.slice/session-7.scope", role="app",
                      devices=gpu_devices(node, ("/dev/nvidiactl",)))


def repair_gpu05(backends, *args: str) -> int:
    """``nvls-tui repair sim:seed-incident/gpu05 ARGS`` on ``backends`` (the fleet the test holds)."""
    return main(["repair", "sim:seed-incident/gpu05", *args], connect=lambda settings: backends)


def saved_plan(monkeypatch, tmp_path, capsys, backends):
    """``repair --dry-run --json`` of the backends' nodes, saved where ``--plan`` can read it."""
    assert repair_gpu05(backends, "--dry-run", "--json", "--audit-dir", str(tmp_path)) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    return plan


def test_a_saved_plan_binds_a_job_that_started_since_is_refused_with_exit_1(monkeypatch, tmp_path, capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    plan = saved_plan(monkeypatch, tmp_path, capsys, backends)
    basis = json.loads(plan.read_text())["nodes"][0]["basis"]
    assert basis["gpus"] == 8 and basis["units"]["nvidia-fabricmanager.service"] == "failed"
    job = start_job(fleet, "gpu05")
    code = repair_gpu05(backends, "--plan", str(plan), "--json", "--audit-dir", str(tmp_path))
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert code == 1
    assert node["result"] == "refused"
    assert "changed since the plan was approved" in node["message"] and str(job.pid) in node["message"]
    assert any("appeared on the GPUs" in d for d in node["drift"])
    assert changing(fleet, "gpu05") == []


def test_a_saved_plan_of_an_unchanged_node_lets_the_repair_run(monkeypatch, tmp_path, capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    plan = saved_plan(monkeypatch, tmp_path, capsys, backends)
    code = repair_gpu05(backends, "--plan", str(plan), "--audit-dir", str(tmp_path))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gpu05: repaired" in out


def test_a_plan_file_that_is_not_a_plan_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    bad = tmp_path / "bad.json"
    for text, words in (("not json", "is not JSON"), ('{"nodes": []}', "has no plan for gpu05"),
                        ('[1, 2]', "is not the JSON of `repair --dry-run --json`")):
        bad.write_text(text)
        assert repair_gpu05(backends, "--plan", str(bad)) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert repair_gpu05(backends, "--plan", str(tmp_path / "missing.json")) == 2
    assert "No such file" in capsys.readouterr().err
    assert fleet.node("gpu05").cmdlog == []


class Terminal(io.StringIO):
    """A stdin that is a terminal and types ``answer`` when asked."""

    def __init__(self, answer: str, before_answer=None) -> None:
        super().__init__(answer + "\n")
        self.before_answer = before_answer

    def isatty(self) -> bool:
        return True

    def readline(self, *args) -> str:
        if self.before_answer is not None:
            self.before_answer()
        return super().readline(*args)


def test_the_typed_confirmation_approves_the_plan_shown_and_drift_after_it_is_refused(monkeypatch, tmp_path,
                                                                                      capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    monkeypatch.delenv("CI", raising=False)
    jobs = []
    # The job starts while the operator reads the plan and types the names.
    monkeypatch.setattr("sys.stdin", Terminal("gpu05", lambda: jobs.append(start_job(fleet, "gpu05"))))
    code = repair_gpu05(backends, "--audit-dir", str(tmp_path))
    captured = capsys.readouterr()
    assert "$ nvidia-smi -r" in captured.err  # the plan was shown before the question
    assert captured.err.index("$ nvidia-smi -r") < captured.err.index("Type the node names")
    assert code == 1
    assert "gpu05: refused" in captured.out and "changed since the plan was approved" in captured.out
    assert str(jobs[0].pid) in captured.out
    assert changing(fleet, "gpu05") == []


def test_headless_progress_lines_reach_the_terminal(monkeypatch, tmp_path, capsys):
    # Reproduced first: the progress printer's format() had slid into another class, and the
    # runbook's sink swallowed the AttributeError, so a headless repair printed no progress at all.
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    assert repair_gpu05(backends, "--yes", "--audit-dir", str(tmp_path)) == 0
    out = capsys.readouterr().out
    for line in ("gpu05          preflight ...", "gpu05          reset ok", "  $ nvidia-smi -r  -> 0",
                 "gpu05          => run finished: repaired NVLS works again"):
        assert line in out, out[-2000:]


def test_over_ssh_the_typed_confirmation_plans_then_repairs_on_fresh_connections(rigs, monkeypatch, tmp_path, capsys):
    # The plan is read in one event loop and the repair runs in another: a connection of the first
    # must not be reused by the second (asyncssh connections belong to their loop).
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr("sys.stdin", Terminal(rig.target("gpu05")))
    code = main(["repair", rig.target("gpu05"), *rig.cli_args(), "--audit-dir", str(tmp_path), "--json"])
    captured = capsys.readouterr()
    node = json.loads(captured.out)["nodes"][0]
    assert "$ nvidia-smi -r" in captured.err
    assert (code, node["result"]) == (0, "repaired"), node["message"]
