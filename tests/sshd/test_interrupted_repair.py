"""A headless repair interrupted by SIGTERM, SIGHUP or two Ctrl-Cs, or by a full audit disk, over a real
sshd: every node is restored to how it was, the JSON still comes with result ``aborted`` (or
``refused``), the exit status is 1, and the audit log ends in a whole record.

Before: SIGTERM or SIGHUP mid-repair left kubelet, DCGM and the snapshot timer stopped and printed no
JSON (exit 143), a second Ctrl-C cancelled the restore, and a full disk let the run go on and say
"repaired" with a torn audit log.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.sshd.test_faults_ssh import (
    NVLS_TUI,
    RUNNING_BEFORE,
    audit_records,
    cli,
    finish,
    states_over_ssh,
    wait_for_record,
)
from tests.sshd_rig import find_sshd

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]
ROOT = Path(__file__).parents[2]


def stopped_kubelet(record: dict) -> bool:
    return record.get("argv") == ["systemctl", "stop", "kubelet.service"] and record.get("exit_status") == 0


def aborted_node(out: str) -> dict:
    (node,) = json.loads(out)["nodes"]
    return node


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_mid_repair_aborts_restores_every_unit_and_still_prints_the_json(rigs, tmp_path, signame):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target, audit_dir = rig.target("gpu05"), tmp_path / "audit"
    repair = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(audit_dir))
    wait_for_record(audit_dir, stopped_kubelet, "quiesce has stopped kubelet")
    repair.send_signal(getattr(signal, signame))
    code, out, err = finish(repair, timeout=90)
    node = aborted_node(out)
    assert code == 1, err
    assert node["result"] == "aborted" and node["reason"].endswith(f"{signame} received"), node
    assert node["reason"].split(":")[0] in ("quiesce", "verify-no-holders")
    assert {s["name"]: s["status"] for s in node["steps"]}["restore"] == "ok"
    assert set(RUNNING_BEFORE) <= set(node["restored"])
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    records = audit_records(audit_dir)
    assert records[-1]["event"] == "run-finished" and records[-1]["result"] == "aborted"
    code, out, _ = finish(cli(rig, "check", target, "--json"))
    assert "INTERRUPTED_REPAIR" not in {f["code"] for f in json.loads(out)["nodes"][0]["findings"]}
    assert "Traceback" not in err


def test_a_second_ctrl_c_during_the_restore_is_answered_and_the_restore_goes_on(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target, audit_dir = rig.target("gpu05"), tmp_path / "audit"
    repair = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(audit_dir))
    wait_for_record(audit_dir, stopped_kubelet, "quiesce has stopped kubelet")
    repair.send_signal(signal.SIGINT)
    wait_for_record(audit_dir, lambda r: r.get("event") == "step-started" and r.get("step") == "restore",
                    "the restore to begin")
    repair.send_signal(signal.SIGINT)
    code, out, err = finish(repair, timeout=90)
    node = aborted_node(out)
    assert code == 1 and node["result"] == "aborted" and "SIGINT received" in node["reason"]
    # What to run should this process be killed now: its lock would be stale, so --force.
    assert f"nvls-tui repair --restore --force {target}" in err
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    assert audit_records(audit_dir)[-1]["event"] == "run-finished"


def test_sigterm_during_the_smoke_test_stops_it_on_the_node_at_once_and_restores(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target, audit_dir = rig.target("gpu05"), tmp_path / "audit"
    repair = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(audit_dir))
    wait_for_record(audit_dir, lambda r: r.get("event") == "smoke-row", "the smoke test's first row")
    sent = time.monotonic()
    repair.send_signal(signal.SIGTERM)
    code, out, err = finish(repair, timeout=90)
    node = aborted_node(out)
    assert code == 1 and node["result"] == "aborted" and node["reason"].startswith("smoke-test:"), node
    steps = {s["name"]: s for s in node["steps"]}
    assert steps["smoke-test"]["status"] == "failed" and "interrupted" in steps["smoke-test"]["message"]
    assert time.monotonic() - sent < 60  # not the whole sweep, nor the smoke timeout
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    assert not any("all_reduce_perf" in line for line in command_lines(rig))


def command_lines(rig) -> list[str]:
    """The command lines of every live process the rig's sessions left (zombies and the gone skipped), and
    the names of the simulated commands still running in the nodes' fork servers."""
    lines = []
    for proc in rig.session_processes():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                lines.append(" ".join(proc.cmdline()))
        except psutil.Error:
            pass
    for proc in rig.simulated_commands():
        try:
            lines.append(proc.name())
        except psutil.Error:
            pass
    return lines


needs_mounts = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                  reason="needs root and unshare for a small private tmpfs")


def in_small_tmpfs(rig, size: str, args: list[str], out_dir: Path, fill_after: str | None = None):
    """``nvls-tui ARGS`` with its audit directory on a private tmpfs of ``size`` (a mount namespace).

    With ``fill_after``, a background job fills the tmpfs once the audit log holds that text. The
    log is copied to ``out_dir`` before the namespace (and its tmpfs) goes away.
    """
    audit = "/tmp/nvls-audit-tmpfs"
    fill = ""
    if fill_after:
        fill = (f"( while ! grep -qs {shlex.quote(fill_after)} {audit}/*.jsonl; do sleep 0.05; done; "
                f"dd if=/dev/zero of={audit}/filler bs=64k 2>/dev/null ) & ")
    cmd = " ".join(shlex.quote(a) for a in [*NVLS_TUI, *args, "--audit-dir", audit, *rig.cli_args()])
    script = (f"mkdir -p {audit} && mount -t tmpfs -o size={size},mode=0700 tmpfs {audit} && {fill}"
              f"{cmd}; rc=$?; cp {audit}/*.jsonl {shlex.quote(str(out_dir))}/ 2>/dev/null; exit $rc")
    out_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(["unshare", "-m", "sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


@needs_mounts
def test_an_audit_directory_without_room_refuses_the_repair_before_any_command(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target = rig.target("gpu05")
    code, out, err = finish(in_small_tmpfs(rig, "1m", ["repair", target, "--yes", "--json"], tmp_path / "logs"))
    node = aborted_node(out)
    assert code == 1 and node["result"] == "refused" and "audit" in node["message"], err
    assert all(s["commands"] == [] for s in node["steps"])
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")


@needs_mounts
def test_a_disk_that_fills_mid_repair_aborts_restores_and_leaves_no_torn_record(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target, logs = rig.target("gpu05"), tmp_path / "logs"
    proc = in_small_tmpfs(rig, "9m", ["repair", target, "--yes", "--json"], logs,
                          fill_after='"step": "quiesce"')
    code, out, err = finish(proc, timeout=120)
    node = aborted_node(out)
    assert code == 1 and node["result"] == "aborted" and "audit log could not be written" in node["reason"], err
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    (log,) = logs.glob("*.jsonl")
    text = log.read_text()
    assert text.endswith("\n") and all(json.loads(line) for line in text.splitlines())  # whole records only
    assert "No space left on device" in err


@needs_mounts
def test_the_restores_commands_after_the_disk_filled_are_kept_in_a_fallback_that_the_output_names(rigs, tmp_path):
    """The restore runs even when the audit log cannot record it; what it sends must still land on disk.
    Before: every record after the failure was dropped, so the restore's `systemctl start` went unrecorded."""
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    proc = in_small_tmpfs(rig, "9m", ["repair", rig.target("gpu05"), "--yes", "--json"], tmp_path / "logs",
                          fill_after='"step": "quiesce"')
    code, out, err = finish(proc, timeout=120)
    node = aborted_node(out)
    assert code == 1 and node["result"] == "aborted", err
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    state = Path(os.environ["XDG_STATE_HOME"]) / "nvls-tui" / "audit-fallback"
    (fallback,) = state.glob("repair-*.jsonl")
    assert node["audit_fallback"] == str(fallback) and str(fallback) in node["reason"] and str(fallback) in err
    records = [json.loads(line) for line in fallback.read_text().splitlines()]
    assert records[0]["event"] == "audit-fallback" and "No space left on device" in records[0]["error"]
    started = [r["argv"] for r in records if r.get("event") == "command-finished" and r.get("step") == "restore"
               and r.get("exit_status") == 0 and r["argv"][:2] == ["systemctl", "start"]]
    # Where the disk fills within quiesce is a race with the filler: every running unit quiesce stopped before
    # it (the log and the fallback together hold each stop that ran) must be started again, on the record.
    (log,) = (tmp_path / "logs").glob("*.jsonl")
    ran = [json.loads(line) for line in log.read_text().splitlines()] + records
    stopped = {r["argv"][2] for r in ran if r.get("event") == "command-finished" and r.get("step") == "quiesce"
               and r.get("exit_status") == 0 and r["argv"][:2] == ["systemctl", "stop"]} & set(RUNNING_BEFORE)
    assert stopped and all(["systemctl", "start", unit] in started for unit in stopped), (stopped, started)
