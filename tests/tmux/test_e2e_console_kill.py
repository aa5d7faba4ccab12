"""The console killed with SIGKILL in the middle of a repair, then started again, in a real terminal.

A simulated node behind the loopback sshd keeps its state between the two consoles (shims), so the
second console must see what the first one left: the crash-safe record on the node, shown as
INTERRUPTED_REPAIR, and restore every unit from it with the node screen's ``U`` (twice: the dead console's
lock is stale, and only a confirmed take-over restores).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.sshd.test_faults_ssh import RUNNING_BEFORE, states_over_ssh, wait_for_record
from tests.tmux.test_e2e_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def console_command(rig, target: str, audit_dir: Path, pid_file: Path, tmp_path: Path) -> str:
    """A shell line that records the console's PID, then becomes the console (exec keeps the PID)."""
    exe = Path(sys.executable).with_name("nvls-tui")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "TERM": "xterm-256color"}
    argv = [str(exe), target, *rig.cli_args(), "--audit-dir", str(audit_dir), "--poll", "1"]
    inner = "echo $$ > {pid}; exec env -u COLUMNS -u LINES {env} {argv}".format(
        pid=shlex.quote(str(pid_file)), env=" ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()),
        argv=shlex.join(argv))
    return f"sh -c {shlex.quote(inner)}"


def test_a_console_killed_mid_repair_restarts_shows_interrupted_repair_and_restores(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target, audit_dir, pid_file = rig.target("gpu05"), tmp_path / "audit", tmp_path / "console.pid"
    first = Tmux(f"nvls-kill-{os.getpid()}-a")
    second = Tmux(f"nvls-kill-{os.getpid()}-b")
    try:
        first.start(console_command(rig, target, audit_dir, pid_file, tmp_path))
        host = re.escape(target)
        first.wait_for("the broken node", lambda s: re.search(host + r"\s+✖ broken", s), timeout=30)
        first.keys("Space")
        first.wait_for("the node selected", lambda s: f"selected for repair: {target}" in s, timeout=10)
        first.keys("r")
        first.wait_for("the plan", lambda s: f"Type {target} to go on" in s, timeout=20)
        first.keys(target, literal=True)
        first.keys("Enter")
        wait_for_record(audit_dir, lambda r: r.get("argv") == ["systemctl", "stop", "kubelet.service"]
                        and r.get("exit_status") == 0, "the console's repair has stopped kubelet")
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # no restore, no clean-up: the node keeps its record
        deadline = time.monotonic() + 10
        while states_over_ssh(rig, "gpu05")["kubelet.service"] != "inactive":
            assert time.monotonic() < deadline, "kubelet should stay stopped after the kill"
            time.sleep(0.2)

        second.start(console_command(rig, target, audit_dir / "second", pid_file, tmp_path))
        second.wait_for("the interrupted repair", lambda s: "INTERRUPTED_REPAIR" in s, timeout=30)
        second.keys("Enter")
        second.wait_for("the node screen", lambda s: "Holders of /dev/nvidia" in s, timeout=15)
        second.keys("U")
        second.wait_for("the restore confirmation", lambda s: "interrupted repair's record?" in s, timeout=10)
        second.keys("Tab")
        second.keys("Enter")
        # The killed console's lock names a process gone from this bastion: stale, taken over only when asked.
        second.wait_for("the stale lock's refusal", lambda s: "Press U again" in s, timeout=30)
        second.keys("U")
        second.wait_for("the take-over confirmation", lambda s: "Take over the stale lock" in s, timeout=10)
        second.keys("Tab")
        second.keys("Enter")
        second.wait_for("the restore's outcome", lambda s: "INTERRUPTED_REPAIR" not in s and "restored" in s,
                        timeout=30)
        assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
        logs = list((audit_dir / "second").glob("session-*.jsonl"))
        assert logs and '"mode": "restore"' in logs[0].read_text()
    finally:
        first.kill()
        second.kill()
