"""The fleet screen's command line (``:``, as k9s's): what a typed command means. Pure.

``:node gpu06`` opens a node, ``:logs gpu06`` its logs, ``:sort hold`` sorts the fleet by a column (its key or
the label the grid shows), ``:filter TEXT`` filters it, ``:help`` shows every key and ``:q`` quits (asking first
while something runs, as ``q``). A command that cannot be read is one sentence naming what is known: a key
never does nothing without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

KNOWN = "node HOST, logs HOST, sort COLUMN, filter TEXT, help, q"
# What each typed word means (k9s's short forms too).
NAMES = {"node": "node", "n": "node", "no": "node", "logs": "logs", "log": "logs", "l": "logs", "sort": "sort",
         "s": "sort", "filter": "filter", "f": "filter", "help": "help", "h": "help", "?": "help",
         "q": "quit", "quit": "quit", "q!": "quit", "exit": "quit"}


@dataclass(frozen=True, slots=True)
class Command:
    """A command read from the command line: ``name`` (node, logs, sort, filter, help, quit) and its argument
    (a host, a column's key, a filter's text; ``""`` for none)."""

    name: str
    arg: str


def _column(word: str, columns: Sequence[tuple[str, str]]) -> str | None:
    """The key of the column ``word`` names (its key or its label, any case), or None."""
    wanted = word.casefold()
    for key, label in columns:
        if wanted in (key.casefold(), label.casefold()) or (not key and wanted in ("fleet", "fleet order")):
            return key
    return None


def parse_command(text: str, hosts: Sequence[str], columns: Sequence[tuple[str, str]]) -> Command | str:
    """The command ``text`` is, or why it is none (one sentence).

    Args:
        hosts: the console's nodes (``:node`` and ``:logs`` take one of them).
        columns: ``(key, label)`` of every order the fleet can be sorted by (``FleetScreen.sortable_columns``).
    """
    word, _, rest = text.strip().partition(" ")
    arg = rest.strip()
    name = NAMES.get(word.casefold())
    if name is None:
        return f"unknown command {word or '(none)'} (known: {KNOWN})"
    if name in ("node", "logs"):
        if arg not in hosts:
            return f"no node {arg or '(none given)'} in this console (:{name} HOST)"
        return Command(name, arg)
    if name == "sort":
        key = _column(arg, columns)
        if key is None:
            known = ", ".join(label for _, label in columns)
            return f"no column {arg or '(none given)'} to sort by (known: {known})"
        return Command("sort", key)
    return Command(name, arg if name == "filter" else "")


def completions(hosts: Sequence[str], columns: Sequence[tuple[str, str]]) -> list[str]:
    """Every whole command the line can complete to, in the order offered (commands, then their arguments)."""
    out = ["help", "q", "filter "]
    out += [f"sort {label}" for key, label in columns if key]
    out += [f"{name} {host}" for name in ("node", "logs") for host in hosts]
    return out


__all__ = ["KNOWN", "Command", "completions", "parse_command"]
