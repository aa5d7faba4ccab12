"""Issue 36's acceptance on Kubernetes, the node's side: on the stand-in cluster with the real kubectl, the dry
run hands the door the node changes the run makes (kubelet kept running, the operands gone through their labels,
the workload evicted). The cluster's own calls (cordon, labels, evictions) are not typed changes yet: they go
through ``kube_repair.call``, and this test compares the node's changes only."""

from __future__ import annotations

import shutil

import pytest

from nvls_tui.runbook.changes import NODE, UnitChange
from nvls_tui.runbook.steps import KUBELET
from tests.kube_rig import rigs
from tests.unit.test_plan_is_the_run import compared

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


def test_on_kubernetes_the_dry_run_hands_the_door_the_node_changes_the_run_makes(rig):
    r = rig()
    plan = r.repair(dry_run=True)
    assert plan.result == "planned", plan.message
    run = r.repair()
    assert run.result == "repaired", run.message
    assert all(c.where == NODE for c in run.changes)
    assert UnitChange("stop", KUBELET) not in run.changes  # the node stays Ready: kubelet keeps running
    assert compared(plan.changes) == compared(run.changes)
