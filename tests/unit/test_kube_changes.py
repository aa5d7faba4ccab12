"""The cluster's changes as values (runbook/changes.py, issue 36): each renders its kubectl argv, says how it
is undone, and is compared with a plan on what the plan can know (``planned``)."""

from __future__ import annotations

import json

from nvls_tui.kube.client import Kubectl
from nvls_tui.runbook.changes import (
    CLUSTER,
    PAUSED,
    READ_AT_RUN_TIME,
    STOPPED_AT,
    Annotate,
    Cordon,
    DeleteDriverPod,
    EvictPod,
    SetOperandLabel,
    Uncordon,
    read_cluster_change,
)

KUBECTL = tuple(Kubectl(kubeconfig="/etc/k8s/config", timeout=15).argv())
KEY = "nvidia.com/gpu.deploy.device-plugin"


def test_each_change_renders_its_kubectl_argv_after_the_clusters_global_flags():
    assert Cordon("gpu06", KUBECTL).argv() == (*KUBECTL, "cordon", "gpu06")
    assert Uncordon("gpu06", KUBECTL).args() == ("uncordon", "gpu06")
    assert Annotate("gpu06", "reset", KUBECTL).args() == ("annotate", "node", "gpu06", f"{STOPPED_AT}=reset",
                                                         "--overwrite")
    assert Annotate("gpu06", None, KUBECTL).args() == ("annotate", "node", "gpu06", f"{STOPPED_AT}-")
    assert DeleteDriverPod("gpu-operator", "nvidia-driver-abc", KUBECTL).args() == (
        "delete", "pod", "-n", "gpu-operator", "nvidia-driver-abc", "--wait=false")
    changes = [Cordon("gpu06", KUBECTL), SetOperandLabel("gpu06", KEY, PAUSED, "true", KUBECTL),
               EvictPod("ml", "vllm-0", KUBECTL), DeleteDriverPod("gpu-operator", "d", KUBECTL)]
    assert {c.where for c in changes} == {CLUSTER} and not any(c.privileged for c in changes)


def test_a_label_write_carries_the_resource_version_the_run_read_and_the_plan_says_where_it_comes_from():
    run = SetOperandLabel("gpu06", KEY, PAUSED, None, KUBECTL, resource_version="812")
    plan = SetOperandLabel("gpu06", KEY, PAUSED, None, KUBECTL)
    # A JSON merge patch: the label and the resourceVersion the API holds it to; it prints the API's answer.
    assert run.args()[:-1] == ("patch", "node", "gpu06", "--type=merge", "-o", "json", "-p")
    assert json.loads(run.args()[-1]) == {"metadata": {"labels": {KEY: PAUSED}, "resourceVersion": "812"}}
    assert json.loads(plan.args()[-1])["metadata"]["resourceVersion"] == READ_AT_RUN_TIME
    assert run == plan and run.planned().argvs() == plan.argvs()
    # The report reads the audited argv back into the same write.
    read = read_cluster_change(run.argv())
    assert isinstance(read, SetOperandLabel) and read.conditioned
    assert (read.node, read.key, read.value, read.resource_version) == ("gpu06", KEY, PAUSED, "812")
    # Put back: the label removed where it was unset before; blind (the node unread): unconditioned.
    assert run.undo() == SetOperandLabel("gpu06", KEY, None, PAUSED, KUBECTL)
    assert json.loads(run.undo().argv()[-1])["metadata"]["labels"] == {KEY: None}
    back = read_cluster_change(run.undo().argv())
    assert isinstance(back, SetOperandLabel) and (back.key, back.value) == (KEY, None)
    blind = SetOperandLabel("gpu06", KEY, "true", PAUSED, KUBECTL, conditioned=False)
    assert blind.args() == ("label", "node", "gpu06", "--overwrite", f"{KEY}=true")
    assert blind != SetOperandLabel("gpu06", KEY, "true", PAUSED, KUBECTL)


def test_an_eviction_is_compared_without_the_runs_body_file_and_its_body_is_the_policy_v1_eviction():
    run = EvictPod("ml", "vllm-0", KUBECTL, body_file="/tmp/nvls-tui-eviction-x/ml.vllm-0.json")
    plan = EvictPod("ml", "vllm-0", KUBECTL)
    assert run.args() == ("create", "--raw", "/api/v1/namespaces/ml/pods/vllm-0/eviction", "-f",
                          "/tmp/nvls-tui-eviction-x/ml.vllm-0.json")
    assert run == plan and run.planned().argvs() == plan.argvs() != run.argvs()
    assert json.loads(run.body) == {"apiVersion": "policy/v1", "kind": "Eviction",
                                    "metadata": {"name": "vllm-0", "namespace": "ml"}}
    assert run.undo() is None  # an evicted pod is the workload's to bring back


def test_the_cordon_and_the_annotation_say_how_they_are_undone():
    assert Cordon("gpu06", KUBECTL).undo() == Uncordon("gpu06", KUBECTL)
    assert Annotate("gpu06", "reset", KUBECTL).undo() == Annotate("gpu06", None, KUBECTL)
    assert Annotate("gpu06", None, KUBECTL).undo() is None


def test_the_next_label_is_decided_on_the_apis_answer_only_where_it_is_this_node_after_the_write():
    from nvls_tui.runbook.kube_calls import node_after

    def printed(name: str = "gpu06", rv: str = "813", kind: str = "Node") -> str:
        return json.dumps({"apiVersion": "v1", "kind": kind, "metadata": {
            "name": name, "resourceVersion": rv, "labels": {KEY: PAUSED}}, "spec": {}}, indent=4) + "\n"

    after = node_after(printed(), "gpu06", "812")
    assert after is not None and after.resource_version == "813" and after.label(KEY) == PAUSED
    # kubectl's warning on stderr, appended after the object, is not read as part of it
    warned = node_after(printed() + "Warning: metadata.labels: deprecated\n", "gpu06", "812")
    assert warned is not None and warned.resource_version == "813"
    # Anything else is read again: what kubectl sent rather than what the server stored (the resourceVersion
    # the write was conditioned on), another node, not a Node, cut short, or nothing (the dry run's).
    assert node_after(printed(rv="812"), "gpu06", "812") is None
    assert node_after(printed(name="gpu07"), "gpu06", "812") is None
    assert node_after(printed(kind="Pod"), "gpu06", "812") is None
    assert node_after(printed()[:40], "gpu06", "812") is None
    assert node_after("", "gpu06", "812") is None
    assert node_after(printed(rv=""), "gpu06", "812") is None
