"""The console's garbage-collector settle (console/app.py): after its first poll the console freezes what
exists and raises the thresholds, and at its end gives both back, but never the freeze of a process that froze
its own objects first (a test worker freezes its imports; gc.unfreeze cannot give back only the console's).

Each case runs in a fresh interpreter: the collector's state is the process's, and a test worker's is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import gc, json, sys, weakref
from nvls_tui.console.app import release_garbage_collector, settle_garbage_collector
seen = {"default": gc.get_threshold()}
if sys.argv[1] == "froze-first":
    held = [[i] for i in range(1000)]          # the process's own long-lived objects
    gc.collect(); gc.freeze()
seen["before"] = gc.get_freeze_count()
class Node: pass
cycle = Node(); cycle.me = cycle; gone = weakref.ref(cycle); del cycle   # garbage: a freeze must not keep it
froze = settle_garbage_collector()
seen["froze"] = froze
seen["garbage_frozen"] = gone() is not None
seen["settled"] = [gc.get_freeze_count(), gc.get_threshold()]
release_garbage_collector(froze)
seen["released"] = [gc.get_freeze_count(), gc.get_threshold()]
print(json.dumps(seen))
"""


def settle_in_a_fresh_process(case: str) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_a_console_alone_in_its_process_freezes_at_its_first_poll_and_gives_it_all_back_at_its_end():
    seen = settle_in_a_fresh_process("alone")
    assert seen["before"] == 0
    assert seen["froze"] is True
    frozen, threshold = seen["settled"]
    assert frozen > 1000                       # everything alive then: modules, classes, the console's objects
    assert seen["garbage_frozen"] is False     # collected before the freeze
    assert threshold == [20_000, 20, 20]
    assert seen["released"] == [0, seen["default"]]


def test_a_process_that_froze_its_own_objects_first_keeps_its_freeze_and_the_console_only_raises_thresholds():
    seen = settle_in_a_fresh_process("froze-first")
    assert seen["before"] > 1000
    assert seen["froze"] is False
    assert seen["settled"] == [seen["before"], [20_000, 20, 20]]
    assert seen["released"] == [seen["before"], seen["default"]]


COUNTING = r"""
import gc, json, sys
from nvls_tui.console import app
counted = []
real = gc.get_freeze_count
def counting():
    counted.append(1)
    return real()
gc.get_freeze_count = counting
if sys.argv[1] == "froze-first":
    held = [[i] for i in range(1000)]
    gc.collect(); gc.freeze()
froze = []
for _ in range(3):                     # three consoles, one after another, in one process
    done = app.settle_garbage_collector()
    froze.append(done)
    app.release_garbage_collector(done)
print(json.dumps({"counted": len(counted), "froze": froze, "frozen_after": real()}))
"""


def test_consoles_started_one_after_another_count_the_frozen_objects_once_a_process():
    """``gc.get_freeze_count`` walks every frozen object (about 8 ms at a test worker's 276,000): a console asks it
    once a process, not at every start (the suite starts hundreds of consoles in each frozen worker)."""
    for case, froze in (("alone", [True, True, True]), ("froze-first", [False, False, False])):
        out = subprocess.run([sys.executable, "-c", COUNTING, case], capture_output=True, text=True, check=True).stdout
        seen = json.loads(out)
        assert seen["froze"] == froze, case
        assert seen["counted"] <= 1, case
        assert (seen["frozen_after"] > 1000) is (case == "froze-first"), case
