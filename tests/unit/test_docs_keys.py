"""docs/console.md lists every key of the console.

The doc has one Markdown table per binding scope, under a heading that names the scope in backticks
(``### Fleet screen (scope `fleet`)``), with the columns ``key | id | does``: the key cell holds every
default key of the spec in backticks (Textual key names, as ``config.toml``'s ``[keymap]`` takes them),
the id cell the binding id. Keys that screens declare outside the binding table (no binding id) are in
one more table, ``key | screen | does``, under a heading that says ``screen-local``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

from textual.binding import Binding

import nvls_tui.console.screens
import nvls_tui.console.widgets
from nvls_tui.console.bindings import SCOPES, SPECS

DOC = Path(__file__).resolve().parents[2] / "docs" / "console.md"

HEADING = re.compile(r"^#{2,6}\s+(.*)$")
SCOPE = re.compile(r"scope `([a-z]+)`")
TICKED = re.compile(r"`([^`]+)`")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def doc_tables(text: str) -> dict[str, list[list[str]]]:
    """``{heading: rows}`` of every Markdown table in the doc (header and separator rows left out)."""
    tables: dict[str, list[list[str]]] = {}
    heading = ""
    in_table = False
    for line in text.splitlines():
        match = HEADING.match(line)
        if match:
            heading = match.group(1)
            in_table = False
            continue
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        cells = _cells(line)
        if not in_table:  # the header row
            in_table = True
            continue
        if all(set(cell) <= set("-: ") for cell in cells):
            continue
        tables.setdefault(heading, []).append(cells)
    return tables


def scope_rows(text: str) -> dict[str, list[list[str]]]:
    """The rows of each scope's table, by scope."""
    rows: dict[str, list[list[str]]] = {}
    for heading, table in doc_tables(text).items():
        match = SCOPE.search(heading)
        if match:
            rows.setdefault(match.group(1), []).extend(table)
    return rows


def local_rows(text: str) -> list[list[str]]:
    """The rows of the screen-local table."""
    return [row for heading, table in doc_tables(text).items() if "screen-local" in heading for row in table]


def keys_of(key: str) -> set[str]:
    return {k.strip() for k in key.split(",") if k.strip()}


def local_bindings() -> list[tuple[str, Binding]]:
    """``(class name, Binding)`` for every binding a screen or widget declares without a binding id."""
    found: list[tuple[str, Binding]] = []
    ids = {s.id for s in SPECS}
    for package in (nvls_tui.console.screens, nvls_tui.console.widgets):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__ or "BINDINGS" not in vars(cls):
                    continue
                for binding in vars(cls)["BINDINGS"]:
                    if isinstance(binding, Binding) and binding.id not in ids:
                        found.append((name, binding))
    return found


def test_the_doc_has_a_key_table_for_every_scope():
    rows = scope_rows(DOC.read_text())
    assert [scope for scope in SCOPES if not rows.get(scope)] == []


def test_every_binding_spec_is_in_the_doc_with_its_key_and_id():
    rows = scope_rows(DOC.read_text())
    missing = []
    for s in SPECS:
        found = [row for row in rows.get(s.scope, []) if len(row) >= 3 and TICKED.findall(row[1]) == [s.id]]
        if not found or not keys_of(s.key) <= set(TICKED.findall(found[0][0])) or not found[0][2]:
            missing.append(f"{s.scope}: {s.key} {s.id}")
    assert missing == []


def test_the_doc_lists_no_binding_that_is_not_in_the_table():
    rows = scope_rows(DOC.read_text())
    known = {(s.scope, s.id) for s in SPECS}
    extra = [(scope, row[1]) for scope, table in rows.items() for row in table
             if len(row) < 2 or (scope, "".join(TICKED.findall(row[1]))) not in known]
    assert extra == []


def test_every_screen_local_key_is_in_the_doc():
    rows = local_rows(DOC.read_text())
    bindings = local_bindings()
    assert bindings, "the screens declare some keys of their own"
    missing = []
    for screen, binding in bindings:
        found = [row for row in rows if len(row) >= 3 and screen in TICKED.findall(row[1])
                 and keys_of(binding.key) <= set(TICKED.findall(row[0]))]
        if not found:
            missing.append(f"{screen}: {binding.key} ({binding.action})")
    assert missing == []
