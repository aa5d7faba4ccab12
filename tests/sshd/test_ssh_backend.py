"""SshBackend against a real OpenSSH sshd on 127.0.0.1: run, stream, timeouts and dropped links."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

import pytest

from nvls_tui.backends.base import CommandTimeout, Unreachable
from nvls_tui.poll.probe import SECTION_NAMES
from tests.sshd_rig import backend_for, processes_running
from tests.waiting import until

pytestmark = pytest.mark.ssh


@pytest.fixture
async def closing():
    """Collects backends and closes them after the test (pooled connections must not leak)."""
    made = []
    yield made.append
    for backend in made:
        await backend.close()


def unique_sleep() -> list[str]:
    """A ``sleep`` argv no other test runs, so orphan checks cannot see another test's process."""
    return ["sleep", f"{40 + random.random() * 10:.5f}"]


async def test_run_returns_stdout_stderr_and_exit_status_separately(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    result = await backend.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.stdout, result.stderr, result.exit_status) == ("out\n", "err\n", 3)
    assert result.argv == ("sh", "-c", "echo out; echo err >&2; exit 3")


async def test_arguments_reach_the_node_exactly_as_given_without_shell_interpretation(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    tricky = ["it's", "$(id)", "a b", "*", ";reboot", ""]
    result = await backend.run(["printf", "[%s]\\n", *tricky])
    assert result.stdout.splitlines() == [f"[{t}]" for t in tricky]


async def test_output_that_is_not_utf8_is_decoded_with_replacement_characters(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    result = await backend.run(["printf", "ok\\377\\n"])
    assert result.stdout == "ok\ufffd\n"


async def test_stdin_text_is_fed_to_the_command(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    result = await backend.run(["tr", "a-z", "A-Z"], stdin="nvls\n")
    assert result.stdout == "NVLS\n"


async def test_env_variables_are_passed_as_quoted_assignments(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    result = await backend.run(["sh", "-c", 'echo "$NCCL_ALGO"'], env={"NCCL_ALGO": "NVLS; id"})
    assert result.stdout == "NVLS; id\n"


async def test_commands_reuse_one_pooled_connection(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    first = await backend.run(["sh", "-c", "echo $SSH_CLIENT"])
    second = await backend.run(["sh", "-c", "echo $SSH_CLIENT"])
    # SSH_CLIENT = "client-address client-port server-port": the same client port, the same TCP link.
    assert first.stdout == second.stdout and first.stdout.startswith("127.0.0.1 ")


async def test_a_stream_delivers_lines_one_by_one_while_they_are_produced(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    seen = []
    start = time.monotonic()
    async with contextlib.aclosing(
        backend.stream(["sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.3; done"])
    ) as lines:
        async for line in lines:
            seen.append((line, time.monotonic() - start))
    assert [line for line, _ in seen] == ["1", "2", "3"]
    gaps = [b - a for (_, a), (_, b) in zip(seen, seen[1:], strict=False)]
    assert all(gap > 0.2 for gap in gaps), f"lines arrived together, not as produced: {seen}"
    assert backend.last_exit_status == 0


async def test_a_stream_merges_stderr_and_keeps_the_exit_status(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    lines = [line async for line in backend.stream(["sh", "-c", "echo a; echo b >&2; echo; exit 7"])]
    assert lines == ["a", "b", ""]
    assert backend.last_exit_status == 7


async def test_a_pty_stream_runs_on_a_terminal_and_strips_carriage_returns(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    lines = [line async for line in backend.stream(["sh", "-c", "tty; echo done"], pty=True)]
    assert lines[0].startswith("/dev/pts/") and lines[1] == "done"


@pytest.mark.parametrize("pty", [False, True])
async def test_closing_a_stream_stops_the_remote_command_and_leaves_no_orphan(sshd_fleet, closing, pty):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    sleep = unique_sleep()
    script = f"echo started; {' '.join(sleep)}; echo never"
    async with contextlib.aclosing(backend.stream(["sh", "-c", script], pty=pty)) as lines:
        assert await anext(lines) == "started"
        await until(lambda: processes_running(sleep), 5, "the remote sleep is running")
    await until(lambda: not processes_running(sleep), 5, "the remote sleep has been stopped")


async def test_cancelling_the_task_that_reads_a_stream_stops_the_remote_command(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    sleep = unique_sleep()
    started = asyncio.Event()

    async def consume():
        async with contextlib.aclosing(backend.stream(["sh", "-c", f"echo go; {' '.join(sleep)}"])) as lines:
            async for _ in lines:
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    await until(lambda: processes_running(sleep), 5, "the remote sleep is running")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: not processes_running(sleep), 5, "the cancelled stream's sleep is gone")


async def test_a_hanging_command_times_out_and_is_stopped_while_other_nodes_answer(sshd_fleet, closing):
    rig = sshd_fleet(3)
    backends = [backend_for(rig, name) for name in rig.nodes]
    for backend in backends:
        closing(backend)
    sleep = unique_sleep()
    start = time.monotonic()
    results = await asyncio.gather(
        backends[0].run(sleep, timeout=1.0),
        backends[1].run(["echo", "gpu02"], timeout=1.0),
        backends[2].run(["echo", "gpu03"], timeout=1.0),
        return_exceptions=True,
    )
    assert time.monotonic() - start < 20  # the 1 s timeout ended it, not the sleep
    assert isinstance(results[0], CommandTimeout) and "did not finish within 1s" in str(results[0])
    assert [r.stdout for r in results[1:]] == ["gpu02\n", "gpu03\n"]
    await until(lambda: not processes_running(sleep), 5, "the timed-out sleep has been killed")


async def test_a_closed_port_is_unreachable_within_the_timeout(closing):
    import socket

    with socket.socket() as s:  # a port nobody listens on: bound, then released
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from nvls_tui.backends.base import BackendOptions
    from nvls_tui.backends.ssh import SshBackend
    from nvls_tui.backends.ssh.targets import SshTarget

    backend = SshBackend(SshTarget("127.0.0.1", "root", port), BackendOptions(timeout=2.0))
    closing(backend)
    start = time.monotonic()
    with pytest.raises(Unreachable, match="connection refused"):
        await backend.run(["true"])
    assert time.monotonic() - start < 2.0
    state = await backend.snapshot()
    assert (state.reachable, state.host) == (False, f"root@127.0.0.1:{port}")
    assert "127.0.0.1" in state.error


async def test_failed_connects_back_off_exponentially_and_say_when_the_next_attempt_is(closing):
    import socket

    from nvls_tui.backends.base import BackendOptions
    from nvls_tui.backends.ssh import SshBackend
    from nvls_tui.backends.ssh.targets import SshTarget

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = SshBackend(SshTarget("127.0.0.1", "root", port), BackendOptions(timeout=5.0))
    closing(backend)
    for _ in range(2):
        with pytest.raises(Unreachable):
            await backend.run(["true"])
    assert backend.connector.failures == 2 and backend.connector.backoff_delay() == 1.0
    with pytest.raises(Unreachable, match=r"next attempt in"):
        await backend.run(["true"], timeout=0.2)


async def test_a_connection_killed_mid_stream_ends_the_stream_with_a_clear_error_and_the_next_run_reconnects(
    private_sshd, closing
):
    backend = backend_for(private_sshd)
    closing(backend)
    before = (await backend.run(["sh", "-c", "echo $SSH_CLIENT"])).stdout
    sleep = unique_sleep()
    with pytest.raises(Unreachable) as info:
        async with contextlib.aclosing(backend.stream(["sh", "-c", f"echo up; {' '.join(sleep)}"])) as lines:
            async for line in lines:
                assert line == "up"
                await until(lambda: processes_running(sleep), 5, "the remote sleep is running")
                assert private_sshd.kill_connections() > 0
    assert "dropped" in str(info.value) and "during the stream of" in str(info.value)
    after = (await backend.run(["sh", "-c", "echo $SSH_CLIENT"])).stdout
    assert after.startswith("127.0.0.1 ") and after != before
    assert not processes_running(sleep)


async def test_a_restarted_sshd_ends_a_stream_with_an_error_and_the_next_run_reconnects(private_sshd, closing):
    backend = backend_for(private_sshd)
    closing(backend)
    sleep = unique_sleep()
    with pytest.raises(Unreachable, match="dropped"):
        async with contextlib.aclosing(backend.stream(["sh", "-c", f"echo up; {' '.join(sleep)}"])) as lines:
            async for _ in lines:
                await until(lambda: processes_running(sleep), 5, "the remote sleep is running")
                private_sshd.restart()
    result = await backend.run(["echo", "back"])
    assert result.stdout == "back\n"
    assert not processes_running(sleep)


async def test_a_shared_limiter_bounds_commands_in_flight_across_backends(sshd_fleet, closing):
    rig = sshd_fleet(3)
    limiter = asyncio.Semaphore(1)
    backends = [backend_for(rig, name, limiter=limiter) for name in rig.nodes]
    for backend in backends:
        closing(backend)
    await asyncio.gather(*(b.run(["true"]) for b in backends))  # connect first: time only the commands
    start = time.monotonic()
    await asyncio.gather(*(b.run(["sleep", "0.3"]) for b in backends))
    assert time.monotonic() - start >= 0.85  # three 0.3 s sleeps, one at a time


async def test_the_poll_runs_as_one_remote_script_and_splits_into_every_section(sshd_fleet, closing):
    backend = backend_for(sshd_fleet(2))
    closing(backend)
    sections = await backend.read_sections()
    assert set(sections) == set(SECTION_NAMES)
    # A bare node has no nvidia-smi: the section still comes back, with the shell's "not found".
    assert sections["gpus"].exit_status == 127
    assert sections["gpus"].argv[0] == "nvidia-smi"
