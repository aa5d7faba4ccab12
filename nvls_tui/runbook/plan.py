"""The dry run: every command a repair would run on a node, in order, from its current state.

Only the read-only poll (``backend.snapshot()``) touches the node. The changes are the values the
run's steps hand to the door (``quiesce_actions``, ``restore_actions``, :mod:`nvls_tui.runbook.changes`), handed
to it here with a recording performer (``ctx.performed`` lists them), so the plan shows what a real run would
do, not a description of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nvls_tui.backends.base import BackendError
from nvls_tui.diagnosis import fm_container
from nvls_tui.kube.client import Kubectl
from nvls_tui.model import NodeState
from nvls_tui.poll.probe import DEVICE_LIST_ARGV, QUERY_FIELDS, RECORD_FILE
from nvls_tui.runbook import preflight
from nvls_tui.runbook.changes import (
    Change,
    PlanEntry,
    Read,
    ReleaseLock,
    ResetGpus,
    RunSmoke,
    TakeLock,
    WriteOwner,
    read_owner,
    record_remove,
    record_write,
    smoke_write,
    start_fabric_manager,
)
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
from nvls_tui.runbook.outcome import PLANNED, REFUSED, STEP_PLANNED, NodeOutcome
from nvls_tui.runbook.quiesce import WATCH_PS, quiesce_actions
from nvls_tui.runbook.restore import restore_actions, startable
from nvls_tui.runbook.steps import (
    DATE_ARGV,
    FM_UNIT,
    KERNEL_CURSOR_ARGV,
    KUBELET,
    SMOKE_CLOCK_ARGVS,
    STEPS,
    is_running,
    kernel_after_argv,
    kernel_cursor_check_argv,
    persistence_modes,
    threshold_for,
    unit_states,
)
from nvls_tui.runbook.summary import summarize

# The kernel journal's cursor preflight reads at T0 (known only when the repair runs).
CURSOR = "<CURSOR>"
# The message of each step of a refused plan (its status stays ``skipped``; it lists no command).
NOT_RUN = "not run: the repair is refused at preflight"


def prior_units(state: NodeState, restore_also: Mapping[str, str] | None = None) -> dict[str, str]:
    """The units' states a restore goes back to: as read, with units stopped by hand as they were before."""
    # Only units a restore may start: the others (unattended-upgrades' unit, a running apt-daily.service)
    # are never stopped by a repair, so there is nothing of theirs to put back.
    units = {u: a for u, a in unit_states(state).items() if startable(u, tuple(restore_also or ()))}
    for unit, before in (restore_also or {}).items():
        if is_running(before) and not is_running(units.get(unit)):
            units[unit] = before
    return units


# The reset step's notes of what the reset commits besides (views.plan_summary lifts them into the summary).
SIDE_EFFECT = "# the reset "


def reset_side_effects(state: NodeState) -> list[str]:
    """What ``nvidia-smi -r`` commits besides the reset, each as the rest of "the reset ...".

    A pending MIG mode change takes effect at the reset (nvidia-smi's ``mig.mode.pending``). Where the
    poll could not read a GPU's MIG mode (N/A, or not asked), whether it does is unknown, and said so.
    """
    notes = [f"will commit GPU {g.index}'s pending MIG mode change ({g.mig_current} -> {g.mig_pending})"
             for g in state.gpus if g.mig_change_pending]
    unread = [g.index for g in state.gpus if g.mig_current is None or g.mig_pending is None]
    if unread:
        which = f"GPU {unread[0]}" if len(unread) == 1 else f"GPUs {','.join(map(str, unread))}"
        notes.append(f"may commit a pending MIG mode change: the MIG mode of {which} could not be read (N/A)")
    return notes


# How a run takes its lock (preflight's first changes; the Slurm drain follows them).
LOCK_TAKEN: tuple[Change, ...] = (TakeLock(), WriteOwner())


# One entry of a plan's step: a change the run makes (through the door: the cluster's and the lock's too), a read
# it shows, a wait it makes, a remark (changes.PlanEntry), or a line the plan says as it is.
Entry = PlanEntry | str


def _line(entry: Entry) -> list[str]:
    return [entry] if isinstance(entry, str) else list(entry.lines)


def plan_entries(state: NodeState, *, smoke_threshold: float | None = None,
                 thresholds: dict[str, float] | None = None,
                 restore_also: Mapping[str, str] | None = None,
                 kube_lines: Mapping[str, Sequence[Entry]] | None = None,
                 listing: str | None = None) -> dict[str, list[Entry]]:
    """``{step: [entry, ...]}`` for a repair of ``state``, every step of contract.md in order.

    The changes are the values the run's steps hand to the door (:mod:`nvls_tui.runbook.changes`), in the order
    it hands them; see :func:`plan_commands` for the words. ``listing``: every process, read as quiesce reads it
    (:func:`~nvls_tui.runbook.quiesce.quiesce_actions`).
    """
    n = len(state.gpus) or 8
    # The clock's reads are the repair's own bookkeeping (the boot's read is not: it says whether the node rebooted).
    smoke: list[Entry] = [RunSmoke(n), *(Read(a, bookkeeping=a[0] == "date") for a in SMOKE_CLOCK_ARGVS),
                          smoke_write()]
    pre: list[Entry] = [*LOCK_TAKEN, Read(DATE_ARGV, bookkeeping=True), Read(KERNEL_CURSOR_ARGV, bookkeeping=True)]
    if preflight.fabric_looks_healthy(state):
        pre += smoke  # the transient re-check; a pass ends the run here with nothing reset
    kube = kube_lines or {}
    pre += kube.get("preflight", [])
    pre.append(record_write())
    pre += kube.get("cordon", [])
    prior = prior_units(state, restore_also)
    prior_pm = persistence_modes(state)
    stopped = {u: "inactive" for u in prior}
    stopped[FM_UNIT] = "active"  # the fabric-manager step started it
    if kube_lines is not None and KUBELET in stopped:
        stopped[KUBELET] = prior[KUBELET]  # not stopped on this path: nothing to start
    restore: list[Entry] = list(restore_actions(prior, prior_pm, stopped, {}, tuple(restore_also or ())))
    # The record and the lock go only while they are still this run's: each is read first.
    restore += kube.get("restore", [])
    restore += [Read(("cat", RECORD_FILE), bookkeeping=True), record_remove(), read_owner(), ReleaseLock()]
    # fuser names only the files the listing finds (quiesce.present_fuser_argv): which of them a node has is
    # known only when the step runs, so the dry run shows the listing and says what fuser is given.
    fuser_lines: list[Entry] = [Read(DEVICE_LIST_ARGV), "fuser -v FILE...   # each file the find lists, none other"]
    until = "repeated until active and every GPU Completed/Success"
    fm_wait = [Read(("systemctl", "is-active", FM_UNIT), note=until),
               Read(("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv"), note=until)]
    fm_step: list[Entry] = [*fuser_lines, *start_fabric_manager(FM_UNIT), *fm_wait]
    # What the reset does besides: said in its step before the operator confirms (and lifted into the summary).
    reset_step: list[Entry] = [ResetGpus(), *(f"{SIDE_EFFECT}{note}" for note in reset_side_effects(state))]
    if fm_container.in_container(state) and "reset" in kube:
        # On a configured cluster that lists the driver pod: the pod's restart is the reset and FM's start.
        reset_step, fm_step = list(kube["reset"]), [*kube["fabric-manager"], *fm_step[-1:]]
    elif fm_container.in_container(state):
        # No host unit to start, and FM keeps the NVSwitches open from its pod: the reset and the FM start
        # would fail, or loop. The plan shows the move that works instead (preflight refuses the rest).
        pod_move = f"{fm_container.restart_pod_command(state)}   # with kubectl: FM restarts with the driver pod"
        reset_step = ["# not run: Fabric Manager runs in the GPU Operator's driver pod; the pod's restart reloads "
                      "the driver"]
        fm_step = [f"# not run: no host {FM_UNIT} unit to start; instead: {pod_move}"]
    threshold = threshold_for(state.gpus, thresholds or {}, smoke_threshold)
    return {
        "preflight": pre,
        "quiesce": [*kube.get("quiesce", []), *quiesce_actions(state, stop_kubelet=kube_lines is None,
                                                                       listing=listing)],
        "verify-no-holders": [*fuser_lines, *kube.get("verify-no-holders", [])],
        "reset": reset_step,
        "fabric-manager": fm_step,
        # The fallbacks (no cursor at T0, or one the journal no longer holds: `journalctl -k --since T0`) are
        # the step's own to say; the plan shows the read a repair makes.
        "verify-fabric": [Read(kernel_cursor_check_argv(CURSOR)), Read(kernel_after_argv(CURSOR))],
        "smoke-test": [*smoke, f"# pass: completed, 0 out of bounds, NVLS used, avg busbw >= {threshold:.0f} GB/s"],
        "restore": restore,
    }


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
                               kube_lines=kube_lines, listing=await _watch_listing(ctx))
        if scheduler_node is not None:  # the scheduler's drain and resume, run on the bastion
            from nvls_tui.runbook import scheduling

            bastion = scheduling.plan_entries(scheduler_node, run_id, ctx.options.keep_drained)
            # The run drains right after it takes the lock (the node's lock proven before the bastion's command).
            taken = len(LOCK_TAKEN)
            entries["preflight"] = [*entries["preflight"][:taken], *bastion[:2], *entries["preflight"][taken:]]
            entries["restore"] = [*entries["restore"], *bastion[2:]]
        await _record(ctx, entries)
        fill_steps(outcome, entries)
        for name in STEPS:
            step = outcome.step(name)
            ctx.emit(StepFinished(host=ctx.host, step=name, status=STEP_PLANNED, commands=tuple(step.commands)))
        outcome.result = PLANNED
        outcome.message = "dry run: nothing was changed"
        if preflight.fabric_looks_healthy(state):  # the plan's preflight smoke-tests it first
            outcome.message += ("; the node looks healthy: a repair runs the NVLS smoke test first and, if it "
                                "passes, the node is skipped (nothing is reset)")
    ctx.emit(RunFinished(host=ctx.host, result=outcome.result, message=outcome.message))
    return outcome


__all__ = ["LOCK_TAKEN", "Entry", "fill_steps", "plan_commands", "plan_entries", "plan_node", "prior_units"]
