"""Two bastions (two nvls-tui processes) on one lab node (real systemd, real processes, real sshd): a repair
waits in verify-no-holders behind a real training process while a second process's ``repair --restore``
(with and without ``--force``) and ``repair --yes`` are refused naming the live run; once the first process
is killed (-9) its lock is stale and ``--restore --force`` takes it over and real systemd shows every unit
back. A hand-written record's ``poweroff.target`` is never started (the container keeps running).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nvls_tui.lab.machine import node_run
from tests.lab.test_lab import is_active, poll
from tests.lab.test_lab_golden import kill_fm

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab")]

UNITS = ("kubelet", "nvidia-dcgm", "nvidia-snapshot.timer")
JOB = "nvls-test-training"


def cli(folder: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", *args, "--ssh-config", str(folder / "ssh_config")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 180) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=timeout)
    assert out, err
    (node,) = json.loads(out)["nodes"]
    return proc.returncode, node


def audit(folder: Path) -> list[dict]:
    """The records of the audit log in ``folder`` so far (none yet: empty; a line being written: left out)."""
    records = []
    for log in folder.glob("*.jsonl"):
        for line in log.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass
    return records


def test_a_second_bastion_never_tears_down_a_live_lab_repair_and_forces_only_a_stale_lock(lab, tmp_path):
    folder, nodes = lab
    node = nodes["gpu05"]
    # The node broken as the seed incident has it (FM killed): the tests before this one in the shared lab may
    # have repaired it, and a healthy node's repair would never reach verify-no-holders.
    kill_fm(node)
    # A training job holding GPU 3, as a user runs one: the repair never signals it, so it waits.
    node_run(node, "systemd-run", f"--unit={JOB}", "--uid=nobody", "python3", "-c",
             "import time; f = open('/dev/nvidia3', 'rb'); time.sleep(900)")
    first_dir = tmp_path / "first"
    first = cli(folder, "repair", "gpu05", "--yes", "--json", "--audit-dir", str(first_dir))
    try:
        poll(lambda: any(r.get("event") == "step-started" and r.get("step") == "verify-no-holders"
                         for r in audit(first_dir)),
             timeout=120, what="the first repair waiting for the training job")
        run_id = next(r["run_id"] for r in audit(first_dir) if r.get("event") == "run-started")
        assert is_active(node, "kubelet") == ["inactive"]
        for n, force in enumerate(([], ["--force"])):
            code, refused = finish(cli(folder, "repair", "--restore", "gpu05", *force, "--json", "--audit-dir",
                                       str(tmp_path / f"restore{n}")))
            assert (code, refused["result"]) == (1, "refused"), refused
            assert run_id in refused["message"] and f"PID {first.pid}" in refused["message"]
            assert "alive" in refused["message"]
        code, second = finish(cli(folder, "repair", "gpu05", "--yes", "--json", "--audit-dir", str(tmp_path / "2")))
        assert (code, second["result"]) == (1, "refused") and run_id in second["message"]
        assert is_active(node, "kubelet") == ["inactive"] and first.poll() is None
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)

        code, stale = finish(cli(folder, "repair", "--restore", "gpu05", "--json", "--audit-dir", str(tmp_path / "s")))
        assert (code, stale["result"]) == (1, "refused") and "stale" in stale["message"]
        node_run(node, "systemctl", "stop", JOB)  # the job ends; the restore puts the node back
        forced = tmp_path / "forced"
        code, restored = finish(cli(folder, "repair", "--restore", "gpu05", "--force", "--json", "--audit-dir",
                                    str(forced)))
        assert (code, restored["result"]) == (0, "restored"), restored
        assert is_active(node, *UNITS) == ["active"] * 3
        assert any(r.get("event") == "note" and "took over" in r.get("message", "") and run_id in r["message"]
                   for r in audit(forced))
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate(timeout=30)
        node_run(node, "systemctl", "stop", JOB, check=False)
        node_run(node, "systemctl", "start", *UNITS, check=False)


def test_a_hand_written_record_on_a_lab_node_never_powers_it_off(lab, tmp_path):
    folder, nodes = lab
    node = nodes["gpu06"]
    record = {"version": 1, "tool": "nvls-tui", "run_id": "r-hand", "host": "gpu06", "operator": "mallory",
              "started": "2026-08-10T00:00:00+00:00", "units": {"poweroff.target": "active", "reboot.target": "active",
                                                               "kubelet.service": "active"}, "persistence": {}}
    node_run(node, "mkdir", "-p", "/var/lib/nvls-tui")
    node_run(node, "python3", "-c", "import sys; open('/var/lib/nvls-tui/repair.json', 'w').write(sys.argv[1])",
             json.dumps(record))
    try:
        code, node_out = finish(cli(folder, "repair", "--restore", "gpu06", "--json", "--audit-dir", str(tmp_path)))
        assert (code, node_out["result"]) == (1, "failed") and "not a unit a repair stops" in node_out["message"]
        assert not any(u in (r.get("argv") or []) for r in audit(tmp_path) for u in ("poweroff.target", "reboot.target"))
        assert node_run(node, "systemctl", "is-system-running", check=False).stdout.strip() in ("running", "degraded")
        assert is_active(node, "poweroff.target", "reboot.target") == ["inactive", "inactive"]
    finally:
        node_run(node, "rm", "-f", "/var/lib/nvls-tui/repair.json", check=False)
