"""The INTERRUPTED_REPAIR hint gives the command that works (issue 34 item 7): followed as written, over a real
sshd, it puts back a node whose repair was killed (-9) mid-run.

A killed run leaves its record and its lock, and its process is gone: ``repair --restore HOST`` then refuses
(the lock is stale) and only ``repair --restore --force HOST`` takes it over. Before: the finding, the grid's
story and the report said ``repair --restore`` alone, which is refused there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal

import pytest

from nvls_tui.diagnosis.node import diagnose
from nvls_tui.diagnosis.story import node_story
from nvls_tui.model import NodeState
from nvls_tui.report.clock import NodeClock
from nvls_tui.report.findings import findings_sentence
from nvls_tui.runbook.observed import ObservedNode
from tests.sshd.test_faults_ssh import RUNNING_BEFORE, audit_records, cli, finish, states_over_ssh, wait_for_record
from tests.sshd.test_two_bastions import add_workload
from tests.sshd_rig import find_sshd

RECORD = {"run_id": "r1", "operator": "alice", "started": "2026-12-01T03:00:00+00:00", "units": {}}


def hint_commands(message: str) -> list[list[str]]:
    """The ``nvls-tui ...`` commands the message gives, in its order, as argv lists."""
    return [shlex.split(c) for c in re.findall(r"`(nvls-tui [^`]+)`", message)]


def test_the_finding_and_the_story_name_the_plain_restore_and_the_forced_one():
    state = NodeState("gpu05", reachable=True, repair_record=RECORD)
    finding = next(f for f in diagnose(state).findings if f.code == "INTERRUPTED_REPAIR")
    commands = hint_commands(finding.message)
    assert ["nvls-tui", "repair", "--restore", "gpu05"] in commands
    assert ["nvls-tui", "repair", "--restore", "--force", "gpu05"] in commands
    assert "stale" in finding.message  # when --force is the move: the lock's own word for it
    line = node_story(state, diagnose(state)).text
    assert "repair --restore" in line and "--force" in line, line


def test_the_report_names_the_commands_too():
    # the report reads a node-observed record through its typed reading (runbook/observed.py)
    summary = ObservedNode.read({"reachable": True, "verdict": "broken", "findings": ["INTERRUPTED_REPAIR"]})
    words = findings_sentence(summary, NodeClock(), past=False, kernel=None, host="gpu05")
    assert "`nvls-tui repair --restore gpu05`" in words and "`nvls-tui repair --restore --force gpu05`" in words


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
def test_the_hint_followed_as_written_puts_back_a_node_whose_repair_was_killed(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    add_workload(rig)  # the repair waits at verify-no-holders, its units stopped
    target = rig.target("gpu05")
    repair = cli(rig, "repair", target, "--yes", "--json", "--audit-dir", str(tmp_path / "killed"))
    wait_for_record(tmp_path / "killed", lambda r: r.get("event") == "step-started"
                    and r.get("step") == "verify-no-holders", "the repair waits for the training job")
    os.kill(repair.pid, signal.SIGKILL)
    finish(repair, timeout=10)
    assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "inactive"

    code, out, err = finish(cli(rig, "check", target, "--json"))
    (node,) = json.loads(out)["nodes"]
    finding = next(f for f in node["findings"] if f["code"] == "INTERRUPTED_REPAIR")
    commands = hint_commands(finding["message"])
    assert commands, finding["message"]
    results = []
    for n, argv in enumerate(commands):  # the operator tries what the hint says, in its order
        assert argv[:3] == ["nvls-tui", "repair", "--restore"], argv
        code, out, err = finish(cli(rig, *argv[1:], "--json", "--audit-dir", str(tmp_path / f"try{n}")))
        (tried,) = json.loads(out)["nodes"]
        results.append((argv, tried["result"], tried["message"]))
        if tried["result"] == "restored":
            break
    assert results[-1][1] == "restored", results
    assert "--force" in results[-1][0]  # the killed run's lock is stale: the plain command was refused first
    assert results[0][1] == "refused" and "stale" in results[0][2], results
    assert states_over_ssh(rig, "gpu05") == dict.fromkeys(RUNNING_BEFORE, "active")
    assert any(r.get("event") == "run-finished" and r.get("result") == "restored"
               for r in audit_records(tmp_path / f"try{len(results) - 1}"))
