"""Issue 25's acceptance, one test over every transport: a hung ``nvidia-smi`` (NVML on this machine) reads
the same through the one poll (``poll_once``; one ``srun`` for ``check --via slurm``) whichever way the
node is reached: this machine, the simulator, SSH to a node of real processes behind a real sshd, and
srun into a lab node under real Slurm.

The same each time: the node is reachable, its ``gpus`` section is ``EVIDENCE_MISSING`` (timed out), an
error, so the verdict is broken; every other section reads as a healthy node's poll reads it (the hung
command cost its own section, nothing else); and the hung poll took at least the ``--timeout`` it waited
out and at most about one ``--timeout`` more than the healthy poll (the wall clock, on real processes;
the slack scales with the machine's load, ``tests/waiting.scaled``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState, Severity, Verdict
from nvls_tui.poll.evidence import TIMED_OUT
from nvls_tui.poll.once import poll_deadline, poll_once
from tests.lab.conftest import HEALTHY_NODES
from tests.sshd_rig import find_sshd
from tests.waiting import scaled

TIMEOUT = 5.0
"""``--timeout`` for every transport: a hung command is cut off after it."""
SLACK = 2.5
"""Seconds a hung poll may take beyond healthy + TIMEOUT (before the load scaling): process start-up."""
LAB_NODES = list(HEALTHY_NODES)

Poll = Callable[[str], Awaitable[NodeState]]
"""``poll("hung")`` or ``poll("healthy")``: one poll of that node through the transport under test."""


def local_poll(monkeypatch) -> Poll:
    """This machine's backend: real commands, real /proc; NVML (absent here) is the stand-in that hangs."""
    from nvls_tui.backends import local
    from nvls_tui.backends.base import BackendOptions

    def answering():
        return "580.82.07", ()

    async def poll(which: str) -> NodeState:
        stuck = threading.Event()

        def hung():  # a driver that never answers; released once the poll is over so the thread can finish
            stuck.wait(60)
            return "580.82.07", ()

        monkeypatch.setattr(local, "read_nvml", hung if which == "hung" else answering)
        try:
            return await poll_once(local.LocalBackend(BackendOptions(timeout=TIMEOUT)), poll_deadline(TIMEOUT))
        finally:
            stuck.set()  # the loop waits for the driver's thread at its end

    return poll


def simulated_poll() -> Poll:
    """``sim:wedged``: gpu-wedged01's nvidia-smi hangs, gpu-ok01 is healthy; the simulator waits it out."""
    from nvls_tui.backends.simulated import SimulatedBackend
    from nvls_tui.sim.fleet import load_fleet

    fleet = load_fleet("sim:wedged", speed=0)
    hosts = {"hung": "gpu-wedged01", "healthy": "gpu-ok01"}

    async def poll(which: str) -> NodeState:
        return await poll_once(SimulatedBackend(fleet, hosts[which], timeout=TIMEOUT), poll_deadline(TIMEOUT))

    return poll


def ssh_poll(rigs) -> Poll:
    """Two nodes of real processes behind a real sshd; one's nvidia-smi is wrapped to sleep for ever."""
    from tests.sshd.test_faults_ssh import wrap_tool
    from tests.sshd_rig import backend_for

    rig = rigs({"hung": ("healthy", "hgx01"), "healthy": ("healthy", "hgx01")}, static=True)
    wrap_tool(rig, "hung", "nvidia-smi", "exec sleep 600")

    async def poll(which: str) -> NodeState:
        backend = backend_for(rig, which, timeout=TIMEOUT)
        try:
            return await poll_once(backend, poll_deadline(TIMEOUT))
        finally:
            await backend.close()

    return poll


@pytest.fixture(scope="module")
def srun_lab(healthy_lab):
    """The shared healthy lab under the lab's real Slurm (tests/lab/conftest.py); the first node's nvidia-smi
    hangs while this file runs, and answers again after."""
    import subprocess

    folder, nodes, slurm = healthy_lab
    if not slurm:
        pytest.skip("no Slurm here (scripts/system-deps.sh installs it)")

    def on_node(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ssh", "-F", str(folder / "ssh_config"), LAB_NODES[0], command], capture_output=True,
                              text=True, timeout=scaled(60), check=False)

    # On the node, as an operator's wedged driver would leave it: nvidia-smi never returns.
    done = on_node("mv /usr/bin/nvidia-smi /usr/bin/nvidia-smi.sim && printf '#!/bin/sh\\nexec sleep 600\\n' "
                   "> /usr/bin/nvidia-smi && chmod 755 /usr/bin/nvidia-smi")
    assert done.returncode == 0, done.stderr
    yield folder
    # The lab is shared: the node's own nvidia-smi back, and answering.
    done = on_node("mv /usr/bin/nvidia-smi.sim /usr/bin/nvidia-smi && nvidia-smi -L")
    assert done.returncode == 0 and done.stdout.startswith("GPU 0: "), (done.stdout, done.stderr)


def srun_poll(folder: Path) -> Poll:
    """``check --via slurm``'s poll: one real srun into the node, its lines replayed through poll_once."""
    from nvls_tui.scheduler.slurm import Slurm
    from nvls_tui.scheduler.srun import poll_via_srun

    slurm = Slurm(conf=str(folder / "slurm.conf"))
    hosts = {"hung": LAB_NODES[0], "healthy": LAB_NODES[1]}

    async def poll(which: str) -> NodeState:
        (state,) = await poll_via_srun(slurm, [hosts[which]], scaled(120), 4 << 20, command_timeout=TIMEOUT)
        return state

    return poll


@pytest.fixture(params=[
    "local",
    "simulated",
    pytest.param("ssh", marks=[pytest.mark.ssh,
                               pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]),
    pytest.param("srun-lab", marks=[pytest.mark.lab, pytest.mark.xdist_group("lab-healthy")]),
])
def transport(request, monkeypatch) -> Poll:
    if request.param == "local":
        return local_poll(monkeypatch)
    if request.param == "simulated":
        return simulated_poll()
    if request.param == "ssh":
        return ssh_poll(request.getfixturevalue("rigs"))
    return srun_poll(request.getfixturevalue("srun_lab"))


def others(state: NodeState) -> list[tuple[str, str]]:
    """The evidence a poll could not read, but the GPUs'."""
    return sorted((m.section, m.reason) for m in state.missing if m.section != "gpus")


async def timed(poll: Poll, which: str) -> tuple[NodeState, float]:
    began = time.monotonic()
    state = await poll(which)
    return state, time.monotonic() - began


async def test_a_hung_nvidia_smi_reads_the_same_on_every_transport(transport):
    healthy, healthy_took = await timed(transport, "healthy")
    hung, hung_took = await timed(transport, "hung")

    assert healthy.reachable and hung.reachable, (healthy.error, hung.error)
    assert [(m.section, m.reason) for m in hung.missing if m.section == "gpus"] == [("gpus", TIMED_OUT)]
    assert not [m for m in healthy.missing if m.section == "gpus" and m.reason == TIMED_OUT]
    assert others(hung) == others(healthy)  # the hung command cost its own section, nothing else
    diagnosis = diagnose(hung)
    assert diagnosis.verdict is Verdict.BROKEN
    assert [(f.section, f.reason, f.severity) for f in diagnosis.findings if f.code == "EVIDENCE_MISSING"
            and f.section == "gpus"] == [("gpus", TIMED_OUT, Severity.ERROR)]
    # One --timeout waited out, and not much more: not the query, its fallback and the poll's deadline.
    assert hung_took >= TIMEOUT * 0.9
    assert hung_took <= healthy_took + TIMEOUT + scaled(SLACK), (hung_took, healthy_took)
