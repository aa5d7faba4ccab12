"""What every parser returns: what it understood, plus warnings about what it did not."""

from __future__ import annotations

import re
from collections.abc import Iterable
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


def literals_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """One pattern that finds any of ``words`` (literals), written as a tree of their shared beginnings.

    ``a|b|c`` over many literals makes the regular expression engine try every one of them at every
    character; the tree (``f(?:a(?:il|tal)|used)``) tries each first character once and goes on only
    where it matched, which costs about a third less over a 300-line kernel log (docs/performance.md,
    2026-12-07). At one position the longest literal that starts there is the match.
    """
    tree: dict[str, dict] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def written(node: dict[str, dict]) -> str:
        branches = [re.escape(char) + written(rest) for char, rest in sorted(node.items()) if char]
        if not branches:
            return ""
        if len(branches) == 1 and "" not in node:
            return branches[0]
        # A literal that ends here makes the longer ones that go on from here optional.
        return "(?:" + "|".join(branches) + ")" + ("?" if "" in node else "")

    return re.compile(written(tree))
