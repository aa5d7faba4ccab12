"""Two bastions (two nvls-tui processes) on one node, over a real sshd: a repair waits in
verify-no-holders behind a training job while a second process runs ``repair --restore`` (with and without
``--force``) and then a second ``repair --yes``; neither touches the live run. Once the first process is
killed (-9), its lock is stale: ``--restore`` says so and ``--restore --force`` takes it over (audited)
and puts the node back. A hand-written record never gets ``poweroff.target`` started.

Before: the second process's ``--restore`` started the waiting run's units, deleted its record and lock,
and the second ``repair --yes`` ran beside the first.
"""

from __future__ import annotations

import json
import os
import signal
import socket

import pytest

from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.sim.store import NodeStore
from tests.sshd.test_faults_ssh import (
    RUNNING_BEFORE,
    audit_records,
    cli,
    finish,
    one_line_error,
    states_over_ssh,
    wait_for_record,
)
from tests.sshd_rig import find_sshd

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]


def add_workload(rig, name: str = "gpu05") -> None:
    """A training job on GPU 3 of the shimmed node: a repair waits for it (it is never signalled)."""
    with NodeStore(rig.nodes[name].dir).locked() as (node, clock):
        node.spawn(ppid=1, user="alice", start=clock.now() - 60, argv=["python3", "train.py"],
                   cgroup="0::/user.slice/user-1001.slice/session-4.scope", role="cuda-app",
                   devices=["/dev/nvidia3", "/dev/nvidiactl"])


def node_commands(rig, name: str = "gpu05") -> list[list[str]]:
    """Every simulated command the node ran (the shims log them in its state)."""
    node, _ = NodeStore(rig.nodes[name].dir).load()
    return [list(argv) for _, argv in node.cmdlog]


def only_node(out: str) -> dict:
    (node,) = json.loads(out)["nodes"]
    return node


def test_a_second_bastion_never_tears_down_a_live_repair_and_takes_over_only_a_stale_lock_with_force(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    add_workload(rig)
    target = rig.target("gpu05")
    first_dir = tmp_path / "first"
    first = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(first_dir))
    wait_for_record(first_dir, lambda r: r.get("event") == "step-started" and r.get("step") == "verify-no-holders",
                    "the first repair waits for the training job")
    run_id = next(r["run_id"] for r in audit_records(first_dir) if r.get("event") == "run-started")
    assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "inactive"

    for n, force in enumerate(([], ["--force"])):  # a live run is never overridden, not even with --force
        restore_dir = tmp_path / f"restore{n}"
        code, out, err = finish(cli(rig, "repair", "--restore", target, *force, "--json", "--audit-dir",
                                    str(restore_dir)))
        refused = only_node(out)
        assert (code, refused["result"]) == (1, "refused"), err
        for word in (run_id, socket.gethostname(), str(first.pid), "since", "alive"):
            assert word in refused["message"], (word, refused["message"])
        assert not any((r.get("argv") or [])[:2] == ["systemctl", "start"] for r in audit_records(restore_dir))
        one_line_error(err)
    assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "inactive"  # still the waiting run's

    second_dir = tmp_path / "second"
    code, out, err = finish(cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(second_dir)))
    second = only_node(out)
    assert (code, second["result"]) == (1, "refused") and run_id in second["message"], err
    assert not any((r.get("argv") or [])[:2] == ["systemctl", "stop"] for r in audit_records(second_dir))
    assert first.poll() is None  # the first repair still waits, its lock and record untouched

    os.kill(first.pid, signal.SIGKILL)
    assert finish(first, timeout=10)[0] == -signal.SIGKILL
    code, out, err = finish(cli(rig, "repair", "--restore", target, "--json", "--audit-dir", str(tmp_path / "r2")))
    stale = only_node(out)
    assert (code, stale["result"]) == (1, "refused") and "stale" in stale["message"], err
    assert f"process {first.pid} is gone" in stale["message"] and "--force" in stale["message"]

    forced_dir = tmp_path / "forced"
    code, out, err = finish(cli(rig, "repair", "--restore", target, "--force", "--json", "--audit-dir",
                                str(forced_dir)))
    restored = only_node(out)
    assert (code, restored["result"]) == (0, "restored"), err
    assert set(RUNNING_BEFORE) <= set(restored["restored"])
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    took = [r for r in audit_records(forced_dir) if r.get("event") == "note" and "took over" in r.get("message", "")]
    assert took and took[0]["level"] == "warning" and run_id in took[0]["message"]
    code, out, _ = finish(cli(rig, "check", target, "--json"))
    assert "INTERRUPTED_REPAIR" not in [f["code"] for f in json.loads(out)["nodes"][0]["findings"]]


def test_a_hand_written_record_over_ssh_never_gets_poweroff_or_reboot_target_started(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target = rig.target("gpu05")
    state_dir = rig.nodes["gpu05"].dir / "var" / "lib" / "nvls-tui"
    record = RepairRecord(run_id="r-hand", host="gpu05", operator="mallory", started="2026-08-10T00:00:00+00:00",
                          units={"kubelet.service": "active", "poweroff.target": "active",
                                 "reboot.target": "active"})
    (state_dir / RECORD_FILE.rsplit("/", 1)[1]).write_text(record.to_json())
    audit_dir = tmp_path / "restore"
    code, out, err = finish(cli(rig, "repair", "--restore", target, "--json", "--audit-dir", str(audit_dir)))
    node = only_node(out)
    assert (code, node["result"]) == (1, "failed"), err
    assert "poweroff.target" in node["message"] and "not a unit a repair stops" in node["message"]
    sent = [r.get("argv") or [] for r in audit_records(audit_dir)]
    ran = node_commands(rig)
    for unit in ("poweroff.target", "reboot.target"):
        assert not any(unit in argv for argv in sent + ran), unit
