"""The cluster's part of a plan is values, not lines (issue 36): the changes (cordon, labels, evictions, the
driver pod's deletion, the uncordon), the reads (the node, its pods, the node's ids it is proven by), the waits
(the operands' and the evicted pods gone, a disruption budget's refusal retried, the new driver pod) and the
remarks (a cordon or a label left as it is), each with its fields; their words are rendered by the values
(runbook/changes), once. The plan's summary reads a kept cordon from its value, never from the line's words.
"""

from __future__ import annotations

from nvls_tui.kube.client import Kubectl
from nvls_tui.model import Holder, NodeState
from nvls_tui.model.kube import KubePod
from nvls_tui.model.node import FM_CONTAINER, FmPlace
from nvls_tui.runbook.changes import (
    PAUSED,
    Annotate,
    Change,
    Cordon,
    CordonKept,
    DeleteDriverPod,
    EvictPod,
    Instead,
    LabelKept,
    Read,
    Remark,
    SetOperandLabel,
    Uncordon,
    Wait,
)
from nvls_tui.runbook.kube_hold import KubeHold
from nvls_tui.runbook.kube_plan import cluster_entries
from nvls_tui.runbook.kube_summary import cluster_words
from nvls_tui.runbook.kube_waits import WAIT_SLACK
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import fill_steps

KUBE = Kubectl(timeout=15)
KUBECTL = tuple(KUBE.argv())
DP, DCGM, MIG = (f"nvidia.com/gpu.deploy.{o}" for o in ("device-plugin", "dcgm", "mig-manager"))
DEVICE_PLUGIN = KubePod("gpu-operator", "nvidia-device-plugin-daemonset-x1", "uid-dp", node="gpu06",
                        phase="Running", owner_kind="DaemonSet", owner_name="nvidia-device-plugin-daemonset")
VLLM = KubePod("inference", "vllm-0", "uid-vllm", node="gpu06", phase="Running", owner_kind="ReplicaSet",
               owner_name="vllm-7c9f")
DRIVER = KubePod("gpu-operator", "nvidia-driver-daemonset-d1", "uid-drv", node="gpu06", phase="Running",
                 owner_kind="DaemonSet", owner_name="nvidia-driver-daemonset")


def hold(**kw) -> KubeHold:
    fields = {"node": "gpu06", "cordoned_before": False, "labels": {DP: "true", DCGM: None},
              "pods": (DEVICE_PLUGIN, VLLM, DRIVER), "kept": {MIG: "false"}, "identity": "it is this machine"}
    return KubeHold(**(fields | kw))


def state(*, driver: bool = False) -> NodeState:
    holders = [Holder(pid=4242, user="ml", command="python -m vllm", pod="poduid-vllm")]
    place = FmPlace(location=FM_CONTAINER, pod_uid="uid-drv") if driver else None
    return NodeState(host="gpu06", holders=holders, fm_place=place)


def test_every_entry_of_the_clusters_part_is_a_value_with_its_fields():
    entries = cluster_entries(KUBE, hold(), state(driver=True), wait_pods=30, operand_timeout=300)
    listed = [e for step in entries.values() for e in step]
    assert listed and all(isinstance(e, Change | Read | Wait | Remark) for e in listed), [
        e for e in listed if not isinstance(e, Change | Read | Wait | Remark)]
    pre = entries["preflight"]
    assert pre[0] == Read((*KUBECTL, "get", "nodes", "--field-selector", "metadata.name=gpu06", "-o", "json"))
    assert pre[-1] == Read((*KUBECTL, "get", "pods", "--all-namespaces", "--field-selector", "spec.nodeName=gpu06",
                            "-o", "json"))
    assert entries["cordon"] == [Cordon("gpu06", KUBECTL)]
    quiesce = entries["quiesce"]
    assert [e for e in quiesce if isinstance(e, SetOperandLabel)] == [
        SetOperandLabel("gpu06", DP, PAUSED, "true", KUBECTL), SetOperandLabel("gpu06", DCGM, PAUSED, None, KUBECTL)]
    assert LabelKept("gpu06", MIG, "false") in quiesce
    waits = [e for e in quiesce if isinstance(e, Wait)]
    operands, budget, evicted = waits
    assert operands.read is not None and operands.read.argv[len(KUBECTL):] == (
        "wait", "--for=delete", "pod/nvidia-device-plugin-daemonset-x1", "-n", "gpu-operator", "--timeout=300s")
    assert operands.limit == 300 and not operands.repeated
    # The budget's wait retries the eviction listed just before it, every 5 s for --wait-pods seconds.
    assert quiesce[quiesce.index(budget) - 1] == EvictPod("inference", "vllm-0", KUBECTL)
    assert budget.read is None and budget.repeated and (budget.every, budget.limit) == (5.0, 30)
    assert budget.lines == ("# retried every 5 s until no disruption budget refuses it (429), for up to 30 s; "
                            "else the repair is refused",)
    assert evicted.read is not None and "pod/vllm-0" in evicted.read.argv
    reset = entries["reset"]
    assert reset[0] == DeleteDriverPod("gpu-operator", "nvidia-driver-daemonset-d1", KUBECTL)
    gone, new = reset[1:]
    assert isinstance(gone, Wait) and isinstance(new, Wait) and new.repeated and new.limit == 300
    assert new.read == pre[-1]  # the pods read again, until a new driver pod runs
    restore = entries["restore"]
    assert [e for e in restore if isinstance(e, Change)] == [
        SetOperandLabel("gpu06", DP, "true", PAUSED, KUBECTL), SetOperandLabel("gpu06", DCGM, None, PAUSED, KUBECTL),
        Uncordon("gpu06", KUBECTL)]
    kept = restore[-1]
    assert isinstance(kept, Instead) and kept.change == Annotate("gpu06", "STEP", KUBECTL)


def test_the_words_of_the_waits_and_remarks_are_rendered_by_the_values():
    entries = cluster_entries(KUBE, hold(), state(), wait_pods=0, operand_timeout=300)
    lines = [line for e in entries["quiesce"] for line in e.lines]
    k, waiting = " ".join(KUBECTL), " ".join(Kubectl(timeout=300 + WAIT_SLACK).argv())
    assert (f"{waiting} wait --for=delete pod/nvidia-device-plugin-daemonset-x1 -n gpu-operator --timeout=300s"
            "  # until the operands' pods are gone") in lines
    assert f"# {MIG}=false left as it is (not true: an administrator's)" in lines
    # --wait-pods 0: a budget's refusal is not waited on.
    assert ("# not retried: a disruption budget's refusal (429) refuses the repair (--wait-pods SECONDS retries "
            "that long)") in lines
    restore = [line for e in entries["restore"] for line in e.lines]
    assert restore[-1] == (f"# instead, after a failed or interrupted repair: {k} annotate node gpu06 "
                           "nvls-tui/repair-stopped-at=STEP --overwrite  (the node stays cordoned)")


def test_a_node_cordoned_before_is_a_kept_cordon_the_summary_reads_by_its_fields():
    for inherited, said in ((False, "gpu06 is cordoned already: the repair leaves it cordoned"),
                            (True, "gpu06 is cordoned already (by an earlier nvls-tui repair): a passing repair "
                                   "uncordons it")):
        entries = cluster_entries(KUBE, hold(cordoned_before=True, inherited=inherited), state(), wait_pods=0,
                                  operand_timeout=300)
        assert entries["cordon"] == [CordonKept("gpu06", inherited)]
        outcome = fill_steps(NodeOutcome(host="gpu06"), entries)
        lines, driver = cluster_words(outcome)
        assert lines[0] == said and driver is None


def test_a_wait_shows_the_request_timeout_the_run_sends_it_with():
    """The run gives kubectl's ``wait`` its own ``--timeout`` and WAIT_SLACK on top as the request's timeout (the
    default request timeout would end a 300 s wait after 14 s): the plan showed the default one, so the line the
    operator approved was not the one sent."""
    entries = cluster_entries(KUBE, hold(), state(driver=True), wait_pods=0, operand_timeout=300)
    waiting = tuple(Kubectl(timeout=300 + WAIT_SLACK).argv())
    waits = [e for step in entries.values() for e in step if isinstance(e, Wait) and e.read is not None
             and "wait" in e.read.argv]
    assert len(waits) == 3  # the operands', the evicted pod's, the driver pod's
    for wait in waits:
        assert wait.read is not None and wait.read.argv[:len(waiting)] == waiting, wait.read
    # The reads go with the cluster's own request timeout.
    assert entries["preflight"][0].argv[:len(KUBECTL)] == KUBECTL



def test_each_kind_of_wait_and_remark_says_its_fields_once():
    pods = Read(("kubectl", "get", "pods"))
    blocking = Wait("the pods are gone", Read(("kubectl", "wait", "--for=delete", "pod/p", "--timeout=9s")), limit=9)
    repeated = Wait("a new pod runs", pods, limit=300, repeated=True)
    retried = Wait("no budget refuses it", limit=30, repeated=True, every=5, then="the repair is refused")
    assert blocking.lines == ("kubectl wait --for=delete pod/p --timeout=9s  # until the pods are gone",)
    assert repeated.lines == ("kubectl get pods  # repeated until a new pod runs, for up to 300 s",)
    assert retried.lines == ("# retried every 5 s until no budget refuses it, for up to 30 s; else the repair is "
                             "refused",)
    assert Wait("x", limit=0, repeated=True, then="refused at once").lines == ("# not retried: refused at once",)
    assert not any(w.bookkeeping for w in (blocking, repeated, retried))
    # The change's command only: its own note is the plan's for a change made, not for one made instead.
    assert Instead(Cordon("gpu06", ("kubectl",)), "if asked").lines == ("# instead, if asked: kubectl cordon gpu06",)
    assert CordonKept("gpu06", inherited=True).lines == ("# gpu06 is cordoned already: it is left so until a repair "
                                                         "passes",)
