"""A passing smoke record that no longer dates the kernel lines (sim:clock-step) is shown as untrusted wherever
the smoke result is shown: the grid's smoke cell and story, plain ``check`` and ``check --json``; a trusted
one still reads as it did."""

from __future__ import annotations

import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.story import node_story
from nvls_tui.model.jsonout import node_json
from nvls_tui.runbook import Runbook
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.unit.test_runbook_sim import FAST, SPEED
from tests.waiting import first_poll

WHY = {"gpu-ntp01": "the node's clock was stepped back since the smoke test",
       "gpu-ahead01": "the smoke record is dated after the node's clock"}
SHORT = {"gpu-ntp01": "clock stepped back", "gpu-ahead01": "dated after the node's clock"}


def test_check_json_says_the_smoke_record_is_not_trusted_and_why(capsys):
    main(["check", "sim:clock-step", "--json"])
    doc = json.loads(capsys.readouterr().out)
    smoke = {n["host"]: n["smoke"] for n in doc["nodes"]}
    assert {h: (s["passed"], s["trusted"], s["distrust"]) for h, s in smoke.items()} == {
        h: (True, False, why) for h, why in WHY.items()}


async def test_check_json_calls_the_record_a_repair_just_wrote_trusted():
    fleet = load_fleet("sim:clock-step/gpu-ntp01", speed=SPEED)
    (backend,) = sim_backends(fleet)
    assert (await Runbook(backend, FAST).run()).result == "repaired"
    state = await backend.snapshot()
    smoke = node_json(state, diagnose(state))["smoke"]
    assert (smoke["passed"], smoke["trusted"], smoke["distrust"]) == (True, True, None)


def test_plain_check_says_which_smoke_record_is_not_trusted(capsys):
    main(["check", "sim:clock-step"])
    out = capsys.readouterr().out
    for host, why in WHY.items():
        assert f"{host} smoke ✔ 292.1 GB/s not trusted: {why}" in out, out


def test_plain_check_says_nothing_of_trust_for_a_node_without_a_smoke_record(capsys):
    main(["check", "sim:healthy/hgx01"])
    assert "not trusted" not in capsys.readouterr().out


async def test_the_grid_shows_an_untrusted_smoke_record_as_unknown_and_the_story_says_why():
    fleet = load_fleet("sim:clock-step", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)  # and the grid drawn from it (its redraws are coalesced)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        for host, short in SHORT.items():
            assert grid.get_cell(host, "smoke").plain == "? 292.1"
            assert grid.get_cell(host, "note").plain.startswith("fabric out of sync")
            # The whole story (the grid's note column shows as much of it as fits).
            story = node_story(app.fleet.get(host), app.diagnoses[host]).text
            assert story.startswith("fabric out of sync ("), story
            assert f"smoke record not trusted: {short})" in story, story
