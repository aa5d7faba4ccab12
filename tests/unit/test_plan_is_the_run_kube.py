"""Issue 36's acceptance on Kubernetes: on the stand-in cluster with the real kubectl, the dry run hands the door
the changes the run makes, the cluster's included (cordon, operand labels paused and put back, evictions, the
driver pod's deletion, the uncordon): same type, same order, same command lines.

Two things are known only when the run runs, and the comparison is on what the plan can know
(``Change.planned``): the node's resourceVersion each label write is conditioned on (read just before it), and
the path of the file the eviction's body is written to.
"""

from __future__ import annotations

import asyncio
import shutil

import pytest

from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import restore_node
from nvls_tui.runbook.changes import (
    CLUSTER,
    NODE,
    Annotate,
    Cordon,
    DeleteDriverPod,
    EvictPod,
    LockChange,
    SetOperandLabel,
    Uncordon,
    UnitChange,
)
from nvls_tui.runbook.kube_repair import PAUSED
from nvls_tui.runbook.steps import KUBELET
from tests.kube_rig import FAST, rigs
from tests.kube_rig import NODE as HOST
from tests.unit.test_kube_restore import crash
from tests.unit.test_plan_is_the_run import compared

pytestmark = [pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
              pytest.mark.long]  # each test seconds: handed out first of its tier (tests/conftest.py)


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


def cluster(changes):
    return [c for c in changes if c.where == CLUSTER]


def test_on_kubernetes_the_dry_run_hands_the_door_every_change_the_run_makes_the_clusters_included(rig):
    r = rig()
    plan = r.repair(dry_run=True)
    assert plan.result == "planned", plan.message
    run = r.repair()
    assert run.result == "repaired", run.message
    assert UnitChange("stop", KUBELET) not in run.changes  # the node stays Ready: kubelet keeps running
    assert compared(plan.changes) == compared(run.changes)
    made = cluster(run.changes)
    kinds = [type(c) for c in made]
    assert kinds[0] is Cordon and kinds[-1] is Uncordon and EvictPod in kinds, kinds
    paused = [c for c in made if isinstance(c, SetOperandLabel) and c.value == PAUSED]
    back = [c for c in made if isinstance(c, SetOperandLabel) and c.value != PAUSED]
    assert paused and back == [c.undo() for c in paused]
    # The run filled in what only it knows; the plan says where it comes from.
    assert all(c.resource_version for c in paused)
    assert all(c.resource_version is None for c in cluster(plan.changes) if isinstance(c, SetOperandLabel))
    assert any('"resourceVersion":"<read at run time>"' in line for s in plan.steps for line in s.commands)
    # The cordon, the pause and the evictions go before the node's own stops; the labels back and the uncordon
    # after the units are started again.
    first_stop = next(i for i, c in enumerate(run.changes) if isinstance(c, UnitChange) and c.verb == "stop")
    assert [c for c in made if run.changes.index(c) < first_stop] == made[:len(made) - len(back) - 1]
    assert made[-len(back) - 1:] == [*back, Uncordon(made[0].node, made[0].kubectl)]


def test_where_fabric_manager_runs_in_the_driver_pod_its_deletion_is_planned_as_the_run_makes_it(rig):
    r = rig(driver=True)
    plan = r.repair(dry_run=True)
    assert plan.result == "planned", plan.message
    run = r.repair()
    assert run.result == "repaired", run.message
    assert compared(plan.changes) == compared(run.changes)
    assert [c for c in run.changes if isinstance(c, DeleteDriverPod)]


def test_a_restore_on_kubernetes_puts_back_exactly_the_labels_the_dead_run_paused_and_keeps_its_cordon_named(
        rig, tmp_path):
    r = rig()
    changed: list = []
    crash(r, tmp_path, ("step", "reset"), performed=changed)
    made = cluster(changed)
    assert made and isinstance(made[0], Cordon)
    restored = asyncio.run(restore_node(r.backend, FAST, force=True, kube=r.kubectl))
    assert restored.result == "restored", restored.message
    labels = [c.undo() for c in made if isinstance(c, SetOperandLabel)]
    *back, kept = cluster(restored.changes)
    # The record keeps the labels by name (its order is not the pause's): the same writes, each once.
    assert sorted(compared(back)) == sorted(compared(labels))
    assert kept == Annotate(HOST, "reset", tuple(r.kubectl.argv()))  # the cordon stays, naming the step
    assert all(c.where == NODE for c in restored.changes if c not in cluster(restored.changes))
    # the record goes last of the restore's own changes (the lock's release follows it, through the door too)
    own = [c for c in restored.changes if not isinstance(c, LockChange)]
    assert own[-1].argvs() == (("rm", "-f", RECORD_FILE),)
    assert isinstance(restored.changes[-1], LockChange)
