"""The repair around Kubernetes: cordon, pause the GPU Operator's operands by label, evict, and put it all back.

With a cluster configured and the node known to it, the repair goes through the API instead of stopping
kubelet (which would make the whole node NotReady and, after five minutes, have the node controller evict
every pod). As the GPU Operator's own MIG and driver managers do:

* preflight reads the node and its pods, then cordons it (remembering whether it was cordoned already);
* quiesce sets each operand label that is ``true`` (or unset) to ``paused-for-nvls-repair`` and leaves an
  administrator's ``false`` alone, waits (with a deadline) for those operands' pods to be deleted, and evicts
  the workload pods whose processes hold a GPU through the Eviction API: a PodDisruptionBudget's 429 is
  waited on up to ``--wait-pods`` seconds, then the repair is refused (never a forced delete);
* restore puts back exactly the labels this repair paused (only where they still read paused) and
  uncordons only a node this repair cordoned, and only after a passing smoke test; after a failed or
  interrupted repair the node stays cordoned with the annotation ``nvls-tui/repair-stopped-at=STEP``.

Every change to the cluster is a typed change (:mod:`nvls_tui.runbook.changes`: :class:`Cordon`,
:class:`SetOperandLabel`, :class:`EvictPod`, :class:`DeleteDriverPod`, :class:`Annotate`, :class:`Uncordon`)
that goes out through the one door (``door.perform``: announced, on disk before it goes out, fenced by the
lock). What this module will change is in the on-node record before the first change, so ``repair --restore``
after a crash puts the labels back and keeps the cordon. The cluster is reached through a
:class:`~nvls_tui.kube.client.Kubectl` (the real kubectl, or the simulator's).

This module holds the run's steps (:func:`survey`, :func:`cordon`, :func:`pause_operands`,
:func:`evict_workloads`, :func:`restart_driver_pod`); the rest lives beside it, and its names stay importable
from here:

* :mod:`~nvls_tui.runbook.kube_hold`: what the survey found and what the repair decides from it (pure);
* :mod:`~nvls_tui.runbook.kube_calls`: the audited calls, reads and the conditioned label write;
* :mod:`~nvls_tui.runbook.kube_waits`: each wait, as the plan shows it and as the run makes it;
* :mod:`~nvls_tui.runbook.kube_plan`: the cluster's part of the dry run's plan, as values;
* :mod:`~nvls_tui.runbook.kube_restore`: the cluster put back, what is left there, a crashed run's step.
"""

from __future__ import annotations

import os
import tempfile

from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.model import NodeState
from nvls_tui.model.kube import OPERAND_LABEL_PREFIX, KubePod
from nvls_tui.runbook import kube_identity
from nvls_tui.runbook.changes import EVICTION_FILE, PAUSED, STOPPED_AT, Cordon, DeleteDriverPod, eviction_body
from nvls_tui.runbook.context import NodeContext, Refused, StepFailed
from nvls_tui.runbook.kube_calls import (
    CONFLICT,
    CONFLICT_TRIES,
    LEFT,
    WRITTEN,
    call,
    conditional_label,
    kubectl_said,
    make,
    pausable,
    prefix,
    read_node,
    read_node_args,
    read_pods,
    read_pods_args,
    wait_delete_args,
)
from nvls_tui.runbook.kube_hold import (
    PAUSE_OPERANDS,
    KubeHold,
    driver_pod,
    operand_of,
    operand_pods,
    pause_plan,
    workload_pods,
)
from nvls_tui.runbook.kube_plan import cluster_entries
from nvls_tui.runbook.kube_restore import INTERRUPTED, left_in_cluster, settle, step_in_log, uncordon_words
from nvls_tui.runbook.kube_waits import EVICT_RETRY, evict, wait_deleted, wait_new_driver_pod
from nvls_tui.words import count

# ---- preflight ---------------------------------------------------------------------------------------------

async def survey(ctx: NodeContext, kube: Kubectl, node: str) -> KubeHold | None:
    """Read the node and its pods before anything changes: what the repair will pause and put back.

    The Node must prove it is this machine first (:mod:`~nvls_tui.runbook.kube_identity`: its kubelet's bootID,
    machineID and systemUUID against the machine's own files): a name alone may be another site's node.
    None where the cluster answered and has no such node (the caller decides what that means).

    Raises:
        Refused: the cluster could not be read (a guard that cannot see refuses; nothing was changed), or the
            Node is not this machine, or whether it is cannot be told.
    """
    def unread(exc: KubeError) -> Refused:
        return Refused(f"the Kubernetes cluster could not be read, so the node's pods are unknown: {exc} (a node in "
                       f"no cluster: --no-kubernetes)")

    try:
        found = await read_node(ctx, kube, node)
    except KubeError as exc:
        raise unread(exc) from None
    if found is None:
        return None
    refusal, proven = await kube_identity.check(ctx, kube, found)
    if refusal is not None:
        raise Refused(refusal)
    try:
        pods = await read_pods(ctx, kube, node)
    except KubeError as exc:
        raise unread(exc) from None
    if found.cordoned is None:
        raise Refused(f"whether {node} is cordoned could not be read; a guard that cannot see refuses")
    ours = dict(found.annotations).get(STOPPED_AT) is not None
    labels = pause_plan(found)
    kept = {k: v for k, v in found.operand_labels.items()
            if k not in labels and k.removeprefix(OPERAND_LABEL_PREFIX) in PAUSE_OPERANDS}
    return KubeHold(node=node, cordoned_before=found.cordoned, labels=labels,
                    inherited=bool(found.cordoned and ours), pods=pods, kept=kept, identity=proven, annotated=ours)


async def cordon(ctx: NodeContext, kube: Kubectl, hold: KubeHold) -> None:
    """Cordon the node (nothing to do where it was cordoned already: that cordon is not this run's).

    Raises:
        Refused: the API refused the cordon.
    """
    if hold.cordoned_before:
        whose = "an earlier nvls-tui repair" if hold.inherited else "someone else"
        ctx.note(f"{hold.node} was cordoned already (by {whose}): "
                 + ("a passing repair uncordons it" if hold.inherited else "it stays cordoned after the repair"))
        return
    try:
        status, printed = await make(ctx, kube, Cordon(hold.node, prefix(kube)))
    except KubeError as exc:
        # Sent, and no answer: it may have gone through. The restore reads the node and keeps (annotated) a
        # cordon it finds, or leaves a node it finds uncordoned.
        hold.cordoned = True
        raise StepFailed(f"the cordon of {hold.node} is unknown: {exc}") from None
    if status != 0:
        raise Refused(f"Kubernetes did not cordon {hold.node}: {kubectl_said(status, printed)}")
    hold.cordoned = True


# ---- quiesce -------------------------------------------------------------------------------------------------

async def pause_operands(ctx: NodeContext, kube: Kubectl, hold: KubeHold) -> None:
    """Set each planned operand label to paused, then wait (bounded) for those operands' pods to be deleted.

    Raises:
        StepFailed: a label could not be set, or an operand pod outlived the wait.
    """
    # The first write is decided on a read (the cordon moved the node's resourceVersion); each next one on the
    # node the write before answered with. An administrator's value set meanwhile wins either way (the 409).
    node = None
    for key in hold.labels:
        try:
            result, said, node = await conditional_label(ctx, kube, hold.node, key, PAUSED, pausable, node)
        except KubeError as exc:
            hold.paused.append(key)  # it may have gone through: the restore puts it back where it reads paused
            raise StepFailed(f"whether {key} was paused on {hold.node} is unknown: {exc}") from None
        if result == LEFT:
            ctx.note(f"{key} reads {said} now (set since the survey): left as it is, not paused", "warning")
            continue
        if result != WRITTEN:
            raise StepFailed(f"Kubernetes did not pause {key} on {hold.node}: {said}")
        hold.paused.append(key)
    pods = operand_pods(hold.pods, hold.paused)
    if pods:
        ctx.note(f"waiting for {count(len(pods), 'operand pod')} to be deleted: "
                 + ", ".join(f"{p.namespace}/{p.name}" for p in pods))
    await wait_deleted(ctx, kube, pods, ctx.options.operand_timeout, "the GPU Operator's")


async def evict_workloads(ctx: NodeContext, kube: Kubectl, hold: KubeHold, state: NodeState) -> None:
    """Evict every workload pod holding a GPU through the Eviction API, then wait for it to be gone.

    A disruption budget's refusal (429) is retried every :data:`EVICT_RETRY` seconds until ``wait_pods`` has
    passed since the first try, then the repair is refused, naming the pod: nvls-tui never force-deletes.

    Raises:
        Refused: a budget still refused at the deadline.
        StepFailed: the API refused the eviction for another reason, or the pod outlived the wait.
    """
    pods = workload_pods(hold.pods, state)
    if not pods:
        return
    ctx.note(f"evicting {count(len(pods), 'workload pod')} holding GPUs: "
             + ", ".join(f"{p.namespace}/{p.name}" for p in pods))
    folder = tempfile.mkdtemp(prefix="nvls-tui-eviction-")
    try:
        for pod in pods:
            body = os.path.join(folder, f"{pod.namespace}.{pod.name}.json")
            with open(body, "w", encoding="utf-8") as handle:
                handle.write(eviction_body(pod.namespace, pod.name))
            await evict(ctx, kube, hold, pod, body)
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    await wait_deleted(ctx, kube, pods, ctx.options.operand_timeout, "the evicted")


# ---- Fabric Manager in the driver pod ---------------------------------------------------------------------

async def restart_driver_pod(ctx: NodeContext, kube: Kubectl, hold: KubeHold, pod: KubePod) -> str:
    """Restart Fabric Manager the only way it restarts where it runs in the driver pod: delete that pod (its
    DaemonSet makes a new one, which loads the driver again, resetting the GPUs and NVSwitches, and starts FM),
    wait for it to be gone, then for the new pod to run (bounded by ``operand_timeout``).

    Raises:
        StepFailed: the pod was not deleted, or no new driver pod ran in time.
    """
    try:
        status, printed = await make(ctx, kube, DeleteDriverPod(pod.namespace, pod.name, prefix(kube)))
    except KubeError as exc:
        raise StepFailed(f"the driver pod {pod.namespace}/{pod.name} may not have been deleted: {exc}") from None
    if status != 0:
        raise StepFailed(f"Kubernetes did not delete the driver pod {pod.namespace}/{pod.name}: "
                         f"{kubectl_said(status, printed)}")
    await wait_deleted(ctx, kube, [pod], ctx.options.operand_timeout, "the driver")
    new = await wait_new_driver_pod(ctx, kube, hold, pod)
    return (f"the driver pod {pod.name} was deleted and {new.name} runs in its place (the driver loaded "
            f"again, the GPUs and NVSwitches with it)")


__all__ = ["CONFLICT", "CONFLICT_TRIES", "EVICTION_FILE", "EVICT_RETRY", "LEFT", "WRITTEN", "conditional_label",
           "INTERRUPTED", "PAUSED", "PAUSE_OPERANDS", "STOPPED_AT", "KubeHold", "call", "make", "prefix",
           "cordon", "left_in_cluster", "driver_pod", "restart_driver_pod", "evict_workloads", "eviction_body",
           "cluster_entries", "operand_of", "operand_pods", "pause_operands", "pause_plan", "read_node",
           "read_node_args", "read_pods", "read_pods_args", "settle", "step_in_log", "survey", "uncordon_words",
           "wait_delete_args", "workload_pods"]
