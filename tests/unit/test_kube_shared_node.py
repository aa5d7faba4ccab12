"""Two targets mapped to one Kubernetes node are refused together, before anything runs (issue 34, item 4).

Two repairs of one node undo each other in the cluster: the run that ends first puts the operand labels back
(and may uncordon) while the other is between verify-no-holders and the reset. Both targets are now refused
before any command, each naming the other and the node, in the repair and in its plan (the console's
multi-node repair and headless ``repair`` both go through ``Session``), and by the real ``nvls-tui repair``.

Against the stand-in API server with the real kubectl; the machines are simulated nodes (in process, and behind
the real sshd for the headless run).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import signal
import subprocess

import pytest

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.kube.client import Kubectl
from nvls_tui.lab.kube_standin.harness import running
from nvls_tui.runbook.session import Session
from nvls_tui.sim.files import identity
from nvls_tui.sim.fleet import load_fleet
from tests.kube_rig import FAST, LABELS, SPEED

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

HOSTS = ["gpu05", "gpu06"]


def cluster(ids: dict[str, str]) -> dict:
    return {"nodes": [{"name": "gpu06", "labels": dict(LABELS), "nodeInfo": ids}],
            "gpuOperator": {"namespace": "gpu-operator", "operands": ["nvidia-device-plugin-daemonset"]}}


@pytest.fixture
def setup(tmp_path):
    """gpu05 and gpu06, and a node map that sends both to the cluster's gpu06 (a copied line)."""
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=SPEED)
    with running(cluster(identity(fleet.node("gpu06"))), tmp_path) as standin:
        kube = Kubectl(kubeconfig=standin.kubeconfig, node_map={"gpu05": "gpu06"}, timeout=30.0)
        session = Session({h: SimulatedBackend(fleet, h) for h in HOSTS}, audit_dir=str(tmp_path / "audit"),
                          options=FAST, kube=dict.fromkeys(HOSTS, kube))
        yield fleet, standin, session


def untouched(fleet, standin) -> None:
    assert not [r for r in standin.requests() if r[0] in ("PATCH", "POST", "DELETE")]
    for host in HOSTS:
        node = fleet.node(host)
        assert "/var/lib/nvls-tui/lock" not in node.dirs and node.units["kubelet.service"].active == "active"


def refused_together(outcomes) -> None:
    assert [o.host for o in outcomes] == HOSTS
    for outcome, other in zip(outcomes, reversed(HOSTS), strict=True):
        assert outcome.result == "refused", outcome.message
        assert other in outcome.message and "Kubernetes node gpu06" in outcome.message, outcome.message
        assert all(not s.commands for s in outcome.steps)  # nothing ran on either


@pytest.mark.parametrize("strategy", ["parallel", "serial"])
def test_a_repair_of_two_targets_on_one_node_refuses_both_before_anything_runs(setup, strategy):
    fleet, standin, session = setup

    async def go():
        run = session.start_repair(HOSTS, strategy)
        return await session.repair(run, FAST)

    refused_together(asyncio.run(go()))
    untouched(fleet, standin)
    assert not [r for r in standin.requests() if "/nodes" in r[1]]  # not even a read of the cluster


def test_their_plan_refuses_both_too(setup):
    fleet, standin, session = setup
    plans = asyncio.run(session.plan(HOSTS, FAST))
    refused_together([plans[h] for h in HOSTS])
    assert all(plans[h].step("preflight").message for h in HOSTS)
    untouched(fleet, standin)


def test_one_of_them_alone_is_repaired_as_usual(setup):
    fleet, standin, session = setup
    plans = asyncio.run(session.plan(["gpu06"], dataclasses.replace(FAST)))
    assert plans["gpu06"].result == "planned", plans["gpu06"].message


def test_headless_repair_over_ssh_refuses_the_pair(tmp_path):
    from nvls_tui.sim.store import NodeStore
    from tests.sshd.test_faults_ssh import cli, finish, make_rig
    from tests.sshd_rig import find_sshd

    if find_sshd() is None:
        pytest.skip("openssh-server is not installed")
    rig = make_rig(tmp_path / "rig", {"gpu05": ("seed-incident", "gpu05"), "gpu06": ("seed-incident", "gpu06")})
    try:
        node, _ = NodeStore(rig.nodes["gpu06"].dir).load()
        targets = [rig.target(h) for h in HOSTS]
        (tmp_path / "map").write_text("".join(f"{t} gpu06\n" for t in targets))  # the second line copied
        (tmp_path / "cluster").mkdir()
        with running(cluster(identity(node)), tmp_path / "cluster") as standin:
            proc = cli(rig, "repair", *targets, "--yes", "--json", "--kubeconfig", standin.kubeconfig,
                       "--kube-node-map", str(tmp_path / "map"), "--audit-dir", str(tmp_path / "audit"))
            try:
                code, out, err = finish(proc, timeout=120)
            except subprocess.TimeoutExpired:  # a repair that went ahead waits for holders: stop it, it restores
                proc.send_signal(signal.SIGTERM)
                code, out, err = finish(proc, timeout=90)
            assert code == 1, err
            nodes = json.loads(out)["nodes"]
            assert [n["result"] for n in nodes] == ["refused", "refused"], nodes
            assert targets[1] in nodes[0]["message"] and targets[0] in nodes[1]["message"]
            assert not [r for r in standin.requests() if r[0] in ("PATCH", "POST", "DELETE")]
        for host in HOSTS:
            after, _ = NodeStore(rig.nodes[host].dir).load()
            assert after.units["kubelet.service"].active == "active"
            assert not (rig.nodes[host].dir / "var/lib/nvls-tui/lock").exists()
    finally:
        rig.stop()
