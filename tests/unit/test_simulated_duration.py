"""Issue 28 item 6: the plan of a simulated repair says how long it takes on the simulator's clock ("simulated:
about 15 s"), never the 1–2 minutes of a real HGX node as if it were one; real nodes keep their minutes. The
estimate comes from the simulator's own timings, and a real simulated repair fits in it."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.deadlines import duration_line, simulated_seconds
from nvls_tui.views.runbook import repair_options


def test_a_simulated_plan_says_simulated_seconds_and_the_real_minutes_beside_them():
    options = repair_options(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=1)))
    line = duration_line(options, "parallel", [False])
    assert line.startswith("simulated: about 15 s on the simulator's clock; a real HGX node usually takes 1–2 minutes; ")
    assert not line.startswith("usually")


def test_a_faster_simulator_says_how_fast_it_runs():
    options = repair_options(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=10)))
    assert "on the simulator's clock (which runs 10× real time)" in duration_line(options, "parallel", [False])


def test_serial_simulated_nodes_add_up():
    options = repair_options(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=1)))
    assert ("simulated: about 15 s on the simulator's clock per node, about 30 s in all, one node after another"
            in duration_line(options, "serial", [False, False]))


def test_real_nodes_keep_their_minutes():
    assert duration_line(RepairOptions(), "parallel", [False]).startswith("usually about 1–2 minutes; ")


def test_the_headless_dry_run_of_a_simulated_node_says_simulated(tmp_path, capsys):
    backends = sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0))
    assert main(["repair", "sim:seed-incident/gpu05", "--dry-run", "--audit-dir", str(tmp_path)],
                connect=lambda settings: backends) == 0
    out = capsys.readouterr().out
    assert "expected duration: simulated: about 15 s on the simulator's clock; a real HGX node usually" in out


async def test_a_simulated_repair_takes_no_longer_than_the_plan_says():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)  # frozen: only the runbook's waits move it
    backends = sim_backends(fleet)
    options = repair_options(backends)
    outcome = await Runbook(backends[0], options).run()
    assert outcome.result == "repaired", outcome.message
    # outcome.duration is on the simulator's clock (the options wait on it), as the estimate is.
    assert simulated_seconds(options) * 0.5 <= outcome.duration <= simulated_seconds(options), outcome.duration
