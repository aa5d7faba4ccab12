"""Two real bastions whose clocks are six minutes apart, one node behind a real sshd (issue 34, item 1); and a
lock dated in the node's future (item 6).

The second bastion runs nvls-tui under libfaketime (``FAKETIME=+6m``): every clock its process reads runs
six minutes ahead, as on a bastion whose NTP is broken. Against a live repair waiting in verify-no-holders it
must judge the lock as the first bastion does: alive, refused even with ``--force``. Then the first run is
paused (SIGSTOP) past the stale time, so its lock is stale on the node's clock and the second bastion takes it
over with ``--force`` and puts the node back. When the paused run wakes up, its next command is refused on
the node by the lock's fence: it stops, says LOCK LOST, and changes nothing more (no reset, no FM start, no
smoke test, no second restore).

Before: the second bastion read the live run's heartbeat (the first bastion's clock) as six minutes old, took
the lock over, restored and removed the record and lock; the live run sent ``nvidia-smi -r`` two seconds
later, restarted FM and ran the smoke test with no lock.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import signal
import time
from pathlib import Path

import pytest

from nvls_tui.sim.store import NodeStore
from tests.sshd.test_faults_ssh import RUNNING_BEFORE, audit_records, cli, finish, states_over_ssh, wait_for_record
from tests.sshd.test_two_bastions import add_workload, node_commands, only_node
from tests.sshd_rig import find_sshd, skewed_bastion

pytestmark = [pytest.mark.ssh,
              pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed"),
              pytest.mark.skipif(skewed_bastion("+6m") is None,
                                 reason="libfaketime is not installed (scripts/system-deps.sh)")]

AHEAD = skewed_bastion("+6m") or {}
WATCHED_BEAT = 1.0  # the forced restore's heartbeat interval, seconds (the product's is 30)


def record_times(directory: Path) -> list[dt.datetime]:
    return [dt.datetime.fromisoformat(r["time"]) for r in audit_records(directory) if r.get("time")]


def test_a_bastion_six_minutes_ahead_never_takes_a_live_lock_and_a_taken_over_run_stops_at_the_fence(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    add_workload(rig)
    target = rig.target("gpu05")
    first_dir = tmp_path / "first"
    first = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(first_dir))
    try:
        wait_for_record(first_dir, lambda r: r.get("event") == "step-started" and r.get("step") == "verify-no-holders",
                        "the first repair waits for the training job")
        run_id = next(r["run_id"] for r in audit_records(first_dir) if r.get("event") == "run-started")

        # The second bastion, its clock six minutes ahead: the live run is alive, --force or not.
        ahead_dir = tmp_path / "ahead"
        code, out, err = finish(cli(rig, "repair", "--restore", target, "--force", "--json", "--audit-dir",
                                    str(ahead_dir), env=AHEAD))
        refused = only_node(out)
        assert (code, refused["result"]) == (1, "refused"), (refused["message"], err)
        assert run_id in refused["message"] and "alive" in refused["message"], refused["message"]
        assert refused["lock_owner"]["status"] == "live"
        skew = min(record_times(ahead_dir)) - dt.datetime.now(dt.UTC)
        assert skew > dt.timedelta(minutes=5), f"the second bastion's clock is not ahead ({skew})"  # the rig is real
        assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "inactive"  # still the waiting run's
        assert first.poll() is None

        # The first run is paused; on the node its owner file then ages past the stale time (10 minutes).
        os.kill(first.pid, signal.SIGSTOP)
        owner_file = rig.nodes["gpu05"].dir / "var" / "lib" / "nvls-tui" / "lock" / "owner.json"
        assert json.loads(owner_file.read_text())["run_id"] == run_id
        aged = time.time() - 600
        os.utime(owner_file, (aged, aged))
        took_dir = tmp_path / "took"
        code, out, err = finish(cli(rig, "repair", "--restore", target, "--force", "--json", "--audit-dir",
                                    str(took_dir), env=AHEAD))
        restored = only_node(out)
        assert (code, restored["result"]) == (0, "restored"), (restored["message"], err)
        took = [r["message"] for r in audit_records(took_dir) if r.get("event") == "note" and
                "took over" in r.get("message", "")]
        assert took and run_id in took[0] and "node's clock" in took[0], took
        assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
        assert not owner_file.exists()
        after_take_over = len(node_commands(rig))

        # The training job ends and the paused run wakes up: its next command would have been the reset.
        with NodeStore(rig.nodes["gpu05"].dir).locked() as (node, _):
            for pid in [p.pid for p in node.procs.values() if p.argv == ["python3", "train.py"]]:
                node.procs.pop(pid)
        woke = time.time()
        os.kill(first.pid, signal.SIGCONT)
        code, out, err = finish(first, timeout=120)
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.kill()
    outcome = only_node(out)
    assert (code, outcome["result"]) == (1, "failed"), (outcome["message"], err)
    assert "LOCK LOST" in outcome["message"], outcome["message"]
    later = node_commands(rig)[after_take_over:]
    for changing in (["nvidia-smi", "-r"], ["systemctl", "start"], ["systemctl", "stop"], ["all_reduce_perf"]):
        assert not any(argv[:len(changing)] == changing for argv in later), (changing, later)
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")  # as the second bastion left it
    assert not owner_file.exists()
    sent_after = [r for r in audit_records(first_dir) if r.get("event") == "command-started"
                  and dt.datetime.fromisoformat(r["time"]).timestamp() >= woke - 1]
    assert not any((r.get("argv") or [])[:2] in (["nvidia-smi", "-r"], ["systemctl", "start"]) for r in sent_after)
    assert any(r.get("event") == "note" and r.get("level") == "error" and "LOCK LOST" in r.get("message", "")
               for r in audit_records(first_dir))


def test_a_lock_dated_in_the_nodes_future_is_refused_as_unjudgeable_and_force_takes_it_only_after_watching(
        rigs, tmp_path, monkeypatch, capsys):
    # Item 6: the node's clock stepped back an hour after another bastion's run wrote its owner file (that run is
    # gone: no heartbeat comes). Before: the refusal said the run was alive ("last heartbeat 0 s ago") and
    # --force could never take the lock over.
    from nvls_tui.runbook.lock import LockOwner

    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target = rig.target("gpu05")
    lock_dir = rig.nodes["gpu05"].dir / "var" / "lib" / "nvls-tui" / "lock"
    lock_dir.mkdir()
    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    owner = LockOwner(run_id="run-gone", bastion="bastion-b2", operator="lee", tool_pid=4242,
                      since=ahead.isoformat(timespec="seconds"), heartbeat=ahead.isoformat(timespec="seconds"))
    owner_file = lock_dir / "owner.json"
    owner_file.write_text(owner.to_json())
    os.utime(owner_file, (time.time() + 3600, time.time() + 3600))

    code, out, err = finish(cli(rig, "repair", "--restore", target, "--json", "--audit-dir", str(tmp_path / "r1")))
    refused = only_node(out)
    assert (code, refused["result"]) == (1, "refused"), err
    assert "cannot be judged" in refused["message"] and "future" in refused["message"], refused["message"]
    assert "--force" in refused["message"] and "0 s ago" not in refused["message"]
    assert refused["lock_owner"]["status"] == "cannot be judged"

    # The forced restore runs in this process, its heartbeat interval cut to WATCHED_BEAT: the watch it holds
    # (two intervals and a command timeout, no heartbeat seen, then the takeover) is the same, over the same sshd,
    # and lasts 7 s instead of the default 30 s interval's 65 s of waiting on nothing.
    import nvls_tui.headless.repair as headless_repair
    from nvls_tui.cli import main

    options = headless_repair.repair_options
    monkeypatch.setattr(headless_repair, "repair_options", lambda *args, **kwargs: dataclasses.replace(
        options(*args, **kwargs), heartbeat_interval=WATCHED_BEAT))
    forced_dir = tmp_path / "forced"
    code = main(["repair", "--restore", target, "--force", "--timeout", "5", "--json", "--audit-dir", str(forced_dir),
                 *rig.cli_args()])
    out, err = capsys.readouterr()
    taken = only_node(out)
    assert (code, taken["result"]) == (0, "restored"), (taken["message"], err)
    watched = 2 * WATCHED_BEAT + 5
    assert any(r.get("event") == "note" and f"for {watched:g} s" in r["message"] for r in audit_records(forced_dir))
    notes = [r["message"] for r in audit_records(forced_dir) if r.get("event") == "note"]
    assert any("watching its owner file" in m for m in notes), notes
    assert any("took over the unjudgeable lock" in m and "run-gone" in m and "no heartbeat" in m for m in notes)
    assert not owner_file.exists()
