"""Issue 36 item 3: what follows a poll is one path, in every entry point.

The carries across rounds (how long the fabric has been registering, FM's ``NRestarts`` of the last round,
which makes a climbing count read as flapping now) used to live in the console's poller only. ``check
--watch`` polled in this process (``--via slurm``, or a test's ``connect`` hook) read every round as the
first: a Fabric Manager that systemd restarted twice between two rounds was not "flapping now" there,
while the console and the poller-process watch said it was. And the runbook's re-reads of a node had no
deadline of their own: a probe that never answers held the repair forever.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.model import NodeState
from nvls_tui.poll.after_poll import AfterPoll, carry_across
from nvls_tui.sim.fleet import load_fleet

FM = "nvidia-fabricmanager.service"


def _restarting_fleet():
    """gpu01 of the demo fleet, healthy, frozen clock, its FM restarted once by systemd so far."""
    fleet = load_fleet("sim:seed-incident/gpu01", speed=0)
    fleet.node("gpu01").units[FM].restarts = 1
    return fleet


def test_check_watch_polled_here_says_fm_is_flapping_when_its_restarts_climb_between_rounds(capsys):
    fleet = _restarting_fleet()
    rounds = []

    def connect(settings):
        # Polled here, a round builds its nodes anew (new connections each round); the third ends the watch.
        rounds.append(len(rounds) + 1)
        if len(rounds) == 2:
            fleet.node("gpu01").units[FM].restarts = 3  # systemd restarted it twice since round 1
        if len(rounds) == 3:
            raise KeyboardInterrupt
        return sim_backends(fleet)

    main(["check", "--watch", "0.01", "--json", "sim:seed-incident/gpu01"], connect=connect)
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert len(docs) == 2
    first, second = ([f["message"] for f in d["nodes"][0]["findings"] if f["code"] == "FM_RESTARTER"]
                     for d in docs)
    assert first and "since the last poll" not in first[0]
    assert second and "2 more restarts since the last poll: it is flapping now" in second[0], second


def test_after_poll_carries_from_the_last_good_read_of_the_same_node_only():
    fleet = _restarting_fleet()
    (backend,) = sim_backends(fleet)
    after = AfterPoll()
    first = asyncio.run(backend.snapshot())
    after.read(first, now=100.0)
    fleet.node("gpu01").units[FM].restarts = 2
    second = asyncio.run(backend.snapshot())
    state, diagnosis = after.read(second, now=110.0)
    assert state.fm_restarts_before == 1
    assert any("flapping now" in f.message for f in diagnosis.findings)
    # A round that could not read the node carries nothing forward, and is never healthy.
    gone = NodeState(host="gpu01", reachable=False, error="timed out")
    state, diagnosis = after.read(gone, now=120.0)
    assert diagnosis.verdict.value == "unreachable"
    third = asyncio.run(backend.snapshot())
    state, _ = after.read(third, now=130.0)
    assert state.fm_restarts_before == 2  # from the last read that saw the unit, not the failed one


def test_carry_across_counts_the_fabric_registering_from_the_first_round_that_saw_it():
    fleet = load_fleet("sim:seed-incident/gpu01", speed=0)
    (backend,) = sim_backends(fleet)
    state = asyncio.run(backend.snapshot())
    registering = state.replace(gpus=tuple(
        dataclasses.replace(g, fabric=dataclasses.replace(g.fabric, state="In Progress")) for g in state.gpus))
    first = carry_across(None, registering, elapsed=0.0)
    assert first.fabric_since == 0.0
    second = carry_across(first, registering, elapsed=12.5)
    assert second.fabric_since == pytest.approx(12.5)
