"""Faults against real sshd (loopback) serving shimmed simulated nodes: the repair must survive them all.

Each test starts an sshd of its own (the repairs change the nodes' shim state) with a fast simulated
clock, so a whole repair takes seconds. After every fault: no exception escapes, the exit status is
the contract's, errors are one line without a traceback, the node's units end as they were (or the
node reports ``INTERRUPTED_REPAIR`` and ``repair --restore`` puts them back), and the audit log holds
every event, each line valid JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from nvls_tui.audit.log import AuditLog
from nvls_tui.cli import main
from nvls_tui.poll.probe import LOCK_DIR
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.events import CommandStarted, SmokeRow, StepFinished, fan_out
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import SshdRig, backend_for, find_sshd, fork_servers

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # in the repair's environment: must reach no file
SPEED = 40.0  # simulated seconds per real second: FM registers and the sweep runs in well under a second
NVLS_TUI = [sys.executable, "-m", "nvls_tui.cli"]
# The units of seed-incident gpu05 that ran before any repair (FM had been SIGKILLed: failed).
RUNNING_BEFORE = ("nvidia-dcgm.service", "kubelet.service", "nvidia-snapshot.timer")
FAST = RepairOptions(poll_interval=0.1, term_grace=2.0, holder_timeout=8.0, fm_timeout=4.0, smoke_timeout=30.0,
                     transient_pause=0.1, restore_attempts=4, command_timeout=15.0)


def make_rig(root: Path, nodes: dict[str, tuple[str, str]], *, static: bool = False) -> SshdRig:
    """A started rig whose node ``name`` is ``(scenario, scenario node)``."""
    def populate(name: str, node_dir: Path) -> None:
        scenario, sim_node = nodes[name]
        write_shims(node_dir, scenario, sim_node, static=static, speed=None if static else SPEED)

    return SshdRig(root, list(nodes), populate).start()


def cli(rig: SshdRig, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``nvls-tui ARGS`` as a real subprocess trusting exactly ``rig``."""
    return subprocess.Popen([*NVLS_TUI, *args, *rig.cli_args()], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})}, cwd=Path(__file__).parents[2])


def finish(proc: subprocess.Popen, timeout: float = 90.0) -> tuple[int, str, str]:
    """Wait (bounded) for a subprocess; its exit status, stdout and stderr."""
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def audit_records(directory: Path) -> list[dict]:
    """Every record of the one audit log in ``directory`` (each line must be valid JSON)."""
    logs = sorted(directory.glob("*.jsonl"))
    assert len(logs) == 1, f"expected one audit log in {directory}, found {logs}"
    text = logs[0].read_text()
    assert text.endswith("\n"), "the last record was not written whole"
    return [json.loads(line) for line in text.splitlines()]


def wait_for_record(directory: Path, predicate, what: str, timeout: float = 60.0) -> None:
    """Wait (bounded) until a record of the audit log in ``directory`` matches ``predicate``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in directory.glob("*.jsonl"):
            for line in log.read_text().splitlines():
                try:
                    if predicate(json.loads(line)):
                        return
                except ValueError:
                    pass  # a line being written right now
        time.sleep(0.05)  # polling a file another process appends to; bounded by the deadline
    raise AssertionError(f"gave up after {timeout:g}s waiting until {what}")


def one_line_error(err: str) -> None:
    """The contract: errors are sentences on stderr, never a traceback."""
    assert "Traceback" not in err


async def is_active(backend, units) -> dict[str, str]:
    """``systemctl is-active UNIT`` over SSH for each unit."""
    states = {}
    for unit in units:
        result = await backend.run(["systemctl", "is-active", unit])
        states[unit] = result.stdout.strip()
    return states


async def unit_states_of(rig: SshdRig, name: str, units=RUNNING_BEFORE) -> dict[str, str]:
    """``systemctl is-active`` of ``units`` on one rig node, over a connection of its own."""
    backend = backend_for(rig, name)
    try:
        return await is_active(backend, units)
    finally:
        await backend.close()


def states_over_ssh(rig: SshdRig, name: str, units=RUNNING_BEFORE) -> dict[str, str]:
    """The same, from a test that is not a coroutine."""
    return asyncio.run(unit_states_of(rig, name, units))


# ---- end to end, and two repairs of one node at once -------------------------------------------------

def test_a_shimmed_incident_node_is_repaired_over_ssh_a_second_repair_is_refused_and_check_is_healthy(
        rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target = rig.target("gpu05")
    first_dir, second_dir = tmp_path / "audit1", tmp_path / "audit2"
    first = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(first_dir),
                env={"AWS_SECRET_ACCESS_KEY": SECRET})
    wait_for_record(first_dir, lambda r: r.get("argv") == ["mkdir", LOCK_DIR] and r.get("exit_status") == 0,
                    "the first repair holds the node's lock")
    second = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(second_dir))
    code2, out2, err2 = finish(second)
    code1, out1, err1 = finish(first)

    assert code2 == 1, err2
    refused = json.loads(out2)["nodes"][0]
    assert refused["result"] == "refused" and "holds the lock" in refused["message"]
    assert not any((r.get("argv") or [])[:2] == ["systemctl", "stop"] for r in audit_records(second_dir))

    assert code1 == 0, err1[-2000:]
    node = json.loads(out1)["nodes"][0]
    assert node["result"] == "repaired"
    assert [s["name"] for s in node["steps"]] == ["preflight", "quiesce", "verify-no-holders", "reset",
                                                  "fabric-manager", "verify-fabric", "smoke-test", "restore"]
    assert all(s["status"] == "ok" for s in node["steps"])
    assert node["smoke"]["passed"] and node["smoke"]["avg_busbw"] == pytest.approx(292, abs=3)
    assert set(RUNNING_BEFORE) <= set(node["restored"])
    one_line_error(err1 + err2)

    records = audit_records(first_dir)
    assert records[-1]["event"] == "run-finished" and records[-1]["result"] == "repaired"
    log_text = next(first_dir.glob("*.jsonl")).read_text()
    assert main(["report", str(next(first_dir.glob("*.jsonl"))), "-o", str(tmp_path / "report.md")]) == 0
    key = [ln for ln in rig.client_key.read_text().splitlines() if not ln.startswith("-----")]
    for text in (log_text, (tmp_path / "report.md").read_text()):
        assert SECRET not in text and not any(line in text for line in key)

    code, out, err = finish(cli(rig, "check", target, "--json"))
    checked = json.loads(out)["nodes"][0]
    assert (code, checked["verdict"]) == (0, "healthy"), checked["findings"]
    assert checked["services"]["nvidia-fabricmanager"] == "active" and checked["services"]["kubelet"] == "active"
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")


# ---- kill -9 of nvls-tui mid-repair -----------------------------------------------------------------

def test_kill_9_mid_repair_keeps_every_audit_event_check_reports_it_and_restore_brings_the_units_back(
        rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target, audit_dir = rig.target("gpu05"), tmp_path / "audit"
    repair = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(audit_dir))
    wait_for_record(audit_dir, lambda r: r.get("argv") == ["systemctl", "stop", "kubelet.service"]
                    and r.get("exit_status") == 0, "quiesce has stopped kubelet")
    os.kill(repair.pid, signal.SIGKILL)
    code, _, _ = finish(repair, timeout=10)
    assert code == -signal.SIGKILL

    records = audit_records(audit_dir)  # every line whole JSON, fsynced up to the kill
    assert [r["event"] for r in records[:2]] == ["audit-opened", "run-started"]
    assert any(r["event"] == "step-started" and r["step"] == "quiesce" for r in records)
    assert not any(r["event"] == "run-finished" for r in records)
    assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "inactive"

    code, out, err = finish(cli(rig, "check", target, "--json"))
    findings = {f["code"]: f for f in json.loads(out)["nodes"][0]["findings"]}
    assert code == 1 and "INTERRUPTED_REPAIR" in findings, err
    assert "--restore" in findings["INTERRUPTED_REPAIR"]["message"]

    # Its lock names a process of this bastion that is gone: stale, so the restore takes it over only with --force.
    code, out, err = finish(cli(rig, "repair", "--restore", target, "--json", "--audit-dir", str(tmp_path / "r0")))
    stale = json.loads(out)["nodes"][0]
    assert (code, stale["result"]) == (1, "refused") and "stale" in stale["message"], err
    code, out, err = finish(cli(rig, "repair", "--restore", "--force", target, "--json", "--audit-dir",
                                str(tmp_path / "r")))
    restored = json.loads(out)["nodes"][0]
    assert (code, restored["result"]) == (0, "restored"), err
    assert "kubelet.service" in restored["restored"]
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    code, out, _ = finish(cli(rig, "check", target, "--json"))
    assert "INTERRUPTED_REPAIR" not in [f["code"] for f in json.loads(out)["nodes"][0]["findings"]]
    one_line_error(err)


# ---- links that drop mid-step --------------------------------------------------------------------------

async def repair_with_fault(rig: SshdRig, name: str, tmp_path: Path, trigger, options: RepairOptions = FAST):
    """Repair ``name`` in-process over SSH; ``trigger(event, rig)`` runs on every event (the fault)."""
    backend = backend_for(rig, name, timeout=15.0)
    events: list = []
    log = tmp_path / f"{name}.jsonl"
    try:
        with AuditLog(log, operator="faults") as audit:
            sink = fan_out(audit, events.append, lambda event: trigger(event, rig))
            outcome = await Runbook(backend, options, on_event=sink).run()
        units = await is_active(backend, RUNNING_BEFORE)
    finally:
        await backend.close()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == len(events), "an event did not reach the audit log"
    return outcome, units, records


class DropAt:
    """Kill every SSH connection of the rig (the node drops off the network) at the first event matching
    each of ``whens``, once each."""

    def __init__(self, *whens) -> None:
        self.whens = list(whens)
        self.fired: list[int] = []

    def __call__(self, event, rig: SshdRig) -> None:
        for index, when in enumerate(self.whens):
            if index not in self.fired and when(event):
                self.fired.append(index)
                if isinstance(event, SmokeRow):
                    rig.kill_connections()  # right now: the sweep has only printed its first row
                else:  # a started command: give it time to reach the node before the link goes
                    threading.Timer(0.3, rig.kill_connections).start()


def mid_stream(event) -> bool:
    return isinstance(event, SmokeRow)


def mid_reset(event) -> bool:
    return isinstance(event, CommandStarted) and event.argv == ("nvidia-smi", "-r")


def mid_restore(event) -> bool:
    return isinstance(event, CommandStarted) and event.step == "restore" and event.argv[:2] == ("systemctl", "start")


@pytest.mark.parametrize("whens", [(mid_stream,), (mid_reset, mid_restore)],
                         ids=["mid-smoke-stream", "mid-reset-then-mid-restore"])
async def test_the_link_dropping_mid_step_ends_with_every_unit_as_it_was(rigs, tmp_path, whens):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    # A reset and a unit start take seconds on a real node: long enough for the link to drop under them.
    wrap_tool(rig, "gpu05", "nvidia-smi", 'if [ "$1" = -r ]; then sleep 2; fi')
    wrap_tool(rig, "gpu05", "systemctl", 'if [ "$1" = start ]; then sleep 1; fi')
    pace_output(rig, "gpu05", "all_reduce_perf", 0.05)
    drop = DropAt(*whens)
    outcome, units, records = await repair_with_fault(rig, "gpu05", tmp_path, drop)
    assert sorted(drop.fired) == list(range(len(whens))), f"only faults {drop.fired} fired"
    where = "reset" if mid_reset in whens else "smoke-test"
    assert outcome.result == "failed" and f"lost the node during {where}" in outcome.message
    assert outcome.message and "\n" not in outcome.message
    assert units == dict.fromkeys(RUNNING_BEFORE, "active"), outcome.message
    assert records[-1]["event"] == "run-finished" and records[-1]["result"] == outcome.result
    assert outcome.step("restore").status == "ok"


def write_known_hosts(*rigs: SshdRig) -> Path:
    """One known_hosts trusting every given rig (each rig has a host key of its own)."""
    path = rigs[0].root / "known_hosts.all"
    path.write_text("".join(r.known_hosts.read_text() for r in rigs))
    return path


# ---- nodes that do not answer --------------------------------------------------------------------------

class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections and never says a word (its own thread and loop)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.accepted = 0
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(5), "the silent server did not start"

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)

        async def silent(reader, writer):
            self.accepted += 1
            await reader.read()  # until the client gives up; never write

        self.server = self.loop.run_until_complete(asyncio.start_server(silent, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_a_node_that_accepts_and_never_answers_is_unreachable_within_the_timeout_while_others_answer(
        rigs, capsys):
    rig = rigs({"hgx01": ("healthy", "hgx01")}, static=True)
    silent = SilentServer()
    try:
        started = time.monotonic()
        code = main(["check", f"{rig.user}@127.0.0.1:{silent.port}", rig.target("hgx01"), "--json",
                     "--timeout", "1", *rig.cli_args()])
        elapsed = time.monotonic() - started
    finally:
        silent.close()
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    quiet = nodes[f"{rig.user}@127.0.0.1:{silent.port}"]
    assert silent.accepted >= 1
    assert quiet["verdict"] == "unreachable" and quiet["reachable"] is False
    assert nodes[rig.target("hgx01")]["verdict"] == "healthy"
    assert code == 1 and elapsed < 25  # bounded by the timeouts: a silent server would hold it forever


def test_a_wedged_nvidia_smi_times_out_alone_is_stopped_on_the_node_and_both_nodes_answer(rigs, capsys):
    rig = rigs({"wedged": ("wedged", "gpu-wedged01")})
    ok = rigs({"ok": ("wedged", "gpu-ok01")}, static=True)
    started = time.monotonic()
    code = main(["check", rig.target("wedged"), ok.target("ok"), "--json", "--timeout", "3",
                 "--known-hosts", str(write_known_hosts(rig, ok)), "-i", str(rig.client_key),
                 "-i", str(ok.client_key), "--ssh-config", str(rig.ssh_config)])
    elapsed = time.monotonic() - started
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    wedged = nodes[rig.target("wedged")]
    # Only its GPUs are unknown: the bastion ended the hung section alone and read the rest.
    assert (wedged["verdict"], wedged["reachable"]) == ("broken", True)
    assert [(m["section"], m["reason"]) for m in wedged["missing"]] == [("gpus", "timed out")]
    assert "nvidia-fabricmanager" in wedged["services"]  # the units were read
    assert nodes[ok.target("ok")]["verdict"] == "healthy"
    assert code == 1 and elapsed < 40  # bounded by the timeouts: the wedged command never returns
    wedged_dir = str(rig.nodes["wedged"].dir)
    servers = {p.pid for p in fork_servers([rig.nodes["wedged"].dir])}  # the node's, not a command of it
    deadline = time.monotonic() + 5
    while any(wedged_dir in " ".join(p.info["cmdline"] or []) and p.pid not in servers
              for p in psutil.process_iter(["cmdline"])):
        assert time.monotonic() < deadline, "the hung nvidia-smi was left running on the node"
        time.sleep(0.05)  # waiting for a killed process group to be reaped; bounded above


# ---- steps that fail on the node -----------------------------------------------------------------------

REFUSAL = ("The following GPUs could not be reset:\n  GPU 00000000:18:00.0: In use by another client\n\n"
           "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
           "application, graphics application such as an X server, or a monitoring application such as another "
           "instance of nvidia-smi). Please first kill all processes using this device and all compute "
           "applications running in the system.\n")


def wrap_tool(rig: SshdRig, name: str, tool: str, prelude: str) -> None:
    """Put a sh ``prelude`` in front of one of the node's shim tools (which then runs as before)."""
    bin_dir = rig.nodes[name].bin
    (bin_dir / tool).rename(bin_dir / f"{tool}.sim")
    wrapper = bin_dir / tool
    wrapper.write_text(f"#!/bin/sh\n{prelude}\nexec '{bin_dir}/{tool}.sim' \"$@\"\n")
    wrapper.chmod(0o755)


def pace_output(rig: SshdRig, name: str, tool: str, seconds: float) -> None:
    """Make one shim tool print a line every ``seconds``, as a real sweep does (not all at once).

    A sweep whose whole output already sits in our receive buffer when the link drops would read to
    its end; the drop must land mid-run, as it does on a real node.
    """
    bin_dir = rig.nodes[name].bin
    (bin_dir / tool).rename(bin_dir / f"{tool}.sim")
    wrapper = bin_dir / tool
    wrapper.write_text(f"#!/bin/sh\n'{bin_dir}/{tool}.sim' \"$@\" | while IFS= read -r line; do "
                       f"printf '%s\\n' \"$line\"; sleep {seconds}; done\n")
    wrapper.chmod(0o755)


def refuse_resets(rig: SshdRig, name: str) -> None:
    """Wrap the node's nvidia-smi so that ``-r`` is refused the way a busy GPU refuses it."""
    refusal = rig.nodes[name].dir / "REFUSAL"
    refusal.write_text(REFUSAL)
    wrap_tool(rig, name, "nvidia-smi", f"if [ \"$1\" = -r ]; then cat '{refusal}'; exit 255; fi")


async def test_a_refused_reset_goes_straight_to_restore_which_brings_units_and_persistence_mode_back(
        rigs, tmp_path):
    rig = rigs({"pm": ("persistence-blocks-reset", "gpu-pm01")})
    refuse_resets(rig, "pm")
    outcome, units, records = await repair_with_fault(rig, "pm", tmp_path, lambda e, r: None)
    assert outcome.result == "failed" and "In use by another client" in outcome.message
    assert [outcome.step(s).status for s in ("reset", "fabric-manager", "restore")] == ["failed", "skipped", "ok"]
    assert units == dict.fromkeys(RUNNING_BEFORE, "active")
    assert any(r.get("argv") == ["nvidia-smi", "-pm", "0"] and r.get("exit_status") == 0 for r in records)
    assert any(r.get("argv") == ["nvidia-smi", "-r"] and r.get("exit_status") == 255 for r in records)
    # A generous per-command timeout for this one read: on a loaded machine the shimmed nvidia-smi (a
    # shell and a Python start) can take longer than the rig's 5 s, and its GPUs then read as missing.
    backend = backend_for(rig, "pm", timeout=30.0)
    try:
        state = await backend.snapshot()
    finally:
        await backend.close()
    assert {g.persistence_mode for g in state.gpus} == {"Enabled"}, (state.reachable, state.missing)


async def test_fabric_manager_that_never_registers_fails_after_the_bounded_wait_and_restores(rigs, tmp_path):
    rig = rigs({"stuck": ("stuck-in-progress", "gpu-stuck01")})
    before = await unit_states_of(rig, "stuck", RUNNING_BEFORE + ("nvidia-fabricmanager.service",))
    options = RepairOptions(**{**FAST.__dict__, "fm_timeout": 2.0})
    outcome, _, records = await repair_with_fault(rig, "stuck", tmp_path, lambda e, r: None, options)
    assert outcome.result == "failed" and outcome.step("fabric-manager").status == "failed"
    assert "In Progress" in outcome.message
    assert await unit_states_of(rig, "stuck", tuple(before)) == before
    assert records[-1]["event"] == "run-finished"


async def test_a_kubelet_restarted_behind_the_runbooks_back_respawns_pods_and_units_still_end_as_before(
        rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})

    def restart_kubelet(event, rig):
        if isinstance(event, StepFinished) and event.step == "quiesce":
            # Another admin starts kubelet again: its GPU Operator pods come back holding the devices.
            bin_dir = rig.nodes["gpu05"].bin
            subprocess.run([str(bin_dir / "systemctl"), "start", "kubelet.service"], check=True, timeout=30,
                           capture_output=True)
            deadline = time.monotonic() + 10  # hold the runbook until kubelet has the pods back (bounded)
            while not subprocess.run([str(bin_dir / "fuser"), "/dev/nvidia0"], timeout=30, capture_output=True,
                                     text=True).stdout.split():
                assert time.monotonic() < deadline, "kubelet never recreated the pods"

    options = RepairOptions(**{**FAST.__dict__, "holder_timeout": 3.0})
    outcome, units, records = await repair_with_fault(rig, "gpu05", tmp_path, restart_kubelet, options)
    respawned = [r for r in records if r["event"] == "note" and "hold devices again" in r.get("message", "")]
    assert respawned, [(r["event"], r.get("step"), r.get("message") or r.get("outcome")) for r in records
                       if r["event"] in ("note", "step-finished", "process-signalled", "run-finished")]
    assert outcome.result in ("repaired", "failed"), outcome.message
    assert units == dict.fromkeys(RUNNING_BEFORE, "active")
    assert not any(r.get("signal") == "SIGKILL" for r in records)  # never SIGKILL unless asked
