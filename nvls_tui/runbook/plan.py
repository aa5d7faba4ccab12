"""The dry run: every command a repair would run on a node, in order, from its current state.

Only the read-only poll (``backend.snapshot()``) touches the node. The steps' entries are the run's own
program (:mod:`nvls_tui.runbook.program`: the same values the run's steps hand to the door, built in one place),
handed to the door here with a recording performer (``ctx.performed`` lists them), so the plan shows what a real
run would do, not a description of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nvls_tui.backends.base import BackendError
from nvls_tui.diagnosis import fm_container
from nvls_tui.kube.client import Kubectl
from nvls_tui.model import NodeState
from nvls_tui.runbook import preflight
from nvls_tui.runbook.changes import Change
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.door import Recording, perform
from nvls_tui.runbook.drift import plan_basis
from nvls_tui.runbook.events import (
    ManualChanges,
    NodeObserved,
    RunFinished,
    RunStarted,
    StepFinished,
)
from nvls_tui.runbook.ledger import ManualChange, put_back
from nvls_tui.runbook.lock import TAKING
from nvls_tui.runbook.outcome import PLANNED, REFUSED, STEP_PLANNED, NodeOutcome
from nvls_tui.runbook.program import SIDE_EFFECT, Known, Plain, flat, lines_of, prior_units, program, reset_side_effects
from nvls_tui.runbook.quiesce import WATCH_PS
from nvls_tui.runbook.steps import STEPS
from nvls_tui.runbook.summary import summarize

# The message of each step of a refused plan (its status stays ``skipped``; it lists no command).
NOT_RUN = "not run: the repair is refused at preflight"

# How a run takes its lock (preflight's first changes; the Slurm drain follows them).
LOCK_TAKEN: tuple[Change, ...] = TAKING

# One entry of a plan's step: a change the run makes (through the door: the cluster's and the lock's too), a read
# it shows, or a line the plan says as it is (the cluster's reads and waits, a decision's words, a note after ``#``).
Entry = Plain


def _line(entry: Entry) -> list[str]:
    return list(lines_of(entry))


def plan_entries(state: NodeState, *, smoke_threshold: float | None = None,
                 thresholds: dict[str, float] | None = None,
                 restore_also: Mapping[str, str] | None = None,
                 kube_lines: Mapping[str, Sequence[Entry]] | None = None,
                 listing: str | None = None, scheduler_node: str | None = None, run_id: str = "",
                 keep_drained: bool = False, recheck: bool = True) -> dict[str, list[Entry]]:
    """``{step: [entry, ...]}`` for a repair of ``state``, every step of contract.md in order.

    The run's own program (:func:`nvls_tui.runbook.program.program`), each decision point's changes and reads in
    its place and its words after them: the changes are the values the run's steps hand to the door, in the order
    it hands them; see :func:`plan_commands` for the words. ``listing``: every process, read as quiesce reads it
    (:func:`~nvls_tui.runbook.quiesce.quiesce_actions`). ``scheduler_node``: the scheduler's name of the node (its
    drain, named by ``run_id``, and its resume unless ``keep_drained``). ``recheck``: a healthy-looking node is
    smoke-tested first (``RepairOptions.recheck_transient``).
    """
    known = Known(smoke_threshold=smoke_threshold, thresholds=thresholds or {}, restore_also=restore_also or {},
                  kube=kube_lines, driver_pod=kube_lines is not None and "reset" in kube_lines, listing=listing,
                  scheduler_node=scheduler_node, run_id=run_id, keep_drained=keep_drained, recheck=recheck)
    return {name: list(flat(entries)) for name, entries in program(state, known).items()}


def plan_commands(state: NodeState, *, smoke_threshold: float | None = None,
                  thresholds: dict[str, float] | None = None,
                  restore_also: Mapping[str, str] | None = None,
                  kube_lines: Mapping[str, Sequence[Entry]] | None = None) -> dict[str, list[str]]:
    """``{step: [command line, ...]}`` for a repair of ``state``, every step of contract.md in order.

    ``restore_also`` names units the operator stopped by hand (``{unit: state before}``): the
    restore starts them again too. ``kube_lines`` (:func:`~nvls_tui.runbook.kube_plan.cluster_entries`: the
    cluster's changes, reads, waits and remarks as values): the node is repaired through the Kubernetes API, and
    kubelet is not stopped.
    """
    entries = plan_entries(state, smoke_threshold=smoke_threshold, thresholds=thresholds,
                           restore_also=restore_also, kube_lines=kube_lines)
    return {step: [line for entry in listed for line in _line(entry)] for step, listed in entries.items()}


def fill_steps(outcome: NodeOutcome, entries: Mapping[str, Sequence[Entry]]) -> NodeOutcome:
    """Put a plan's entries into its outcome's steps, every step planned: the values (``entries``, which its
    readers read) and their lines (``commands``, the JSON's and the screen's words, rendered here once)."""
    for name, listed in entries.items():
        step = outcome.step(name)
        step.status = STEP_PLANNED
        step.entries = list(listed)
        step.commands = [line for entry in listed for line in _line(entry)]
    return outcome


async def _kube_plan(ctx: NodeContext, state: NodeState,
                     kube: Kubectl) -> tuple[str | None, Mapping[str, Sequence[Entry]] | None]:
    """(why a repair would be refused, the cluster's entries of each step: changes, reads, waits, remarks) from a
    read of the cluster now.

    The reads are the repair's own (audited like any command); a node the cluster lacks is refused while kubelet
    runs (kube_absent: unless ``stop_kubelet``), else repaired as without a cluster (no lines); a cluster that
    cannot be read, or a Node that is not this machine, refuses.
    """
    from nvls_tui.runbook import kube_repair
    from nvls_tui.runbook.context import Refused

    ctx.step = "preflight"
    try:
        hold = await kube_repair.survey(ctx, kube, kube.node_name(ctx.host))
    except Refused as exc:
        return str(exc), None
    finally:
        ctx.step = ""
    if hold is None:
        from nvls_tui.runbook.kube_absent import absent

        return absent(ctx, kube, state, stop_kubelet=ctx.options.stop_kubelet), None
    if fm_container.in_container(state) and kube_repair.driver_pod(hold, state) is None:
        return f"{fm_container.refusal(state)}; the cluster lists no such pod on {hold.node}", None
    return None, kube_repair.cluster_entries(kube, hold, state, wait_pods=ctx.options.wait_pods,
                                             operand_timeout=ctx.options.operand_timeout)


async def _watch_listing(ctx: NodeContext) -> str | None:
    """Every process, as quiesce reads it to find the watch loops (a read: the plan then names the loops the run
    signals); None when it could not be read (the plan then names them from the snapshot, as far as it shows them)."""
    ctx.step = "quiesce"
    try:
        listed = await ctx.run(WATCH_PS)
    except BackendError:
        return None
    finally:
        ctx.step = ""
    return listed.stdout if listed.ok else None


async def _record(ctx: NodeContext, entries: Mapping[str, Sequence[Entry]]) -> None:
    """Hand every change of the plan to the door with the dry run's recording performer: kept, in order, in
    ``ctx.performed`` (what a run of the same node hands to the door, sent), never sent."""
    sending, ctx.performer = ctx.performer, Recording()
    try:
        for name in STEPS:
            ctx.step = name
            for entry in entries[name]:
                if isinstance(entry, Change):
                    await perform(ctx, entry)
    finally:
        ctx.performer, ctx.step = sending, ""


async def plan_node(ctx: NodeContext, run_id: str, *, manual: Sequence[ManualChange] = (),
                    put_back_manual: bool = True, scheduler_node: str | None = None,
                    kube: Kubectl | None = None) -> NodeOutcome:
    """Read the node once and fill ``ctx.outcome`` with the plan (result planned, or refused and why).

    The outcome keeps the plan's ``basis`` (what the node looked like), which a repair approved from
    this plan holds the node to, and lists ``manual`` changes made by hand before it.
    """
    outcome = ctx.outcome
    outcome.dry_run = True
    for name in STEPS:  # in contract order, whichever step a read of the plan is audited under
        outcome.step(name)
    ctx.emit(RunStarted(host=ctx.host, run_id=run_id, dry_run=True))
    state = await ctx.read_node()  # under the poll's deadline: a read that never answers refuses, naming where
    ctx.emit(NodeObserved(host=ctx.host, label="before", summary=summarize(state)))
    if state.reachable:
        outcome.basis = plan_basis(state)
    restore_also = put_back(manual) if put_back_manual else {}
    if manual:
        outcome.manual = [c.describe() for c in manual]
        ctx.emit(ManualChanges(host=ctx.host, changes=tuple(c.to_dict() for c in manual), put_back=put_back_manual))
    kube_refusal, kube_lines = await _kube_plan(ctx, state, kube) if kube is not None and state.reachable else (None, None)
    fm_pod = kube_lines is not None and "reset" in kube_lines
    reason = (preflight.refusal(state, fm_pod=fm_pod) or preflight.record_refusal(state) or kube_refusal
              or preflight.escalation(state))
    if reason:
        # A refused node gets no plan: listing its steps as "planned" (a smoke test of the GPUs it has, a
        # duration, a healthy-looking re-check) before the refusal read as a repair about to run.
        outcome.result = REFUSED
        outcome.message = f"a repair would stop at preflight: {reason}"
        for name in STEPS:
            outcome.step(name).message = NOT_RUN
        outcome.step("preflight").message = reason
    else:
        entries = plan_entries(state, smoke_threshold=ctx.options.smoke_threshold,
                               thresholds=dict(ctx.options.thresholds), restore_also=restore_also,
                               kube_lines=kube_lines, listing=await _watch_listing(ctx),
                               scheduler_node=scheduler_node, run_id=run_id, keep_drained=ctx.options.keep_drained,
                               recheck=ctx.options.recheck_transient)
        await _record(ctx, entries)
        fill_steps(outcome, entries)
        for name in STEPS:
            step = outcome.step(name)
            ctx.emit(StepFinished(host=ctx.host, step=name, status=STEP_PLANNED, commands=tuple(step.commands)))
        outcome.result = PLANNED
        outcome.message = "dry run: nothing was changed"
        if ctx.options.recheck_transient and preflight.fabric_looks_healthy(state):  # smoke-tested first
            outcome.message += ("; the node looks healthy: a repair runs the NVLS smoke test first and, if it "
                                "passes, the node is skipped (nothing is reset)")
    ctx.emit(RunFinished(host=ctx.host, result=outcome.result, message=outcome.message))
    return outcome


__all__ = ["LOCK_TAKEN", "SIDE_EFFECT", "Entry", "fill_steps", "plan_commands", "plan_entries", "plan_node",
           "prior_units", "reset_side_effects"]
