"""The snapshot tier runs on one worker.

syrupy (under pytest-textual-snapshot) ends each worker's session with a report of the snapshots it found but did
not use, matching every such snapshot against every test the worker ran. Spread over four workers, each worker found
the snapshot files of the tests it ran and saw the others' as unused: 3-5 s of CPU a worker at the very end of
`make test-fast` (docs/performance.md). On one worker every snapshot it finds is one it used.
"""

from __future__ import annotations

import importlib
from pathlib import Path

SNAPSHOTS = Path(__file__).parents[2] / "snapshots"


def test_every_snapshot_module_is_in_the_snapshots_group():
    modules = sorted(SNAPSHOTS.glob("test_*.py"))
    assert len(modules) >= 2
    for path in modules:
        mark = getattr(importlib.import_module(f"snapshots.{path.stem}"), "pytestmark", None)
        assert mark is not None and mark.name == "xdist_group" and mark.args == ("snapshots",), (path.name, mark)
