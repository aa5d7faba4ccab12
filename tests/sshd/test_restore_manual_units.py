"""``repair --restore`` starts a unit the record lists as stopped by hand (``manual``) only where the console's
Units pane could have stopped it (the units the probe reads), over a real sshd (issue 34 item 5).

The record is a file on the node: anyone with root there can write ``poweroff.target`` into its ``manual``
list. Before: the restore took ``manual`` as an allow-list of its own and ran ``systemctl start
poweroff.target``. Now such a unit is reported (a note naming it, the JSON's message) and never started,
and the rest of the restore goes on (kubelet, which the record says ran, is started again).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from nvls_tui.poll.probe import RECORD_FILE, UNITS
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.restore import startable
from nvls_tui.runbook.session import Session
from nvls_tui.sim.store import NodeStore
from tests.sshd.test_faults_ssh import audit_records, cli, finish, states_over_ssh
from tests.sshd_rig import backend_for, find_sshd
from tests.test_console_fakes import FakeBackend, make_node

FOREIGN = ("poweroff.target", "reboot.target")


def node_commands(rig, name: str = "gpu05") -> list[list[str]]:
    """Every simulated command the node ran (the shims log them in its state)."""
    node, _ = NodeStore(rig.nodes[name].dir).load()
    return [list(argv) for _, argv in node.cmdlog]


async def _stop(rig, unit: str) -> None:
    backend = backend_for(rig, "gpu05")
    try:
        assert (await backend.run(["systemctl", "stop", unit])).ok
    finally:
        await backend.close()


@pytest.mark.parametrize("unit", [*FOREIGN, "sshd.service", "multi-user.target"])
def test_a_unit_the_units_pane_cannot_stop_is_never_startable_through_manual(unit):
    assert unit not in UNITS
    assert not startable(unit, manual=(unit,))


@pytest.mark.parametrize("unit", UNITS)
def test_every_unit_of_the_units_pane_is_startable_when_the_record_says_it_was_stopped_by_hand(unit):
    assert startable(unit, manual=(unit,))


async def test_the_session_refuses_to_stop_by_hand_a_unit_the_units_pane_does_not_list(tmp_path):
    # What the console stops by hand is what a later restore may start: the two lists are one.
    backend = FakeBackend(make_node("gpu05"))
    session = Session({"gpu05": backend}, audit_dir=str(tmp_path))
    done = await session.unit("gpu05", "stop", "poweroff.target")
    assert not done.ok and "poweroff.target" in done.message and backend.ran == []
    assert session.ledger.changes("gpu05") == []
    await session.close()


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
def test_a_hand_written_manual_list_never_gets_poweroff_or_reboot_started_and_the_rest_is_restored(rigs, tmp_path):
    rig = rigs({"gpu05": ("seed-incident", "gpu05")})
    target = rig.target("gpu05")
    asyncio.run(_stop(rig, "kubelet.service"))
    assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "inactive"
    record = RepairRecord(run_id="r-hand", host="gpu05", operator="mallory", started="2026-08-10T00:00:00+00:00",
                          units={"kubelet.service": "active", **dict.fromkeys(FOREIGN, "active")},
                          manual=(*FOREIGN, "kubelet.service"))
    state_dir = rig.nodes["gpu05"].dir / "var" / "lib" / "nvls-tui"
    (state_dir / RECORD_FILE.rsplit("/", 1)[1]).write_text(record.to_json())

    audit_dir = tmp_path / "restore"
    code, out, err = finish(cli(rig, "repair", "--restore", target, "--json", "--audit-dir", str(audit_dir)))
    (node,) = json.loads(out)["nodes"]
    assert "Traceback" not in err
    sent = [r.get("argv") or [] for r in audit_records(audit_dir)]
    ran = node_commands(rig)
    for unit in FOREIGN:
        assert not any(unit in argv for argv in sent + ran), unit
        assert unit in node["message"], node["message"]
        notes = [r for r in audit_records(audit_dir) if r.get("event") == "note" and unit in r.get("message", "")]
        assert notes and notes[0]["level"] == "error", unit
    # The rest of the restore went on: kubelet, which the record says ran, runs again.
    assert "kubelet.service" in node["restored"]
    assert states_over_ssh(rig, "gpu05")["kubelet.service"] == "active"
    assert code == 1 and node["result"] == "failed"  # the record stays: the node still says so
