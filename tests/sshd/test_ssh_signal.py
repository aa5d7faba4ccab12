"""signal(pid, sig, expected) against real processes started through sshd."""

from __future__ import annotations

import random

import psutil
import pytest

from nvls_tui.backends.base import (
    CommandFailed,
    InvalidArgument,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    identity_text,
)
from nvls_tui.backends.ssh import signal_script
from tests.sshd_rig import backend_for
from tests.waiting import until

pytestmark = pytest.mark.ssh


@pytest.fixture
async def node(sshd_fleet):
    """A backend on a rig node, plus the sleeps it started (killed at the end whatever happens)."""
    backend = backend_for(sshd_fleet(2))
    started: list[int] = []
    yield backend, started
    await backend.close()
    for pid in started:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


async def start_sleep(backend, started) -> ProcessIdentity:
    """Start a detached ``sleep`` on the node and read its identity the way a poll does (ps lstart+args)."""
    seconds = f"{60 + random.random() * 10:.5f}"
    result = await backend.run(["sh", "-c", f"sleep {seconds} >/dev/null 2>&1 & echo $!"])
    pid = int(result.stdout)
    started.append(pid)
    ps = await backend.run(["env", "LC_ALL=C", "ps", "-ww", "-o", "lstart=", "-p", str(pid)])
    return ProcessIdentity(pid=pid, start_time=ps.stdout.strip(), command=f"sleep {seconds}")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_sigterm_reaches_a_process_whose_identity_still_matches(node):
    backend, started = node
    expected = await start_sleep(backend, started)
    outcome = await backend.signal(expected.pid, 15, expected)
    assert (outcome.pid, outcome.signalled, outcome.reason) == (expected.pid, True, "SIGTERM sent")
    await until(lambda: not alive(expected.pid), 5, "the signalled sleep has exited")


async def test_a_stale_start_time_is_refused_and_the_process_is_left_alone(node):
    backend, started = node
    expected = await start_sleep(backend, started)
    stale = ProcessIdentity(expected.pid, "Mon Jan  1 00:00:00 2024", expected.command)
    with pytest.raises(ProcessChanged, match="not the process that was selected"):
        await backend.signal(expected.pid, 15, stale)
    assert alive(expected.pid)


async def test_a_different_command_line_is_refused(node):
    backend, started = node
    expected = await start_sleep(backend, started)
    other = ProcessIdentity(expected.pid, expected.start_time, "/usr/bin/nv-hostengine")
    with pytest.raises(ProcessChanged):
        await backend.signal(expected.pid, 15, other)
    assert alive(expected.pid)


async def test_an_identity_without_a_start_time_is_refused(node):
    backend, started = node
    expected = await start_sleep(backend, started)
    with pytest.raises(ProcessChanged, match="no recorded start time"):
        await backend.signal(expected.pid, 15, ProcessIdentity(expected.pid, None, expected.command))
    assert alive(expected.pid)


async def test_a_vanished_pid_is_process_gone(node):
    backend, started = node
    expected = await start_sleep(backend, started)
    psutil.Process(expected.pid).kill()
    await until(lambda: not alive(expected.pid), 5, "the sleep has been reaped")
    with pytest.raises(ProcessGone, match="already exited"):
        await backend.signal(expected.pid, 15, expected)


async def test_sigkill_is_sent_only_because_the_caller_asked_for_it(node):
    backend, started = node
    expected = await start_sleep(backend, started)
    outcome = await backend.signal(expected.pid, 9, expected)
    assert outcome.reason == "SIGKILL sent"
    await until(lambda: not alive(expected.pid), 5, "the killed sleep is gone")


async def test_unknown_signals_and_read_only_sessions_are_refused(sshd_fleet):
    rig = sshd_fleet(2)
    identity = ProcessIdentity(4242, "Mon Jan  1 00:00:00 2024", "sleep 1")
    with pytest.raises(InvalidArgument, match="refusing signal"):
        await backend_for(rig).signal(4242, 31, identity)
    with pytest.raises(InvalidArgument, match="read-only"):
        await backend_for(rig, read_only=True).signal(4242, 15, identity)


async def test_a_sudo_password_prompt_for_kill_is_command_failed_and_nothing_is_signalled(sshd_fleet):
    rig = sshd_fleet(["sudo01"])
    fake = rig.nodes["sudo01"].bin / "sudo"  # what sudo -n prints for a user without NOPASSWD
    fake.write_text("#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n")
    fake.chmod(0o755)
    backend = backend_for(rig, "sudo01", sudo=True)
    started: list[int] = []
    try:
        expected = await start_sleep(backend, started)
        with pytest.raises(CommandFailed, match="sudo wants a password to signal"):
            await backend.signal(expected.pid, 15, expected)
        assert alive(expected.pid)
    finally:
        await backend.close()
        for pid in started:
            psutil.Process(pid).kill()


def test_the_identity_comparison_ignores_how_ps_pads_the_day_of_month():
    assert identity_text("Tue Mar  4 10:00:00 2025", "/usr/bin/dcgm-exporter  -f x") == (
        "Tue Mar 4 10:00:00 2025 /usr/bin/dcgm-exporter -f x"
    )


def test_the_signal_script_quotes_the_expected_command_so_it_cannot_run():
    script = signal_script(4242, "TERM", ProcessIdentity(4242, "Mon Jan  1 00:00:00 2024", "x'; reboot; '"))
    assert "reboot" in script and "'\"'\"'" in script  # shlex.quote's escape of the quote
