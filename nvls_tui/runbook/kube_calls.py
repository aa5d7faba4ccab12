"""The repair's calls to the Kubernetes API: each audited (:func:`call` for a read or a wait, :func:`make` for a
change, through the door), the argv of each read and wait, the node and its pods read, and a label written only
on the node it was decided on (:func:`conditional_label`: a read, or the API's answer to the write before).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.model.kube import KubeNode, KubePod
from nvls_tui.parsers.kube import parse_node, parse_nodes, parse_pods
from nvls_tui.runbook.changes import PAUSED, InCluster, SetOperandLabel
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.events import CommandFinished, CommandStarted
from nvls_tui.textsafe import one_line

#: kubectl's words for a write the API refused because the object changed since the resourceVersion sent.
CONFLICT = "(Conflict)"
#: Times one label write that met a conflict is read and decided again before the repair gives up on it.
CONFLICT_TRIES = 5


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
    runner = timed(kube, timeout)
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
    status, printed, _ = await answered(ctx, kube, change, abortable=abortable)
    return status, printed


async def answered(ctx: NodeContext, kube: Kubectl, change: InCluster, *,
                   abortable: bool = True) -> tuple[int, str, str]:
    """:func:`make`, and kubectl's stdout whole besides (the object a write printed: the audit log keeps the
    first 64 KiB of stdout and stderr, a Node with its images can be longer); the dry run's is empty.

    Raises:
        Aborted, KubeError: as :func:`make`.
    """
    if abortable:
        ctx.check_abort()
    stdout = ""

    async def via(argv: Sequence[str]) -> tuple[int, str]:
        nonlocal stdout
        ctx.record_command(tuple(argv))
        status, out, err = await kube.run_status(*argv[len(change.kubectl):])
        stdout = out
        return status, (out + err)[:65536]

    result = await perform(ctx, change, via=via)
    return result.exit_status, result.stdout, stdout


def timed(kube: Kubectl, timeout: float | None) -> Kubectl:
    """The kubectl one call runs with: ``kube``, or with its own ``timeout`` (a wait's: its request must outlast
    the wait's own ``--timeout``); its argv is what the call sends and what the plan shows."""
    return kube if timeout is None else dataclasses.replace(kube, timeout=timeout)


def prefix(kube: Kubectl) -> tuple[str, ...]:
    """The argv that reaches the cluster (kubectl and its global flags): every cluster change starts with it."""
    return tuple(kube.argv())


def kubectl_said(status: int, out: str, err: str = "") -> str:
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
        raise KubeError(f"`kubectl get nodes` failed: {kubectl_said(status, out, err)}")
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
        raise KubeError(f"`kubectl get pods` failed: {kubectl_said(status, out, err)}")
    parsed = parse_pods(out)
    if parsed.warnings:
        raise KubeError(parsed.warnings[0])
    return tuple(p for p in parsed.value if p.node in (None, node))


WRITTEN, LEFT = "written", "left"


def node_after(printed: str, name: str, sent: str | None) -> KubeNode | None:
    """The node as the API answered a conditioned write (``-o json``), the next decision's read; None where the
    answer is not this node read whole, or carries the resourceVersion the write was conditioned on (a kubectl
    that prints what it sent, not what the server stored: the node is then read again)."""
    parsed = parse_node(printed)
    node = parsed.value
    if parsed.warnings or node is None or node.node != name or not node.resource_version:
        return None
    return node if node.resource_version != sent else None


async def conditional_label(ctx: NodeContext, kube: Kubectl, name: str, key: str, value: str | None,
                            still: Callable[[str | None], bool], node: KubeNode | None = None, *,
                            abortable: bool = True) -> tuple[str, str | None, KubeNode | None]:
    """Decide on ``node`` (read now where None: the first write of a step, or after a 409) what ``still(the
    label's value)`` says, and write ``key`` conditioned on that node's resourceVersion; where someone wrote the
    node in between (409 Conflict), read and decide again. Never a write over a change the decision did not see.

    The write prints the API's answer (the node after it, :func:`node_after`): the next label's decision is made
    on it, conditioned on its resourceVersion as on a read, with no read in between.

    Returns:
        (:data:`WRITTEN`, None, the node the API answered with); (:data:`LEFT`, the value read: the label no
        longer reads as decided, so it is left as someone set it, the node it was decided on);
        (``failed``, kubectl's words or why, None). The node returned is the next decision's (None: read again).

    Raises:
        KubeError: kubectl could not be run or did not answer (a write may have gone through).
    """
    for _ in range(CONFLICT_TRIES):
        if node is None:
            node = await read_node(ctx, kube, name, abortable=abortable)
            if node is None:
                return "failed", f"the cluster has no node {name} any more", None
        current = node.label(key)
        if not still(current):
            return LEFT, current, node
        change = SetOperandLabel(name, key, value, current, prefix(kube), resource_version=node.resource_version)
        status, printed, stdout = await answered(ctx, kube, change, abortable=abortable)
        if status == 0:
            return WRITTEN, None, node_after(stdout, name, node.resource_version)
        said = kubectl_said(status, printed)
        if CONFLICT not in said:
            return "failed", said, None
        node = None  # written by someone since the read: read again, decide again
    return "failed", f"the node changed under every one of {CONFLICT_TRIES} writes (409 Conflict each time)", None


def pausable(value: str | None) -> bool:
    return value is None or value == "true"


def reads_paused(value: str | None) -> bool:
    return value == PAUSED


__all__ = ["CONFLICT", "CONFLICT_TRIES", "LEFT", "WRITTEN", "answered", "call", "conditional_label", "kubectl_said",
           "make", "node_after",
           "pausable", "prefix", "read_node", "read_node_args", "read_pods", "read_pods_args", "reads_paused",
           "timed", "wait_delete_args"]
