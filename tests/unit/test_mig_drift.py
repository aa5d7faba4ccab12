"""A MIG mode change that became pending after the plan was made is drift: the repair's ``nvidia-smi -r``
would commit a change the approved plan did not show. The apply refuses (headless: exit 1 with ``drift``)
as for any other drift. A change the plan showed, or one that went away, is not drift; a MIG mode that the
plan read and the apply cannot read is (fail closed: whether the reset commits a change is unknown)."""

from __future__ import annotations

import dataclasses
import json

from nvls_tui.model import NodeState
from nvls_tui.runbook.drift import drift, plan_basis
from tests.sshd.test_operations_headless import changing, fleet_of, repair_gpu05, saved_plan
from tests.test_console_fakes import make_node


def with_mig(state: NodeState, **modes: tuple[str | None, str | None]) -> NodeState:
    """``state`` with each GPU's MIG mode read Disabled, nothing pending, but for ``gpuN=(current, pending)``."""
    gpus = tuple(dataclasses.replace(g, mig_current=modes.get(f"gpu{g.index}", ("Disabled", "Disabled"))[0],
                                     mig_pending=modes.get(f"gpu{g.index}", ("Disabled", "Disabled"))[1])
                 for g in state.gpus)
    return state.replace(gpus=gpus)


def test_a_change_that_became_pending_after_the_plan_is_drift():
    planned = with_mig(make_node("gpu05", broken=True))
    now = with_mig(planned, gpu3=("Disabled", "Enabled"))
    assert drift(plan_basis(planned), planned) == []
    assert drift(plan_basis(planned), now) == [
        "GPU 3 has a pending MIG mode change (Disabled -> Enabled) that the plan did not show: the reset would "
        "commit it"]


def test_a_change_the_plan_showed_is_not_drift_and_one_that_went_away_is_not_either():
    pending = with_mig(make_node("gpu05", broken=True), gpu3=("Disabled", "Enabled"))
    assert drift(plan_basis(pending), pending) == []
    assert drift(plan_basis(pending), with_mig(pending)) == []  # less for the reset to commit


def test_another_change_than_the_one_the_plan_showed_is_drift():
    planned = with_mig(make_node("gpu05", broken=True), gpu3=("Disabled", "Enabled"))
    now = with_mig(planned, gpu3=("Enabled", "Disabled"))
    assert drift(plan_basis(planned), now) == [
        "GPU 3 has a pending MIG mode change (Enabled -> Disabled) that the plan did not show: the reset would "
        "commit it"]


def test_a_mig_mode_read_at_the_plan_and_unread_now_is_drift():
    planned = with_mig(make_node("gpu05", broken=True))
    now = with_mig(planned, gpu5=(None, None))
    assert drift(plan_basis(planned), now) == [
        "GPU 5's MIG mode was read for the plan (Disabled, pending Disabled) but cannot be read now: whether the "
        "reset commits a MIG mode change is unknown"]


def test_a_mig_mode_unread_at_the_plan_and_unread_now_is_what_the_plan_showed():
    unread = with_mig(make_node("gpu05", broken=True), gpu5=(None, None))
    assert drift(plan_basis(unread), unread) == []


def test_a_plan_without_mig_modes_approved_no_pending_change():
    # A basis saved before plans recorded MIG modes: a pending change now was never shown.
    planned = with_mig(make_node("gpu05", broken=True))
    basis = {k: v for k, v in plan_basis(planned).items() if k != "mig"}
    assert drift(basis, planned) == []
    assert len(drift(basis, with_mig(planned, gpu3=("Disabled", "Enabled")))) == 1


def test_the_basis_records_each_gpu_s_mig_mode_as_json():
    state = with_mig(make_node("gpu05", broken=True), gpu3=("Disabled", "Enabled"), gpu5=(None, None))
    mig = json.loads(json.dumps(plan_basis(state)))["mig"]
    assert mig["3"] == ["Disabled", "Enabled"] and mig["5"] == [None, None] and mig["0"] == ["Disabled", "Disabled"]


def test_a_saved_plan_refuses_a_mig_change_made_pending_since_with_exit_1(monkeypatch, tmp_path, capsys):
    fleet, backends = fleet_of("sim:seed-incident/gpu05")
    plan = saved_plan(monkeypatch, tmp_path, capsys, backends)
    assert json.loads(plan.read_text())["nodes"][0]["basis"]["mig"]["3"] == ["Disabled", "Disabled"]
    # Another administrator's `nvidia-smi -i 3 -mig 1` after the plan: refused on a busy GPU, left pending.
    fleet.node("gpu05").gpus[3].mig_pending = "Enabled"
    code = repair_gpu05(backends, "--plan", str(plan), "--json", "--audit-dir", str(tmp_path))
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert code == 1
    assert node["result"] == "refused" and "changed since the plan was approved" in node["message"]
    assert node["drift"] == ["GPU 3 has a pending MIG mode change (Disabled -> Enabled) that the plan did not "
                             "show: the reset would commit it"]
    assert changing(fleet, "gpu05") == []
    assert fleet.node("gpu05").gpus[3].mig_current == "Disabled"  # nothing committed it
