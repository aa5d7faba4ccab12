"""The autopilot's memory on disk: the breaker, each node's repairs and escalation, the canary.

One JSON file under the state directory, written whole to a temporary file, fsynced, then renamed over
the old one: a crash leaves the old state or the new, never half of one. A restart reads it back, so a
tripped breaker stays tripped and a spent budget stays spent. A file that cannot be read is an error, never
an empty state (an empty state would forget a tripped breaker).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FILE = "autopilot-state.json"
VERSION = 1


class StateError(ValueError):
    """The state file cannot be used; ``str()`` is one sentence naming it."""


@dataclass(slots=True)
class Breaker:
    """The circuit breaker: once tripped, only an operator closes it."""

    tripped: bool = False
    since: float | None = None
    reason: str = ""
    closed_at: float | None = None  # repairs before an operator closed it no longer count in its window


@dataclass(slots=True)
class Repair:
    """One repair the autopilot started: when, and whether its smoke test passed (None: not ended yet)."""

    host: str
    at: float
    ok: bool | None = None
    ended: float | None = None


@dataclass(slots=True)
class State:
    """Everything that must survive a restart."""

    breaker: Breaker = field(default_factory=Breaker)
    repairs: list[Repair] = field(default_factory=list)
    escalated: dict[str, str] = field(default_factory=dict)  # host -> why a person must act (budget spent)
    canary_passed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> State:
        try:
            if doc.get("version") != VERSION:
                raise StateError(f"{where}: state version {doc.get('version')!r}, this nvls-tui reads {VERSION}")
            return cls(breaker=Breaker(**doc["breaker"]), repairs=[Repair(**r) for r in doc["repairs"]],
                       escalated={str(k): str(v) for k, v in doc["escalated"].items()},
                       canary_passed=bool(doc["canary_passed"]))
        except (AttributeError, KeyError, TypeError) as exc:
            raise StateError(f"{where}: not an autopilot state ({type(exc).__name__}: {exc})") from None


class StateStore:
    """The state file of one state directory (created 0700 when missing)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILE
        self._saved: bytes | None = None  # what is on disk, as this store last wrote or read it

    def load(self) -> State:
        """The saved state, or a fresh one where none was ever saved.

        Raises:
            StateError: the file exists but cannot be read or parsed.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return State()
        except OSError as exc:
            raise StateError(f"{self.path}: {exc.strerror or exc}") from None
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise StateError(f"{self.path}: not JSON ({exc})") from None
        state = State.from_json(doc, str(self.path))
        self._saved = self._encode(state)
        return state

    @staticmethod
    def _encode(state: State) -> bytes:
        return json.dumps(state.to_json(), sort_keys=True).encode("utf-8")

    def save(self, state: State) -> None:
        """Write ``state`` atomically (temporary file, fsync, rename, fsync of the directory); a state the
        same as the one on disk is not written again (a quiet round costs no fsync)."""
        data = self._encode(state)
        if data == self._saved and self.path.exists():
            return
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self._saved = data
        dfd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


__all__ = ["FILE", "Breaker", "Repair", "State", "StateError", "StateStore"]
