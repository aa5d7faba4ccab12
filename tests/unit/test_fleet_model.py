"""The fleet: a chain of polls folded in one at a time reads as the same nodes built afresh."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nvls_tui.model import Fleet, NodeState

HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]

states = st.builds(NodeState, host=st.sampled_from(HOSTS + ["gpu99"]), simulated=st.booleans(),
                   lab=st.booleans(), polled_at=st.floats(0, 100))


@given(st.lists(st.booleans(), min_size=5, max_size=5), st.lists(states, max_size=30), st.booleans())
def test_a_fleet_made_by_with_node_answers_as_a_fresh_fleet_of_its_nodes(marks, polls, asked_first):
    # with_node hands its index and its simulated/lab counts on instead of walking every node again;
    # whatever was asked of the fleets along the way, the answers are those of a fresh fleet.
    fleet = Fleet(tuple(NodeState(h, simulated=m, lab=not m) for h, m in zip(HOSTS, marks, strict=True)))
    for state in polls:
        if asked_first:
            assert fleet.simulated == any(n.simulated for n in fleet.nodes)
        fleet = fleet.with_node(state)
    fresh = Fleet(fleet.nodes)
    assert fleet == fresh
    assert fleet.simulated == fresh.simulated == any(n.simulated for n in fleet.nodes)
    assert fleet.lab == fresh.lab == any(n.lab for n in fleet.nodes)
    assert fleet.hosts == fresh.hosts
    assert all(fleet.get(h) is fresh.get(h) for h in HOSTS + ["gpu99", "nope"])
