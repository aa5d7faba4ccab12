"""``repair --restore`` after a crash on Kubernetes (issue 29 part two), against the stand-in with the real kubectl.

A repair is killed at each step (nothing of it runs after the kill: no restore, the lock's heartbeat stops),
then the node is restored from its on-node record through the session, as ``repair --restore`` does. The
labels read as before the repair; a cordon the repair set stays, with ``nvls-tui/repair-stopped-at`` naming
the step the crashed run was in (no smoke test passed after it), and a node the repair never cordoned is not
cordoned. A record that names a Kubernetes node with no cluster configured keeps the record and says so.
"""

from __future__ import annotations

import asyncio
import shutil

import pytest

from nvls_tui.audit.log import AuditLog
from nvls_tui.diagnosis import diagnose
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import Runbook, restore_node
from nvls_tui.runbook.events import CommandStarted, StepStarted
from nvls_tui.runbook.kube_repair import INTERRUPTED, STOPPED_AT, KubeHold, step_in_log
from nvls_tui.runbook.record import RepairRecord
from tests.kube_rig import FAST, NODE, rigs

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


class Killed(Runbook):
    """A run whose process dies where the test says: nothing runs after it, its lock's heartbeat stops."""

    async def _finish(self, cancelled):
        if self.lock is not None:
            await self.lock.stop_beating()
        return cancelled


def crash(r, tmp_path, at: tuple[str, str], performed: list | None = None) -> str:
    """Run the repair until ``at`` (``("step", NAME)`` as it starts, or ``("kubectl", VERB)`` as the first such
    call goes out) and kill it there. Returns the audit log's path; ``performed`` gets the changes the run
    handed to the door."""
    path = tmp_path / "killed.jsonl"
    books: list[Runbook] = []

    async def go() -> None:
        with AuditLog(path, operator="kim") as audit:
            def sink(event) -> None:
                audit(event)
                hit = (at[0] == "step" and isinstance(event, StepStarted) and event.step == at[1]) or (
                    at[0] == "kubectl" and isinstance(event, CommandStarted) and event.argv[0] == "kubectl"
                    and at[1] in event.argv)
                if hit:
                    books[0].interrupt("killed")

            book = Killed(r.backend, FAST, on_event=sink, audit_log=str(path), kube=r.kubectl)
            books.append(book)
            await book.run()
            if performed is not None:
                performed.extend(book.context.performed)

    asyncio.run(go())
    return str(path)


KILLS = [(("step", "preflight"), None), (("kubectl", "cordon"), None), (("kubectl", "wait"), "quiesce"),
         (("step", "verify-no-holders"), "verify-no-holders"), (("step", "reset"), "reset"),
         (("step", "fabric-manager"), "fabric-manager"), (("step", "verify-fabric"), "verify-fabric"),
         (("step", "smoke-test"), "smoke-test")]


@pytest.mark.parametrize(("at", "stopped"), KILLS, ids=[f"{a[0]}-{a[1]}" for a, _ in KILLS])
def test_killed_at_any_step_and_restored_the_labels_are_as_before_and_a_cordon_it_set_stays_named(rig, tmp_path,
                                                                                                   at, stopped):
    r = rig()
    before = r.labels()
    log = crash(r, tmp_path, at)
    node = r.fleet.node(NODE)
    assert (RECORD_FILE in node.files) == (stopped is not None or at[1] == "cordon")
    recorded, sent = RECORD_FILE in node.files, len(r.standin.requests())

    outcome = asyncio.run(restore_node(r.backend, FAST, force=True, kube=r.kubectl))

    assert outcome.result == "restored", outcome.message
    # The node is read once: the read that proves it is this machine is the one the labels are decided on.
    reads = [p for m, p, _, _ in r.standin.requests()[sent:] if m == "GET" and p.startswith("/api/v1/nodes?")]
    assert len(reads) == (1 if recorded else 0), reads
    r.standin.wait_for(lambda s: r.labels() == before)
    annotations = r.node()["metadata"].get("annotations") or {}
    if stopped is None:  # killed before the cordon went out: the node is as it was
        assert not r.node()["spec"].get("unschedulable") and STOPPED_AT not in annotations
    else:
        assert r.node()["spec"].get("unschedulable") is True
        assert annotations[STOPPED_AT] == stopped == step_in_log(log, NODE)
        assert f"kubectl uncordon {NODE}" in outcome.message
    assert RECORD_FILE not in r.fleet.node(NODE).files
    assert "INTERRUPTED_REPAIR" not in [f.code for f in diagnose(asyncio.run(r.backend.snapshot())).findings]
    # The operands the pause took away come back as the DaemonSets' new pods.
    r.standin.wait_for(lambda s: {p["metadata"]["labels"].get("app") for p in r.pods()
                                  if p["metadata"]["namespace"] == "gpu-operator"}
                       >= {"nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter"})


def test_a_label_someone_changed_after_the_crash_is_left_as_they_set_it(rig, tmp_path):
    r = rig()
    crash(r, tmp_path, ("step", "reset"))
    key = "nvidia.com/gpu.deploy.dcgm-exporter"
    r.standin.store.update("nodes", "", NODE, lambda n: n["metadata"]["labels"].__setitem__(key, "false"))
    outcome = asyncio.run(restore_node(r.backend, FAST, force=True, kube=r.kubectl))
    assert outcome.result == "restored", outcome.message
    assert r.labels()[key] == "false"
    assert r.labels()["nvidia.com/gpu.deploy.device-plugin"] == "true"


def test_a_record_naming_a_kubernetes_node_with_no_cluster_configured_keeps_the_record(rig, tmp_path):
    r = rig()
    crash(r, tmp_path, ("step", "reset"))
    outcome = asyncio.run(restore_node(r.backend, FAST, force=True))
    assert outcome.result == "failed"
    assert "--kubeconfig" in outcome.message and NODE in outcome.message
    assert RECORD_FILE in r.fleet.node(NODE).files  # the next check still says INTERRUPTED_REPAIR
    assert r.node()["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "paused-for-nvls-repair"


def test_the_session_restore_uses_the_nodes_cluster(rig, tmp_path):
    r = rig()
    before = r.labels()
    crash(r, tmp_path, ("step", "smoke-test"))
    session = r.session()
    (outcome,) = asyncio.run(session.restore_nodes([NODE], force=True))
    assert outcome.result == "restored", outcome.message
    r.standin.wait_for(lambda s: r.labels() == before)
    assert outcome.kube is not None and any("stays cordoned" in d for d in outcome.kube["restored"])


def test_the_records_cluster_part_is_data_not_trusted():
    assert KubeHold.from_record(None) is None
    assert KubeHold.from_record({"node": ""}) is None
    hold = KubeHold.from_record({"node": "gpu06", "cordoned_before": "no", "labels": {
        "nvidia.com/gpu.deploy.dcgm": None, "kubernetes.io/hostname": "x", "nvidia.com/gpu.deploy.gfd": 3}})
    assert hold is not None
    assert hold.labels == {"nvidia.com/gpu.deploy.dcgm": None}  # only operand labels, only text or unset
    assert hold.cordoned_before is True  # unreadable: never "ours to uncordon"
    record = RepairRecord.from_json(RepairRecord(run_id="r", host="gpu06", operator="kim", started="s",
                                                 kube=hold.to_record()).to_json())
    assert record is not None and record.kube == hold.to_record()
    assert RepairRecord.from_json('{"run_id": "r", "kube": "x"}').kube is None  # type: ignore[union-attr]
    assert step_in_log("/nonexistent/log.jsonl", "gpu06") is None and INTERRUPTED == "interrupted"


def test_a_record_naming_another_kubernetes_node_changes_nothing_in_the_cluster(rig, tmp_path):
    import json

    r = rig()
    crash(r, tmp_path, ("step", "reset"))
    node = r.fleet.node(NODE)
    record = json.loads(node.files[RECORD_FILE])
    record["kube"]["node"] = "gpu99"  # someone with root on the node edited it
    node.files[RECORD_FILE] = json.dumps(record)
    writes = len(r.writes())
    outcome = asyncio.run(restore_node(r.backend, FAST, force=True, kube=r.kubectl))
    assert outcome.result == "failed" and "'gpu99'" in outcome.message
    assert len(r.writes()) == writes and RECORD_FILE in r.fleet.node(NODE).files
