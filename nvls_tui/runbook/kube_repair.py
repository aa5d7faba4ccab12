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
lock); the dry run's plan (:func:`plan_lines`) lists the same values. Reads and waits are audited calls of the
step they belong to (:func:`call`). What this module will change is in the on-node record before the
first change, so ``repair --restore`` after a crash puts the labels back and keeps the cordon. The cluster
is reached through a :class:`~nvls_tui.kube.client.Kubectl` (the real kubectl, or the simulator's).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.model import NodeState
from nvls_tui.model.kube import OPERAND_LABEL_PREFIX, KubeNode, KubePod
from nvls_tui.parsers.kube import parse_nodes, parse_pods
from nvls_tui.runbook import kube_identity
from nvls_tui.runbook.changes import (
    EVICTION_FILE,
    PAUSED,
    READ_AT_RUN_TIME,
    STOPPED_AT,
    Annotate,
    Cordon,
    DeleteDriverPod,
    EvictPod,
    InCluster,
    SetOperandLabel,
    Uncordon,
    eviction_body,
)
from nvls_tui.runbook.context import NodeContext, Refused, StepFailed
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.event_records import record_problem
from nvls_tui.runbook.events import CommandFinished, CommandStarted, StepStarted
from nvls_tui.runbook.log_entries import read_entry
from nvls_tui.runbook.steps import STEPS as STEP_NAMES
from nvls_tui.textsafe import one_line
from nvls_tui.words import count

#: The operands whose pods open the GPUs. The driver and the container toolkit are never paused: pausing the
#: driver's label unloads the driver.
PAUSE_OPERANDS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "mig-manager",
                  "node-status-exporter", "operator-validator")
#: The step named after a crash, where the run could not say how far it got.
INTERRUPTED = "interrupted"
#: Seconds between two evictions a disruption budget refused.
EVICT_RETRY = 5.0
#: What kubectl 1.20 says (exit 1) when ``wait --for=delete`` finds the pod gone already (1.32: exit 0).
NO_MATCH = "error: no matching resources found"
#: Seconds kubectl gets on top of a wait's own ``--timeout`` before its process is ended.
WAIT_SLACK = 15.0
#: kubectl's words for a write the API refused because the object changed since the resourceVersion sent.
CONFLICT = "(Conflict)"
#: Times one label write that met a conflict is read and decided again before the repair gives up on it.
CONFLICT_TRIES = 5


def operand_of(daemonset: str) -> str:
    """The operand a GPU Operator DaemonSet deploys: ``nvidia-device-plugin-daemonset`` -> ``device-plugin``,
    ``nvidia-dcgm-exporter`` -> ``dcgm-exporter`` (its name less ``nvidia-`` and ``-daemonset``)."""
    return daemonset.removeprefix("nvidia-").removesuffix("-daemonset")


def pause_plan(node: KubeNode) -> dict[str, str | None]:
    """``{label: value before}`` of each operand label to pause: ``true`` or unset (None); never a ``false`` or
    any other value an administrator (or another manager) set."""
    labels = dict(node.labels)
    plan: dict[str, str | None] = {}
    for operand in PAUSE_OPERANDS:
        key = OPERAND_LABEL_PREFIX + operand
        if labels.get(key, "true") == "true":
            plan[key] = labels.get(key)
    return plan


def operand_pods(pods: Sequence[KubePod], paused: Sequence[str]) -> list[KubePod]:
    """The pods of the DaemonSets that the ``paused`` labels deploy (the pods the pause deletes)."""
    operands = {key.removeprefix(OPERAND_LABEL_PREFIX) for key in paused}
    return [p for p in pods if p.owner_kind == "DaemonSet" and p.owner_name and operand_of(p.owner_name) in operands]


def workload_pods(pods: Sequence[KubePod], state: NodeState) -> list[KubePod]:
    """The pods to evict: not a DaemonSet's, with a process that holds a GPU device (the poll's holders)."""
    holding = {h.pod.removeprefix("pod") for h in state.holders if h.pod and h.pod.startswith("pod")}
    return [p for p in pods if p.owner_kind != "DaemonSet" and p.uid in holding]


# ---- the argv of each call (what the dry run shows and the audit log records) -----------------------------

def read_node_args(node: str) -> tuple[str, ...]:
    """One node as a list (the list parser reads it; an empty list is a node the cluster lacks)."""
    return ("get", "nodes", "--field-selector", f"metadata.name={node}", "-o", "json")


def read_pods_args(node: str) -> tuple[str, ...]:
    """Every pod bound to the node, in every namespace."""
    return ("get", "pods", "--all-namespaces", "--field-selector", f"spec.nodeName={node}", "-o", "json")


def wait_delete_args(namespace: str, pods: Sequence[str], timeout: float) -> tuple[str, ...]:
    """``kubectl wait --for=delete pod/A pod/B -n NS --timeout=Ns`` (exit 0 once every one is gone)."""
    return ("wait", "--for=delete", *(f"pod/{p}" for p in pods), "-n", namespace, f"--timeout={max(1, int(timeout))}s")


def uncordon_words(node: str) -> str:
    """How the operator lifts a cordon nvls-tui kept."""
    return (f"once the node is repaired, `kubectl uncordon {node}` and `kubectl annotate node {node} {STOPPED_AT}-` "
            f"(or run the repair again: a passing one uncordons it)")


# ---- what the run remembers ---------------------------------------------------------------------------------

@dataclass
class KubeHold:
    """What this repair found and changed in the cluster (its first three fields go into the on-node record).

    Attributes:
        node: the Kubernetes node name.
        cordoned_before: the node was cordoned before the repair (its cordon is left alone).
        labels: ``{operand label: value before}`` (None: unset) of the labels this repair pauses.
        inherited: the cordon is an earlier nvls-tui repair's (it carries :data:`STOPPED_AT`): a passing repair
            lifts it.
        cordoned: this run cordoned the node.
        paused: the labels this run set to paused.
        evicted: ``namespace/pod`` of each pod this run evicted.
        pods: the node's pods as preflight read them.
        kept: the operand labels left alone (``false`` or another value someone set), as read.
        identity: how the Node was proven to be this machine (words; the plan shows them).
        annotated: the node carries :data:`STOPPED_AT` (a passing repair that uncordons it removes it).
    """

    node: str
    cordoned_before: bool
    labels: dict[str, str | None] = field(default_factory=dict)
    inherited: bool = False
    cordoned: bool = False
    paused: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    pods: tuple[KubePod, ...] = ()
    kept: dict[str, str] = field(default_factory=dict)
    identity: str = ""
    annotated: bool = False

    def to_record(self) -> dict[str, Any]:
        """The part the on-node record keeps (``kube`` in repair.json)."""
        return {"node": self.node, "cordoned_before": self.cordoned_before, "inherited": self.inherited,
                "labels": dict(self.labels)}

    @classmethod
    def from_record(cls, data: Any) -> KubeHold | None:
        """Read the record's ``kube`` back; None when it is absent or not one (the record is data, not trusted)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("node"), str) or not data["node"]:
            return None
        raw = data.get("labels")
        labels = {k: v for k, v in raw.items() if isinstance(k, str) and k.startswith(OPERAND_LABEL_PREFIX)
                  and (v is None or isinstance(v, str))} if isinstance(raw, Mapping) else {}
        return cls(node=data["node"], cordoned_before=data.get("cordoned_before") is not False,
                   labels=labels, inherited=data.get("inherited") is True)


# ---- the audited call ----------------------------------------------------------------------------------------

async def call(ctx: NodeContext, kube: Kubectl, args: Sequence[str], *, timeout: float | None = None,
               abortable: bool = True) -> tuple[int, str, str]:
    """One kubectl call of the current step: recorded, announced, on disk before it goes out, its answer after.

    Raises:
        Aborted: the operator asked to stop (abortable calls), or the audit log cannot take it.
        KubeError: kubectl could not be run or did not answer in time (after the event).
    """
    if abortable:
        ctx.check_abort()
    # The cluster is changed from the bastion, not the node: the lock is proven on the node right before.
    await ctx.check_fence()
    runner = kube if timeout is None else dataclasses.replace(kube, timeout=timeout)
    argv = tuple(runner.argv(*args))
    ctx.record_command(argv)
    ctx.emit(CommandStarted(host=ctx.host, step=ctx.step, argv=argv))
    await ctx.audit_first(argv, abortable=abortable)
    began = ctx.options.clock()
    try:
        status, out, err = await runner.run_status(*args)
    except KubeError as exc:
        ctx.emit(CommandFinished(host=ctx.host, step=ctx.step, argv=argv, exit_status=None, error=str(exc),
                                 duration=ctx.options.clock() - began))
        raise
    ctx.emit(CommandFinished(host=ctx.host, step=ctx.step, argv=argv, exit_status=status, output=(out + err)[:65536],
                             duration=ctx.options.clock() - began))
    return status, out, err


async def make(ctx: NodeContext, kube: Kubectl, change: InCluster, *, abortable: bool = True) -> tuple[int, str]:
    """Make one change to the cluster through the door (``door.perform``: the node's lock proven, announced, on
    disk before it goes out, its answer after); (exit status, what kubectl printed).

    Raises:
        Aborted: the operator asked to stop (abortable changes), or the audit log cannot take it.
        KubeError: kubectl could not be run or did not answer in time (after the event).
    """
    if abortable:
        ctx.check_abort()

    async def via(argv: Sequence[str]) -> tuple[int, str]:
        ctx.record_command(tuple(argv))
        status, out, err = await kube.run_status(*argv[len(change.kubectl):])
        return status, (out + err)[:65536]

    result = await perform(ctx, change, via=via)
    return result.exit_status, result.stdout


def prefix(kube: Kubectl) -> tuple[str, ...]:
    """The argv that reaches the cluster (kubectl and its global flags): every cluster change starts with it."""
    return tuple(kube.argv())


def _said(status: int, out: str, err: str = "") -> str:
    """kubectl's last line (what it says failed), or the exit status."""
    lines = [line for line in (err or out).splitlines() if line.strip()]
    return one_line(lines[-1], 200) if lines else f"exit status {status}"


async def read_node(ctx: NodeContext, kube: Kubectl, node: str, *, abortable: bool = True) -> KubeNode | None:
    """The node as the API has it now (no pods); None where the cluster has no such node.

    Raises:
        KubeError: the cluster could not be read, or answered with what could not be read whole.
    """
    status, out, err = await call(ctx, kube, read_node_args(node), abortable=abortable)
    if status != 0:
        raise KubeError(f"`kubectl get nodes` failed: {_said(status, out, err)}")
    parsed = parse_nodes(out)
    if parsed.warnings:
        raise KubeError(parsed.warnings[0])
    return parsed.value.get(node)


async def read_pods(ctx: NodeContext, kube: Kubectl, node: str) -> tuple[KubePod, ...]:
    """The pods bound to the node (every namespace).

    Raises:
        KubeError: they could not be read whole.
    """
    status, out, err = await call(ctx, kube, read_pods_args(node))
    if status != 0:
        raise KubeError(f"`kubectl get pods` failed: {_said(status, out, err)}")
    parsed = parse_pods(out)
    if parsed.warnings:
        raise KubeError(parsed.warnings[0])
    return tuple(p for p in parsed.value if p.node in (None, node))


WRITTEN, LEFT = "written", "left"


async def conditional_label(ctx: NodeContext, kube: Kubectl, name: str, key: str, value: str | None,
                            still: Callable[[str | None], bool], node: KubeNode | None = None, *,
                            abortable: bool = True) -> tuple[str, str | None]:
    """Read the node (unless ``node`` was read just now), decide on what it says (``still(the label's value)``),
    and write ``key`` conditioned on that read; where someone wrote the node in between (409 Conflict), read
    and decide again. Never a write over a change the decision did not see.

    Returns:
        (:data:`WRITTEN`, None); (:data:`LEFT`, the value read: the label no longer reads as decided, so it is
        left as someone set it); (``failed``, kubectl's words or why).

    Raises:
        KubeError: kubectl could not be run or did not answer (a write may have gone through).
    """
    for _ in range(CONFLICT_TRIES):
        if node is None:
            node = await read_node(ctx, kube, name, abortable=abortable)
            if node is None:
                return "failed", f"the cluster has no node {name} any more"
        current = node.label(key)
        if not still(current):
            return LEFT, current
        change = SetOperandLabel(name, key, value, current, prefix(kube), resource_version=node.resource_version)
        status, printed = await make(ctx, kube, change, abortable=abortable)
        if status == 0:
            return WRITTEN, None
        said = _said(status, printed)
        if CONFLICT not in said:
            return "failed", said
        node = None  # written by someone since the read: read again, decide again
    return "failed", f"the node changed under every one of {CONFLICT_TRIES} writes (409 Conflict each time)"


def _pausable(value: str | None) -> bool:
    return value is None or value == "true"


def _paused(value: str | None) -> bool:
    return value == PAUSED


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
        raise Refused(f"Kubernetes did not cordon {hold.node}: {_said(status, printed)}")
    hold.cordoned = True


# ---- quiesce -------------------------------------------------------------------------------------------------

async def pause_operands(ctx: NodeContext, kube: Kubectl, hold: KubeHold) -> None:
    """Set each planned operand label to paused, then wait (bounded) for those operands' pods to be deleted.

    Raises:
        StepFailed: a label could not be set, or an operand pod outlived the wait.
    """
    for key in hold.labels:
        # Read before each write: the cordon and the write before moved the node's resourceVersion, and an
        # administrator may have set the label meanwhile (their value wins).
        try:
            result, said = await conditional_label(ctx, kube, hold.node, key, PAUSED, _pausable)
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
    await _wait_deleted(ctx, kube, pods, ctx.options.operand_timeout, "the GPU Operator's")


async def _wait_deleted(ctx: NodeContext, kube: Kubectl, pods: Sequence[KubePod], limit: float, whose: str) -> None:
    by_namespace: dict[str, list[str]] = {}
    for pod in pods:
        by_namespace.setdefault(pod.namespace, []).append(pod.name)
    for namespace, names in by_namespace.items():
        args = wait_delete_args(namespace, names, limit)
        try:
            status, out, err = await call(ctx, kube, args, timeout=limit + WAIT_SLACK)
        except KubeError as exc:
            raise StepFailed(f"waiting for {whose} pods to be deleted failed: {exc}") from None
        if status != 0 and NO_MATCH in err:
            continue  # kubectl 1.20's words for a pod already gone (1.32: exit 0, nothing printed)
        if status != 0:
            raise StepFailed(f"{whose} pods in {namespace} were not deleted within {limit:.0f} s "
                             f"({_said(status, out, err)}); the labels are put back and the node stays cordoned")


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
            await _evict(ctx, kube, hold, pod, body)
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    await _wait_deleted(ctx, kube, pods, ctx.options.operand_timeout, "the evicted")


async def _evict(ctx: NodeContext, kube: Kubectl, hold: KubeHold, pod: KubePod, body: str) -> None:
    deadline = ctx.options.clock() + max(0.0, ctx.options.wait_pods)
    told = False
    while True:
        try:
            status, printed = await make(ctx, kube, EvictPod(pod.namespace, pod.name, prefix(kube), body_file=body))
        except KubeError as exc:
            raise StepFailed(f"the eviction of {pod.namespace}/{pod.name} could not be sent: {exc}") from None
        said = _said(status, printed)
        if status == 0 or "(NotFound)" in said:
            hold.evicted.append(f"{pod.namespace}/{pod.name}")
            return
        if "(TooManyRequests)" not in said:
            raise StepFailed(f"Kubernetes refused to evict {pod.namespace}/{pod.name}: {said}")
        if ctx.options.clock() >= deadline:
            raise Refused(f"the disruption budget of {pod.namespace}/{pod.name} refuses its eviction ({said}); "
                          f"nvls-tui never force-deletes a pod: let the workload scale elsewhere (--wait-pods SECONDS "
                          f"keeps retrying that long) or delete the pod yourself, then repair again")
        if not told:
            told = True
            ctx.note(f"the disruption budget of {pod.namespace}/{pod.name} refuses its eviction for now: retrying "
                     f"every {EVICT_RETRY:.0f} s for up to {ctx.options.wait_pods:.0f} s", "warning")
        await ctx.options.sleep(EVICT_RETRY)
        ctx.check_abort()


# ---- Fabric Manager in the driver pod ---------------------------------------------------------------------

def driver_pod(hold: KubeHold, state: NodeState) -> KubePod | None:
    """The GPU Operator's driver pod that runs Fabric Manager on the node: the pod whose uid FM's cgroup names,
    owned by a DaemonSet (None where FM runs elsewhere or the cluster does not list that pod)."""
    place = state.fm_place
    if place is None or not place.in_container or not place.pod_uid:
        return None
    return next((p for p in hold.pods if p.uid == place.pod_uid and p.owner_kind == "DaemonSet"), None)


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
        raise StepFailed(f"Kubernetes did not delete the driver pod {pod.namespace}/{pod.name}: {_said(status, printed)}")
    await _wait_deleted(ctx, kube, [pod], ctx.options.operand_timeout, "the driver")
    deadline = ctx.options.clock() + ctx.options.operand_timeout
    while True:
        try:
            pods = await read_pods(ctx, kube, hold.node)
        except KubeError as exc:
            raise StepFailed(f"the new driver pod could not be read: {exc}") from None
        new = next((p for p in pods if p.owner_name == pod.owner_name and p.name != pod.name
                    and p.phase == "Running"), None)
        if new is not None:
            return (f"the driver pod {pod.name} was deleted and {new.name} runs in its place (the driver loaded "
                    f"again, the GPUs and NVSwitches with it)")
        if ctx.options.clock() >= deadline:
            raise StepFailed(f"no new driver pod of {pod.owner_name} ran on {hold.node} within "
                             f"{ctx.options.operand_timeout:.0f} s of deleting {pod.name}; the labels are put back "
                             f"and the node stays cordoned")
        await ctx.pause()


# ---- restore -------------------------------------------------------------------------------------------------

async def settle(ctx: NodeContext, kube: Kubectl, hold: KubeHold, *, passed: bool, stopped_at: str | None,
                 blind: bool = False) -> tuple[list[str], list[str]]:
    """Put the paused labels back, then lift this repair's cordon after a pass, or keep it with the step named.

    Only labels that still read :data:`PAUSED` are put back (an administrator's change meanwhile is kept); where
    the node cannot be read, the labels this run set (``blind``: every label of the record) are put back anyway.
    Never abortable: the restore runs after an abort too.

    Args:
        passed: the smoke test passed (the only case a cordon comes off).
        stopped_at: the step the repair stopped at (for the annotation); None after a pass.
        blind: a restore from the record: the labels the run set are not known, only those it meant to.

    Returns:
        (what was done, what could not be done): phrases for the run's message.
    """
    done: list[str] = []
    failed: list[str] = []

    async def put(change: InCluster, what: str) -> bool:
        """One change of the restore; what it could not do is said and the rest still goes (a kubectl that hangs
        on one call must not keep the other labels paused)."""
        try:
            status, printed = await make(ctx, kube, change, abortable=False)
        except KubeError as exc:
            failed.append(f"{what} ({exc})")
            return False
        if status != 0:
            failed.append(f"{what} ({_said(status, printed)})")
        return status == 0

    kubectl = prefix(kube)

    try:
        now = await read_node(ctx, kube, hold.node, abortable=False)
    except KubeError as exc:
        ctx.note(f"{hold.node} could not be read from the cluster ({exc}): putting the paused labels back blindly",
                 "warning")
        now = None
    current = dict(now.labels) if now is not None else None
    fresh = now  # the read the next label write is decided on (None: read again first)
    for key, before in hold.labels.items():
        if current is not None and current.get(key) != PAUSED:
            continue  # not paused (never reached, or changed by someone since): left as it is
        if current is None and not blind and key not in hold.paused:
            continue
        words = f"{key}={before if before is not None else '(unset)'}"
        if current is None:  # the node could not be read: put back blindly, unconditioned
            if await put(SetOperandLabel(hold.node, key, before, PAUSED, kubectl, conditioned=False), f"label {key}"):
                done.append(words)
            continue
        result: str | None
        said: str | None
        try:
            result, said = await conditional_label(ctx, kube, hold.node, key, before, _paused, fresh, abortable=False)
        except KubeError as exc:
            failed.append(f"label {key} ({exc})")
            result = said = None
        fresh = None
        if result == WRITTEN:
            done.append(words)
        elif result == LEFT:
            ctx.note(f"{key} reads {said} now (set since it was paused): left as it is", "warning")
        elif result is not None:
            failed.append(f"label {key} ({said})")
    cordoned_now = now.cordoned if now is not None else (hold.cordoned or blind)
    ours = hold.cordoned or (blind and not hold.cordoned_before) or hold.inherited
    if not ours or not cordoned_now:
        return done, failed
    if passed and not failed:
        if not await put(Uncordon(hold.node, kubectl), f"the cordon of {hold.node}"):
            return done, failed
        done.append(f"{hold.node} uncordoned")
        if now is None or STOPPED_AT in dict(now.annotations):
            await put(Annotate(hold.node, None, kubectl), f"the annotation {STOPPED_AT}")
        return done, failed
    step = stopped_at or INTERRUPTED
    await put(Annotate(hold.node, step, kubectl), f"the annotation {STOPPED_AT}={step}")
    done.append(f"{hold.node} stays cordoned in Kubernetes ({STOPPED_AT}={step}): {uncordon_words(hold.node)}")
    return done, failed


def left_in_cluster(hold: KubeHold, done: Sequence[str], failed: Sequence[str]) -> list[str]:
    """What stays cordoned or paused in the cluster after the run's settle, each with the command that lifts it:
    a cordon someone else made before the repair (never this run's to lift), this run's cordon kept (a failure,
    an abort) or not lifted (its uncordon failed), an operand label the restore could not put back."""
    node = hold.node
    out = []
    if hold.cordoned_before and not hold.inherited:
        out.append(f"{node} stays cordoned in Kubernetes (cordoned before the repair, not by nvls-tui): "
                   f"`kubectl uncordon {node}` once whoever cordoned it agrees")
    out += [d for d in done if " stays cordoned" in d]
    if any(f.startswith(f"the cordon of {node} ") for f in failed):
        out.append(f"{node} stays cordoned in Kubernetes (the repair's uncordon failed): `kubectl uncordon {node}`")
    for entry in failed:
        key = entry.removeprefix("label ").split(" (", 1)[0] if entry.startswith("label ") else None
        if key is None or key not in hold.labels:
            continue
        before = hold.labels[key]
        lift = f"kubectl label node {node} --overwrite {key}={before}" if before is not None \
            else f"kubectl label node {node} {key}-"
        out.append(f"{node}'s GPU Operator label {key} may still read {PAUSED} (the restore could not put it back): "
                   f"`{lift}`")
    return out


#: Bytes of a crashed run's audit log read to find the step it was in.
LOG_READ_LIMIT = 8 * 1024 * 1024


def step_in_log(path: str | None, host: str) -> str | None:
    """The last step a run's audit log shows ``host`` starting (the step a crashed run was in), or None.

    The log is the operator's machine's own JSON lines, read as the events they serialize; a line that is not
    JSON, a record that does not decode into its event, or a log that cannot be read, says nothing (the
    annotation then reads :data:`INTERRUPTED`).
    """
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read(LOG_READ_LIMIT)
    except OSError:
        return None
    step = None
    for raw in data.splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if record_problem(record) is not None:
            continue
        event = read_entry(record).event
        if isinstance(event, StepStarted) and event.host == host and event.step and event.step != "restore":
            step = event.step
    return step if step in STEP_NAMES else None


# ---- the dry run -----------------------------------------------------------------------------------------

def plan_lines(kube: Kubectl, hold: KubeHold, state: NodeState, wait_pods: float,
               operand_timeout: float) -> dict[str, list[InCluster | str]]:
    """What a repair of ``state`` does in the cluster, step by step, in order: each change as the value the run
    hands to the door (the dry run hands it to the recording performer), each read and wait as its line.
    ``preflight`` (the reads), ``cordon`` (after the record is written), ``quiesce`` (before the node's own
    clients), the driver pod's restart where it is the reset, and ``restore`` (after the units)."""
    def line(args: Sequence[str], note: str = "") -> str:
        text = shlex.join(kube.argv(*args))
        return f"{text}  # {note}" if note else text

    node, kubectl = hold.node, prefix(kube)
    ids = [shlex.join(kube_identity.read_argv(path)) for _, path, _ in kube_identity.IDS]
    pre: list[InCluster | str] = [
        line(read_node_args(node)),
        *(f"{c}  # compared with the Node's {name} before any change to the cluster"
          + (f": at planning, {hold.identity}" if hold.identity and i == len(ids) - 1 else "")
          for i, (c, (name, _, _)) in enumerate(zip(ids, kube_identity.IDS, strict=True))),
        line(read_pods_args(node))]
    cordon: list[InCluster | str]
    if hold.cordoned_before:
        cordon = [f"# {node} is cordoned already: it is left so" + (" until a repair passes" if hold.inherited else "")]
    else:
        cordon = [Cordon(node, kubectl)]
    read = line(read_node_args(node), "before each label write: the write is conditioned on the resourceVersion "
                                      f"this read finds ({READ_AT_RUN_TIME})")
    quiesce: list[InCluster | str] = [
        entry for key, before in hold.labels.items()
        for entry in (read, SetOperandLabel(node, key, PAUSED, before, kubectl))]
    quiesce += [f"# {key}={value} left as it is (not true: an administrator's)" for key, value in hold.kept.items()]
    pods = operand_pods(hold.pods, list(hold.labels))
    for namespace in dict.fromkeys(p.namespace for p in pods):
        names = [p.name for p in pods if p.namespace == namespace]
        quiesce.append(line(wait_delete_args(namespace, names, operand_timeout), "the operands' pods go"))
    workloads = workload_pods(hold.pods, state)
    remark = f"a disruption budget's refusal is retried for {wait_pods:.0f} s, then the repair is refused"
    quiesce += [EvictPod(pod.namespace, pod.name, kubectl, remark=remark) for pod in workloads]
    for namespace in dict.fromkeys(p.namespace for p in workloads):
        names = [p.name for p in workloads if p.namespace == namespace]
        quiesce.append(line(wait_delete_args(namespace, names, operand_timeout), "the evicted pods go"))
    lines: dict[str, list[InCluster | str]] = {"preflight": pre, "cordon": cordon, "quiesce": quiesce}
    driver = driver_pod(hold, state)
    if driver is not None:
        lines["verify-no-holders"] = [f"# the driver pod {driver.name}'s own processes (Fabric Manager) are left: "
                                      f"its restart is the reset"]
        lines["reset"] = [DeleteDriverPod(driver.namespace, driver.name, kubectl),
                          line(wait_delete_args(driver.namespace, [driver.name], operand_timeout)),
                          line(read_pods_args(node), "repeated until a new driver pod runs")]
        lines["fabric-manager"] = ["# no host unit: the new driver pod starts Fabric Manager"]
    restore: list[InCluster | str] = [line(read_node_args(node))]
    for i, (key, before) in enumerate(hold.labels.items()):
        restore += [read] if i else []
        restore.append(SetOperandLabel(node, key, before, PAUSED, kubectl))
    if not hold.cordoned_before or hold.inherited:
        restore.append(Uncordon(node, kubectl))
        if hold.annotated:
            restore.append(Annotate(node, None, kubectl))
        stays = Annotate(node, "STEP", kubectl)
        restore.append(f"# instead, after a failed or interrupted repair: {stays.lines[0]}  (the node stays cordoned)")
    return lines | {"restore": restore}


__all__ = ["CONFLICT", "CONFLICT_TRIES", "EVICTION_FILE", "EVICT_RETRY", "LEFT", "WRITTEN", "conditional_label",
           "INTERRUPTED", "PAUSED", "PAUSE_OPERANDS", "STOPPED_AT", "KubeHold", "call", "make", "prefix",
           "cordon", "left_in_cluster", "driver_pod", "restart_driver_pod", "evict_workloads", "eviction_body",
           "operand_of",
           "operand_pods", "pause_operands", "pause_plan", "plan_lines", "read_node", "read_node_args", "read_pods",
           "read_pods_args", "settle", "step_in_log", "survey", "uncordon_words", "wait_delete_args",
           "workload_pods"]
