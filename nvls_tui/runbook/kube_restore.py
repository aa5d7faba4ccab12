"""The cluster put back after a Kubernetes repair (:func:`settle`: the paused labels back, this repair's cordon
lifted after a pass or kept with the step named), what it leaves there with the command that lifts it, and the
step a crashed run was in, read back from its audit log (for the annotation of the cordon a restore keeps).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.model.kube import KubeNode
from nvls_tui.runbook.changes import PAUSED, STOPPED_AT, Annotate, InCluster, SetOperandLabel, Uncordon
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.event_records import record_problem
from nvls_tui.runbook.events import StepStarted
from nvls_tui.runbook.kube_calls import (
    LEFT,
    WRITTEN,
    conditional_label,
    kubectl_said,
    make,
    prefix,
    read_node,
    reads_paused,
)
from nvls_tui.runbook.kube_hold import KubeHold
from nvls_tui.runbook.log_entries import read_entry
from nvls_tui.runbook.steps import STEPS as STEP_NAMES

#: The step named after a crash, where the run could not say how far it got.
INTERRUPTED = "interrupted"


def uncordon_words(node: str) -> str:
    """How the operator lifts a cordon nvls-tui kept."""
    return (f"once the node is repaired, `kubectl uncordon {node}` and `kubectl annotate node {node} {STOPPED_AT}-` "
            f"(or run the repair again: a passing one uncordons it)")


async def settle(ctx: NodeContext, kube: Kubectl, hold: KubeHold, *, passed: bool, stopped_at: str | None,
                 blind: bool = False, read: KubeNode | None = None) -> tuple[list[str], list[str]]:
    """Put the paused labels back, then lift this repair's cordon after a pass, or keep it with the step named.

    Only labels that still read :data:`PAUSED` are put back (an administrator's change meanwhile is kept); where
    the node cannot be read, the labels this run set (``blind``: every label of the record) are put back anyway.
    Never abortable: the restore runs after an abort too.

    Args:
        passed: the smoke test passed (the only case a cordon comes off).
        stopped_at: the step the repair stopped at (for the annotation); None after a pass.
        blind: a restore from the record: the labels the run set are not known, only those it meant to.
        read: the node as the caller read it just now (``repair --restore``'s proof that it is this machine): the
            first label is decided on it (each write is held to its resourceVersion); None: read here.

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
            failed.append(f"{what} ({kubectl_said(status, printed)})")
        return status == 0

    kubectl = prefix(kube)

    now = read
    try:
        if now is None:
            now = await read_node(ctx, kube, hold.node, abortable=False)
    except KubeError as exc:
        ctx.note(f"{hold.node} could not be read from the cluster ({exc}): putting the paused labels back blindly",
                 "warning")
    current = dict(now.labels) if now is not None else None
    fresh = now  # the node the next label write is decided on: this read, then each write's answer (None: read)
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
            result, said, fresh = await conditional_label(ctx, kube, hold.node, key, before, reads_paused, fresh,
                                                          abortable=False)
        except KubeError as exc:
            failed.append(f"label {key} ({exc})")
            result = said = fresh = None
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


__all__ = ["INTERRUPTED", "LOG_READ_LIMIT", "left_in_cluster", "settle", "step_in_log", "uncordon_words"]
