"""Every change a repair, a single action or a restore makes on a node, as a value.

A change knows where it runs (:data:`NODE`, or :data:`SCHEDULER` for Slurm's scontrol and scancel on the
bastion; the cluster's are still made by ``runbook/kube_repair.py``), the command lines that make it (:meth:`Change.argvs`,
rendered here and nowhere else), why it is made (:attr:`Change.why`), how it reads in a plan
(:attr:`Change.display`, one line per command) and the change that puts it back (:meth:`Change.undo`, None
where nothing can: a signalled process, a reset).

Step functions build these from the node's state and hand each one to the one door,
:func:`nvls_tui.runbook.door.perform`, which announces it, puts it on disk in the audit log and sends it
behind the lock's fence; the dry run hands the same values to a performer that only records them.
Reads (``fuser``, ``ps``, ``journalctl``) are no changes: :class:`Read` names the ones a plan shows.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import ClassVar

from nvls_tui.backends.base import join_argv
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


__all__ = ["CLUSTER", "NODE", "OWNER_TMP", "SCHEDULER", "CancelJob", "Change", "Command", "DrainNode", "GiveBackLock",
           "LockChange", "Read", "ReleaseLock", "RemoveFile", "ResetGpus", "ResumeNode", "RunSmoke",
           "SetPersistence", "SignalHolder", "TakeLock", "UnitChange", "WriteFile", "WriteOwner", "lock_age_reads",
           "read_owner",
           "record_remove", "record_write", "smoke_write", "start_fabric_manager"]
