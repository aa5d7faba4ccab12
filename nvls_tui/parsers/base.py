"""What every parser returns: what it understood, plus warnings about what it did not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    """A parser's result. Parsers never raise on odd input; they return this instead.

    Attributes:
        value: what was understood (possibly partial or empty).
        warnings: one sentence per thing that could not be read.
    """

    value: T
    warnings: tuple[str, ...] = field(default=())


def number(text: str | None) -> float | int | None:
    """``"234.857"`` -> 234.857, ``"12"`` -> 12, ``"N/A"``/garbage/NaN -> None."""
    if text is None:
        return None
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        value = float(t)
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def strip_fixture_header(text: str) -> str:
    """Drop a ``# source:`` ... ``# ---`` header that public fixtures carry (and real output never does)."""
    if not text.startswith("# source:"):
        return text
    marker = "\n# ---\n"
    at = text.find(marker)
    return text[at + len(marker):] if at >= 0 else text
