"""The fleet grid's order by any column, k9s style: pick a column, pick it again to reverse.

Pure: the screen hands over each node's state, diagnosis and the grid's cell text. What could not be
read (``?``) or is not there (``–``) sorts after every known value, in either direction: an unknown is
never taken for a small (or a large) number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Columns whose cells are counts or measures: the largest first when picked (most holders, most
# kernel lines, the best bandwidth), then reversed. The others (words) sort A to Z first.
NUMERIC = frozenset({"holders", "kernel", "smoke", "age", "gpus"})
NOT_A_VALUE = frozenset({"", "?", "–"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class SortOrder:
    """How the fleet is ordered.

    Attributes:
        column: a grid column key (``verdict``, ``host``, ``holders`` ...), or ``""`` for the fleet's own order.
        reverse: the other way round from the column's first order.
    """

    column: str = "verdict"
    reverse: bool = False

    def picked(self, column: str) -> SortOrder:
        """The order after ``column`` is picked: the same column again reverses it."""
        if column == self.column:
            return SortOrder(column, not self.reverse)
        return SortOrder(column)

    def words(self, label: str | None = None) -> str:
        """The top line's words: ``sorted by verdict``, ``sorted by hold ↓``, ``fleet order``."""
        if not self.column:
            return "fleet order" + (", reversed" if self.reverse else "")
        if self.column == "verdict":
            return "sorted by verdict" + (", healthy first" if self.reverse else "")
        return f"sorted by {label or self.column} {self.arrow()}"

    def arrow(self) -> str:
        """``↓`` (largest or last first) or ``↑`` for a column's order, as its header and the top line show it;
        ``""`` for the fleet's own order and the verdict order (the default, said in words)."""
        if self.column in ("", "verdict"):
            return ""
        return "↓" if (self.column in NUMERIC) != self.reverse else "↑"


def natural(text: str) -> tuple[object, ...]:
    """A key that puts ``gpu9`` before ``gpu10`` (digits compare as numbers), ignoring case."""
    return tuple(int(part) if part.isdecimal() else part.casefold() for part in _DIGITS.split(text))


def cell_value(column: str, text: str) -> tuple[object, ...] | None:
    """The sort value of a cell as shown (None: unknown or absent). Numeric columns take the cell's first
    number (``✔ 291.9`` is 291.9, ``3 +1`` is 3); word columns sort naturally."""
    plain = text.strip()
    if plain in NOT_A_VALUE:
        return None
    if column in NUMERIC:
        number = _NUMBER.search(plain)
        return (float(number.group()),) if number else None
    return natural(plain)


def ordered(hosts: Sequence[str], order: SortOrder,
            value: Callable[[str], tuple[object, ...] | None]) -> list[str]:
    """``hosts`` in ``order``: known values sorted (ties keep the fleet's order), unknowns after them.

    Args:
        hosts: in the fleet's own order.
        order: the column and direction.
        value: a host's sort value for ``order.column`` (None: unknown, sorted last).
    """
    if not order.column:
        return list(reversed(hosts)) if order.reverse else list(hosts)
    values = {h: value(h) for h in hosts}
    known = [h for h in hosts if values[h] is not None]
    unknown = [h for h in hosts if values[h] is None]
    descending = (order.column in NUMERIC) != order.reverse
    # sort(reverse=True) keeps equal values in their order, so ties stay in the fleet's order both ways.
    known.sort(key=lambda h: values[h], reverse=descending)  # type: ignore[arg-type,return-value]
    return known + unknown


__all__ = ["NUMERIC", "SortOrder", "cell_value", "natural", "ordered"]
