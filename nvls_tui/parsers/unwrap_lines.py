"""A paste's lines as the unwrapping holds them (:mod:`nvls_tui.parsers.unwrap`) and gives them back. Pure.

A line that no wrapper said anything of is held as its bare text; a :class:`Line` (its text and the host,
rank, time, pod and container a wrapper named) only where one did. A Line costs ~80 bytes more than its
text: a paste of short lines (a logger's escaped newlines) took ~50 times its size in Lines alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast, overload


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the inner text and what its wrappers said about it.

    Attributes:
        text: the line as the inner tool printed it (or in a form the parsers read: nvls_tui.parsers.unwrap).
        host: the node it came from (a journal's host field, a pdsh/clush/mpirun tag).
        rank: the launcher's rank (torch ``[rankN]:``, mpirun ``--tag-output``, srun ``--label``).
        time: the time stamp of the line's record as printed.
        pod: ``kubectl logs --prefix``'s pod.
        container: ``kubectl logs --prefix``'s container.
    """

    text: str
    host: str | None = None
    rank: int | None = None
    time: str | None = None
    pod: str | None = None
    container: str | None = None


# A line as the layers hold it (module doc): a bare str costs its characters and the list's pointer.
Row = str | Line


def text_of(row: Row) -> str:
    return row if isinstance(row, str) else row.text


def said(row: Row, name: str) -> Any:
    """What a wrapper said of the row (``host``, ``time``...), None where nothing was said."""
    return None if isinstance(row, str) else getattr(row, name)


def with_text(row: Row, text: str, **named: Any) -> Row:
    """``row`` with ``text`` and what a wrapper said of it (a None keeps what was said before)."""
    named = {name: value for name, value in named.items() if value is not None}
    if isinstance(row, str):
        return Line(text, **named) if named else text
    return replace(row, text=text, **named)


def as_line(row: Row) -> Line:
    return Line(row) if isinstance(row, str) else row


def blank(text: str) -> bool:
    return not text or text.isspace()  # `not text.strip()` without a copy of every line


class Lines(Sequence[Line]):
    """The inner text's lines as :class:`Line` s, each made when it is read: the rows behind them stay
    bare text where no wrapper said anything (see ``Row``)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> Line: ...
    @overload
    def __getitem__(self, index: slice) -> list[Line]: ...
    def __getitem__(self, index: int | slice) -> Line | list[Line]:
        if isinstance(index, slice):
            return [as_line(row) for row in self.rows[index]]
        return as_line(self.rows[index])

    def __iter__(self) -> Iterator[Line]:
        return map(as_line, self.rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # as a list's: equal by content


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A text read inside its wrappers.

    Attributes:
        text: the inner text (the input itself when no wrapper was found).
        forms: the wrappers found, outermost first (empty: none).
        lines: the inner text's lines with what the wrappers said about each.
    """

    text: str
    forms: tuple[str, ...]
    lines: Sequence[Line]

    def _distinct(self, attr: str) -> list:
        seen: dict = {}
        rows: Iterable[Row] = self.lines.rows if isinstance(self.lines, Lines) else self.lines
        for row in rows:
            value = said(row, attr)
            if value is not None:
                seen.setdefault(value, None)
        return list(seen)

    @property
    def hosts(self) -> list[str]:
        """The hosts the wrappers named, in order of first appearance."""
        return self._distinct("host")

    @property
    def ranks(self) -> list[int]:
        """The ranks the wrappers named, ascending."""
        return sorted(self._distinct("rank"))

    @property
    def pods(self) -> list[str]:
        """kubectl's pods, in order of first appearance."""
        return self._distinct("pod")

    @property
    def containers(self) -> list[str]:
        """kubectl's containers, in order of first appearance."""
        return self._distinct("container")

    @property
    def times(self) -> tuple[str, str] | None:
        """The first and the last time stamp the wrappers printed (None when they printed none)."""
        stamps = self._distinct("time")
        return (stamps[0], stamps[-1]) if stamps else None


def bare_lines(text: str) -> Lines:
    """The lines of ``text`` as they are (no wrapper said anything of them)."""
    return Lines(cast(list[Row], text.split("\n")))


def times_by_line(lines: Iterable[Line]) -> dict[str, str]:
    """Each inner line (stripped) -> the time its wrapper printed (the first, for a line seen twice)."""
    out: dict[str, str] = {}
    for line in lines:
        if line.time is not None:
            out.setdefault(line.text.strip(), line.time)
    return out


__all__ = ["Line", "Lines", "Row", "Unwrapped", "as_line", "bare_lines", "blank", "said", "text_of", "times_by_line",
           "with_text"]
