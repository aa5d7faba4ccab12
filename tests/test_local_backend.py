"""The local backend on this machine: real NVML (absent here), real psutil, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time

import psutil
import pytest

from nvls_tui.backends.base import CommandTimeout, ProcessChanged, ProcessGone, ProcessIdentity
from nvls_tui.backends.local import LocalBackend, lstart, read_nvml, scan_holders
from nvls_tui.cli import main


def _has_gpu() -> bool:
    try:
        read_nvml()
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(_has_gpu(), reason="this machine has an NVIDIA GPU")
def test_without_a_gpu_the_snapshot_says_so_in_one_sentence():
    state = asyncio.run(LocalBackend().snapshot())
    assert state.reachable is False
    assert state.error.startswith("no NVIDIA GPU can be read on this machine (NVML:")
    assert "\n" not in state.error


@pytest.mark.skipif(_has_gpu(), reason="this machine has an NVIDIA GPU")
def test_check_local_without_a_gpu_exits_2_with_the_reason(capsys):
    code = main(["check", "local"])
    out = capsys.readouterr().out
    assert code == 2 and "no NVIDIA GPU can be read" in out


def test_the_proc_scan_finds_no_holder_where_no_device_file_is_open():
    holders = scan_holders()
    assert all(d.startswith("/dev/nvidia") for h in holders for d in h.devices)
    if not any(p.startswith("nvidia") for p in __import__("os").listdir("/dev")):
        assert holders == ()


def test_lstart_matches_what_ps_prints_for_the_same_process():
    proc = psutil.Process()
    ps = subprocess.run(["ps", "-o", "lstart=", "-p", str(proc.pid)], capture_output=True, text=True, check=True)
    assert " ".join(lstart(proc.create_time()).split()) == " ".join(ps.stdout.split())


async def test_run_returns_output_and_exit_status_and_needs_no_shell():
    backend = LocalBackend()
    result = await backend.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "err\n")
    literal = await backend.run(["echo", "$(id)", ";", "|"])
    assert literal.stdout == "$(id) ; |\n"
    missing = await backend.run(["no-such-command-nvls"])
    assert missing.exit_status == 127


async def test_a_command_over_its_timeout_is_killed_and_raises():
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        await LocalBackend().run(["sleep", "30"], timeout=0.3)
    assert time.monotonic() - started < 5


async def test_stream_yields_lines_as_they_come_and_closing_it_ends_the_process():
    backend = LocalBackend()
    argv = [sys.executable, "-u", "-c",
            "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.2)\ntime.sleep(30)"]
    arrivals = []
    started = time.monotonic()
    async with contextlib.aclosing(backend.stream(argv)) as lines:
        async for line in lines:
            arrivals.append((line, time.monotonic() - started))
            if len(arrivals) == 3:
                break
    assert [a for a, _ in arrivals] == ["0", "1", "2"]
    assert arrivals[2][1] - arrivals[0][1] > 0.3  # one by one, not in a burst at the end
    children = [p for p in psutil.Process().children(recursive=True) if "time.sleep(30)" in " ".join(p.cmdline())]
    assert children == []


async def test_signal_checks_identity_before_it_sends_sigterm():
    backend = LocalBackend()
    proc = subprocess.Popen(["sleep", "30"])
    try:
        ps = psutil.Process(proc.pid)
        deadline = time.monotonic() + 5
        while ps.cmdline() != ["sleep", "30"]:  # between fork and exec it is still a copy of us
            assert time.monotonic() < deadline, "sleep never started"
            await asyncio.sleep(0.01)
        identity = ProcessIdentity(proc.pid, lstart(ps.create_time()), "sleep 30")
        with pytest.raises(ProcessChanged):
            await backend.signal(proc.pid, signal.SIGTERM,
                                 ProcessIdentity(proc.pid, "Thu Jan  1 00:00:00 1970", "sleep 30"))
        assert proc.poll() is None  # refused: still running
        outcome = await backend.signal(proc.pid, signal.SIGTERM, identity)
        assert outcome.signalled and proc.wait(timeout=5) == -signal.SIGTERM
        with pytest.raises(ProcessGone):
            await backend.signal(proc.pid, signal.SIGTERM, identity)
    finally:
        if proc.poll() is None:
            proc.kill()
