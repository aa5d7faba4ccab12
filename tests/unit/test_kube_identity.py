"""The Kubernetes node is this machine, or the cluster is not touched (issue 34, item 2).

A target's Node was found by its short name alone: ``gpu05.dc2`` with a kubeconfig whose context is another
site's cluster cordoned, paused the labels of and (after a failure) left cordoned that cluster's ``gpu05``. Now
the Node's ``status.nodeInfo`` (bootID, machineID, systemUUID: what its kubelet read from its machine) is
compared with the machine's own files before any change: in the repair's preflight (under the lock, before
the record and the cordon), in the plan, and in ``repair --restore`` before it puts labels back or annotates.

Against the stand-in API server with the real kubectl; the machine is the simulated node of tests/kube_rig.py
(its ids read through its own ``cat``), and, at the end, a simulated node behind the real sshd (its shims
serve its ids through the simulator) repaired by the real ``nvls-tui repair`` process.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess

import pytest

from nvls_tui.kube.client import Kubectl
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import restore_node
from nvls_tui.runbook.kube_identity import verdict
from nvls_tui.sim.files import identity
from tests.kube_rig import FAST, NODE, OTHER_SITE, rigs
from tests.unit.test_kube_restore import crash

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

KUBE = Kubectl(kubeconfig="/k", context="dc1")


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


# ---- the comparison itself ----------------------------------------------------------------------------------

MACHINE = {"bootID": "19c779c3-2c25-e8c0-ef9e-0f465af00508", "machineID": "b5688ec5fab366e8bc7647a1287746a8",
           "systemUUID": "df983d72-7a2b-7aac-c26c-85ec17cc07a2"}


def test_the_ids_compare_without_case_or_dashes():
    node = {"bootID": MACHINE["bootID"].upper(), "machineID": "B5688EC5-FAB3-66E8-BC76-47A1287746A8",
            "systemUUID": "DF983D72-7A2B-7AAC-C26C-85EC17CC07A2"}
    refusal, words = verdict("gpu05.dc2", "gpu05", node, MACHINE, KUBE)
    assert refusal is None
    assert words == "Kubernetes node gpu05 is this machine: its bootID, machineID, systemUUID match this machine's"


def test_an_id_that_differs_refuses_naming_the_node_the_id_and_both_values():
    node = dict(MACHINE, machineID="4c1e9a7b2d3f4e5a8b6c0d9e1f2a3b4c")
    refusal, _ = verdict("gpu05.dc2", "gpu05", node, MACHINE, KUBE)
    assert refusal is not None
    assert refusal.startswith("Kubernetes node gpu05 (context dc1) is not this machine (gpu05.dc2): its machineID is "
                              "4c1e9a7b2d3f4e5a8b6c0d9e1f2a3b4c where this machine's /etc/machine-id reads "
                              "b5688ec5fab366e8bc7647a1287746a8.")
    assert "--kube-context" in refusal and "`gpu05.dc2 K8S_NODE`" in refusal
    # Two ids that match do not outvote one that differs.
    assert verdict("h", "gpu05", dict(MACHINE, bootID="7d3f0c2e-5b1a-4e8f-9c6d-2a4b8e1f0c3d"), MACHINE, KUBE)[0]


def test_nothing_to_compare_refuses_and_says_what_to_check():
    refusal, _ = verdict("gpu05", "gpu05", {"bootID": None, "machineID": "", "systemUUID": None}, MACHINE, KUBE)
    assert refusal is not None and "cannot be told" in refusal and "no bootID, machineID or systemUUID" in refusal
    assert "kubectl get node gpu05" in refusal
    # The Node has ids, the machine's files could not be read.
    refusal, _ = verdict("gpu05", "gpu05", MACHINE, {"bootID": None, "machineID": None, "systemUUID": None}, KUBE)
    assert refusal is not None and "cannot be told" in refusal and "--sudo" in refusal
    # Ids on each side, but none on both: nothing proves it either.
    refusal, _ = verdict("gpu05", "gpu05", {"bootID": None, "machineID": MACHINE["machineID"], "systemUUID": None},
                         {"bootID": MACHINE["bootID"], "machineID": None, "systemUUID": None}, KUBE)
    assert refusal is not None and "cannot be told" in refusal


def test_a_placeholder_uuid_is_no_id():
    placeholder = "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"
    refusal, _ = verdict("h", "gpu05", {"bootID": None, "machineID": None, "systemUUID": placeholder},
                         {"bootID": None, "machineID": None, "systemUUID": placeholder}, KUBE)
    assert refusal is not None and "cannot be told" in refusal
    refusal, words = verdict("h", "gpu05", dict(MACHINE, systemUUID="Not Settable"), MACHINE, KUBE)
    assert refusal is None and "bootID, machineID match" in words and "systemUUID not on both sides" in words


# ---- the repair, the plan and the restore against the stand-in --------------------------------------------------

def test_another_sites_node_of_the_same_name_is_never_changed(rig):
    r = rig(node_info=OTHER_SITE)
    before = r.labels()
    outcome = r.repair()

    assert outcome.result == "refused", outcome.message
    assert f"Kubernetes node {NODE} (the kubeconfig's current context) is not this machine ({NODE})" in outcome.message
    ours = identity(r.fleet.node(NODE))
    assert f"its machineID is {OTHER_SITE['machineID']} where this machine's /etc/machine-id reads " \
           f"{ours['machineID']}" in outcome.message
    assert f"its systemUUID is {OTHER_SITE['systemUUID']}" in outcome.message
    assert r.writes() == []  # no cordon, no label, no eviction
    assert r.labels() == before and not r.node()["spec"].get("unschedulable")
    node = r.fleet.node(NODE)
    assert RECORD_FILE not in node.files and "/var/lib/nvls-tui/lock" not in node.dirs
    # The ids were read from the machine, before anything else was written there.
    preflight = next(s for s in outcome.steps if s.name == "preflight")
    assert "cat /etc/machine-id" in preflight.commands and "cat /sys/class/dmi/id/product_uuid" in preflight.commands
    assert not any(c.startswith(f"tee {RECORD_FILE}") for c in preflight.commands)


def test_a_node_whose_kubelet_reported_no_ids_is_refused_as_unknown(rig):
    r = rig(node_info={})
    outcome = r.repair()
    assert outcome.result == "refused", outcome.message
    assert "cannot be told" in outcome.message and r.writes() == []


def test_the_plan_checks_the_identity_and_refuses_a_mismatch_too(rig):
    r = rig(node_info=OTHER_SITE)
    plan = r.repair(dry_run=True)
    assert plan.result == "refused", plan.message
    assert "is not this machine" in plan.message and OTHER_SITE["machineID"] in plan.message
    assert r.writes() == []


def test_the_plan_of_the_right_node_says_the_identity_was_checked(rig):
    r = rig()
    plan = r.repair(dry_run=True)
    assert plan.result == "planned", plan.message
    pre = next(s for s in plan.steps if s.name == "preflight").commands
    reads = [c for c in pre if c.startswith("cat /")]
    assert [c.split("  # ")[0] for c in reads] == ["cat /proc/sys/kernel/random/boot_id", "cat /etc/machine-id",
                                                   "cat /sys/class/dmi/id/product_uuid"]
    assert any("bootID, machineID, systemUUID match" in c for c in reads), reads
    # Read before the record is written and before the cordon.
    assert pre.index(reads[0]) < min(i for i, c in enumerate(pre) if c.startswith(f"tee {RECORD_FILE}"))
    assert pre.index(reads[0]) < min(i for i, c in enumerate(pre) if " cordon " in c)
    outcome = r.repair()
    assert outcome.result == "repaired", outcome.message


def test_a_restore_from_the_record_leaves_another_machines_node_alone(rig, tmp_path):
    r = rig()
    crash(r, tmp_path, ("step", "reset"))  # cordoned and paused by a repair that checked the identity
    labels = r.labels()
    assert "paused-for-nvls-repair" in labels.values()
    # Since the crash the context names another site's cluster: its gpu06 is another machine.
    r.standin.store.update("nodes", "", NODE, lambda n: n["status"]["nodeInfo"].update(OTHER_SITE))
    writes = len(r.writes())
    outcome = asyncio.run(restore_node(r.backend, FAST, force=True, kube=r.kubectl))

    assert outcome.result == "failed", outcome.message
    assert "is not this machine" in outcome.message and OTHER_SITE["machineID"] in outcome.message
    assert len(r.writes()) == writes and r.labels() == labels  # nothing changed in that cluster
    assert RECORD_FILE in r.fleet.node(NODE).files  # the record stays for a restore against the right cluster
    # The units were put back all the same: they are this machine's.
    assert outcome.restored


def test_a_restore_from_the_record_on_the_right_node_checks_and_restores(rig, tmp_path):
    r = rig()
    before = r.labels()
    crash(r, tmp_path, ("step", "reset"))
    outcome = asyncio.run(restore_node(r.backend, FAST, force=True, kube=r.kubectl))
    assert outcome.result == "restored", outcome.message
    r.standin.wait_for(lambda s: r.labels() == before)
    restore = next(s for s in outcome.steps if s.name == "restore")
    assert "cat /etc/machine-id" in restore.commands


# ---- over a real sshd: the ids read from the machine by the real nvls-tui process ------------------------------

def test_headless_repair_over_ssh_refuses_another_sites_gpu05_and_plans_this_one(tmp_path):
    from nvls_tui.lab.kube_standin.harness import running
    from nvls_tui.sim.store import NodeStore
    from tests.kube_rig import LABELS
    from tests.sshd.test_faults_ssh import cli, finish, make_rig
    from tests.sshd_rig import find_sshd

    if find_sshd() is None:
        pytest.skip("openssh-server is not installed")
    rig_ = make_rig(tmp_path / "rig", {"gpu05": ("seed-incident", "gpu05")})
    try:
        target = rig_.target("gpu05")
        node, _ = NodeStore(rig_.nodes["gpu05"].dir).load()
        ours = identity(node)
        (tmp_path / "node-map").write_text(f"# the rig's node is an IP target\n{target} gpu05\n")

        def cluster(ids: dict[str, str]) -> dict:
            return {"nodes": [{"name": "gpu05", "labels": dict(LABELS), "nodeInfo": ids}],
                    "gpuOperator": {"namespace": "gpu-operator", "operands": ["nvidia-device-plugin-daemonset"]}}

        def repair(standin, *args: str) -> tuple[int, dict, str]:
            proc = cli(rig_, "repair", target, "--json", "--kubeconfig", standin.kubeconfig,
                       "--kube-node-map", str(tmp_path / "node-map"), "--audit-dir", str(tmp_path / "audit"), *args)
            try:
                code, out, err = finish(proc, timeout=120)
            except subprocess.TimeoutExpired:  # a repair that went ahead waits for holders: stop it, it restores
                proc.send_signal(signal.SIGTERM)
                code, out, err = finish(proc, timeout=90)
            return code, json.loads(out)["nodes"][0], err

        (tmp_path / "other").mkdir()
        (tmp_path / "this").mkdir()
        with running(cluster(OTHER_SITE), tmp_path / "other") as standin:
            code, result, err = repair(standin, "--yes")
            assert code == 1, err
            assert result["result"] == "refused", result
            assert "is not this machine" in result["message"] and ours["machineID"] in result["message"]
            assert not [r for r in standin.requests() if r[0] in ("PATCH", "POST", "DELETE")]
            after, _ = NodeStore(rig_.nodes["gpu05"].dir).load()
            assert after.units["kubelet.service"].active == "active"  # nothing stopped on the machine either

        with running(cluster(ours), tmp_path / "this") as standin:
            code, result, err = repair(standin, "--dry-run")
            assert code == 0, err
            assert result["result"] == "planned", result
            pre = next(s for s in result["steps"] if s["name"] == "preflight")["commands"]
            assert any(c.startswith("cat /sys/class/dmi/id/product_uuid") and "gpu05 is this machine: its bootID, "
                       "machineID, systemUUID match" in c for c in pre), pre
            assert not [r for r in standin.requests() if r[0] in ("PATCH", "POST", "DELETE")]
    finally:
        rig_.stop()
