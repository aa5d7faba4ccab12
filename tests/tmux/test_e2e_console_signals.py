"""A console hit by SIGHUP, SIGTERM or ``tmux kill-server`` in the middle of a repair aborts it and restores the
node before it exits, as headless ``repair`` does; quitting with ``q`` does the same (issue 34 item 7).

The console runs in a real terminal (tmux) on a node of the real sshd whose state the simulator's shims keep on
disk. A training job holds GPU 3, so the repair stops at verify-no-holders with the units stopped (quiesce has
run) and waits for the operator. Then the console is signalled (``kill-server`` is the dropped SSH session to
the bastion: the terminal hangs up under it) and must put every unit back, remove the node's record and lock,
write the abort and the restore in the audit log, and exit.

Before: the console died where it stood, the node quiesced (DCGM, kubelet and the snapshot timer stopped),
its record and lock left and no abort in the audit log.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import time
from pathlib import Path

import pytest

from nvls_tui.parsers.restarters import APT_TIMERS
from nvls_tui.runbook.steps import QUIESCE_UNITS, SNAPSHOT_SERVICE
from tests.sshd.test_faults_ssh import states_over_ssh, wait_for_record
from tests.sshd.test_two_bastions import add_workload
from tests.sshd_rig import find_sshd
from tests.tmux.test_e2e_console_kill import console_command
from tests.tmux.test_e2e_poller_exit import running
from tests.tmux.test_e2e_tmux import Tmux

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed"),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]
# The snapshot oneshot is left out: its timer starts it every few seconds, so it flaps whatever the repair did.
UNITS = tuple(u for u in (*QUIESCE_UNITS, *APT_TIMERS) if u != SNAPSHOT_SERVICE)


def repair_log(audit_dir: Path) -> list[dict]:
    """The records of the console's one repair log (every line whole JSON)."""
    (log,) = audit_dir.glob("repair-*.jsonl")
    text = log.read_text()
    assert text.endswith("\n"), "the last record was not written whole"
    return [json.loads(line) for line in text.splitlines()]


def start_repair_held_at_verify_no_holders(rig, tmux: Tmux, target: str, audit_dir: Path, pid_file: Path,
                                           tmp_path: Path) -> int:
    """The console started in ``tmux``, gpu05's repair approved and waiting for the training job; its PID."""
    # The console is the inner shell's PID (exec); the outer shell writes its exit status and stays a moment, so
    # the pane (and the console's last words) outlive it.
    inner = console_command(rig, target, audit_dir, pid_file, tmp_path)
    rc_file = pid_file.with_name("console.rc")
    tmux.start(f"sh -c {shlex.quote(f'{inner}; echo $? > {shlex.quote(str(rc_file))}; sleep 600')}")
    tmux.wait_for("the broken node", lambda s: f"{target}" in s and "✖ broken" in s, timeout=60)
    tmux.keys("Space")
    tmux.wait_for("the node selected", lambda s: f"selected for repair: {target}" in s, timeout=10)
    tmux.keys("r")
    tmux.wait_for("the plan", lambda s: f"Type {target} to go on" in s, timeout=30)
    tmux.keys(target, literal=True)
    tmux.keys("Enter")
    wait_for_record(audit_dir, lambda r: r.get("event") == "step-started" and r.get("step") == "verify-no-holders",
                    "the repair waits for the training job at verify-no-holders", timeout=90)
    return int(pid_file.read_text())


def wait_gone(pid: int, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while running(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # never leave one behind, even when the test fails
            pytest.fail(f"the console {pid} did not exit after {what}")
        time.sleep(0.2)


def exit_status(rc_file: Path, timeout: float = 10.0) -> str:
    """The console's exit status, as the shell around it wrote it once the console had ended."""
    deadline = time.monotonic() + timeout
    while not rc_file.exists() or not rc_file.read_text().strip():
        if time.monotonic() > deadline:
            return "none written"
        time.sleep(0.1)
    return rc_file.read_text().strip()


@pytest.mark.parametrize("how", ["SIGHUP", "SIGTERM", "kill-server", "quit"])
def test_a_console_stopped_mid_repair_aborts_restores_the_node_and_exits(rigs, tmp_path, how):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    add_workload(rig)
    target, audit_dir, pid_file = rig.target("gpu05"), tmp_path / "audit", tmp_path / "console.pid"
    before = states_over_ssh(rig, "gpu05", UNITS)
    assert before["kubelet.service"] == "active" and before["nvidia-dcgm.service"] == "active"
    state_dir = rig.nodes["gpu05"].dir / "var" / "lib" / "nvls-tui"
    tmux = Tmux(f"nvls-sig-{os.getpid()}-{how}")
    try:
        pid = start_repair_held_at_verify_no_holders(rig, tmux, target, audit_dir, pid_file, tmp_path)
        mid = states_over_ssh(rig, "gpu05", UNITS)
        assert mid["kubelet.service"] == "inactive" and mid["nvidia-dcgm.service"] == "inactive"  # quiesced
        assert (state_dir / "repair.json").exists() and (state_dir / "lock").is_dir()
        if how == "kill-server":
            tmux.kill()  # the terminal hangs up under the console, as when the SSH session to the bastion drops
        elif how == "quit":
            tmux.keys("q")
            tmux.wait_for("the quit question", lambda s: "Abort, restore, quit" in s, timeout=15)
            tmux.keys("Tab")  # from Stay to "Abort, restore, quit"
            tmux.keys("Enter")
        else:
            os.kill(pid, getattr(signal, how))
        wait_gone(pid, how)
        assert states_over_ssh(rig, "gpu05", UNITS) == before
        assert not (state_dir / "repair.json").exists(), "the on-node record is left"
        assert not (state_dir / "lock").exists(), "the lock is left"
        records = repair_log(audit_dir)
        finished = [r for r in records if r.get("event") == "run-finished"]
        assert finished and finished[-1]["result"] == "aborted", finished
        why = "the operator quit the console" if how == "quit" else \
            f"{'SIGHUP' if how == 'kill-server' else how} received"
        assert why in finished[-1]["message"], finished[-1]
        restored = [r for r in records if r.get("event") == "step-finished" and r.get("step") == "restore"]
        assert restored and restored[-1]["status"] == "ok", restored
        assert {"kubelet.service", "nvidia-dcgm.service"} <= set(
            next(r for r in records if r.get("event") == "restored")["units"])
        if how != "kill-server":  # the pane outlives the console: its exit status and last words
            status = exit_status(pid_file.with_name("console.rc"))
            assert status == "1", (status, tmux.screen())
            assert "Traceback" not in tmux.screen()
    finally:
        if pid_file.exists() and running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        tmux.kill()
