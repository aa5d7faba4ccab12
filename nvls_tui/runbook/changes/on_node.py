"""The changes a repair makes on the node itself: units, a signal to a verified holder, persistence mode, the
reset, the smoke test, and the repair's own files (its crash-safe record, the last smoke result)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nvls_tui.poll.probe import RECORD_FILE, SMOKE_FILE, STATE_DIR
from nvls_tui.runbook.changes.base import Change, Command, noted
from nvls_tui.runbook.steps import SMOKE_ENV, persistence_argv, reset_argv, smoke_argv, unit_argv


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
        return (noted(f"kill -{self.signal} {self.pid}", f"{self.reason}, identity re-checked first"),)


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


__all__ = ["RemoveFile", "ResetGpus", "RunSmoke", "SetPersistence", "SignalHolder", "UnitChange", "WriteFile",
           "record_remove", "record_write", "smoke_write", "start_fabric_manager"]
