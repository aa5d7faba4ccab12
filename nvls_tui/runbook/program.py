"""The repair's program: for each step of ``STEPS``, what it does, as values, from the node's state and what else is
known (the options, the cluster's entries, the scheduler's node).

One list per step, built here and nowhere else, read by both paths:

* the run (:mod:`nvls_tui.runbook.engine`) walks a step's entries: each change goes to the door
  (:func:`~nvls_tui.runbook.door.perform`), each read is run, and at each :class:`Decide` the step does what it
  decides from what it reads then (which holders are left, whether FM has registered, whether the journal still
  holds T0's cursor);
* the dry run (:mod:`nvls_tui.runbook.plan`) hands the same changes to the recording performer and shows every
  entry's lines.

An entry is a :class:`~nvls_tui.runbook.changes.Change`, a :class:`~nvls_tui.runbook.changes.Read`, a
:class:`Decide` (a decision point, with the changes and reads it may make as the plan shows them) or a line the plan
says as it is (a note after ``#``). The cluster's entries are the Kubernetes side's
(:func:`~nvls_tui.runbook.kube_plan.cluster_entries`): they enter through ``Known.kube``, each step's under its name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from nvls_tui.diagnosis import fm_container
from nvls_tui.model import NodeState
from nvls_tui.poll.probe import DEVICE_LIST_ARGV, QUERY_FIELDS, RECORD_FILE
from nvls_tui.runbook import preflight as checks
from nvls_tui.runbook.changes import (
    PlanEntry,
    Read,
    ResetGpus,
    RunSmoke,
    record_remove,
    record_write,
    smoke_write,
    start_fabric_manager,
)
from nvls_tui.runbook.lock import RELEASING, TAKING
from nvls_tui.runbook.quiesce import MAX_RESPAWN_ROUNDS, quiesce_plan
from nvls_tui.runbook.restore import CLUSTER_BACK, LOCK_GONE, PUT_BACK, RECORD_GONE, restore_actions, startable
from nvls_tui.runbook.scheduling import drain_change, jobs_words, resume_change
from nvls_tui.runbook.steps import (
    DATE_ARGV,
    FM_UNIT,
    KERNEL_CURSOR_ARGV,
    KUBELET,
    SMOKE_CLOCK_ARGVS,
    is_running,
    kernel_after_argv,
    kernel_cursor_check_argv,
    persistence_modes,
    threshold_for,
    unit_states,
)

# ---- the decision points: where a step decides from what it reads while it runs ---------------------------------

#: preflight: the node's lock taken (refused, naming its owner, where another run holds it).
LOCK = "lock"
#: preflight: the scheduler's node drained, unless the scheduler already holds it back (then left as it is).
DRAIN = "drain"
#: preflight: the drained node's jobs end first (``--wait-jobs``), or the repair is refused.
JOBS = "jobs"
#: preflight: the cluster read (the Node, this machine's identity, its pods); a node it lacks goes on without it.
CLUSTER_SURVEY = "cluster-survey"
#: preflight: a node whose fabric looks healthy is smoke-tested first; a pass ends the run with nothing reset.
RECHECK = "recheck"
#: preflight: the node cordoned after the record (left so where it was cordoned already).
CORDON = "cordon"
#: quiesce: the operands paused through their labels and the workloads evicted, before the node's own clients.
CLUSTER_QUIESCE = "cluster-quiesce"
#: quiesce: every watch loop, read now (``ps -e``) and SIGTERMed (the plan: the loops the listing shows).
WATCH_LOOPS = "watch-loops"
#: quiesce: the management processes still holding a device after the units, re-read and SIGTERMed (the plan: those
#: the state shows); any left go to verify-no-holders.
HOLDERS_LEFT = "holders-left"
#: verify-no-holders (and again before FM starts): fuser on the device files the listing finds, repeated while any
#: process holds one.
NO_HOLDERS = "no-holders"
#: reset, where Fabric Manager runs in the driver pod: the pod's restart is the reset.
DRIVER_POD = "driver-pod"
#: fabric-manager: FM's unit (where it has one) and every GPU's registration read until both are done.
FM_REGISTERED = "fm-registered"
#: verify-fabric: the kernel journal after T0's cursor, or since T0 by the clock (and the ring buffer) where it
#: no longer holds that cursor's entry.
KERNEL_SINCE_T0 = "kernel-since-t0"
#: smoke-test: the verdict (completed, nothing out of bounds, NVLS used, the bandwidth reached).
SMOKE_PASS = "smoke-pass"
# restore: the units and settings that differ now from before, put back (the node read again first); the
# cluster's (labels, the cordon lifted after a pass or kept, naming the step); the record, then the lock, each
# read first (only the run's own goes): runbook/restore.py's points (PUT_BACK, CLUSTER_BACK, RECORD_GONE,
# LOCK_GONE, imported above), in its order.

#: restore: the scheduler's drain back the way it was (resumed after a pass; kept, re-reasoned, after a failure).
RESUME = "resume"

# What the plan says of preflight's smoke test of a healthy-looking node (engine.Runbook._recheck decides).
RECHECK_WORDS = ("# a pass ends the repair here, nothing reset; a failure is tested once more after a pause, then the "
                 "repair goes on")
# The kernel journal's cursor preflight reads at T0 (known only when the repair runs).
CURSOR = "<CURSOR>"
# The reset step's notes of what the reset commits besides (views.plan_summary lifts them into the summary).
SIDE_EFFECT = "# the reset "

# A plain entry of a step (or of a decision point): a change, a read, a wait, a remark (changes.PlanEntry: the
# cluster's give all four), or a line the plan says as it is.
Plain = PlanEntry | str


@dataclass(frozen=True, slots=True)
class Decide:
    """A point where a step decides from what it reads while it runs, with what it may do there.

    ``point``: which one (the constants above: the run's step body does what the point names). ``entries``: the
    changes and reads it makes on a node like the one planned, in order (the dry run hands the changes to the door
    too). ``words``: what the plan says of the decision after them (empty: the entries say it).
    """

    point: str
    entries: tuple[Plain, ...] = ()
    words: str = ""

    @property
    def lines(self) -> tuple[str, ...]:
        """The plan's lines: each entry's, then the decision's words."""
        return (*(line for entry in self.entries for line in lines_of(entry)), *((self.words,) if self.words else ()))


Entry = Plain | Decide


def lines_of(entry: Entry) -> tuple[str, ...]:
    """An entry's lines in the plan."""
    return (entry,) if isinstance(entry, str) else tuple(entry.lines)


def flat(entries: Sequence[Entry]) -> Iterator[Plain]:
    """Every change, read and line of ``entries`` in order, a decision point's own entries in its place (what the
    plan lists, and what the dry run hands the door), its words after them."""
    for entry in entries:
        if isinstance(entry, Decide):
            yield from entry.entries
            if entry.words:
                yield entry.words
        else:
            yield entry


@dataclass(frozen=True)
class Known:
    """What a step's entries depend on besides the node's state.

    Attributes:
        smoke_threshold, thresholds: the smoke test's pass threshold (:func:`~nvls_tui.runbook.steps.threshold_for`).
        restore_also: units stopped by hand (``{unit: state before}``) that the restore starts again too.
        kube: the cluster's entries by step (``preflight``, ``cordon``, ``quiesce``, ``verify-no-holders``, ``reset``,
            ``fabric-manager``, ``restore``) where the node is repaired through the Kubernetes API (kubelet keeps
            running); the run passes ``{}`` (its cluster module makes them); None: no cluster.
        driver_pod: Fabric Manager runs in the GPU Operator's driver pod, which the cluster lists: its restart is the
            reset and FM's start.
        listing: every process, as quiesce reads it for the watch loops (:func:`quiesce_actions`).
        scheduler_node: the scheduler's name of the node (None: no scheduler); ``run_id`` names the drain.
        keep_drained: a passing repair leaves the node drained (no resume).
        recheck: a node whose fabric looks healthy is smoke-tested first (``RepairOptions.recheck_transient``).
        cursor: the kernel journal's cursor read at T0 (:data:`CURSOR` in a plan).
    """

    smoke_threshold: float | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)
    restore_also: Mapping[str, str] = field(default_factory=dict)
    kube: Mapping[str, Sequence[Entry]] | None = None
    driver_pod: bool = False
    listing: str | None = None
    scheduler_node: str | None = None
    run_id: str = ""
    keep_drained: bool = False
    recheck: bool = True
    cursor: str = CURSOR

    def cluster(self, step: str) -> tuple[Plain, ...]:
        """The cluster's entries of ``step`` (none without a cluster)."""
        return tuple(flat((self.kube or {}).get(step, ())))


# ---- what a step needs that no state decides ---------------------------------------------------------------------

def prior_units(state: NodeState, restore_also: Mapping[str, str] | None = None) -> dict[str, str]:
    """The units' states a restore goes back to: as read, with units stopped by hand as they were before."""
    # Only units a restore may start: the others (unattended-upgrades' unit, a running apt-daily.service)
    # are never stopped by a repair, so there is nothing of theirs to put back.
    units = {u: a for u, a in unit_states(state).items() if startable(u, tuple(restore_also or ()))}
    for unit, before in (restore_also or {}).items():
        if is_running(before) and not is_running(units.get(unit)):
            units[unit] = before
    return units


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


# ---- the reads the steps make, each built once -------------------------------------------------------------------

#: The node's clock at T0 (what ``journalctl --since`` takes where the journal's cursor cannot be used).
CLOCK_READ = Read(DATE_ARGV, bookkeeping=True)
#: Where the kernel journal stands at T0.
CURSOR_READ = Read(KERNEL_CURSOR_ARGV, bookkeeping=True)
#: The record read back before it is removed (only this run's goes).
RECORD_READ = Read(("cat", RECORD_FILE), bookkeeping=True)
#: When a smoke test ended: the clock (the repair's own bookkeeping), then the boot (it says whether the node
#: rebooted: not bookkeeping).
SMOKE_CLOCK_READS = tuple(Read(argv, bookkeeping=argv[0] == "date") for argv in SMOKE_CLOCK_ARGVS)
#: FM's registration, as fabric-manager reads it while it waits.
FM_UNTIL = "repeated until active and every GPU Completed/Success"
FM_ACTIVE_READ = Read(("systemctl", "is-active", FM_UNIT), note=FM_UNTIL)
FABRIC_READ = Read(("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv"), note=FM_UNTIL)


def smoke_entries(state: NodeState) -> tuple[Plain, ...]:
    """The smoke test as the run makes it: the sweep on every GPU, when it ended, its verdict written."""
    return (RunSmoke(len(state.gpus) or 8), *SMOKE_CLOCK_READS, smoke_write())


def no_holders() -> Decide:
    """fuser on the device files the node lists, repeated while any process holds one."""
    # fuser names only the files the listing finds (quiesce.present_fuser_argv): which of them a node has is known
    # only when the step runs, so the plan shows the listing and says what fuser is given.
    return Decide(NO_HOLDERS, (Read(DEVICE_LIST_ARGV), "fuser -v FILE...   # each file the find lists, none other"),
                  f"# while a process holds one: management processes are stopped again ({MAX_RESPAWN_ROUNDS} times "
                  "at most), any other is waited for until the holders' deadline, then the repair stops")


# ---- the steps ---------------------------------------------------------------------------------------------------

def preflight(state: NodeState, known: Known) -> list[Entry]:
    """The lock, the scheduler's drain, the cluster's read, T0, the healthy-looking node's smoke test, the record
    and the cordon, in the order the run makes them."""
    entries: list[Entry] = [Decide(LOCK, TAKING)]
    if known.scheduler_node is not None:
        # Drained first, so no new job lands while the running ones end (the node's lock proven first).
        entries += [Decide(DRAIN, (drain_change(known.scheduler_node, known.run_id),)),
                    Decide(JOBS, words=jobs_words(known.scheduler_node))]
    if known.kube is not None:
        entries.append(Decide(CLUSTER_SURVEY, known.cluster("preflight")))
    entries += [CLOCK_READ, CURSOR_READ]
    if known.recheck and checks.fabric_looks_healthy(state):
        entries.append(Decide(RECHECK, smoke_entries(state), RECHECK_WORDS))
    entries.append(record_write())
    if known.kube is not None:
        entries.append(Decide(CORDON, known.cluster("cordon")))
    return entries


def quiesce(state: NodeState, known: Known) -> list[Entry]:
    """The cluster's operands and workloads first (kubelet then keeps running), then the node's own clients."""
    cluster: list[Entry] = [Decide(CLUSTER_QUIESCE, known.cluster("quiesce"))] if known.kube is not None else []
    parts = quiesce_plan(state, stop_kubelet=known.kube is None, listing=known.listing)
    return [*cluster, *parts.first, Decide(WATCH_LOOPS, parts.watch_loops), *parts.then,
            Decide(HOLDERS_LEFT, parts.holders_left)]


def verify_no_holders(state: NodeState, known: Known) -> list[Entry]:
    """Nothing holds a device (the driver pod's own processes aside, where its restart is the reset)."""
    return [no_holders(), *known.cluster("verify-no-holders")]


def _container_fm(state: NodeState, known: Known) -> bool:
    """Fabric Manager runs in the driver pod on a node the program cannot repair the host way."""
    return fm_container.in_container(state) and not known.driver_pod


def reset(state: NodeState, known: Known) -> list[Entry]:
    """``nvidia-smi -r`` and what it commits besides; where FM runs in the driver pod, the pod's restart."""
    if fm_container.in_container(state) and known.driver_pod:
        return [Decide(DRIVER_POD, known.cluster("reset"))]
    if _container_fm(state, known):
        # No host unit to start, and FM keeps the NVSwitches open from its pod: the reset and the FM start would
        # fail, or loop (preflight refuses such a node; the plan says why).
        return ["# not run: Fabric Manager runs in the GPU Operator's driver pod; the pod's restart reloads the "
                "driver"]
    return [ResetGpus(), *(f"{SIDE_EFFECT}{note}" for note in reset_side_effects(state))]


def fabric_manager(state: NodeState, known: Known) -> list[Entry]:
    """FM started (after nothing is proven to hold a device again) and its registration waited for."""
    if fm_container.in_container(state) and known.driver_pod:
        # The new driver pod starts FM: only the GPUs' registration is read.
        return [*known.cluster("fabric-manager"), Decide(FM_REGISTERED, (FABRIC_READ,))]
    if _container_fm(state, known):
        pod_move = f"{fm_container.restart_pod_command(state)}   # with kubectl: FM restarts with the driver pod"
        return [f"# not run: no host {FM_UNIT} unit to start; instead: {pod_move}"]
    return [no_holders(), *start_fabric_manager(FM_UNIT), Decide(FM_REGISTERED, (FM_ACTIVE_READ, FABRIC_READ))]


def verify_fabric(state: NodeState, known: Known) -> list[Entry]:
    """The kernel lines logged after T0's cursor (the fallbacks are the decision's: said in the plan)."""
    return [Decide(KERNEL_SINCE_T0, (Read(kernel_cursor_check_argv(known.cursor)),
                                     Read(kernel_after_argv(known.cursor))),
                   "# where no cursor was read at T0, or the journal no longer holds its entry: the kernel lines "
                   "since T0 by the node's clock, and the ring buffer's as well")]


def smoke_test(state: NodeState, known: Known) -> list[Entry]:
    """The smoke test and its pass criteria."""
    threshold = threshold_for(state.gpus, known.thresholds, known.smoke_threshold)
    return [*smoke_entries(state), Decide(SMOKE_PASS, words=f"# pass: completed, 0 out of bounds, NVLS used, "
                                                            f"avg busbw >= {threshold:.0f} GB/s")]


def restore(state: NodeState, known: Known) -> list[Entry]:
    """Every unit and setting back, the cluster's too, then the record and the lock (each read first: only this
    run's go), and the scheduler's drain (after the units: a resumed node must be whole)."""
    prior = prior_units(state, known.restore_also)
    stopped = {u: "inactive" for u in prior}
    stopped[FM_UNIT] = "active"  # the fabric-manager step started it
    if known.kube is not None and KUBELET in stopped:
        stopped[KUBELET] = prior[KUBELET]  # not stopped on this path: nothing to start
    put_back = restore_actions(prior, persistence_modes(state), stopped, {}, tuple(known.restore_also))
    entries: list[Entry] = [Decide(PUT_BACK, tuple(put_back))]
    if known.kube is not None:
        entries.append(Decide(CLUSTER_BACK, known.cluster("restore")))
    entries += [Decide(RECORD_GONE, (RECORD_READ, record_remove())), Decide(LOCK_GONE, RELEASING)]
    if known.scheduler_node is not None:
        # Resumed after a pass (not with --keep-drained); kept, with the failed step as its reason, after a failure.
        entries.append(Decide(RESUME, () if known.keep_drained else (resume_change(known.scheduler_node),)))
    return entries


#: Each step's entries, by name (in the order of ``STEPS``).
BUILDERS = {"preflight": preflight, "quiesce": quiesce, "verify-no-holders": verify_no_holders, "reset": reset,
            "fabric-manager": fabric_manager, "verify-fabric": verify_fabric, "smoke-test": smoke_test,
            "restore": restore}


def program(state: NodeState, known: Known) -> dict[str, list[Entry]]:
    """``{step: [entry, ...]}`` for a repair of ``state``, every step of contract.md in order."""
    return {name: build(state, known) for name, build in BUILDERS.items()}


__all__ = ["BUILDERS", "CLUSTER_BACK", "LOCK_GONE", "PUT_BACK", "RECORD_GONE", "CLOCK_READ", "CURSOR", "CURSOR_READ", "Decide", "Entry", "Known", "Plain", "RECORD_READ",
           "SIDE_EFFECT", "SMOKE_CLOCK_READS", "flat", "lines_of", "prior_units", "program", "reset_side_effects",
           "smoke_entries"]
