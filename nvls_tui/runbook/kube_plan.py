"""The cluster's part of a plan: what a repair of a node in a Kubernetes cluster does there, step by step, as values.

Each change is the value the run hands to the door (the dry run hands it to the recording performer), each read a
:class:`~nvls_tui.runbook.changes.Read`, each wait a :class:`~nvls_tui.runbook.changes.Wait` (built by
:mod:`~nvls_tui.runbook.kube_waits`, beside the run's own), and what the repair leaves or does instead a
:class:`~nvls_tui.runbook.changes.Remark`. Nothing here renders a command line: the values do, in
:mod:`nvls_tui.runbook.changes`. Pure: it reads what the survey found (:class:`~nvls_tui.runbook.kube_hold.KubeHold`).
"""

from __future__ import annotations

from nvls_tui.kube.client import Kubectl
from nvls_tui.model import NodeState
from nvls_tui.runbook import kube_identity
from nvls_tui.runbook.changes import (
    PAUSED,
    READ_AT_RUN_TIME,
    Annotate,
    Aside,
    Cordon,
    CordonKept,
    DeleteDriverPod,
    EvictPod,
    Instead,
    LabelKept,
    PlanEntry,
    Read,
    SetOperandLabel,
    Uncordon,
)
from nvls_tui.runbook.kube_calls import prefix, read_node_args, read_pods_args
from nvls_tui.runbook.kube_hold import KubeHold, driver_pod, operand_pods, workload_pods
from nvls_tui.runbook.kube_waits import (
    DRIVER_GONE,
    EVICTED_GONE,
    OPERANDS_GONE,
    budget_wait,
    deletion_waits,
    new_driver_pod_wait,
)

#: Why the node is read again before the first label write (the plan's words after the read).
BEFORE_LABEL_WRITE = ("before the label writes: the first is conditioned on the resourceVersion this read finds "
                      f"({READ_AT_RUN_TIME}), each next one on the node the write before answered with")


def _identity_reads(hold: KubeHold) -> list[Read]:
    """The machine's own ids the Node is proven by (kube_identity), read on the node before any change to the
    cluster; the last says what the dry run's own check found."""
    reads = []
    for i, (name, path, _) in enumerate(kube_identity.IDS):
        note = f"compared with the Node's {name} before any change to the cluster"
        if hold.identity and i == len(kube_identity.IDS) - 1:
            note += f": at planning, {hold.identity}"
        reads.append(Read(kube_identity.read_argv(path), note=note))
    return reads


def cluster_entries(kube: Kubectl, hold: KubeHold, state: NodeState, *, wait_pods: float,
                    operand_timeout: float) -> dict[str, list[PlanEntry]]:
    """What a repair of ``state`` does in the cluster, step by step, in order: ``preflight`` (the reads),
    ``cordon`` (after the record is written), ``quiesce`` (before the node's own clients), the driver pod's
    restart where it is the reset, and ``restore`` (after the units)."""
    node, kubectl = hold.node, prefix(kube)
    node_read = Read((*kubectl, *read_node_args(node)))
    pods_read = Read((*kubectl, *read_pods_args(node)))
    # The cordon and each label write move the node's resourceVersion: the first write is decided on a read just
    # before it, each next one on the node the write before printed (the API's answer).
    label_read = Read(node_read.argv, note=BEFORE_LABEL_WRITE)
    pre: list[PlanEntry] = [node_read, *_identity_reads(hold), pods_read]
    cordon: list[PlanEntry] = ([CordonKept(node, hold.inherited)] if hold.cordoned_before else [Cordon(node, kubectl)])
    quiesce: list[PlanEntry] = [label_read] if hold.labels else []
    quiesce += [SetOperandLabel(node, key, PAUSED, before, kubectl) for key, before in hold.labels.items()]
    quiesce += [LabelKept(node, key, value) for key, value in hold.kept.items()]
    quiesce += deletion_waits(kube, operand_pods(hold.pods, list(hold.labels)), operand_timeout, OPERANDS_GONE)
    workloads = workload_pods(hold.pods, state)
    for pod in workloads:
        quiesce += [EvictPod(pod.namespace, pod.name, kubectl), budget_wait(wait_pods)]
    quiesce += deletion_waits(kube, workloads, operand_timeout, EVICTED_GONE)
    entries: dict[str, list[PlanEntry]] = {"preflight": pre, "cordon": cordon, "quiesce": quiesce}
    driver = driver_pod(hold, state)
    if driver is not None:
        entries["verify-no-holders"] = [Aside(f"the driver pod {driver.name}'s own processes (Fabric Manager) are "
                                              f"left: its restart is the reset")]
        entries["reset"] = [DeleteDriverPod(driver.namespace, driver.name, kubectl),
                            *deletion_waits(kube, [driver], operand_timeout, DRIVER_GONE),
                            new_driver_pod_wait(kubectl, node, operand_timeout)]
        entries["fabric-manager"] = [Aside("no host unit: the new driver pod starts Fabric Manager")]
    restore: list[PlanEntry] = [node_read]
    restore += [SetOperandLabel(node, key, before, PAUSED, kubectl) for key, before in hold.labels.items()]
    if not hold.cordoned_before or hold.inherited:
        restore.append(Uncordon(node, kubectl))
        if hold.annotated:
            restore.append(Annotate(node, None, kubectl))
        restore.append(Instead(Annotate(node, "STEP", kubectl), "after a failed or interrupted repair",
                               "the node stays cordoned"))
    return entries | {"restore": restore}


__all__ = ["BEFORE_LABEL_WRITE", "cluster_entries"]
