"""A configured cluster that has no node for the target (issue 34, item 3).

The target ``gpu06`` whose cluster names its node ``gpu06.dc1.example.com`` (a missing ``--kube-node-map``
line) used to be repaired as without a cluster, with only a warning: kubelet stopped, the whole node NotReady to
the cluster. While kubelet runs on the machine that is now refused, naming the map line that fixes it; only
``--stop-kubelet`` (bound in a saved plan like the other options) repairs it by stopping kubelet. Where no
kubelet runs on the machine the cluster has nothing of it to lose: the repair goes on, and says so.

Against the stand-in API server with the real kubectl; the machine is a simulated node.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
import sys

import pytest

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.kube.client import Kubectl
from nvls_tui.lab.kube_standin.harness import running
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import RepairOptions
from nvls_tui.runbook.session import Session
from nvls_tui.sim.fleet import load_fleet
from tests.kube_rig import FAST, LABELS, SPEED

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

NODE = "gpu06"
ITS_NAME = "gpu06.dc1.example.com"
KUBELET = "kubelet.service"


@pytest.fixture
def cluster(tmp_path):
    """The cluster knows the machine by its long name only."""
    with running({"nodes": [{"name": ITS_NAME, "labels": dict(LABELS)}]}, tmp_path) as standin:
        yield standin


def repair(standin, fleet, options: RepairOptions = FAST, *, dry_run: bool = False):
    backend = SimulatedBackend(fleet, NODE)
    session = Session({NODE: backend}, audit_dir=None, options=options,
                      kube={NODE: Kubectl(kubeconfig=standin.kubeconfig, timeout=30.0)})

    async def go():
        run = session.start_repair([NODE])
        opts = dataclasses.replace(options, dry_run=dry_run)
        return (await session.repair(run, opts, kind="dry-run" if dry_run else "repair"))[0]

    return asyncio.run(go())


def kubelet_commands(outcome) -> list[str]:
    return [c for s in outcome.steps for c in s.commands if c.startswith("systemctl") and KUBELET in c]


def test_kubelet_running_and_no_node_in_the_cluster_is_refused_naming_the_map_line(cluster):
    fleet = load_fleet(f"sim:seed-incident/{NODE}", speed=SPEED)
    assert fleet.node(NODE).units[KUBELET].active == "active"
    outcome = repair(cluster, fleet)

    assert outcome.result == "refused", outcome.message
    assert f"has no node {NODE}" in outcome.message
    assert f"`{NODE} K8S_NODE`" in outcome.message and "--kube-node-map" in outcome.message
    assert "--stop-kubelet" in outcome.message
    assert kubelet_commands(outcome) == []
    node = fleet.node(NODE)
    assert node.units[KUBELET].active == "active" and RECORD_FILE not in node.files
    assert [r for r in cluster.requests() if r[0] in ("PATCH", "POST", "DELETE")] == []


def test_the_plan_is_refused_the_same_way(cluster):
    fleet = load_fleet(f"sim:seed-incident/{NODE}", speed=SPEED)
    plan = repair(cluster, fleet, dry_run=True)
    assert plan.result == "refused", plan.message
    assert f"`{NODE} K8S_NODE`" in plan.message and "--stop-kubelet" in plan.message


def test_stop_kubelet_repairs_it_as_without_a_cluster(cluster):
    fleet = load_fleet(f"sim:seed-incident/{NODE}", speed=SPEED)
    options = dataclasses.replace(FAST, stop_kubelet=True)
    plan = repair(cluster, fleet, options, dry_run=True)
    assert plan.result == "planned", plan.message
    assert any(c.startswith(f"systemctl stop {KUBELET}") for c in next(s for s in plan.steps
                                                                     if s.name == "quiesce").commands)
    outcome = repair(cluster, fleet, options)
    assert outcome.result == "repaired", outcome.message
    assert f"systemctl stop {KUBELET}" in kubelet_commands(outcome)
    assert f"systemctl start {KUBELET}" in kubelet_commands(outcome)
    assert fleet.node(NODE).units[KUBELET].active == "active"
    assert [r for r in cluster.requests() if r[0] in ("PATCH", "POST", "DELETE")] == []


def test_no_kubelet_on_the_machine_and_no_node_in_the_cluster_goes_on(cluster):
    fleet = load_fleet(f"sim:seed-incident/{NODE}", speed=SPEED)
    node = fleet.node(NODE)
    node.units[KUBELET].active = "inactive"  # kubelet installed, not running: the cluster has nothing to lose
    for proc in [p for p in node.procs.values() if p.unit == KUBELET]:
        node.procs.pop(proc.pid)
    node.pods.clear()
    for proc in [p for p in node.procs.values() if p.pod]:
        node.procs.pop(proc.pid)
    outcome = repair(cluster, fleet)
    assert outcome.result == "repaired", outcome.message
    assert kubelet_commands(outcome) == []
    assert node.units[KUBELET].active == "inactive"


def test_stop_kubelet_is_an_option_of_repair_and_bound_by_a_saved_plan():
    from nvls_tui.cli import build_parser
    from nvls_tui.headless.plan_file import PlanError, check_plan, plan_options
    from nvls_tui.settings import settings_from

    settings = settings_from(build_parser().parse_args(["repair", "gpu06", "--stop-kubelet", "--yes"]))
    assert settings.repair.stop_kubelet is True
    options = plan_options(settings)
    assert options["stop_kubelet"] is True
    without = plan_options(settings_from(build_parser().parse_args(["repair", "gpu06", "--yes"])))
    assert without["stop_kubelet"] is False
    steps = [{"name": n, "status": "planned", "commands": []} for n in
             ("preflight", "quiesce", "verify-no-holders", "reset", "fabric-manager", "verify-fabric", "smoke-test",
              "restore")]
    basis = {"platform": "hgx-h100", "driver": None, "fm_version": None, "gpus": 8, "nvswitches": 4, "units": {},
             "holders": [], "record": False}
    plan = {"nodes": [{"host": "gpu06", "dry_run": True, "result": "planned", "steps": steps, "basis": basis}],
            "options": without}
    with pytest.raises(PlanError, match="--stop-kubelet"):
        check_plan(plan, ["gpu06"], options)
    # A plan made before the option existed was made without it.
    older = {**plan, "options": {k: v for k, v in without.items() if k != "stop_kubelet"}}
    assert check_plan(older, ["gpu06"], without)
    help_text = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "repair", "--help"], capture_output=True,
                               text=True, check=True).stdout
    assert "--stop-kubelet" in help_text
