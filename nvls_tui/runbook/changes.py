"""Every change a repair, a single action or a restore makes on a node, as a value.

A change knows where it runs (:data:`NODE`, :data:`SCHEDULER` for Slurm's scontrol and scancel on the
bastion, :data:`CLUSTER` for kubectl's writes to the Kubernetes API), the command lines that make it (:meth:`Change.argvs`,
rendered here and nowhere else), why it is made (:attr:`Change.why`), how it reads in a plan
(:attr:`Change.display`, one line per command) and the change that puts it back (:meth:`Change.undo`, None
where nothing can: a signalled process, a reset).

Step functions build these from the node's state and hand each one to the one door,
:func:`nvls_tui.runbook.door.perform`, which announces it, puts it on disk in the audit log and sends it
behind the lock's fence; the dry run hands the same values to a performer that only records them.
Reads (``fuser``, ``ps``, ``journalctl``) are no changes: :class:`Read` names the ones a plan shows.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from nvls_tui.backends.base import join_argv
from nvls_tui.kube.client import global_flags_end
from nvls_tui.poll.fence import OWNER_FILE
from nvls_tui.poll.probe import LOCK_DIR, RECORD_FILE, SMOKE_FILE, STATE_DIR
from nvls_tui.runbook.steps import SMOKE_ENV, persistence_argv, reset_argv, smoke_argv, unit_argv

NODE, SCHEDULER, CLUSTER = "node", "scheduler", "cluster"

Argv = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Command:
    """One command line of a change: its argv, its environment and what it is given on stdin."""

    argv: Argv
    env: tuple[tuple[str, str], ...] = ()
    stdin: str | None = None
    # Behind the lock's fence while the run holds the lock (only some of the lock's own commands are not:
    # see :class:`TakeLock`, :class:`WriteOwner`, :class:`ReleaseLock`, :class:`GiveBackLock`).
    fenced: bool = True


class Change:
    """What every change is (a base for the frozen dataclasses below; it holds no field)."""

    __slots__ = ()
    where: ClassVar[str] = NODE
    # Needs root on the node (``sudo -n`` where the backend was asked to use it).
    privileged: ClassVar[bool] = True
    # The repair's own bookkeeping on the node (its lock and record): the plan screen and the report's
    # timeline fold these into one line instead of listing them.
    bookkeeping: ClassVar[bool] = False

    def commands(self) -> tuple[Command, ...]:
        """The command lines that make the change, in order."""
        raise NotImplementedError

    def argvs(self) -> tuple[Argv, ...]:
        """Every command line's argv, in order (what a plan and a run are compared by)."""
        return tuple(c.argv for c in self.commands())

    def argv(self) -> Argv:
        """The one command line of a change made by one (a file written takes three: see :meth:`argvs`)."""
        argvs = self.argvs()
        if len(argvs) != 1:
            raise ValueError(f"{type(self).__name__} takes {len(argvs)} commands: use argvs()")
        return argvs[0]

    @property
    def why(self) -> str:
        """Why the change is made, in the operator's words."""
        raise NotImplementedError

    @property
    def note(self) -> str:
        """What the plan says after the command line (``#``); empty for none."""
        return ""

    @property
    def display(self) -> str:
        """The change as one line of the plan (the first command; the others follow in :attr:`lines`)."""
        return self.lines[0]

    @property
    def lines(self) -> tuple[str, ...]:
        """One plan line per command: ``systemctl stop apt-daily.timer  # held for the repair ...``."""
        out = [join_argv(command.argv, dict(command.env)) for command in self.commands()]
        if self.note:
            out[0] = f"{out[0]}  # {self.note}"
        return tuple(out)

    def undo(self) -> Change | None:
        """The change that puts this one back (None: nothing can, or nothing needs to)."""
        return None

    def planned(self) -> Change:
        """The change as a plan can know it: what only the run learns (a label write's resourceVersion, the
        path of an eviction's body file) left out. A plan and a run are compared by this."""
        return self


@dataclass(frozen=True, slots=True)
class UnitChange(Change):
    """``systemctl stop|start|reset-failed UNIT``."""

    verb: str
    unit: str
    reason: str = ""

    VERBS: ClassVar[frozenset[str]] = frozenset({"stop", "start", "reset-failed"})

    def __post_init__(self) -> None:
        if self.verb not in self.VERBS:
            raise ValueError(f"not a unit change: {self.verb!r}")

    def commands(self) -> tuple[Command, ...]:
        return (Command(unit_argv(self.verb, self.unit)),)

    @property
    def why(self) -> str:
        if self.reason:
            return self.reason
        return {"stop": f"{self.unit} is a client of the GPUs: stopped before the reset",
                "start": f"{self.unit} ran before the repair: started again",
                "reset-failed": f"{self.unit} is failed: its failed state would block its start"}[self.verb]

    @property
    def note(self) -> str:
        return self.reason

    def undo(self) -> Change | None:
        if self.verb == "stop":
            return UnitChange("start", self.unit)
        if self.verb == "start":
            return UnitChange("stop", self.unit)
        return None


@dataclass(frozen=True, slots=True)
class SignalHolder(Change):
    """A signal to a process holding a device, sent only after its identity (start time and command line) is
    re-checked on the node (``backends.base.require_identity``)."""

    pid: int
    signal: str = "TERM"
    reason: str = ""
    start_time: str | None = None
    command: str = ""

    privileged: ClassVar[bool] = False  # the backend sends it (as root where it runs as root)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("kill", f"-{self.signal}", str(self.pid))),)

    @property
    def why(self) -> str:
        return self.reason or "a management process holds a device"

    @property
    def lines(self) -> tuple[str, ...]:
        return (f"kill -{self.signal} {self.pid}  # {self.reason}, identity re-checked first",)


@dataclass(frozen=True, slots=True)
class SetPersistence(Change):
    """``nvidia-smi -pm 0|1`` on every GPU (``gpu`` None) or one."""

    enabled: bool
    gpu: int | None = None

    def commands(self) -> tuple[Command, ...]:
        return (Command(persistence_argv(self.enabled, self.gpu)),)

    @property
    def why(self) -> str:
        which = "every GPU" if self.gpu is None else f"GPU {self.gpu}"
        return (f"persistence mode was on for {which} before the repair: on again" if self.enabled else
                f"persistence mode keeps {which} open: off before the reset")

    def undo(self) -> Change | None:
        return SetPersistence(not self.enabled, self.gpu)


@dataclass(frozen=True, slots=True)
class ResetGpus(Change):
    """``nvidia-smi -r``: every GPU and NVSwitch of the node."""

    def commands(self) -> tuple[Command, ...]:
        return (Command(reset_argv()),)

    @property
    def why(self) -> str:
        return "the reset clears the NVSwitches' and GPUs' state that keeps NVLS from working"


@dataclass(frozen=True, slots=True)
class WriteFile(Change):
    """A file of nvls-tui's on the node written atomically: tee a temporary file (``content`` on stdin), then
    rename it over (the repair's crash-safe record, the last smoke result)."""

    path: str
    content: str = field(default="", compare=False)
    reason: str = ""

    bookkeeping: ClassVar[bool] = True

    def commands(self) -> tuple[Command, ...]:
        return (Command(("mkdir", "-p", STATE_DIR)), Command(("tee", f"{self.path}.tmp"), stdin=self.content),
                Command(("mv", "-f", f"{self.path}.tmp", self.path)))

    @property
    def why(self) -> str:
        return self.reason or {RECORD_FILE: "the crash-safe record: what the restore puts back, whatever happens",
                               SMOKE_FILE: "the last smoke result, where `check` reads it"}.get(self.path, self.path)

    def undo(self) -> Change | None:
        return RemoveFile(self.path)


@dataclass(frozen=True, slots=True)
class RemoveFile(Change):
    """``rm -f PATH`` (the record, once everything is back)."""

    path: str

    bookkeeping: ClassVar[bool] = True

    def commands(self) -> tuple[Command, ...]:
        return (Command(("rm", "-f", self.path)),)

    @property
    def why(self) -> str:
        return f"{self.path} is no longer needed: everything is back"


@dataclass(frozen=True, slots=True)
class RunSmoke(Change):
    """The NVLS all-reduce sweep on every GPU (streamed; it takes the GPUs while it runs)."""

    gpus: int

    def commands(self) -> tuple[Command, ...]:
        return (Command(smoke_argv(self.gpus), env=tuple(SMOKE_ENV.items())),)

    @property
    def env(self) -> dict[str, str]:
        """The environment the sweep runs with (NVLS forced on)."""
        return dict(SMOKE_ENV)

    @property
    def why(self) -> str:
        return "proves NVLS works: an all-reduce over NVLS at the expected bandwidth"


class OnBastion(Change):
    """A scheduler's change, made on the bastion; ``remark`` (a field of each) is what the plan says after it."""

    __slots__ = ()
    where: ClassVar[str] = SCHEDULER
    remark: str

    @property
    def note(self) -> str:
        return self.remark


@dataclass(frozen=True, slots=True)
class DrainNode(OnBastion):
    """``scontrol update NodeName=N State=DRAIN Reason=...`` on the bastion: no new job lands on the node (the
    reason names the run, or the step a failed repair stopped at)."""

    node: str
    reason: str
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        # One argv word per field: no shell quoting needed.
        return (Command(("scontrol", "update", f"NodeName={self.node}", "State=DRAIN", f"Reason={self.reason}")),)

    @property
    def why(self) -> str:
        return f"no new job lands on {self.node} while the repair runs"

    def undo(self) -> Change | None:
        return ResumeNode(self.node)


@dataclass(frozen=True, slots=True)
class ResumeNode(OnBastion):
    """``scontrol update NodeName=N State=RESUME`` on the bastion: the node back in service."""

    node: str
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("scontrol", "update", f"NodeName={self.node}", "State=RESUME")),)

    @property
    def why(self) -> str:
        return f"{self.node} is repaired: back in service"


@dataclass(frozen=True, slots=True)
class CancelJob(OnBastion):
    """``scancel JOB`` on the bastion: a job the operator chose to end (a repair never signals a job's processes)."""

    job: int
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("scancel", str(int(self.job)))),)

    @property
    def why(self) -> str:
        return f"the operator chose to cancel job {self.job} rather than wait for it"


@dataclass(frozen=True, slots=True)
class Read:
    """A read-only command a plan shows (it changes nothing, so it never goes through the door)."""

    argv: Argv
    reason: str = ""
    # One of the repair's own reads (its clock, the journal's cursor at T0, its record and lock read back).
    bookkeeping: bool = False
    # What the plan says after it (``#``): how often it is read, say; empty for nothing.
    note: str = ""

    @property
    def display(self) -> str:
        return shlex.join(self.argv)

    @property
    def lines(self) -> tuple[str, ...]:
        return (f"{self.display}   # {self.note}" if self.note else self.display,)


# ---- the node's repair lock (runbook/lock.py takes, beats and releases it through the door) ---------------

OWNER_TMP = f"{OWNER_FILE}.tmp"


class LockChange(Change):
    """A change to the node's repair lock (``/var/lib/nvls-tui/lock``): the repair's own bookkeeping. Which of
    its commands the lock's fence guards is each command's ``fenced``: taking the lock cannot be fenced by it."""

    __slots__ = ()
    bookkeeping: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class TakeLock(LockChange):
    """``mkdir -p`` the state directory, then ``mkdir`` the lock (atomic: of two runs only one makes it).
    ``again``: a take-over of a stale lock, which makes the lock directory only (it may be there already)."""

    again: bool = False

    def commands(self) -> tuple[Command, ...]:
        make_lock = Command(("mkdir", LOCK_DIR), fenced=False)
        return (make_lock,) if self.again else (Command(("mkdir", "-p", STATE_DIR), fenced=False), make_lock)

    @property
    def why(self) -> str:
        return "the node's repair lock: one run at a time"


@dataclass(frozen=True, slots=True)
class WriteOwner(LockChange):
    """The lock's owner file written (``content`` on stdin to a temporary file) and renamed over. The rename is
    fenced: a heartbeat never replaces an owner file that names another run (taking the lock, no fence is held
    yet, so it goes out plainly)."""

    content: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("tee", OWNER_TMP), stdin=self.content, fenced=False),
                Command(("mv", "-f", OWNER_TMP, OWNER_FILE)))

    @property
    def why(self) -> str:
        return "names this run the lock's owner (and, rewritten every interval, its heartbeat)"


@dataclass(frozen=True, slots=True)
class ReleaseLock(LockChange):
    """The owner file removed while it still names this run (fenced), then the lock directory (not fenced: the
    owner file that proves the run's hold is gone by then)."""

    def commands(self) -> tuple[Command, ...]:
        return (Command(("rm", "-f", OWNER_FILE, OWNER_TMP)), Command(("rmdir", LOCK_DIR), fenced=False))

    @property
    def why(self) -> str:
        return "the repair is over: the lock goes"


@dataclass(frozen=True, slots=True)
class GiveBackLock(LockChange):
    """A lock just made that this run could not name itself the owner of, given back at once (an empty lock no
    one owns would look like an older nvls-tui's). Unfenced: this run holds no fence yet."""

    def commands(self) -> tuple[Command, ...]:
        return (Command(("rm", "-f", OWNER_TMP), fenced=False), Command(("rmdir", LOCK_DIR), fenced=False))

    @property
    def why(self) -> str:
        return "this run could not name itself the lock's owner: the lock is given back"


def lock_age_reads() -> tuple[Read, Read]:
    """The heartbeat's age on the node's clock: the owner file's modification time, then the node's time (seconds;
    the clock's read is bookkeeping, as every ``date`` of the repair's is)."""
    return Read(("stat", "-c", "%Y", "--", OWNER_FILE)), Read(("date", "+%s"), bookkeeping=True)


def read_owner() -> Read:
    """The lock's owner file read back (the release reads it first: only this run's lock is removed)."""
    return Read(("cat", OWNER_FILE), bookkeeping=True)


def start_fabric_manager(unit: str) -> tuple[UnitChange, UnitChange]:
    """FM's start: ``reset-failed`` first (a stale failed state blocks the start; harmless if none), then ``start``."""
    return (UnitChange("reset-failed", unit, ), UnitChange("start", unit))


def record_write(content: str = "") -> WriteFile:
    """The crash-safe record, written before anything changes."""
    return WriteFile(RECORD_FILE, content)


def smoke_write(content: str = "") -> WriteFile:
    """The last smoke result, where ``check`` reads it."""
    return WriteFile(SMOKE_FILE, content)


def record_remove() -> RemoveFile:
    """The record, removed once everything is back."""
    return RemoveFile(RECORD_FILE)


# ---- the cluster's changes: kubectl's writes to the Kubernetes API, made from the bastion ---------------------

#: The value a paused operand label gets (the GPU Operator's own managers use paused-for-mig-change and
#: paused-for-driver-upgrade the same way).
PAUSED = "paused-for-nvls-repair"
#: The annotation a cordon kept after a failed or interrupted repair carries: the step it stopped at.
STOPPED_AT = "nvls-tui/repair-stopped-at"
#: What a plan shows for the resourceVersion a label write is conditioned on: the node's, read right before the
#: write (each write and the cordon move it), so known only when the run runs.
READ_AT_RUN_TIME = "<read at run time>"
#: What a plan shows for the file an eviction's body is in (a temporary file the run writes).
EVICTION_FILE = "EVICTION.json"


class InCluster(Change):
    """A change to the Kubernetes API, made from the bastion with kubectl; ``kubectl`` (a field of each) is the
    argv that reaches the cluster (the binary and its global flags: ``Kubectl.argv()``)."""

    __slots__ = ()
    where: ClassVar[str] = CLUSTER
    privileged: ClassVar[bool] = False  # kubectl runs on the bastion, as the operator
    kubectl: Argv

    def call(self, *args: str) -> Command:
        """``kubectl GLOBAL-FLAGS ARGS``."""
        return Command((*self.kubectl, *args))

    def args(self) -> Argv:
        """The words after kubectl's global flags (``("cordon", "gpu06")``)."""
        return self.argv()[len(self.kubectl):]


@dataclass(frozen=True, slots=True)
class Cordon(InCluster):
    """``kubectl cordon NODE``: no new pod lands on the node while it is repaired."""

    node: str
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        return (self.call("cordon", self.node),)

    @property
    def why(self) -> str:
        return f"no new pod lands on {self.node} while it is repaired"

    @property
    def note(self) -> str:
        return "after the record: no new pod lands while the node is repaired"

    def undo(self) -> Change | None:
        return Uncordon(self.node, self.kubectl)


@dataclass(frozen=True, slots=True)
class Uncordon(InCluster):
    """``kubectl uncordon NODE``: only a cordon this repair (or an earlier nvls-tui repair) set, after a pass."""

    node: str
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        return (self.call("uncordon", self.node),)

    @property
    def why(self) -> str:
        return f"{self.node} is repaired (the smoke test passed): back in service"

    @property
    def note(self) -> str:
        return "only after a passing smoke test"

    def undo(self) -> Change | None:
        return Cordon(self.node, self.kubectl)


@dataclass(frozen=True, slots=True)
class SetOperandLabel(InCluster):
    """A GPU Operator operand label set (``--overwrite KEY=VALUE``) or removed (``KEY-``: it was unset before).

    A conditioned write carries the node's ``resource_version`` as read right before it (the API refuses it
    with 409 Conflict where anyone wrote the node since): the run fills it in; the plan, which cannot know it,
    shows :data:`READ_AT_RUN_TIME`, and neither equality nor :meth:`planned` looks at it. An unconditioned
    write is the restore's where the node could not be read. The label stays the last word of the argv.
    """

    node: str
    key: str
    value: str | None
    before: str | None
    kubectl: Argv
    resource_version: str | None = field(default=None, compare=False)
    conditioned: bool = True

    def commands(self) -> tuple[Command, ...]:
        rv = (f"--resource-version={self.resource_version or READ_AT_RUN_TIME}",) if self.conditioned else ()
        if self.value is None:
            return (self.call("label", "node", self.node, *rv, f"{self.key}-"),)
        return (self.call("label", "node", self.node, "--overwrite", *rv, f"{self.key}={self.value}"),)

    @property
    def pauses(self) -> bool:
        """The write pauses the operand (the repair's quiesce); else it puts the label back (the restore)."""
        return self.value == PAUSED

    @property
    def why(self) -> str:
        operand = self.key.rsplit(".", 1)[-1]
        if self.pauses:
            return f"the GPU Operator deletes {operand}'s pod on {self.node}: it opens the GPUs"
        return f"{operand} was paused for the repair: its label as it was ({self.value or 'unset'})"

    @property
    def note(self) -> str:
        if self.pauses:
            return f"was {self.before or 'unset'}; where it still reads so (a 409 Conflict: read and decided again)"
        return "where it still reads paused" if self.conditioned else "the node could not be read: put back as is"

    def undo(self) -> Change | None:
        return SetOperandLabel(self.node, self.key, self.before, self.value, self.kubectl)

    def planned(self) -> Change:
        return dataclasses.replace(self, resource_version=None)


@dataclass(frozen=True, slots=True)
class Annotate(InCluster):
    """The annotation :data:`STOPPED_AT` that names the step a repair stopped at on the cordon it keeps
    (``step`` None: removed, once a passing repair lifts that cordon)."""

    node: str
    step: str | None
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        if self.step is None:
            return (self.call("annotate", "node", self.node, f"{STOPPED_AT}-"),)
        return (self.call("annotate", "node", self.node, f"{STOPPED_AT}={self.step}", "--overwrite"),)

    @property
    def why(self) -> str:
        if self.step is None:
            return f"the cordon an earlier repair kept on {self.node} is lifted: its note goes with it"
        return f"the repair stopped at {self.step}: {self.node} stays cordoned, and says why"

    def undo(self) -> Change | None:
        return Annotate(self.node, None, self.kubectl) if self.step is not None else None


def eviction_body(namespace: str, pod: str) -> str:
    """The Eviction the API is sent for one pod (policy/v1)."""
    return json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": pod, "namespace": namespace}}, sort_keys=True)


@dataclass(frozen=True, slots=True)
class EvictPod(InCluster):
    """``kubectl create --raw .../pods/P/eviction -f FILE``: the Eviction subresource (disruption budgets are
    honoured; nvls-tui never force-deletes). ``body_file`` is the temporary file the run writes :attr:`body` to:
    the plan shows :data:`EVICTION_FILE`, and neither equality nor :meth:`planned` looks at it."""

    namespace: str
    pod: str
    kubectl: Argv
    body_file: str | None = field(default=None, compare=False)
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (self.call("create", "--raw", f"/api/v1/namespaces/{self.namespace}/pods/{self.pod}/eviction",
                          "-f", self.body_file or EVICTION_FILE),)

    @property
    def name(self) -> str:
        """``namespace/pod``."""
        return f"{self.namespace}/{self.pod}"

    @property
    def body(self) -> str:
        """The Eviction sent (the file's content)."""
        return eviction_body(self.namespace, self.pod)

    @property
    def why(self) -> str:
        return f"{self.name} holds a GPU: it leaves the node through the Eviction API"

    @property
    def note(self) -> str:
        return f"{self.body}; {self.remark}" if self.remark else self.body

    def planned(self) -> Change:
        return dataclasses.replace(self, body_file=None)


@dataclass(frozen=True, slots=True)
class DeleteDriverPod(InCluster):
    """``kubectl delete pod -n NS P --wait=false``: the GPU Operator's driver pod, where Fabric Manager runs in it
    (graceful: its DaemonSet makes a new one, which loads the driver again: that is the reset and FM's start)."""

    namespace: str
    pod: str
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        return (self.call("delete", "pod", "-n", self.namespace, self.pod, "--wait=false"),)

    @property
    def name(self) -> str:
        """``namespace/pod``."""
        return f"{self.namespace}/{self.pod}"

    @property
    def why(self) -> str:
        return "Fabric Manager runs in the driver pod: its restart reloads the driver (GPUs and NVSwitches)"

    @property
    def note(self) -> str:
        return "FM runs in the driver pod: its restart reloads the driver (GPUs and NVSwitches)"


def read_cluster_change(argv: Sequence[str]) -> InCluster | None:
    """The cluster change an audited kubectl argv made (the inverse of :meth:`InCluster.commands`, for the
    report, whose audit log holds argvs); None for a read, a wait, or a command that is not kubectl.

    What the argv does not say is left at its default: a label's value before (``before`` None), an eviction's
    body file as the argv names it.
    """
    if not argv or os.path.basename(argv[0]) != "kubectl":
        return None
    at = global_flags_end(argv)
    kubectl, words = tuple(argv[:at]), list(argv[at:])
    match words:
        case ["cordon", node, *_]:
            return Cordon(node, kubectl)
        case ["uncordon", node, *_]:
            return Uncordon(node, kubectl)
        case ["label", "node", node, *rest] if rest:
            rv = next((w.split("=", 1)[1] for w in rest if w.startswith("--resource-version=")), None)
            key, is_set, value = rest[-1].partition("=")
            return SetOperandLabel(node, key if is_set else key.rstrip("-"), value if is_set else None, None,
                                   kubectl, resource_version=rv, conditioned=rv is not None)
        case ["annotate", "node", node, said, *_] if said.startswith((f"{STOPPED_AT}=", f"{STOPPED_AT}-")):
            _, is_set, step = said.partition("=")
            return Annotate(node, step if is_set else None, kubectl)
        case ["create", "--raw", path, *rest]:
            bits = path.split("/")  # /api/v1/namespaces/NS/pods/P/eviction
            if len(bits) == 8 and bits[7] == "eviction":
                body = rest[rest.index("-f") + 1] if "-f" in rest[:-1] else None
                return EvictPod(bits[4], bits[6], kubectl, body_file=body)
        case ["delete", "pod", *rest] if "-n" in rest[:-1]:
            at_n = rest.index("-n")
            names = [w for w in rest[at_n + 2:] if not w.startswith("-")]
            if names:
                return DeleteDriverPod(rest[at_n + 1], names[0], kubectl)
    return None


__all__ = ["Annotate", "CancelJob", "Change", "CLUSTER", "Command", "Cordon", "DeleteDriverPod", "DrainNode",
           "eviction_body", "EVICTION_FILE", "EvictPod", "GiveBackLock", "InCluster", "lock_age_reads", "LockChange",
           "NODE", "OWNER_TMP", "PAUSED", "Read", "READ_AT_RUN_TIME", "read_cluster_change", "read_owner",
           "record_remove", "record_write", "ReleaseLock", "RemoveFile", "ResetGpus", "ResumeNode", "RunSmoke",
           "SCHEDULER", "SetOperandLabel", "SetPersistence", "SignalHolder", "smoke_write", "start_fabric_manager",
           "STOPPED_AT", "TakeLock", "Uncordon", "UnitChange", "WriteFile", "WriteOwner"]
