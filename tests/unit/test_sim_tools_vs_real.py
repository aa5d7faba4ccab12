"""The simulator's ps, kill and fuser against the real procps and psmisc tools of this machine.

A stand-in that is laxer than the real tool hides bugs (the first probe's ``516,  429`` PID list was
accepted by the simulated ps and rejected by procps on every real node), so each case below runs the
same command line through the real tool and the simulated one and compares exit status, stdout and
stderr byte for byte. The simulated node is built from the real processes the test starts (same
PIDs, parents, users, start times, command lines, cgroups and open files).
"""

from __future__ import annotations

import calendar
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nvls_tui.sim import procps, render_procs
from nvls_tui.sim.state import Node

pytestmark = pytest.mark.skipif(shutil.which("ps") is None, reason="procps is not installed")
ENV = {"LC_ALL": "C", "TZ": "UTC", "PATH": "/usr/bin:/bin"}


def _sandbox_noise(text: str) -> str:
    """Drop fuser's complaints about PID 1's files: this sandbox's init denies even root (a real
    node's does not; there such a line means a holder may be missed, and the probe says so)."""
    return "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("Cannot stat file /proc/1/"))


def real(*argv: str) -> tuple[int, str, str]:
    done = subprocess.run(list(argv), env=ENV, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout, _sandbox_noise(done.stderr)


def pid_max() -> int:
    return int(Path("/proc/sys/kernel/pid_max").read_text())


@pytest.fixture(scope="module")
def real_processes(tmp_path_factory):
    """Two real processes: one with a long command line, one holding two files open for writing."""
    folder = tmp_path_factory.mktemp("held")
    files = [folder / "nvidia0", folder / "nvidiactl"]
    for f in files:
        f.write_text("")
    long_arg = "--config=" + "x" * 120
    holder = ("import sys, time; fs = [open(p, 'r+') for p in sys.argv[1:]]; print('up', flush=True); "
              "time.sleep(120)")
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)", long_arg],
                         stdout=subprocess.PIPE, text=True),
        subprocess.Popen([sys.executable, "-c", holder, *map(str, files)], stdout=subprocess.PIPE, text=True),
    ]
    for proc in procs:
        assert proc.stdout.readline().strip() == "up"  # bounded by the child printing once it runs
    yield procs, files
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


def sim_node_of(procs: list[subprocess.Popen], files: list[Path]) -> Node:
    """A simulated node holding exactly the real processes, as the real tools see them."""
    node = Node(name="real", pid_max=pid_max())
    for proc in procs:
        _, started, _ = real("ps", "-o", "lstart=", "-p", str(proc.pid))
        _, cgroup, _ = real("ps", "-o", "cgroup=", "-p", str(proc.pid))  # last column: never cut
        info = psutil.Process(proc.pid)
        held = sorted(str(f) for f in files if any(o.path == str(f) for o in info.open_files()))
        node.spawn(pid=proc.pid, ppid=info.ppid(), user=info.username(), argv=info.cmdline(),
                   start=calendar.timegm(time.strptime(" ".join(started.split()), "%a %b %d %H:%M:%S %Y")),
                   cgroup=cgroup.strip(), devices=held)
    return node


def ps_cases(a: int, b: int) -> list[list[str]]:
    return [
        ["-ww", "-o", "pid=,ppid=,user:32=,lstart=,cgroup=,args=", "-p", f"{a},{b}"],
        ["-ww", "-o", "pid=,ppid=,user:32=,lstart=,args=", "-p", f"{a},{b}"],
        ["-ww", "-o", "pid=,cgroup=", "-p", f"{a} {b}"],
        ["-o", "ppid=", "-p", f"{a},{b}"],
        ["-o", "pid,ppid,user,lstart,cgroup,comm,args", "-p", str(a), "-p", str(b)],
        ["-ww", "-o", "lstart=,args=", "-p", str(a)],
        ["-o", "pid=,user:3=,args:5=,cgroup=", "-p", f"{b},{a},{a}"],
        ["-o", "pid=", "-p", "99999999"],
        # -q (quick pid, what the probe asks): only the listed PIDs are read, in the list's order
        ["-ww", "-o", "pid=,ppid=,user:32=,lstart=,args=", "-q", f"{b},{a}"],
        ["-ww", "-o", "pid=,cgroup=", "-q", f"{b},{a},{a}"],
        ["-o", "ppid=", "-q", f"{a} {b}"],
        ["-o", "pid=", "-q", f"99999999,{a}"],
        ["-o", "pid=", "-q", "99999999"],
        ["-o", "pid=", "-e", "-q", str(a)],
    ]


ERROR_CASES = [
    ["-o", "pid=", "-p", "516,    429"],  # the real H200 probe's list
    ["-o", "pid=", "-p", ",1"],
    ["-o", "pid=", "-p", "1,"],
    ["-o", "pid=", "-p", "1,,2"],
    ["-o", "pid=", "-p", "1  2"],
    ["-o", "pid=", "-p", "1a"],
    ["-o", "pid=", "-p", "0"],
    ["-o", "pid=", "-p", "-1"],
    ["-o", "pid=", "-p", "99999999999"],
    ["-o", "pid=", "-p", ""],
    ["-o", "bogus=", "-p", "1"],
    ["-o", "pid:x=", "-p", "1"],
    ["-o"],
    ["-p"],
    ["-o", "pid=", "-q"],
    ["-o", "pid=", "-q", ""],
    ["-o", "pid=", "-q", "1,"],
    ["-o", "pid=", "-q", "0"],
    ["-o", "pid=", "-q", "1", "-p", "2"],
    ["-o", "pid=", "-p", "1", "-q", "2"],
    ["-o", "pid=", "-q", "1", "-q", "2"],
    ["-Q"],
    ["--bogus"],
]


def test_procps_rejects_the_padded_pid_list_of_the_first_probe_and_so_does_the_simulator():
    code, out, err = procps.ps(Node(name="n"), ["-o", "ppid=", "-p", "516,    429"], 0.0)
    assert (code, out) == (1, "")
    assert err.startswith("error: improper list\n")


@pytest.mark.parametrize("args", ERROR_CASES, ids=[" ".join(a) or "-" for a in ERROR_CASES])
def test_simulated_ps_refuses_what_procps_refuses_with_the_same_words(args):
    assert procps.ps(Node(name="n", pid_max=pid_max()), args, time.time()) == real("ps", *args)


def test_simulated_ps_prints_real_processes_exactly_as_procps_does(real_processes):
    procs, files = real_processes
    node = sim_node_of(procs, files)
    a, b = procs[0].pid, procs[1].pid
    for args in ps_cases(a, b):
        assert procps.ps(node, args, time.time()) == real("ps", *args), args


def test_the_cgroup_and_args_columns_are_cut_to_27_characters_unless_last(real_processes):
    procs, files = real_processes
    node = sim_node_of(procs, files)
    code, out, _ = procps.ps(node, ["-o", "cgroup=,args=", "-p", str(procs[0].pid)], time.time())
    cgroup = node.procs[procs[0].pid].cgroup
    assert code == 0
    assert out.startswith(cgroup[:27].ljust(27) + " ")
    assert out.rstrip("\n").endswith(procs[0].args[-1] if isinstance(procs[0].args, list) else "")


KILL_CASES = [
    ["-s", "TERM", "99999999"],
    ["-s", "TERM", "--", "-99999999"],
    ["-TERM", "99999999"],
    ["-15", "99999999"],
    ["abc"],
    ["-s", "TERM", "1x"],
    ["-BOGUS", "99999999"],
    ["-s", "BOGUS", "99999999"],
]


@pytest.mark.skipif(shutil.which("kill") is None, reason="procps kill is not installed")
@pytest.mark.parametrize("args", KILL_CASES, ids=[" ".join(a) for a in KILL_CASES])
def test_simulated_kill_answers_like_procps_kill(args):
    # `env kill`: procps names itself by argv[0], which is "kill" when found on PATH.
    assert render_procs.kill(Node(name="n"), args, time.time()) == real("env", "kill", *args)


@pytest.mark.skipif(shutil.which("kill") is None, reason="procps kill is not installed")
def test_simulated_kill_with_an_unknown_signal_name_fails_per_pid_like_procps():
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        node = Node(name="n")
        node.spawn(pid=sleeper.pid, ppid=os.getpid(), user="root", start=time.time(), argv=["sleep", "60"],
                   cgroup="0::/")
        sim = render_procs.kill(node, ["-s", "BOGUS", str(sleeper.pid)], time.time())
        assert sim == real("env", "kill", "-s", "BOGUS", str(sleeper.pid))
        assert sleeper.poll() is None and sleeper.pid in node.procs
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)


@pytest.mark.skipif(shutil.which("fuser") is None, reason="psmisc is not installed")
def test_simulated_fuser_prints_the_holders_of_real_files_exactly_as_psmisc_does(real_processes):
    procs, files = real_processes
    node = sim_node_of(procs, files)
    node.device_files = lambda: [str(f) for f in files]  # the node's "device files" are these two
    names = [str(f) for f in files]
    sim = render_procs.fuser(node, ["-v", *names], time.time())
    done = subprocess.run(["fuser", "-v", *names], env=ENV, capture_output=True, text=True, timeout=30)
    merged = subprocess.run(["sh", "-c", 'fuser -v "$@" 2>&1', "sh", *names], env=ENV, capture_output=True,
                            text=True, timeout=30)
    assert sim[:3] == (done.returncode, done.stdout, _sandbox_noise(done.stderr))
    assert sim[3] == _sandbox_noise(merged.stdout)


@pytest.mark.skipif(shutil.which("fuser") is None, reason="psmisc is not installed")
def test_simulated_fuser_names_missing_files_first_and_lists_the_rest_as_psmisc_does(real_processes, tmp_path):
    # A node without some shared device files (the real H200's /dev): psmisc checks every name first.
    procs, files = real_processes
    node = sim_node_of(procs, files)
    node.device_files = lambda: [str(f) for f in files]
    free = tmp_path / "nvidia-uvm"
    free.write_text("")
    for names in ([str(files[0]), str(tmp_path / "nvidia-modeset"), str(files[1]), str(tmp_path / "nvidia-nvlink")],
                  [str(free), str(tmp_path / "nvidia-nvswitchctl")]):  # nothing held: exit 1, the complaint only
        node.device_files = lambda names=names: [n for n in names if Path(n).exists()]
        sim = render_procs.fuser(node, ["-v", *names], time.time())
        merged = subprocess.run(["sh", "-c", 'fuser -v "$@" 2>&1', "sh", *names], env=ENV, capture_output=True,
                                text=True, timeout=30)
        assert sim[:3] == real("fuser", "-v", *names)
        assert sim[3] == _sandbox_noise(merged.stdout)


FIND_CASES = [["/nonexistent", "-maxdepth", "1", "-name", "nvidia*", "!", "-type", "d"], ["/dev", "-foo"],
              ["/dev", "-maxdepth", "1", "-name"], ["/dev", "-maxdepth", "x"], ["/dev", "-type", "q"],
              ["/dev", "-maxdepth", "0"], ["/dev", "-maxdepth", "1", "-name", "null", "-type", "c"],
              ["/dev", "-maxdepth", "1", "-name", "null", "-not", "-type", "c"]]


@pytest.mark.parametrize("args", FIND_CASES, ids=[" ".join(a) for a in FIND_CASES])
def test_simulated_find_answers_like_findutils(args):
    from nvls_tui.sim import files as sim_files

    assert sim_files.find(Node(name="n"), args) == real("find", *args)


FUSER_CASES = [["-v"], ["-v", "/nonexistent/nvidia9"], []]


@pytest.mark.skipif(shutil.which("fuser") is None, reason="psmisc is not installed")
@pytest.mark.parametrize("args", FUSER_CASES, ids=[" ".join(a) or "-" for a in FUSER_CASES])
def test_simulated_fuser_errors_match_psmisc(args):
    assert render_procs.fuser(Node(name="n"), args, time.time())[:3] == real("fuser", *args)


@pytest.mark.skipif(os.geteuid() != 0, reason="simulated nodes are polled as root, like the real id here")
@pytest.mark.parametrize("args", [["-u"], [], ["-Z"]], ids=["-u", "none", "-Z"])
def test_simulated_id_answers_like_coreutils_id_for_root(args):
    from nvls_tui.sim.commands import execute

    sim = execute(Node(name="n"), ["id", *args], time.time())
    code, out, err = real("id", *args)
    if args == ["-Z"]:  # SELinux context: not on this machine, and not simulated; both refuse
        assert sim.exit_status == code == 1
    else:
        assert (sim.exit_status, sim.stdout, sim.stderr) == (code, out, err)
