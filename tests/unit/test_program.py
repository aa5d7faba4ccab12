"""The repair's one program (runbook/program.py): the dry run lists it, the run walks it.

tests/unit/test_plan_is_the_run*.py compare what the two hand the door on the simulator; these hold the program's
own shape: a decision point's entries stand in its place with its words after them, and a point the run does not
know stops the step (fail closed: a plan line the run would not make is never passed over in silence).
"""

from __future__ import annotations

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.runbook import Runbook, program
from nvls_tui.runbook.changes import Read, ResetGpus
from nvls_tui.runbook.context import StepFailed
from nvls_tui.runbook.plan import plan_entries
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_plan_is_the_run import FAST
from tests.unit.test_runbook_units import incident_node


def test_a_decision_point_lists_its_entries_in_its_place_then_its_words():
    read = Read(("date",))
    entries = ["# before", program.Decide("x", (read, ResetGpus()), "# decided"), "# after"]
    assert list(program.flat(entries)) == ["# before", read, ResetGpus(), "# decided", "# after"]
    assert program.Decide("x", (read,), "# decided").lines == ("date", "# decided")
    assert program.Decide("x").lines == ()


def test_the_plan_is_the_program_flattened_step_by_step():
    state = incident_node()
    built = program.program(state, program.Known())
    assert plan_entries(state) == {name: list(program.flat(entries)) for name, entries in built.items()}
    assert tuple(built) == tuple(program.BUILDERS)


async def test_a_decision_point_the_run_does_not_know_stops_the_step():
    fleet = load_fleet("sim:seed-incident", speed=2000.0)
    (backend,) = [b for b in sim_backends(fleet) if b.host == "gpu05"]
    run = Runbook(backend, FAST, run_id="run1")
    with pytest.raises(StepFailed, match="does not know the decision point 'nowhere'"):
        await run._decide(incident_node(), program.Decide("nowhere"))
