"""The report reads every audit record through the event types (issue 36 item 2), checked on its source.

Before, the report (nvls_tui/report) read the raw JSON records with about 180 ``.get("…")`` calls, a second
vocabulary beside the runbook's events that could drift from them field by field. Each record is now read
back once into its event (:mod:`nvls_tui.runbook.log_entries`, :mod:`nvls_tui.runbook.observed`), and the
report reads named fields. This test walks the report's syntax trees and fails on any ``.get`` with a literal
key, or a subscript by one (``record["event"]``): the shapes of reading a raw record. A lookup by a value
(``units.get(FM_UNIT)``, a unit's state by the unit's name) is a typed mapping's, and a module's constant
table (``KERNEL_FINDINGS["…"]``) is no record: both stay allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parents[2] / "nvls_tui" / "report"


def raw_reads(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every ``x.get("key", …)`` and ``x["key"]`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str) and not _constant(node.value):
            found.append((node.lineno, ast.unparse(node)))
    return found


def _constant(node: ast.expr) -> bool:
    """A module's constant table (``KERNEL_FINDINGS["…"]``), which is no record."""
    return isinstance(node, ast.Name) and node.id.isupper()


def test_the_check_sees_the_shapes_of_a_raw_read():
    source = ('a = r.get("event")\nb = r.get("time", "?")\nc = r["step"]\nd = units.get(name)\ne = x[0]\n'
              'f = CODES["XID"]\n')
    assert [line for line, _ in raw_reads(source)] == [1, 2, 3]


@pytest.mark.parametrize("path", sorted(REPORT.glob("*.py")), ids=lambda p: p.name)
def test_no_module_of_the_report_reads_a_raw_record(path):
    assert raw_reads(path.read_text(encoding="utf-8")) == [], f"{path.name} reads raw records"
