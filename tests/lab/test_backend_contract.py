"""One contract, four backends: the simulated node, SSH to a real sshd on 127.0.0.1, local, and SSH to a lab node.

Each test below runs against every backend the runbook may be handed, so a rule that holds on one
holds on all: a command's exit status and streams, a missing file's error, streaming, the shared
signal guards (in ``Backend.signal``, one place), a real identity-checked SIGTERM, a command that
hangs (``CommandTimeout``, never a hang), and an unreachable node (SSH only: the simulator runs in
this process and local is this machine, so neither has a link to lose).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import psutil
import pytest

from nvls_tui.backends.base import (
    Backend,
    BackendOptions,
    CommandTimeout,
    InvalidArgument,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    Unreachable,
)
from nvls_tui.backends.local import LocalBackend
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.lab.machine import node_run
from nvls_tui.parsers.ps import parse_ps
from nvls_tui.poll.probe import RECORD_FILE, ps_argv
from nvls_tui.runbook.steps import DATE_ARGV
from nvls_tui.sim.fleet import load_fleet
from tests.conftest import LAB_COMMAND_TIMEOUT
from tests.sshd_rig import find_sshd, options_for
from tests.waiting import scaled

DATE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
KINDS = ("sim", "ssh", "local",
         # A lab node: SSH to a real sshd in a real systemd container, with real procps and the login shell's builtins.
         pytest.param("lab", marks=[pytest.mark.lab, pytest.mark.xdist_group("lab")]))


@dataclass
class Subject:
    """A backend under test and how to make a process on its node that it may signal."""

    kind: str
    backend: Backend
    spawn: Any  # () -> (pid, ProcessIdentity) of a live process of ours on the node
    hang: tuple[str, ...]  # a command that never ends on that node
    wedge: Any = lambda: None  # () -> None: make ``hang`` hang (the simulated node's nvidia-smi wedges)


def _real_process() -> tuple[subprocess.Popen, int, ProcessIdentity]:
    """A ``sleep`` of ours on this machine, with the identity ps gives it (what the probe records)."""
    proc = subprocess.Popen(["sleep", "300"])
    deadline = time.monotonic() + 10
    while True:
        seen = subprocess.run(ps_argv([proc.pid]), capture_output=True, text=True)
        entries = parse_ps(seen.stdout).value
        if entries and entries[0].args == "sleep 300":
            return proc, proc.pid, ProcessIdentity(proc.pid, entries[0].lstart, entries[0].args)
        assert time.monotonic() < deadline, "the sleep never showed in ps"
        time.sleep(0.02)


@pytest.fixture(params=KINDS)
def subject(request, sshd_fleet):
    kind = request.param
    started: list[subprocess.Popen] = []

    def real_spawn():
        proc, pid, identity = _real_process()
        started.append(proc)
        return pid, identity

    if kind == "sim":
        fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
        node = fleet.node("gpu05")

        def sim_spawn():
            proc = node.spawn(ppid=1, user="alice", start=fleet.clock.now() - 60, argv=["sleep", "300"],
                              cgroup="0::/user.slice/user-1000.slice/session-3.scope", role="other")
            entry = parse_ps(fleet_ps(fleet, proc.pid)).value[0]
            return proc.pid, ProcessIdentity(proc.pid, entry.lstart, entry.args)

        def wedge():
            node.wedged = True

        subj = Subject(kind, SimulatedBackend(fleet, "gpu05", timeout=2.0), sim_spawn, ("nvidia-smi",), wedge)
    elif kind == "ssh":
        if find_sshd() is None:
            pytest.skip("openssh-server is not installed (scripts/test.sh installs it)")
        rig = sshd_fleet(1)
        (target,) = parse_target(rig.target("gpu01"))
        subj = Subject(kind, SshBackend(target, options_for(rig, timeout=5.0)), real_spawn, ("sleep", "30"))
    elif kind == "lab":
        folder, nodes = request.getfixturevalue("lab")
        node = nodes["gpu06"]
        lab_spawned: list[int] = []

        def lab_spawn():
            pid, identity = _lab_process(node)
            lab_spawned.append(pid)
            return pid, identity

        # The lab tests' load-scaled timeout: a fixed 5 s did not cover an SSH start on the busy 2-core machine.
        backend = SshBackend(parse_target("gpu06")[0], BackendOptions(timeout=scaled(LAB_COMMAND_TIMEOUT),
                                                                      ssh_config=str(folder / "ssh_config")))
        subj = Subject(kind, backend, lab_spawn, ("sleep", "30"))
        subj.node = node  # type: ignore[attr-defined]
    else:
        subj = Subject(kind, LocalBackend(BackendOptions(timeout=5.0)), real_spawn, ("sleep", "30"))
    yield subj
    if kind == "lab":
        for pid in lab_spawned:
            node_run(node, "kill", "-KILL", str(pid), check=False)
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=10)


def _lab_process(node) -> tuple[int, ProcessIdentity]:
    """A ``sleep`` in the lab node (its own session, reparented to the node's systemd), as its ps shows it."""
    out = node_run(node, "sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!").stdout
    pid = int(out.strip())
    deadline = time.monotonic() + 10
    while True:
        entries = parse_ps(node_run(node, *ps_argv([pid]), check=False).stdout).value
        if entries and entries[0].args == "sleep 300":
            return pid, ProcessIdentity(pid, entries[0].lstart, entries[0].args)
        assert time.monotonic() < deadline, "the sleep never showed in the lab node's ps"
        time.sleep(0.05)


def fleet_ps(fleet, pid: int) -> str:
    """What the simulated node's own ps prints for ``pid`` (the identity the probe would record)."""
    from nvls_tui.sim.commands import execute

    return execute(fleet.node("gpu05"), tuple(ps_argv([pid])), fleet.clock.now()).stdout


async def closed(backend: Backend) -> None:
    await backend.close()


# ---- run ----------------------------------------------------------------------------------------------
async def test_run_returns_the_exit_status_and_the_output(subject):
    try:
        result = await subject.backend.run(DATE_ARGV)
        assert result.exit_status == 0 and result.ok
        assert DATE.match(result.stdout.strip()), result.stdout
        assert result.argv == tuple(DATE_ARGV)
    finally:
        await closed(subject.backend)


async def test_a_missing_file_is_exit_1_with_the_tools_own_words(subject):
    try:
        result = await subject.backend.run(("cat", RECORD_FILE))
        assert result.exit_status == 1 and not result.ok
        assert result.stderr.strip() == f"cat: {RECORD_FILE}: No such file or directory"
    finally:
        await closed(subject.backend)


async def test_stream_yields_lines_without_their_newline_and_records_the_exit_status(subject):
    try:
        lines = [line async for line in subject.backend.stream(DATE_ARGV)]
        assert len(lines) == 1 and DATE.match(lines[0]) and "\n" not in lines[0]
        assert subject.backend.last_exit_status == 0
    finally:
        await closed(subject.backend)


async def test_a_command_that_hangs_ends_in_command_timeout(subject):
    subject.wedge()
    began = time.monotonic()
    try:
        with pytest.raises(CommandTimeout):
            await subject.backend.run(subject.hang, 1.0)
        assert time.monotonic() - began < 30  # bounded by the timeout, not by the command
    finally:
        await closed(subject.backend)


# ---- signals -----------------------------------------------------------------------------------------------
async def test_the_shared_guards_refuse_before_anything_reaches_the_node(subject):
    backend = subject.backend
    pid, identity = await asyncio.to_thread(subject.spawn)
    try:
        for bad in (0, 1, -5):
            with pytest.raises(InvalidArgument):
                await backend.signal(bad, signal.SIGTERM, ProcessIdentity(bad, identity.start_time, "x"))
        with pytest.raises(ProcessChanged):  # no start time recorded: nothing proves it is the same process
            await backend.signal(pid, signal.SIGTERM, ProcessIdentity(pid, None, identity.command))
        with pytest.raises(InvalidArgument):  # an identity recorded for another PID
            await backend.signal(pid, signal.SIGTERM, ProcessIdentity(pid + 1, identity.start_time, identity.command))
        with pytest.raises(InvalidArgument):
            await backend.signal(pid, 9999, identity)
        assert process_alive(subject, pid)
    finally:
        await closed(backend)


async def test_a_changed_command_line_or_start_time_is_refused_and_a_matching_one_is_signalled(subject):
    backend = subject.backend
    pid, identity = await asyncio.to_thread(subject.spawn)
    try:
        with pytest.raises(ProcessChanged):
            await backend.signal(pid, signal.SIGTERM, ProcessIdentity(pid, identity.start_time, "sleep 301"))
        with pytest.raises(ProcessChanged):
            await backend.signal(pid, signal.SIGTERM, ProcessIdentity(pid, "Mon Jan  1 00:00:00 2001",
                                                                      identity.command))
        assert process_alive(subject, pid)
        outcome = await backend.signal(pid, signal.SIGTERM, identity)
        assert outcome.signalled and outcome.pid == pid
        await wait_dead(subject, pid)
        with pytest.raises(ProcessGone):
            await backend.signal(pid, signal.SIGTERM, identity)
    finally:
        await closed(backend)


async def test_a_read_only_backend_refuses_every_signal(subject):
    backend = subject.backend
    if isinstance(backend, SimulatedBackend):
        backend._read_only = True
    else:
        backend.options.read_only = True
    pid, identity = await asyncio.to_thread(subject.spawn)
    try:
        with pytest.raises(InvalidArgument, match="read-only"):
            await backend.signal(pid, signal.SIGTERM, identity)
        assert process_alive(subject, pid)
    finally:
        await closed(backend)


def process_alive(subject: Subject, pid: int) -> bool:
    if subject.kind == "sim":
        return pid in subject.backend.node.procs
    if subject.kind == "lab":
        state = node_run(subject.node, "ps", "-o", "stat=", "-p", str(pid), check=False).stdout.strip()
        return bool(state) and not state.startswith("Z")
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_dead(subject: Subject, pid: int) -> None:
    deadline = time.monotonic() + 10
    while process_alive(subject, pid):
        assert time.monotonic() < deadline, f"{pid} is still alive after SIGTERM"
        await asyncio.sleep(0.02)


# ---- unreachable -------------------------------------------------------------------------------------------
async def test_an_ssh_node_that_does_not_answer_is_unreachable_in_run_and_in_snapshot(sshd_fleet):
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed (scripts/test.sh installs it)")
    rig = sshd_fleet(1)
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (target,) = parse_target(f"{rig.user}@127.0.0.1:{port}")
    backend = SshBackend(target, options_for(rig, timeout=3.0))
    try:
        with pytest.raises(Unreachable):
            await backend.run(DATE_ARGV)
        state = await backend.snapshot()
        assert not state.reachable and state.error
    finally:
        await backend.close()
