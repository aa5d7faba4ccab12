"""``restore``: put back exactly what was running before, on every exit path.

Used at the end of every run (success, failure, abort, cancellation, exception) and by
``repair --restore`` from the record an interrupted run left on the node. Each command is retried
a few times, because the most likely reason to be here after a failure is a link that dropped.
The record is removed only when everything came back and it is still the run's own; otherwise it
stays, so the next ``check`` still reports ``INTERRUPTED_REPAIR``. The lock is released whenever it
is still the run's own (a kept record alone marks the node; ``repair --restore`` takes the lock itself).

Only units a repair stops (``QUIESCE_UNITS``) and the units the record names as stopped by hand in
the console (``manual``) are ever started, and ``manual`` counts only for units the console's Units pane
can stop (``HAND_UNITS``): the record is a file on the node, and a unit such as ``poweroff.target``
written into it, in ``units`` or ``manual``, is reported, never started.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from nvls_tui.backends.base import (
    BackendError,
    CommandResult,
    InvalidArgument,
    validate_unit,
)
from nvls_tui.model import NodeState
from nvls_tui.parsers.restarters import APT_TIMERS
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook.changes import Change, SetPersistence, UnitChange, record_remove
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.describe import as_plain, restored_parts
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.events import Restored
from nvls_tui.runbook.lock import NodeLock
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.steps import (
    HAND_UNITS,
    QUIESCE_UNITS,
    RESTORE_UNITS,
    SNAPSHOT_SERVICE,
    SNAPSHOT_TIMER,
    is_running,
    persistence_modes,
    unit_states,
)
from nvls_tui.words import count

NOT_STOPPED_BY_A_REPAIR = "not a unit a repair stops: not started"
NOT_STOPPED_BY_HAND = "not a unit the console stops by hand: not started"


@dataclass
class RestoreReport:
    """What a restore did.

    Attributes:
        units: units started again.
        persistence_gpus: GPUs whose persistence mode was turned back on.
        failed: what could not be put back, one phrase each.
        record_removed: the on-node record is gone (everything is back).
    """

    units: list[str] = field(default_factory=list)
    persistence_gpus: list[int] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    record_removed: bool = False

    @property
    def ok(self) -> bool:
        """True when everything came back."""
        return not self.failed


def persistence_words(gpus: Collection[int]) -> str:
    """``persistence mode on 8 GPUs`` (``on GPU 3``): what the restore turned back on; "" for none."""
    if not gpus:
        return ""
    if len(gpus) == 1:
        return f"persistence mode on GPU {next(iter(gpus))}"
    return f"persistence mode on {count(len(gpus), 'GPU')}"


def restored_words(units: Collection[str], gpus: Collection[int] = (), nothing: str = "nothing") -> str:
    """What a restore put back: ``nvidia-dcgm.service, kubelet.service; persistence mode on 8 GPUs``.

    Persistence mode is named whenever the repair turned it off and the restore on again: it is as much
    a setting the operator expects back as a unit. ``nothing``: the words when neither came back.
    """
    parts = [", ".join(units)] if units else []
    if gpus:
        parts.append(persistence_words(gpus))
    return "; ".join(parts) or nothing


def restored_message(report: RestoreReport) -> str:
    """The restore step's own message where everything came back: the words its ``restored`` event says
    (:func:`nvls_tui.runbook.describe.restored_parts`), so the step's line and the event's never differ."""
    return as_plain(restored_parts(report.units, report.persistence_gpus))


def startable(unit: str, manual: Collection[str] = ()) -> bool:
    """True for a unit a restore may start: one a repair stops (apt's timers, held for it, included), or one the
    record names as stopped by hand that the console's Units pane can stop (the record is no allow-list)."""
    return unit in QUIESCE_UNITS or unit in APT_TIMERS or (unit in manual and unit in HAND_UNITS)


def not_restorable(prior_units: Mapping[str, str], manual: Collection[str] = ()) -> list[str]:
    """Units that ran before but are none a repair stops (nor stopped by hand): reported, never started."""
    return sorted(u for u, active in prior_units.items() if is_running(active) and not startable(u, manual))


def restore_actions(prior_units: Mapping[str, str], prior_pm: Mapping[int, str],
                    current_units: Mapping[str, str] | None,
                    current_pm: Mapping[int, str] | None,
                    manual: Collection[str] = ()) -> list[UnitChange | SetPersistence]:
    """The changes that bring ``prior`` back from ``current``, in order.

    With ``current`` unknown (the node could not be read), every unit that ran before is started:
    starting a running unit does nothing, so that is safe. Only :func:`startable` units are started.
    """
    actions: list[UnitChange | SetPersistence] = []
    order = list(RESTORE_UNITS) + sorted(u for u in prior_units if u not in RESTORE_UNITS)
    for unit in order:
        if not is_running(prior_units.get(unit)) or not startable(unit, manual):
            continue
        if unit == SNAPSHOT_SERVICE and is_running(prior_units.get(SNAPSHOT_TIMER)):
            # A oneshot its timer runs every few minutes (activating or inactive by the second): the timer, started
            # again, runs it; starting it here made the run's restore differ from a plan read a moment apart.
            continue
        now = None if current_units is None else current_units.get(unit)
        if current_units is not None and is_running(now):
            continue
        if now == "failed":
            actions.append(UnitChange("reset-failed", unit))
        actions.append(UnitChange("start", unit))
    enabled = sorted(i for i, mode in prior_pm.items() if mode == "Enabled")
    pending = [i for i in enabled if current_pm is None or current_pm.get(i) != "Enabled"]
    if pending and len(pending) == len(prior_pm):
        actions.append(SetPersistence(True))
    else:
        actions += [SetPersistence(True, i) for i in pending]
    return actions


async def _retrying(ctx: NodeContext, what: tuple[str, ...] | Change) -> CommandResult | None:
    """Read ``what`` or make the change (never abortable), retrying when the link drops; None if it never got
    through."""
    for attempt in range(max(ctx.options.restore_attempts, 1)):
        try:
            if isinstance(what, Change):
                return await perform(ctx, what, abortable=False)
            # A read of the record is the repair's own bookkeeping (the restore reads nothing else this way).
            return await ctx.run(what, privileged=True, abortable=False, bookkeeping=True)
        except BackendError as exc:
            words = " ".join(what.argvs()[0] if isinstance(what, Change) else what)
            ctx.note(f"`{words}` did not get through ({exc}); attempt {attempt + 1} of "
                     f"{ctx.options.restore_attempts}", "warning")
            await ctx.options.sleep(ctx.options.poll_interval)
    return None


async def _current(ctx: NodeContext) -> tuple[NodeState | None, str]:
    """A fresh read of the node (retried like the commands, each read under the poll's deadline), or None and
    why it could not be read (the last read's one-line reason: where it hung, say)."""
    why = "unreachable"
    for _ in range(max(ctx.options.restore_attempts, 1)):
        state = await ctx.read_node()
        if state.reachable:
            return state, ""
        why = state.error or why
        await ctx.options.sleep(ctx.options.poll_interval)
    return None, why


async def _remove_record(ctx: NodeContext, run_id: str) -> str | None:
    """Remove the on-node record if it is still ``run_id``'s. Returns what went wrong (None: all well)."""
    found = await _retrying(ctx, ("cat", RECORD_FILE))
    if found is None:
        return "the on-node record (the node could not be reached)"
    if not found.ok:
        if "No such file or directory" in found.output:
            return None  # already gone: nothing to remove
        return "the on-node record (it could not be read)"
    record = RepairRecord.from_json(found.stdout)
    if record is None or record.run_id != run_id:
        whose = f"run {record.run_id}'s" if record is not None else "not one nvls-tui can read"
        ctx.note(f"the record on {ctx.host} is {whose}, not this run's: left as it is", "warning")
        return None
    removed = await _retrying(ctx, record_remove())
    return None if removed is not None and removed.ok else "the on-node record"


# The restore's decision points, in the order it takes them (the run's program, runbook/program.py, names them
# with the changes each makes on a node like the one planned): the units and settings that differ now from before
# (the node read again first), the cluster's (labels, cordon), the record (read first: only the run's own goes, and
# only once everything is back), the lock (read first: only the run's own goes).
PUT_BACK, CLUSTER_BACK, RECORD_GONE, LOCK_GONE = "put-back", "cluster-back", "record-gone", "lock-gone"
ORDER = (PUT_BACK, CLUSTER_BACK, RECORD_GONE, LOCK_GONE)


async def restore(ctx: NodeContext, prior_units: Mapping[str, str], prior_pm: Mapping[int, str], *,
                  record_of: str | None, lock: NodeLock | None, manual: Collection[str] = (),
                  before_record: Callable[[], Awaitable[list[str]]] | None = None,
                  order: Sequence[str] = ORDER) -> RestoreReport:
    """Start what ran before and turn persistence mode back on; then drop the record and the lock.

    Args:
        prior_units: ``{unit: ActiveState}`` before the repair.
        prior_pm: ``{gpu: "Enabled"|"Disabled"}`` before the repair.
        record_of: the run id of the record to remove once all is back (None: no record was written).
        lock: this run's hold on the per-node lock (released if still its own), or None.
        manual: units the record names as stopped by hand (started again too).
        before_record: what else goes back once the units are back and before the record is removed (the
            cluster's labels and cordon: runbook/kube_repair.py); it returns what it could not put back.
        order: the decision points of :data:`ORDER`, as the run's program takes them.
    """
    report = RestoreReport()
    for point in order:
        if point == PUT_BACK:
            await _put_back(ctx, prior_units, prior_pm, manual, report)
        elif point == CLUSTER_BACK and before_record is not None:
            report.failed.extend(await before_record())
        elif point == RECORD_GONE and report.ok and record_of is not None:
            left = await _remove_record(ctx, record_of)
            report.record_removed = left is None
            if left:
                report.failed.append(left)
        elif point == LOCK_GONE and lock is not None:
            left = await lock.release(ctx.options.restore_attempts)
            if left:
                report.failed.append(left)
    ctx.emit(Restored(host=ctx.host, step=ctx.step, units=tuple(report.units),
                      persistence_gpus=tuple(report.persistence_gpus), failed=tuple(report.failed)))
    return report


async def _put_back(ctx: NodeContext, prior_units: Mapping[str, str], prior_pm: Mapping[int, str],
                    manual: Collection[str], report: RestoreReport) -> None:
    """The units and persistence modes that differ now from before, put back (:func:`restore_actions` of a fresh
    read; blindly, every one, where the node cannot be read)."""
    state, unread = await _current(ctx)
    current_units = unit_states(state) if state else None
    current_pm = persistence_modes(state) if state else None
    if state is None:
        ctx.note(f"the node cannot be read ({unread}): starting every unit that ran before, blindly", "warning")
    for unit in not_restorable(prior_units, manual):
        try:
            validate_unit(unit)
            why = NOT_STOPPED_BY_HAND if unit in manual else NOT_STOPPED_BY_A_REPAIR
        except InvalidArgument:
            why = "not a unit name"
        said = " as stopped by hand, though the console's Units pane cannot stop it" if unit in manual else \
            ", which no repair stops"
        ctx.note(f"the record names {unit!r}{said}: it was not started", "error")
        report.failed.append(f"{unit!r} ({why})" if why == "not a unit name" else f"{unit} ({why})")
    for change in restore_actions(prior_units, prior_pm, current_units, current_pm, manual):
        if isinstance(change, UnitChange):
            # `repair --restore` reads the unit names from a file on the node, which anyone with root
            # there could have edited: a name that is not a unit name never reaches a command line.
            try:
                validate_unit(change.unit)
            except InvalidArgument as exc:
                ctx.note(str(exc), "error")
                if change.verb == "start":
                    report.failed.append(f"{change.unit!r} (not a unit name)")
                continue
        result = await _retrying(ctx, change)
        ok = result is not None and result.ok
        if isinstance(change, SetPersistence):
            gpus = sorted(prior_pm) if change.gpu is None else [change.gpu]
            if ok:
                report.persistence_gpus.extend(gpus)
            else:
                report.failed.append(f"persistence mode of GPU {'all' if change.gpu is None else change.gpu}")
        elif change.verb == "reset-failed":
            continue  # only the start that follows says whether the unit is back
        elif ok:
            report.units.append(change.unit)
        else:
            report.failed.append(change.unit)


__all__ = ["CLUSTER_BACK", "LOCK_GONE", "NOT_STOPPED_BY_A_REPAIR", "NOT_STOPPED_BY_HAND", "ORDER", "PUT_BACK", "RECORD_GONE",
           "RestoreReport", "not_restorable", "persistence_words", "restore", "restore_actions", "restored_message",
           "restored_words", "startable"]
