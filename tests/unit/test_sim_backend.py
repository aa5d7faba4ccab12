"""SimulatedBackend and load_fleet: timeouts, streaming pace, identity checks, snapshots."""

from __future__ import annotations

import contextlib
import time

import pytest

from nvls_tui.backends.base import ProcessChanged, ProcessGone, ProcessIdentity
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.model import Verdict
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_sim_incident import NVLS_ENV, SMOKE


def test_load_fleet_selects_nodes_with_a_clustershell_node_set():
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=10)
    assert fleet.names == ["gpu05", "gpu06"]
    assert [b.host for b in sim_backends(fleet)] == ["gpu05", "gpu06"]
    assert all(b.simulated for b in sim_backends(fleet))


def test_load_fleet_refuses_unknown_scenarios_and_nodes():
    with pytest.raises(ValueError, match="unknown simulated scenario 'nope'"):
        load_fleet("sim:nope")
    with pytest.raises(ValueError, match="has no node gpu99"):
        load_fleet("sim:seed-incident/gpu99")


async def test_run_returns_what_the_command_printed_and_its_status():
    backend = sim_backends(load_fleet("sim:seed-incident/gpu05", speed=100))[0]
    result = await backend.run(["systemctl", "is-active", "nvidia-fabricmanager"], timeout=1)
    assert (result.exit_status, result.stdout) == (3, "failed\n")


async def test_stream_yields_smoke_rows_one_by_one_at_the_simulated_pace():
    backend = sim_backends(load_fleet("sim:healthy/hgx01", speed=20))[0]
    arrivals: list[tuple[float, str]] = []
    async with contextlib.aclosing(backend.stream(SMOKE, env=NVLS_ENV)) as lines:
        async for line in lines:
            arrivals.append((time.monotonic(), line))
    rows = [t for t, line in arrivals if line.strip()[:1].isdigit()]
    assert len(rows) == 5
    assert all(b - a >= 0.01 for a, b in zip(rows, rows[1:], strict=False))
    assert backend.last_exit_status == 0
    assert any(line.startswith("# Avg bus bandwidth    : ") for _t, line in arrivals)


async def test_closing_a_stream_early_ends_the_smoke_process_on_the_node():
    backend = sim_backends(load_fleet("sim:healthy/hgx01", speed=20))[0]
    async with contextlib.aclosing(backend.stream(SMOKE, env=NVLS_ENV)) as lines:
        async for line in lines:
            if line.startswith("#  Rank  7"):
                assert backend.node.alive("smoke")
                break
    assert backend.node.alive("smoke") == []
    assert backend.last_exit_status is None


async def test_signal_refuses_a_pid_whose_start_time_changed_and_reports_a_gone_pid():
    backend = sim_backends(load_fleet("sim:seed-incident/gpu05", speed=100))[0]
    ps = await backend.run(["ps", "-ww", "-o", "pid=,ppid=,user:32=,lstart=,cgroup=,args=", "-p", "924303"])
    start = " ".join(ps.stdout.split()[3:8])
    with pytest.raises(ProcessChanged):
        await backend.signal(924303, 15, ProcessIdentity(924303, "Mon Aug  3 10:00:00 2026",
                                                         "/snap/dcgm/62/usr/bin/nv-hostengine -n"))
    with pytest.raises(ProcessChanged):
        await backend.signal(924303, 15, ProcessIdentity(924303, start, "/usr/bin/something-else"))
    outcome = await backend.signal(924303, 15, ProcessIdentity(924303, start, "/snap/dcgm/62/usr/bin/nv-hostengine -n"))
    assert outcome.signalled
    assert (await backend.run(["systemctl", "is-active", "nvidia-dcgm"])).stdout == "inactive\n"
    with pytest.raises(ProcessGone):
        await backend.signal(924303, 15, ProcessIdentity(924303, start, "/snap/dcgm/62/usr/bin/nv-hostengine -n"))


async def test_snapshot_of_the_demo_marks_gpu05_and_gpu06_broken_and_the_others_healthy():
    from nvls_tui.diagnosis import diagnose

    fleet = load_fleet("sim:seed-incident", speed=50)
    verdicts = {}
    for backend in sim_backends(fleet):
        state = await backend.snapshot()
        assert state.simulated and state.reachable
        verdicts[state.host] = diagnose(state).verdict
        if state.host == "gpu05":
            kinds = {h.kind.value for h in state.holders}
            assert {"dcgm-exporter", "nv-hostengine", "nvidia-device-plugin", "nvidia-mig-manager",
                    "gpu-feature-discovery", "nvidia-smi"} <= kinds
    assert verdicts.pop("gpu05") == Verdict.BROKEN and verdicts.pop("gpu06") == Verdict.BROKEN
    assert set(verdicts.values()) == {Verdict.HEALTHY}
