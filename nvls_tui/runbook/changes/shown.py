"""What a plan shows besides the changes: the reads a step makes, the waits it makes, and its remarks.

None of these changes anything, so none goes through the door; each is a value with its own fields (what it reads,
what it waits for and for how long, what a remark is about) that a plan's readers read, and its words are
rendered here, once (:attr:`lines`, as :attr:`Change.lines <nvls_tui.runbook.changes.base.Change.lines>` are):

* :class:`Read`: a read-only command (``journalctl``, ``kubectl get``, a file of the node's read back);
* :class:`Wait`: what a step waits for, the read it makes to know (one that blocks until it is so, or one
  repeated) or the change it retries, and until when;
* :class:`Remark`: a line of the plan that is no command (``# ...``): :class:`Aside` in words, :class:`Instead`
  for a change made only in another outcome (the annotation a failed repair leaves), and the cluster's own
  (:mod:`nvls_tui.runbook.changes.in_cluster`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import ClassVar

from nvls_tui.runbook.changes.base import Argv, Change, noted


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
        return (noted(self.display, self.note),)


def _seconds(value: float) -> str:
    return f"{value:.0f} s"


@dataclass(frozen=True, slots=True)
class Wait:
    """A wait of a step, as the plan shows it.

    Attributes:
        until: what it waits for, in the operator's words ("the operands' pods are gone").
        read: the read it makes to know: one that blocks until it is so (``kubectl wait --for=delete``, bounded
            by its own ``--timeout``) or, ``repeated``, one made again and again; None where it retries the change
            listed just before it (an eviction a disruption budget refuses).
        limit: seconds it waits at most (0: it does not wait: one try).
        repeated: the read (or the change) is made again until what it waits for is so.
        every: seconds between two tries, where the plan knows them.
        then: what follows where ``limit`` passes first ("the repair is refused").
    """

    until: str
    read: Read | None = None
    limit: float = 0.0
    repeated: bool = False
    every: float | None = None
    then: str = ""

    bookkeeping: ClassVar[bool] = False

    @property
    def note(self) -> str:
        """What the plan says after the read (retrying a change: the whole line)."""
        if self.read is None and self.limit <= 0:
            return f"not retried: {self.then}" if self.then else "not retried"
        how = ("" if self.read is not None and not self.repeated
               else "retried" if self.read is None else "repeated")
        said = f"{how} every {_seconds(self.every)}" if how and self.every else how
        said = f"{said} until {self.until}".strip()
        if how and self.limit > 0:
            said += f", for up to {_seconds(self.limit)}"
        return f"{said}; else {self.then}" if self.then else said

    @property
    def lines(self) -> tuple[str, ...]:
        if self.read is None:
            return (f"# {self.note}",)
        return (noted(self.read.display, self.note),)


class Remark:
    """A line of a plan that is no command and changes nothing (``# ...``): why something is left, what happens
    instead. A base for the frozen dataclasses that say one (it holds no field)."""

    __slots__ = ()
    bookkeeping: ClassVar[bool] = False

    @property
    def text(self) -> str:
        """The remark's words (the line without its ``# ``)."""
        raise NotImplementedError

    @property
    def lines(self) -> tuple[str, ...]:
        return (f"# {self.text}",)


@dataclass(frozen=True, slots=True)
class Aside(Remark):
    """A remark in words only (a step that does one thing instead of another, say)."""

    said: str

    @property
    def text(self) -> str:
        return self.said


@dataclass(frozen=True, slots=True)
class Instead(Remark):
    """A change made only in another outcome than the plan's (``when``): shown, never performed."""

    change: Change
    when: str
    result: str = ""

    @property
    def text(self) -> str:
        said = f"instead, {self.when}: {self.change.command_lines()[0]}"
        return f"{said}  ({self.result})" if self.result else said


__all__ = ["Aside", "Instead", "Read", "Remark", "Wait"]
