"""What the operator changed by hand in this console run, per node: the ledger of manual changes.

A unit stopped from the node screen stays stopped until someone starts it; a repair that comes later
records that stopped state as "how it was" and would never put it back (the node then ends healthy
with DCGM down). So every manual stop, start and signal is remembered here: the repair plan lists it,
the repair's restore puts the stopped units back to what they were before the operator's hand (unless
the operator says no), and the report shows it. Pure: no backend, no UI.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

STOPPED = "stopped"
STARTED = "started"
SIGNALLED = "signalled"


@dataclass(frozen=True, slots=True)
class ManualChange:
    """One change made by hand on a node.

    Attributes:
        at: wall-clock time of the change.
        what: ``stopped``, ``started`` (a unit) or ``signalled`` (a process).
        unit: the unit, for a stop or start.
        before: the unit's ActiveState just before the change (what a restore goes back to).
        pid, command, kind, signal: the process, for a signal (and for a stop that was a signal to the unit's
            process: its PID and the signal).
    """

    host: str
    what: str
    at: float = field(default_factory=time.time)
    unit: str | None = None
    before: str | None = None
    pid: int | None = None
    command: str | None = None
    kind: str | None = None
    signal: str | None = None

    def describe(self) -> str:
        """``stopped by hand at 03:12: nvidia-dcgm.service (it was active)`` and the like."""
        clock = time.strftime("%H:%M", time.localtime(self.at))
        if self.what == SIGNALLED:
            return (f"{self.signal or 'SIGTERM'} by hand at {clock}: {self.pid} "
                    f"({self.kind or 'process'}: {(self.command or '?')[:80]})")
        why = [f"it was {self.before}"] if self.before else []
        if self.signal and self.pid is not None:  # a unit whose process was signalled by hand
            why.append(f"{self.signal} of its process {self.pid}")
        was = f" ({'; '.join(why)})" if why else ""
        return f"{self.what} by hand at {clock}: {self.unit}{was}"

    def to_dict(self) -> dict:
        """The change as an audit record's fields."""
        return {"what": self.what, "at": self.at, "unit": self.unit, "before": self.before, "pid": self.pid,
                "command": self.command, "holder_kind": self.kind, "signal": self.signal}


def put_back(changes: Sequence[ManualChange]) -> dict[str, str]:
    """``{unit: ActiveState before the operator stopped it}`` for the stops among ``changes``."""
    return {c.unit: c.before or "active" for c in changes if c.what == STOPPED and c.unit}


class Ledger:
    """The manual changes of one console run, node by node, in order."""

    def __init__(self) -> None:
        self._changes: dict[str, list[ManualChange]] = {}

    def record(self, change: ManualChange) -> None:
        """Remember one change. Starting a unit the operator had stopped by hand closes that stop."""
        changes = self._changes.setdefault(change.host, [])
        if change.what == STARTED:
            changes[:] = [c for c in changes if not (c.what == STOPPED and c.unit == change.unit)]
            return
        changes.append(change)

    def changes(self, host: str) -> list[ManualChange]:
        """Every open change on ``host``, oldest first."""
        return list(self._changes.get(host, ()))

    def stopped_units(self, host: str) -> dict[str, str]:
        """``{unit: ActiveState before the operator stopped it}`` for units still stopped by hand."""
        return put_back(self.changes(host))

    def forget(self, host: str, units: list[str] | None = None) -> None:
        """Close the stops of ``units`` (all of the node's changes when None): they were put back."""
        if units is None:
            self._changes.pop(host, None)
            return
        self._changes[host] = [c for c in self.changes(host) if not (c.what == STOPPED and c.unit in units)]

    def reported(self, host: str) -> None:
        """A repair's log listed the node's changes: the signals are history now (the stops stay
        until a restore puts their units back)."""
        self._changes[host] = [c for c in self.changes(host) if c.what != SIGNALLED]

    def hosts(self) -> list[str]:
        """Nodes with open changes."""
        return [h for h, changes in self._changes.items() if changes]


__all__ = ["SIGNALLED", "STARTED", "STOPPED", "Ledger", "ManualChange", "put_back"]
