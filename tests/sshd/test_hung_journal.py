"""A wedged journald (issue 25): ``journalctl`` hangs, and it is asked twice in a poll.

The kernel section (``journalctl -k``) and Fabric Manager's journal (``fm_log``, ``journalctl -u``) each used
to wait out a whole ``--timeout``; with ``dmesg`` slow as well (the ring fallback) the poll passed its deadline
(3 x ``--timeout``) and the node read UNREACHABLE, everything it had read thrown away. Now once a journalctl
timed out, the poll's later journalctl calls are not run: they read ``timed out`` with the reason ("journalctl
did not answer in the kernel section"), on every transport, so a hung journal costs the poll about one
``--timeout`` more than a healthy poll and the rest is read.

The transports are the real ones (this machine's commands; the simulator; a node of real processes behind a
real sshd; the one-script form that srun runs, through a real ``sh`` and coreutils ``timeout``); the hung
journalctl is a wrapper that sleeps.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from nvls_tui.model import NodeState
from nvls_tui.poll.evidence import TIMED_OUT
from nvls_tui.poll.once import poll_deadline, poll_once
from nvls_tui.poll.probe import JOURNAL_ROOT_ENV, new_nonce
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script
from tests.sshd_rig import find_sshd
from tests.unit.test_probe_journal_dirs import journal_in
from tests.waiting import scaled

TIMEOUT = 4.0
"""``--timeout`` for every transport."""
SLACK = 2.5
"""Seconds a hung poll may take beyond healthy + TIMEOUT (before the load scaling): process start-up."""
HUNG_JOURNAL = "#!/bin/sh\nexec sleep 600\n"
REASON = "journalctl did not answer in the kernel section"

Poll = Callable[[str], Awaitable[NodeState]]


def hung_bin(folder: Path) -> Path:
    """A folder whose ``journalctl`` never answers (to go first on PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "journalctl"
    tool.write_text(HUNG_JOURNAL)
    tool.chmod(0o755)
    return folder


def local_poll(monkeypatch, tmp_path: Path) -> Poll:
    """This machine: its real journalctl, dmesg and the rest; only NVML (absent here) is a stand-in."""
    import os

    from nvls_tui.backends import local
    from nvls_tui.backends.base import BackendOptions

    monkeypatch.setattr(local, "read_nvml", lambda: ("580.82.07", ()))
    path = os.environ.get("PATH", "")
    hung = hung_bin(tmp_path / "hung-bin")

    async def poll(which: str) -> NodeState:
        os.environ["PATH"] = f"{hung}:{path}" if which == "hung" else path
        try:
            return await poll_once(local.LocalBackend(BackendOptions(timeout=TIMEOUT)), poll_deadline(TIMEOUT))
        finally:
            os.environ["PATH"] = path

    monkeypatch.setenv("PATH", path)  # put back at the end whatever happens
    return poll


def simulated_poll() -> Poll:
    """sim:healthy's hgx01 with journalctl hung (``Node.hung_tools``), hgx02 healthy."""
    from nvls_tui.backends.simulated import SimulatedBackend
    from nvls_tui.sim.fleet import load_fleet

    fleet = load_fleet("sim:healthy", speed=0)
    fleet.node("hgx01").hung_tools.append("journalctl")
    hosts = {"hung": "hgx01", "healthy": "hgx02"}

    async def poll(which: str) -> NodeState:
        return await poll_once(SimulatedBackend(fleet, hosts[which], timeout=TIMEOUT), poll_deadline(TIMEOUT))

    return poll


def ssh_poll(rigs) -> Poll:
    """Two healthy nodes of real processes behind a real sshd; one's journalctl sleeps for ever."""
    from tests.sshd.test_faults_ssh import wrap_tool
    from tests.sshd_rig import backend_for

    rig = rigs({"hung": ("healthy", "hgx01"), "healthy": ("healthy", "hgx01")}, static=True)
    wrap_tool(rig, "hung", "journalctl", "exec sleep 600")

    async def poll(which: str) -> NodeState:
        backend = backend_for(rig, which, timeout=TIMEOUT)
        try:
            return await poll_once(backend, poll_deadline(TIMEOUT))
        finally:
            await backend.close()

    return poll


@pytest.fixture(params=[
    "local",
    "simulated",
    pytest.param("ssh", marks=[pytest.mark.ssh,
                               pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]),
])
def transport(request, monkeypatch, tmp_path) -> Poll:
    if request.param == "local":
        return local_poll(monkeypatch, tmp_path)
    if request.param == "simulated":
        return simulated_poll()
    return ssh_poll(request.getfixturevalue("rigs"))


def others(state: NodeState) -> list[tuple[str, str]]:
    """The evidence a poll could not read, but the journal's."""
    return sorted((m.section, m.reason) for m in state.missing if m.section not in ("kernel", "fm_log"))


async def timed(poll: Poll, which: str) -> tuple[NodeState, float]:
    began = time.monotonic()
    state = await poll(which)
    return state, time.monotonic() - began


async def test_a_hung_journalctl_costs_one_timeout_and_fm_log_reads_timed_out_with_the_reason(transport):
    healthy, healthy_took = await timed(transport, "healthy")
    hung, hung_took = await timed(transport, "hung")

    assert healthy.reachable and hung.reachable, (healthy.error, hung.error)
    # The kernel's journal timed out; the ring buffer (dmesg) was read in its place.
    assert hung.kernel_coverage is not None and hung.kernel_coverage.sources == ("dmesg",)
    assert any("`journalctl` did not finish" in note for note in hung.kernel_coverage.notes), hung.kernel_coverage
    # FM's journal was not asked again: timed out, with the reason.
    (fm_log,) = [m for m in hung.missing if m.section == "fm_log"]
    assert fm_log.reason == TIMED_OUT and REASON in fm_log.detail, fm_log
    assert hung.fm_journal is None
    assert others(hung) == others(healthy)  # the hung journal cost its own sections, nothing else
    assert hung.node_clock is not None and hung.boot_id is not None  # the sections after it were read
    assert hung_took >= TIMEOUT * 0.9
    assert hung_took <= healthy_took + TIMEOUT + scaled(SLACK), (hung_took, healthy_took)


def run_script(script: str, path: str, root: Path) -> tuple[str, float]:
    """Run a probe script with a real ``sh`` on this machine, ``root`` holding the node's journal folder: (its
    output, seconds it took)."""
    began = time.monotonic()
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=scaled(60),
                          env={"PATH": path, JOURNAL_ROOT_ENV: str(journal_in(root))}, check=False)
    return done.stdout, time.monotonic() - began


def test_the_one_script_form_asks_journalctl_once_when_it_hangs(tmp_path):
    # What `check --via slurm` runs on the node: coreutils `timeout` bounds each command.
    import os

    hung = hung_bin(tmp_path / "bin")
    nonce = new_nonce()
    script = probe_script(False, nonce, only=("kernel", "ring", "fm_log", "clock"), section_timeout=1.0)
    out, took = run_script(script, f"{hung}:{os.environ['PATH']}", tmp_path / "root")
    sections = split_probe_output(out, nonce)
    assert sections["kernel"][0] == 124
    status, text = sections["fm_log"]
    assert status == 124 and f"-- nvls-tui not run: {REASON}" in text
    assert sections["ring"][0] == 0 and "-- nvls-tui ring first" in sections["ring"][1]  # dmesg read instead
    assert sections["clock"][0] == 0
    assert took < 1.0 + scaled(SLACK)  # one timeout, not two


def test_the_second_script_over_ssh_skips_journalctl_when_the_first_saw_it_hang(tmp_path):
    # Over SSH the bastion ends the script at the hung kernel section and reads the rest with a second one,
    # told where journalctl hung; a journalctl that would answer is not asked.
    import os

    nonce = new_nonce()
    script = probe_script(False, nonce, only=("ring", "fm_log", "clock"), journal_hung="kernel")
    out, _ = run_script(script, os.environ["PATH"], tmp_path / "root")
    sections = split_probe_output(out, nonce)
    assert sections["fm_log"] == (124, f"-- nvls-tui not run: {REASON}\n")
    assert sections["clock"][0] == 0 and sections["ring"][0] == 0


def test_journal_hung_takes_only_a_section_name():
    with pytest.raises(ValueError):
        probe_script(False, "0", journal_hung="kernel; reboot")


async def test_journalctl_and_dmesg_both_hung_read_the_node_reachable_in_two_timeouts(monkeypatch):
    # Before, kernel + ring + fm_log waited out three timeouts: the whole poll's deadline, UNREACHABLE.
    from nvls_tui.backends import simulated
    from nvls_tui.backends.simulated import SimulatedBackend
    from nvls_tui.sim.fleet import load_fleet

    waits: list[float] = []

    async def record(seconds: float) -> None:  # counted, not slept
        waits.append(seconds)
        await asyncio.sleep(0)

    monkeypatch.setattr(simulated, "wait_out", record)
    fleet = load_fleet("sim:healthy", speed=0)
    fleet.node("hgx01").hung_tools.extend(["journalctl", "dmesg"])
    state = await poll_once(SimulatedBackend(fleet, "hgx01", timeout=TIMEOUT), poll_deadline(TIMEOUT))
    assert waits == [TIMEOUT, TIMEOUT]  # journalctl -k, then dmesg; FM's journalctl not asked
    assert state.reachable, state.error
    reasons = {m.section: m for m in state.missing}
    assert reasons["kernel"].reason == TIMED_OUT
    assert "`journalctl` did not finish" in reasons["kernel"].detail and "`dmesg` did not finish" in reasons[
        "kernel"].detail
    assert reasons["fm_log"].reason == TIMED_OUT and REASON in reasons["fm_log"].detail
    assert sorted(reasons) == ["fm_log", "kernel"]
