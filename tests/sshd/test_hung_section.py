"""A hung command reads the same on every transport: its section timed out, the node reachable, the rest read.

A wedged nvidia-smi used to make the whole node unreachable (everything else it could have told, units,
kernel log, holders, thrown away), and ``check`` waited out the query, then its fallback, then the
poll's own deadline: two to three times ``--timeout``. Now the hung command alone is cut off after one
``--timeout`` (the simulator waits it out once, without running the fallback; over SSH the bastion
ends only that section's script and reads the sections it had not reached with a second one), so a
hung section costs the poll one timeout more than a healthy poll, and its section is
``EVIDENCE_MISSING`` (timed out) on a node that is otherwise read.

Time is never measured here: the simulator's wait for a hung command is counted (a fake sleep that
records what it was asked to wait), and over SSH the sections that ran into the timeout are counted.
"""

from __future__ import annotations

import pytest

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.diagnosis import diagnose
from nvls_tui.headless.check import poll_all
from nvls_tui.model import Verdict
from nvls_tui.poll.evidence import NOT_RUN, TIMED_OUT
from nvls_tui.sim.fleet import load_fleet
from tests.sshd_rig import backend_for, find_sshd
from tests.waiting import waits_recorded

TIMEOUT = 7.0


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The simulator's waits for hung commands, recorded instead of slept (a fake sleeping clock)."""
    return waits_recorded(monkeypatch)


def wedged_fleet() -> tuple[SimulatedBackend, SimulatedBackend]:
    fleet = load_fleet("sim:wedged", speed=0)
    return (SimulatedBackend(fleet, "gpu-wedged01", timeout=TIMEOUT),
            SimulatedBackend(fleet, "gpu-ok01", timeout=TIMEOUT))


def assert_read_but_gpus(state) -> None:
    """Reachable, the GPUs timed out, everything else read."""
    assert state.reachable, state.error
    assert [(m.section, m.reason) for m in state.missing] == [("gpus", TIMED_OUT)]
    assert "`nvidia-smi` did not finish" in state.missing[0].detail
    assert state.service("nvidia-fabricmanager") is not None  # the units were read
    assert state.boot_id is not None and state.node_clock is not None  # so were the sections after the GPUs
    findings = {(f.code, f.section) for f in diagnose(state).findings}
    assert ("EVIDENCE_MISSING", "gpus") in findings
    assert diagnose(state).verdict is Verdict.BROKEN


async def test_a_hung_nvidia_smi_on_a_simulated_node_reads_as_its_gpus_timed_out_with_the_rest_read(waits):
    wedged, _ = wedged_fleet()
    assert_read_but_gpus(await wedged.snapshot())
    assert waits == [TIMEOUT]  # the query waited out once; its fallback was not run after it


async def test_check_of_a_wedged_node_costs_one_timeout_and_reads_it_reachable_beside_a_healthy_one(waits):
    wedged, ok = wedged_fleet()
    states = await poll_all([wedged, ok], deadline=3 * TIMEOUT)
    assert [s.host for s in states] == ["gpu-wedged01", "gpu-ok01"]
    assert_read_but_gpus(states[0])
    assert diagnose(states[1]).verdict is Verdict.HEALTHY
    assert waits == [TIMEOUT]  # one hung command, one timeout: not the query, its fallback and the deadline


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
async def test_over_a_real_sshd_a_hung_nvidia_smi_ends_only_its_section_and_the_node_reads_the_same(rigs):
    from tests.sshd.test_faults_ssh import wrap_tool

    rig = rigs({"hung": ("healthy", "hgx01")}, static=True)
    wrap_tool(rig, "hung", "nvidia-smi", "exec sleep 600")
    backend = backend_for(rig, "hung", timeout=3)
    try:
        sections = await backend.read_sections()
        # Only the hung command ran into the timeout (its fallback never ran after it); every section
        # after it was read by the second script.
        assert [n for n, r in sections.items() if r.exit_status == 124] == ["gpus"]
        assert all(r.exit_status != -1 for r in sections.values())
        state = await backend.snapshot()
    finally:
        await backend.close()
    assert state.reachable, state.error
    assert [(m.section, m.reason) for m in state.missing] == [("gpus", TIMED_OUT)]
    assert state.service("nvidia-fabricmanager") is not None and state.node_clock is not None
    assert diagnose(state).verdict is Verdict.BROKEN


async def test_on_this_machine_a_hung_nvml_read_is_the_gpus_timed_out_and_is_not_started_again(monkeypatch):
    import threading

    from nvls_tui.backends import local
    from nvls_tui.backends.base import BackendOptions
    from nvls_tui.poll.probe import Section

    stuck, calls = threading.Event(), []

    def hung_nvml():  # a driver that never answers; released at the end so the thread can finish
        calls.append(1)
        stuck.wait(60)
        return "580.82.07", ()

    monkeypatch.setattr(local, "read_nvml", hung_nvml)
    monkeypatch.setattr(local, "scan_holders", lambda root: ((), (), None))
    monkeypatch.setattr(local, "SECTIONS", (Section("clock", ("date", "-u", "+%Y-%m-%dT%H:%M:%SZ")),))
    backend = local.LocalBackend(BackendOptions(timeout=0.2))
    try:
        first, second = await backend.snapshot(), await backend.snapshot()
    finally:
        stuck.set()
    for state in (first, second):
        assert state.reachable, state.error
        # (Only the clock is asked here: the other sections are "not run".)
        assert [(m.section, m.reason) for m in state.missing if m.reason != NOT_RUN] == [("gpus", TIMED_OUT)]
        assert state.node_clock is not None  # the commands after it ran
    assert calls == [1]  # the second poll did not start another read into a driver still stuck


def test_the_console_gives_a_poll_the_same_deadline_as_check():
    # One poll path: with --timeout 20, two hung commands (40 s) used to make a node unreachable in the
    # console (its deadline was timeout + 5) while check read the rest of it (3 x timeout).
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.poll.once import poll_deadline
    from nvls_tui.sim.fleet import load_fleet

    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0)), poll_interval=None, timeout=20.0)
    assert app.pollers["gpu05"].timeout == poll_deadline(20.0) == 60.0
