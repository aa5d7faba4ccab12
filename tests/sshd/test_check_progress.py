"""`nvls-tui check` says what it is waiting for while a node is slow, and names the command that hung.

A hung command on one node (a wedged nvidia-smi, a journalctl on a huge journal) used to leave the
operator with a silent terminal until the deadline, and then a bare "no answer within N s". Now,
after a quiet delay, stderr names each node still pending, the command it is waiting on, for how
long, and what to do; the node's final reason names the command. A fast check prints nothing extra,
and ``--json`` keeps stdout to the one JSON document.

The end-to-end tests run the real command line as a subprocess (stderr is a pipe, so progress comes
as plain lines) against a simulated fleet whose nvidia-smi never returns, and against a loopback
sshd whose journalctl never returns. They assert on what is said, never on how fast.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path

import pytest

from nvls_tui.backends.base import Backend, CommandResult, ProcessIdentity, SignalOutcome
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.headless.check import poll_all
from nvls_tui.model import NodeState
from nvls_tui.poll.probe import section_argv
from nvls_tui.sim.fleet import load_fleet
from tests.sshd_rig import find_sshd

NVLS_TUI = [sys.executable, "-m", "nvls_tui.cli"]
REPO = Path(__file__).parents[2]
PROGRESS = "nvls-tui check: waiting for"
ADVICE = ("Ctrl-C stops", "--timeout N gives up sooner", "never healthy")
# What must never reach a terminal from node text: C0 (but newline), DEL, C1, bidi overrides.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``nvls-tui check ARGS`` as a real subprocess with no terminal (stdout and stderr are pipes)."""
    return subprocess.run([*NVLS_TUI, "check", *args], capture_output=True, text=True, timeout=timeout,
                          check=False, stdin=subprocess.DEVNULL, cwd=REPO)


def progress_lines(stderr: str) -> list[str]:
    """The progress lines of a check's stderr."""
    return [line for line in stderr.splitlines() if line.startswith(PROGRESS)]


def pending_part(line: str) -> str:
    """The part of a progress line that lists the pending nodes (before the advice)."""
    return line.split(" — ", 1)[0]


# ---- a simulated node whose nvidia-smi never returns ----------------------------------------------------

def test_a_hung_command_is_named_with_its_node_and_the_advice_while_the_fast_node_is_not_pending():
    # --timeout 4: the hung nvidia-smi is waited out for 4 s; progress comes after 2 s.
    done = check("sim:wedged", "--timeout", "4")
    lines = progress_lines(done.stderr)
    assert lines, done.stderr
    for line in lines:
        nodes = pending_part(line)
        assert "waiting for 1 of 2 nodes" in nodes
        assert "gpu-wedged01 `nvidia-smi --query-gpu=" in nodes
        assert re.search(r"` \d+ s\b", nodes), line  # how long it has waited on that command
        assert "gpu-ok01" not in nodes  # it answered at once: never listed as pending
        assert all(words in line for words in ADVICE), line
    assert "Traceback" not in done.stderr


def test_the_wedged_node_is_read_with_its_gpus_unknown_naming_the_command_that_hung():
    done = check("sim:wedged", "--timeout", "1")
    assert done.returncode == 1, done.stderr
    assert not any(line.startswith("gpu-wedged01 UNREACHABLE") for line in done.stdout.splitlines()), done.stdout
    reason = next(line for line in done.stdout.splitlines() if line.startswith("gpu-wedged01 EVIDENCE_MISSING"))
    assert "the GPUs and their fabric state could not be read: `nvidia-smi` did not finish (timed out)" in reason
    # What the rest of the node says is not thrown away: its kernel log names the fault.
    assert any(line.startswith("gpu-wedged01 FABRIC_MANAGER_NOT_PRESENT") for line in done.stdout.splitlines())
    assert PROGRESS not in done.stdout  # progress only ever goes to stderr


def test_json_stdout_is_the_one_json_document_while_progress_goes_to_stderr():
    done = check("sim:wedged", "--timeout", "4", "--json")
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.endswith("}\n")
    doc = json.loads(done.stdout)
    assert set(doc) == {"targets", "nodes", "elapsed_s"}
    nodes = {n["host"]: n for n in doc["nodes"]}
    assert [n["host"] for n in doc["nodes"]] == ["gpu-wedged01", "gpu-ok01"]  # the targets' order, as before
    assert nodes["gpu-ok01"]["verdict"] == "healthy"
    wedged = nodes["gpu-wedged01"]
    # --timeout is per command: the hung nvidia-smi alone is cut off and the rest of the node read.
    assert (wedged["verdict"], wedged["reachable"]) == ("broken", True)
    assert [(m["section"], m["reason"]) for m in wedged["missing"]] == [("gpus", "timed out")]
    assert "nvidia-fabricmanager" in wedged["services"]
    assert any("gpu-wedged01 `nvidia-smi" in line for line in progress_lines(done.stderr)), done.stderr


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_a_fast_check_prints_no_progress_at_all(json_flag):
    done = check("sim:healthy", *json_flag)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_ctrl_c_while_waiting_exits_cleanly_without_a_traceback():
    proc = subprocess.Popen([*NVLS_TUI, "check", "sim:wedged", "--timeout", "20"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=REPO)
    try:
        first = read_line_until(proc, PROGRESS, timeout=60)
        assert "gpu-wedged01" in first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    assert "nvls-tui: interrupted" in err and "Traceback" not in err
    assert out == ""  # no half table


def read_line_until(proc: subprocess.Popen, prefix: str, timeout: float) -> str:
    """The first line of ``proc``'s stderr that starts with ``prefix`` (bounded wait)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=deadline - time.monotonic()):
                continue
            line = proc.stderr.readline()
            if not line:
                break
            if line.startswith(prefix):
                return line
    raise AssertionError(f"no line starting with {prefix!r} on stderr within {timeout:g}s")


# ---- in process: hostile text, the terminal line, and what each backend says it is doing -------------------

class _Hanging(Backend):
    """A node whose poll begins ``argv`` and never returns; the host and the command are hostile text."""

    def __init__(self, host: str, argv: tuple[str, ...] | None) -> None:
        self.host = host
        self._argv = argv

    async def snapshot(self) -> NodeState:
        if self._argv is None:
            return NodeState(host=self.host, reachable=True)
        self._begin(self._argv)
        await asyncio.Event().wait()
        raise AssertionError("never")

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env: Mapping[str, str] | None = None, stdin: str | None = None, fence=None) -> CommandResult:
        raise NotImplementedError

    async def stream(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, pty: bool = False,
                     privileged: bool = False, fence=None) -> AsyncGenerator[str, None]:
        raise NotImplementedError
        yield ""  # pragma: no cover - makes this an async generator

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity, fence=None) -> SignalOutcome:
        raise NotImplementedError


class _Terminal(io.StringIO):
    """A stream that says it is a terminal (80 columns, as COLUMNS says)."""

    def isatty(self) -> bool:
        return True


EVIL_HOST = "gpu\x1b[2J\x1b]0;owned\x07evil\r\n01\u202e"
EVIL_ARGV = ("journalctl\x1b[31m", "-k\n-b", "\x9b1m\x07\x00")


def test_hostile_host_and_command_text_reach_neither_the_progress_line_nor_the_reason():
    stream = io.StringIO()
    states = asyncio.run(poll_all([_Hanging(EVIL_HOST, EVIL_ARGV), _Hanging("gpu-ok", None)], 0.6, stream))
    text = stream.getvalue()
    lines = progress_lines(text)
    assert lines, text
    assert not CONTROL.search(text.replace("\n", "")), repr(text)
    assert "gpu-ok" not in pending_part(lines[0]) and "journalctl" in lines[0] and "evil" in lines[0]
    assert text.count("\n") == len(lines)  # one line per report: a newline from the node broke none
    hung = states[0]
    assert not hung.reachable and "journalctl" in (hung.error or "") and "did not finish" in (hung.error or "")
    assert not CONTROL.search(hung.error or ""), repr(hung.error)
    assert states[1].reachable


def test_on_a_terminal_the_progress_line_is_rewritten_in_place_and_cleared_before_the_table(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    stream = _Terminal()
    asyncio.run(poll_all([_Hanging("gpu07", section_argv("kernel")), _Hanging("gpu08", None)], 1.4, stream))
    advice, status = stream.getvalue().split("\n")  # the advice once; then one line, rewritten: nothing scrolls
    assert all(words in advice for words in ADVICE)
    assert status.startswith("\r") and "gpu07 `journalctl -k -b" in status and "gpu08" not in status
    assert status.endswith("\r\x1b[K")  # cleared: the table starts on a clean line
    shown = [part for part in status.split("\r") if part.strip("\x1b[K")]
    assert shown and all(len(part.removesuffix("\x1b[K")) < 80 for part in shown)  # never wraps the terminal


def test_a_fast_poll_writes_nothing_to_the_progress_stream():
    stream = _Terminal()
    asyncio.run(poll_all([_Hanging("gpu01", None), _Hanging("gpu02", None)], 30, stream))
    assert stream.getvalue() == ""


async def _activity_when(backend: Backend, task: asyncio.Task, predicate, timeout: float = 30.0):
    """``backend.activity`` once ``predicate`` holds for it (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not task.done():
        seen = backend.activity
        if seen is not None and predicate(seen):
            return seen
        await asyncio.sleep(0.02)  # polling a coroutine's progress; bounded by the deadline
    raise AssertionError(f"{backend.host}: activity never matched (last {backend.activity!r})")


async def test_the_simulated_backend_names_the_section_it_waits_on_and_is_idle_after_a_poll():
    fleet = load_fleet("sim:wedged", speed=0)
    wedged, ok = SimulatedBackend(fleet, "gpu-wedged01", timeout=30), SimulatedBackend(fleet, "gpu-ok01")
    began = time.monotonic()
    task = asyncio.ensure_future(wedged.snapshot())
    try:
        seen = await _activity_when(wedged, task, lambda a: a.argv[:1] == ("nvidia-smi",))
        assert seen.argv == section_argv("gpus") and began <= seen.since <= time.monotonic()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert ok.activity is None
    state = await ok.snapshot()
    assert state.reachable and ok.activity is None


async def test_the_local_backend_names_the_command_it_waits_on(monkeypatch):
    from nvls_tui.backends import local
    from nvls_tui.poll.probe import Section

    # No GPU on a test machine: NVML and the /proc scan are stood in for; the command is real.
    monkeypatch.setattr(local, "read_nvml", lambda: ("580.82.07", ()))
    monkeypatch.setattr(local, "scan_holders", lambda root: ((), (), None))
    monkeypatch.setattr(local, "SECTIONS", (Section("record", ("sleep", "30")),))
    backend = local.LocalBackend()
    task = asyncio.ensure_future(backend.snapshot())
    try:
        seen = await _activity_when(backend, task, lambda a: bool(a.argv))
        assert seen.argv == ("sleep", "30")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert backend.activity is None


# ---- over a real sshd: a journalctl that never returns ----------------------------------------------------

@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
def test_over_ssh_a_hung_journalctl_is_named_in_progress_and_its_section_timed_out(rigs):
    from tests.sshd.test_faults_ssh import wrap_tool

    rig = rigs({"slow": ("healthy", "hgx01"), "fast": ("healthy", "hgx02")}, static=True)
    # The node's journalctl never returns (a huge journal); its process group is stopped at the timeout.
    wrap_tool(rig, "slow", "journalctl", "exec sleep 600")
    slow, fast = rig.target("slow"), rig.target("fast")
    # --timeout 6: the section is stopped 6 s after it began; progress lines come at 2 s, 7 s and 12 s, so one
    # comes while it hangs wherever in the poll's first 12 s it begins (by 2 s, 1-7 s or 6-12 s: a second of overlap).
    done = check(slow, fast, "--json", "--timeout", "6", *rig.cli_args())
    nodes = {n["host"]: n for n in json.loads(done.stdout)["nodes"]}
    assert nodes[fast]["verdict"] == "healthy", nodes[fast]["findings"]
    # The kernel's journalctl times out, and FM's is not asked after it (it would wait out another --timeout).
    # The kernel log is read from the ring buffer instead (dmesg reaches back to the boot), the timeout kept
    # in its coverage notes; FM's own journal stays unknown (a warning), saying why.
    assert (nodes[slow]["verdict"], nodes[slow]["reachable"]) == ("degraded", True)
    missing = [f for f in nodes[slow]["findings"] if f["code"] == "EVIDENCE_MISSING"]
    assert [(f["section"], f["reason"], f["severity"]) for f in missing] == [("fm_log", "timed out", "warning")]
    assert "journalctl did not answer in the kernel section" in missing[0]["message"]
    coverage = nodes[slow]["kernel_coverage"]
    assert (coverage["sources"], coverage["complete_since_boot"]) == (["dmesg"], True)
    assert "the kernel log could not be read: `journalctl` did not finish" in coverage["notes"]
    lines = progress_lines(done.stderr)
    assert any(f"{slow} `journalctl -k -b" in pending_part(line) for line in lines), done.stderr
    assert all(fast not in pending_part(line) for line in lines), done.stderr
    assert all(words in line for line in lines for words in ADVICE)
    assert "Traceback" not in done.stderr


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
def test_over_ssh_a_hung_journalctl_and_a_hung_dmesg_leave_the_kernel_log_unknown(rigs):
    from tests.sshd.test_faults_ssh import wrap_tool

    rig = rigs({"slow": ("healthy", "hgx01")}, static=True)
    # The kernel's journalctl and dmesg hang; FM's journal would answer, but is not asked once a journalctl
    # of the poll timed out (three hung commands used to pass the poll's whole deadline, poll_deadline).
    wrap_tool(rig, "slow", "journalctl", 'case " $* " in *" -k "*) exec sleep 600;; esac')
    wrap_tool(rig, "slow", "dmesg", "exec sleep 600")
    slow = rig.target("slow")
    done = check(slow, "--json", "--timeout", "6", *rig.cli_args())
    node = json.loads(done.stdout)["nodes"][0]
    # Neither source answered: the kernel log is unknown (an error), never an empty, healthy one.
    assert (node["verdict"], node["reachable"]) == ("broken", True)
    missing = {f["section"]: f for f in node["findings"] if f["code"] == "EVIDENCE_MISSING"}
    assert missing["kernel"]["reason"] == "timed out" and missing["kernel"]["severity"] == "error"
    assert "`journalctl` did not finish" in missing["kernel"]["message"], missing["kernel"]
    assert "`dmesg` did not finish" in missing["kernel"]["message"], missing["kernel"]  # both reasons named
    assert node["kernel_coverage"] is None and node["kernel_events"] == []
    assert missing["fm_log"]["reason"] == "timed out"
    assert "journalctl did not answer in the kernel section" in missing["fm_log"]["message"]
    lines = progress_lines(done.stderr)
    assert any(f"{slow} `journalctl -k -b" in pending_part(line) for line in lines), done.stderr
    assert any(f"{slow} `dmesg" in pending_part(line) for line in lines), done.stderr
    assert "Traceback" not in done.stderr
