"""Every change a repair, a single action or a restore makes on a node, as a value; and what a plan shows besides.

A change knows where it runs (:data:`NODE`, :data:`SCHEDULER` for Slurm's scontrol and scancel on the
bastion, :data:`CLUSTER` for kubectl's writes to the Kubernetes API), the command lines that make it
(:meth:`Change.argvs`, rendered in this package and nowhere else), why it is made (:attr:`Change.why`), how it
reads in a plan (:attr:`Change.display`, one line per command) and the change that puts it back
(:meth:`Change.undo`, None where nothing can: a signalled process, a reset).

Step functions build these from the node's state and hand each one to the one door,
:func:`nvls_tui.runbook.door.perform`, which announces it, puts it on disk in the audit log and sends it
behind the lock's fence; the dry run hands the same values to a performer that only records them.
Reads (``fuser``, ``ps``, ``journalctl``, ``kubectl get``) are no changes: :class:`Read` names the ones a plan
shows, :class:`Wait` what a step waits for and until when, :class:`Remark` a plan's line that is no command.

The package's modules, by where a change runs: :mod:`.base` (what every change is), :mod:`.on_node` (units, a
signal, persistence, the reset, the smoke test, the record), :mod:`.on_bastion` (Slurm), :mod:`.lock_dir` (the
node's repair lock), :mod:`.in_cluster` (the Kubernetes API), :mod:`.shown` (reads, waits, remarks). Every name
is importable from here.
"""

from __future__ import annotations

from nvls_tui.runbook.changes.base import CLUSTER, NODE, SCHEDULER, Argv, Change, Command
from nvls_tui.runbook.changes.in_cluster import (
    EVICTION_FILE,
    PAUSED,
    READ_AT_RUN_TIME,
    STOPPED_AT,
    Annotate,
    Cordon,
    CordonKept,
    DeleteDriverPod,
    EvictPod,
    InCluster,
    LabelKept,
    SetOperandLabel,
    Uncordon,
    eviction_body,
    read_cluster_change,
)
from nvls_tui.runbook.changes.lock_dir import (
    OWNER_TMP,
    GiveBackLock,
    LockChange,
    ReleaseLock,
    TakeLock,
    WriteOwner,
    lock_age_reads,
    read_owner,
)
from nvls_tui.runbook.changes.on_bastion import CancelJob, DrainNode, OnBastion, ResumeNode
from nvls_tui.runbook.changes.on_node import (
    RemoveFile,
    ResetGpus,
    RunSmoke,
    SetPersistence,
    SignalHolder,
    UnitChange,
    WriteFile,
    record_remove,
    record_write,
    smoke_write,
    start_fabric_manager,
)
from nvls_tui.runbook.changes.shown import Aside, Instead, Read, Remark, Wait

#: One entry of a plan's step that is a value: a change the run makes (through the door), a read it shows, a wait
#: it makes, or a remark.
PlanEntry = Change | Read | Wait | Remark

__all__ = ["Annotate", "Argv", "Aside", "CancelJob", "Change", "CLUSTER", "Command", "Cordon", "CordonKept",
           "DeleteDriverPod", "DrainNode", "eviction_body", "EVICTION_FILE", "EvictPod", "GiveBackLock", "InCluster",
           "Instead", "LabelKept", "lock_age_reads", "LockChange", "NODE", "OnBastion", "OWNER_TMP", "PAUSED",
           "PlanEntry", "Read", "READ_AT_RUN_TIME", "read_cluster_change", "read_owner", "record_remove",
           "record_write", "ReleaseLock", "Remark", "RemoveFile", "ResetGpus", "ResumeNode", "RunSmoke", "SCHEDULER",
           "SetOperandLabel", "SetPersistence", "SignalHolder", "smoke_write", "start_fabric_manager", "STOPPED_AT",
           "TakeLock", "Uncordon", "UnitChange", "Wait", "WriteFile", "WriteOwner"]
