"""Search inside a screen (``/``, then ``n``/``N``): which lines match, which match is current, "3/7".

Pure: a screen hands over its lines as ``(location, text)`` pairs (a table's row key, a pane's line
number) and shows the current match itself. A match is the query as typed, anywhere in the line,
ignoring case (as ``less`` with ``-i``); an empty query matches nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field


def find(lines: Iterable[tuple[Hashable, str]], query: str) -> tuple[Hashable, ...]:
    """The locations of the lines that contain ``query`` (case-insensitive), in the order given."""
    needle = query.strip().casefold()
    if not needle:
        return ()
    return tuple(where for where, text in lines if needle in text.casefold())


@dataclass(frozen=True, slots=True)
class Search:
    """One search: the query, its matches and which one is current.

    Attributes:
        query: what was typed.
        hits: the matching locations, in screen order.
        at: the index of the current match in ``hits`` (0 when there is any).
    """

    query: str = ""
    hits: tuple[Hashable, ...] = field(default=())
    at: int = 0

    @classmethod
    def over(cls, lines: Iterable[tuple[Hashable, str]], query: str, near: Hashable | None = None) -> Search:
        """Search ``lines`` for ``query``; the current match is ``near`` where it matches, else the first."""
        hits = find(lines, query)
        return cls(query, hits, hits.index(near) if near in hits else 0)

    @property
    def current(self) -> Hashable | None:
        """The location of the current match (None without a match)."""
        return self.hits[self.at] if self.hits else None

    def step(self, by: int) -> Search:
        """The next (``by=1``) or previous (``by=-1``) match, wrapping around."""
        if not self.hits:
            return self
        return Search(self.query, self.hits, (self.at + by) % len(self.hits))

    def label(self) -> str:
        """``3/7``; ``no match`` for a query that matches nothing; empty before anything is typed."""
        if not self.query.strip():
            return ""
        return f"{self.at + 1}/{len(self.hits)}" if self.hits else "no match"


__all__ = ["Search", "find"]
