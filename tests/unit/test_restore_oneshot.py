"""Issue 38 item 9: the plan's "then starts again" omitted nvidia-snapshot.service, which the restore started.

The snapshot service is a oneshot its timer starts every few minutes: read a moment apart, it is `activating`
or `inactive` (runbook/drift.py's FLAPPING_UNITS), so a plan made while it slept and a run that found it
running disagreed on whether the restore starts it. The restore now leaves the oneshot to its timer whenever the
timer ran before (the timer is started again, and it runs the service), so the plan and the run agree whatever
the moment each read the node.
"""

from __future__ import annotations

import pytest

from nvls_tui.runbook.changes import UnitChange
from nvls_tui.runbook.restore import restore_actions
from nvls_tui.runbook.steps import SNAPSHOT_SERVICE, SNAPSHOT_TIMER


def started(prior: dict[str, str]) -> list[str]:
    return [a.unit for a in restore_actions(prior, {}, {u: "inactive" for u in prior}, {})
            if isinstance(a, UnitChange) and a.verb == "start"]


@pytest.mark.parametrize("service", ["activating", "active", "inactive"])
def test_the_oneshot_is_left_to_its_timer_whatever_the_moment_it_was_read(service):
    assert started({SNAPSHOT_TIMER: "active", SNAPSHOT_SERVICE: service}) == [SNAPSHOT_TIMER]


def test_a_oneshot_that_ran_without_its_timer_is_started_again():
    # Someone started the service by hand with its timer off: nothing else would run it.
    assert started({SNAPSHOT_TIMER: "inactive", SNAPSHOT_SERVICE: "activating"}) == [SNAPSHOT_SERVICE]
