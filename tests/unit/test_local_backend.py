"""The local backend on this machine: real NVML (absent here), real psutil, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nvls_tui.backends.base import (
    CommandTimeout,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
)
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


# Run inside a private mount and PID namespace (root only): /dev is a tmpfs there with stand-in
# device files, and the holders are real processes with real open files, so the /proc scan of the
# local backend and the real fuser + ps of the SSH probe read the very same processes.
NAMESPACED_SCAN = r"""
import json, os, subprocess, sys, time
from nvls_tui.backends.local import scan_holders
from nvls_tui.parsers.fuser import parse_fuser_streams
from nvls_tui.parsers.holders import build_holders
from nvls_tui.parsers.ps import parse_ps, parse_ps_cgroups
from nvls_tui.poll.probe import cgroup_argv, ps_argv
holder = subprocess.Popen([sys.executable, "-c",
    "import time; fs=[open(p) for p in ('/dev/nvidia0', '/dev/nvidiactl', '/dev/nvidia-caps/nvidia-cap1')];"
    " print('up', flush=True); time.sleep(60)", "--served-by=trainer"], stdout=subprocess.PIPE, text=True)
assert holder.stdout.readline().strip() == "up"
fuser, entries, why = scan_holders(True)
local = build_holders(fuser, entries)
table = subprocess.run("fuser -v /dev/nvidia* 2>&1", shell=True, capture_output=True, text=True)
held = parse_fuser_streams(table.stdout).value
pids = sorted({h.pid for h in held})
ps = subprocess.run(ps_argv(pids), capture_output=True, text=True).stdout
cg = subprocess.run(cgroup_argv(pids), capture_output=True, text=True).stdout
probe = build_holders(held, parse_ps(ps).value, parse_ps_cgroups(cg).value)
def key(h):
    return [h.pid, h.ppid, h.user, " ".join((h.start_time or "").split()), h.command, str(h.kind), list(h.devices), h.unit]
print(json.dumps({"local": [key(h) for h in local], "probe": [key(h) for h in probe], "why": why and why.detail,
                  "pid": holder.pid}))
holder.kill()
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("fuser") is None,
                    reason="needs root, unshare and psmisc for a private /dev")
def test_the_proc_scan_reads_real_holders_exactly_as_the_probe_s_fuser_and_ps_do(tmp_path):
    (tmp_path / "scan.py").write_text(NAMESPACED_SCAN)
    setup = ("mount -t tmpfs tmpfs /dev && mkdir /dev/nvidia-caps && "
             "touch /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-caps/nvidia-cap1 && "
             f"exec {sys.executable} {tmp_path / 'scan.py'}")
    done = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "sh", "-c", setup], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["why"] is None
    assert seen["local"] == seen["probe"]  # one truth, whichever way the node is read
    (holder,) = seen["local"]
    assert holder[0] == seen["pid"] and holder[4].endswith("--served-by=trainer") and holder[5] == "cuda-app"
    assert holder[6] == ["/dev/nvidia0", "/dev/nvidiactl"]  # /dev/nvidia-caps/* is not /dev/nvidia*, as for fuser


def test_a_non_root_proc_scan_says_it_cannot_vouch_for_other_users():
    _fuser, _entries, why = scan_holders(False)
    assert why is not None and why.reason == "permission denied" and "root" in why.detail


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
    assert time.monotonic() - started < 20  # the timeout ended it, not the 30 s sleep


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
