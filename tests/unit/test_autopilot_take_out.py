"""Issue 40: a spent budget drains the node through the audited door, under the node's lock.

The escalation's Slurm drain and, on a Kubernetes cluster, the cordon and nvls-tui's annotation naming why,
are typed changes through ``runbook/door.perform``, with the node's repair lock taken first and given back
after; the escalation's own audit log holds each. Against the stand-in API server with the real kubectl (the
simulated node of tests/kube_rig.py) and a Slurm that changes its state as scontrol would; then the command on
the simulator, through its simulated cluster.
"""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from nvls_tui.autopilot.take_out import annotation, escalate
from nvls_tui.poll.probe import LOCK_DIR
from nvls_tui.runbook.changes import STOPPED_AT, Annotate, Cordon, DrainNode, ReleaseLock, TakeLock, WriteOwner
from tests.kube_rig import FAST, NODE, rigs
from tests.unit.test_plan_is_the_run import IdleSlurm

REASON = "nvls-tui autopilot: hardware ticket: 3 repairs in 7 days did not hold; left drained for a person"

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


def _escalate(rig, slurm, kube=True):
    return asyncio.run(escalate(rig.backend, FAST, audit_dir=rig.audit_dir, run_id="ap1", operator="autopilot",
                                reason=REASON, scheduler=slurm, kube=rig.kubectl if kube else None))


def _commands(path: str) -> list[list[str]]:
    return [r["argv"] for r in map(json.loads, open(path, encoding="utf-8")) if r.get("event") == "command-started"]


@needs_kubectl
def test_the_node_ends_drained_and_cordoned_with_the_reason_under_its_lock_and_audited(rig):
    rig = rig()
    slurm = IdleSlurm(NODE)
    done, failed, log = _escalate(rig, slurm)
    assert failed == [] and done, done
    assert (slurm.state, slurm.reason) == ("drained", REASON)
    node = rig.node()
    assert node["spec"].get("unschedulable") is True
    assert node["metadata"]["annotations"][STOPPED_AT] == annotation(REASON)
    assert LOCK_DIR not in rig.backend.node.dirs  # given back
    # The changes on the audit log, in the order they went out through the door: the lock taken (and its owner
    # named), the drain, the cordon, the annotation, the lock given back.
    argvs = [tuple(a) for a in _commands(log)]
    changes = [*TakeLock().argvs(), *WriteOwner().argvs(), *DrainNode(NODE, REASON).argvs(),
               *Cordon(NODE, tuple(rig.kubectl.argv())).argvs(),
               *Annotate(NODE, annotation(REASON), tuple(rig.kubectl.argv())).argvs(), *ReleaseLock().argvs()]
    assert [a for a in argvs if a in changes] == changes


@needs_kubectl
def test_a_node_whose_lock_another_run_holds_is_not_touched(rig):
    rig = rig()
    rig.backend.node.dirs += ["/var/lib/nvls-tui", LOCK_DIR]  # another run's repair holds it
    slurm = IdleSlurm(NODE)
    done, failed, _ = _escalate(rig, slurm)
    assert done == [] and failed and "not taken out of service" in failed[0]
    assert slurm.commands == [] and not rig.node()["spec"].get("unschedulable")


@needs_kubectl
def test_someone_elses_cordon_is_left_as_it_is_and_not_claimed(rig):
    rig = rig(cordoned=True)
    done, failed, _ = _escalate(rig, None)
    assert failed == [] and any("not by nvls-tui" in d for d in done)
    assert STOPPED_AT not in (rig.node()["metadata"].get("annotations") or {})


def test_the_command_leaves_a_node_whose_budget_is_spent_cordoned_with_the_reason_on_the_simulator(
        capsys, tmp_path, monkeypatch):
    """sim:k8s-incident's gpu06 (out of sync, on the simulated cluster): its one repair of the budget fails, so
    the next round escalates it; the command takes it out of service through the door."""
    from nvls_tui.cli import main
    from nvls_tui.headless import autopilot as command
    from nvls_tui.sim import fleet as sim_fleet

    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    loaded = []
    real_load = sim_fleet.load_fleet
    monkeypatch.setattr(sim_fleet, "load_fleet", lambda *a, **k: loaded.append(real_load(*a, **k)) or loaded[-1])
    monkeypatch.setattr(command, "_repairer", lambda settings, audit_dir: lambda hosts: dict.fromkeys(hosts, False))
    rc = main(["autopilot", "sim:k8s-incident/gpu06", "--every", "0.01", "--mode", "auto", "--rounds", "4", "--budget", "1",
               "--cooldown", "0", "--breaker-percent", "100", "--json", "--state-dir", str(tmp_path)])
    assert rc == 0
    acted = [(r["node"], r["action"], r["reason"]) for r in map(json.loads, capsys.readouterr().out.splitlines())
             if r["round"] == 4 and r["node"]]
    assert acted == [("gpu06", "escalate", "budget"), ("gpu06", "drain", "budget"), ("gpu06", "drained", "budget")]
    node = loaded[0].node("gpu06")
    assert node.k8s_cordoned
    reason = node.k8s_annotations[STOPPED_AT]
    assert reason.startswith("autopilot escalation") and "hardware ticket" in reason
    assert LOCK_DIR not in node.dirs
    (log,) = (tmp_path / "audit").glob("escalate-*.jsonl")
    assert any("cordon" in a for a in _commands(str(log))) and any("mkdir" in a for a in _commands(str(log)))
