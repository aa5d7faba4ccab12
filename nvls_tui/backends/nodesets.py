"""How many nodes a command line names, counted before anything is expanded. Pure.

ClusterShell's ``NodeSet`` builds every name of a range to know its length (``gpu[1-30000000]``:
4 GB and over a minute), so a node set is counted here from its ranges, and the total across every
target (command line, hosts file, ``--via slurm``) is held to one cap before any node set is expanded.
"""

from __future__ import annotations

import re

MAX_TARGETS = 10_000
"""The most nodes one run of nvls-tui takes, all targets together (a fleet is 1,024 nodes at most today)."""

_GROUP = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"^(\d{1,18})(?:-(\d{1,18}))?(?:/(\d{1,18}))?$")
# ClusterShell's set operators and groups: not counted, so refused where a size is needed.
_OPERATORS = frozenset("!&^@ \t")


def _top_level_parts(text: str) -> list[str] | None:
    """``a[1-2],b`` -> ``["a[1-2]", "b"]`` (commas inside brackets kept); None for unbalanced brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                return None
        elif char == "]":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        return None
    parts.append(text[start:])
    return parts


def _range_size(item: str) -> int | None:
    """``1-8`` -> 8, ``05`` -> 1, ``1-10/2`` -> 5; None when it is not a range."""
    match = _RANGE.match(item)
    if match is None:
        return None
    low, high, step = int(match[1]), int(match[2] or match[1]), int(match[3] or 1)
    if step < 1:
        return None
    return (high - low) // step + 1 if high >= low else 0  # a reversed range: ClusterShell says why


def nodeset_size(text: str) -> int | None:
    """How many names the node set ``text`` writes, from its ranges, without building one of them.

    Names, commas and bracketed ranges are counted (``gpu[01-08,10]`` 9, ``r[1-2]n[1-4]`` 8,
    ``gpu[1-10/2]`` 5); a name written twice counts twice, so the count is never below the set's size.

    Returns:
        The count, or None for what this does not count: ClusterShell's operators (``!``, ``&``,
        ``^``), groups (``@rack``), nested or unbalanced brackets, an empty text.
    """
    if not text or _OPERATORS & set(text):
        return None
    parts = _top_level_parts(text)
    if parts is None:
        return None
    total = 0
    for part in parts:
        if not part:
            continue
        size = 1
        for group in _GROUP.findall(part):
            sizes = [_range_size(item) for item in group.split(",")]
            if not sizes or any(s is None for s in sizes):
                return None
            size *= sum(s for s in sizes if s is not None)
        total += size
    return total if total else None


__all__ = ["MAX_TARGETS", "nodeset_size"]
