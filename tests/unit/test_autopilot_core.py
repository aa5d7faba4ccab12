"""Issue 40 item 2: each limit of the autopilot's pure core, alone; each test fails without its limit."""

from __future__ import annotations

import pytest

from nvls_tui.autopilot.decide import DAY_S, Autopilot, Limits
from nvls_tui.autopilot.policy import Judged, Judgement, Policy, PolicyError, load_policy
from nvls_tui.autopilot.state import State, StateError, StateStore
from nvls_tui.model import Severity, Verdict
from nvls_tui.model.node import Diagnosis, Finding

R, H, U, X = Judgement.REPAIRABLE, Judgement.HEALTHY, Judgement.UNKNOWN, Judgement.UNSAFE


def diag(*findings: Finding) -> Diagnosis:
    return Diagnosis(findings=findings, verdict=Verdict.BROKEN if findings else Verdict.HEALTHY)


def err(code: str, action: str | None = None) -> Finding:
    return Finding(code=code, severity=Severity.ERROR, message=code, action=action)


def fleet(n: int, bad: dict[str, Judgement] | None = None) -> list[Judged]:
    bad = bad or {}
    return [Judged(f"gpu{i:02d}", bad.get(f"gpu{i:02d}", H), fm_starts=0) for i in range(1, n + 1)]


def pilot(**limits) -> Autopilot:
    return Autopilot(Limits(**{"cooldown_s": 0, **limits}), State(canary_passed=True))


# --- policy --------------------------------------------------------------------------------------

def test_policy_repairs_fm_not_running_and_out_of_sync_with_a_reset_bucket():
    p = Policy()
    assert p.judge("a", True, diag(err("FM_NOT_RUNNING"))).judgement is R
    assert p.judge("a", True, diag(err("FABRIC_OUT_OF_SYNC"), err("XID", "RESET_GPU"))).judgement is R


@pytest.mark.parametrize("finding", [err("XID", "CONTACT_SUPPORT"), err("XID", "CHECK_MECHANICALS"),
                                     err("GPU_LOST"), err("FM_VERSION_MISMATCH"), err("XID", "RESTART_BM"),
                                     err("XID"), err("NVLINK_DOWN")])
def test_policy_never_repairs_what_a_reset_cannot_fix(finding):
    judged = Policy().judge("a", True, diag(err("FM_NOT_RUNNING"), finding))
    assert judged.judgement is X and any(finding.code in w for w in judged.why)


def test_a_node_not_read_whole_is_unknown_never_healthy_or_repairable():
    p = Policy()
    assert p.judge("a", False, diag()).judgement is U
    missing = Finding("EVIDENCE_MISSING", Severity.ERROR, "holders unread", section="holders")
    assert p.judge("a", True, diag(err("FM_NOT_RUNNING"), missing)).judgement is U


def test_policy_file_narrows_and_refuses_what_is_never_safe(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('remove_codes = ["FM_NOT_RUNNING"]\n')
    assert load_policy(str(f)).judge("a", True, diag(err("FM_NOT_RUNNING"))).judgement is X
    f.write_text('add_codes = ["GPU_LOST"]\n')
    with pytest.raises(PolicyError, match="GPU_LOST can never"):
        load_policy(str(f))
    f.write_text('add_buckets = ["CONTACT_SUPPORT"]\n')
    with pytest.raises(PolicyError, match="CONTACT_SUPPORT"):
        load_policy(str(f))
    f.write_text('safe_code = ["X"]\n')
    with pytest.raises(PolicyError, match="unknown key 'safe_code'"):
        load_policy(str(f))


# --- debounce ------------------------------------------------------------------------------------

def test_debounce_a_finding_must_hold_two_rounds_and_unknown_neither_clears_nor_counts():
    ap = pilot()
    assert ap.decide(fleet(4, {"gpu01": R}), 0).chosen == []
    assert ap.decide(fleet(4, {"gpu01": U}), 10).chosen == []  # unknown: no recovery, no count
    assert ap.decide(fleet(4, {"gpu01": R}), 20).chosen == ["gpu01"]


def test_debounce_a_healthy_round_between_starts_the_count_again():
    ap = pilot()
    ap.decide(fleet(4, {"gpu01": R}), 0)
    ap.decide(fleet(4), 10)
    r = ap.decide(fleet(4, {"gpu01": R}), 20)
    assert r.chosen == [] and r.decisions[0].reason == "debounce"


# --- breaker -------------------------------------------------------------------------------------

def _repair_round(ap: Autopilot, judged, now):
    ap.decide(judged, now)
    r = ap.decide(judged, now + 1)
    for h in r.chosen:
        ap.started(h, now + 1)
        ap.finished(h, True, now + 2)
    return r


@pytest.mark.parametrize(("n", "nodes", "percent", "bound"), [(4, 5, 5.0, 1), (100, 5, 10.0, 5), (100, 50, 3.0, 3),
                                                                (1024, 5, 5.0, 5)])
def test_breaker_bound_is_the_lower_of_count_and_percentage_and_at_least_one(n, nodes, percent, bound):
    assert Limits(breaker_nodes=nodes, breaker_percent=percent).breaker_bound(n) == bound


def test_breaker_trips_at_its_bound_stays_tripped_and_only_an_operator_closes_it():
    ap = pilot(breaker_nodes=2, breaker_percent=100, max_parallel=10, window_s=100)
    r = _repair_round(ap, fleet(8, {"gpu01": R, "gpu02": R, "gpu03": R}), 0)
    assert r.chosen == ["gpu01", "gpu02"] and r.tripped_now
    assert [d.reason for d in r.decisions if d.host == "gpu03"] == ["breaker"]
    # Long after the window: still tripped (it never resets itself).
    later = _repair_round(ap, fleet(8, {"gpu03": R}), 10_000)
    assert later.chosen == [] and ap.state.breaker.tripped
    ap.close_breaker(20_000)
    assert _repair_round(ap, fleet(8, {"gpu03": R}), 20_000).chosen == ["gpu03"]


def test_breaker_counts_only_the_sliding_window():
    ap = pilot(breaker_nodes=1, breaker_percent=100, window_s=100)
    assert _repair_round(ap, fleet(8, {"gpu01": R}), 0).chosen == ["gpu01"]
    assert _repair_round(ap, fleet(8, {"gpu02": R}), 200).chosen == ["gpu02"]
    assert not ap.state.breaker.tripped


def test_a_fleet_of_four_still_allows_one_repair():
    ap = pilot()  # 5 nodes or 5 %: 5 % of 4 is 0.2
    assert _repair_round(ap, fleet(4, {"gpu01": R}), 0).chosen == ["gpu01"]


def test_the_breaker_never_stops_a_repair_already_started():
    ap = pilot(breaker_nodes=1, breaker_percent=100)
    ap.decide(fleet(8, {"gpu01": R}), 0)
    assert ap.decide(fleet(8, {"gpu01": R}), 1).chosen == ["gpu01"]
    ap.started("gpu01", 1)
    ap.decide(fleet(8, {"gpu02": R}), 2)
    r = ap.decide(fleet(8, {"gpu02": R}), 3)
    assert r.tripped_now and ap.running() == ["gpu01"]  # gpu01's repair (its restore, resume) goes on
    ap.finished("gpu01", True, 4)
    assert ap.state.repairs[0].ok is True


# --- max parallel and canary ----------------------------------------------------------------------

def test_max_parallel_bounds_repairs_at_once():
    ap = pilot(max_parallel=2, breaker_nodes=50, breaker_percent=100)
    bad = {f"gpu0{i}": R for i in range(1, 6)}
    ap.decide(fleet(8, bad), 0)
    r = ap.decide(fleet(8, bad), 1)
    assert len(r.chosen) == 2 and {d.reason for d in r.decisions if d.action == "skip"} == {"max-parallel"}


def test_canary_first_repair_alone_until_its_smoke_test_passes_and_again_after_a_failure():
    ap = Autopilot(Limits(max_parallel=4, cooldown_s=0, breaker_nodes=50, breaker_percent=100), State())
    bad = {f"gpu0{i}": R for i in range(1, 6)}
    ap.decide(fleet(8, bad), 0)
    r = ap.decide(fleet(8, bad), 1)
    # The wave is max-parallel's; no repair has passed yet, so its first node runs alone, the rest after it.
    assert r.chosen == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert ap.batches(r.chosen) == [["gpu01"], ["gpu02", "gpu03", "gpu04"]]
    ap.started("gpu01", 1)
    r = ap.decide(fleet(8, bad), 2)
    assert r.chosen == [] and {d.reason for d in r.decisions if d.action == "skip"} == {"canary"}  # it still runs
    ap.finished("gpu01", True, 3)
    assert ap.batches(["gpu02", "gpu03"]) == [["gpu02", "gpu03"]]  # a canary passed: the wave at once
    assert len(ap.decide(fleet(8, bad), 4).chosen) == 4
    ap.finished("gpu02", False, 5)
    assert not ap.state.canary_passed and ap.batches(["gpu02", "gpu03"]) == [["gpu02"], ["gpu03"]]


# --- budget and cooldown ----------------------------------------------------------------------------

def test_budget_spent_escalates_to_a_hardware_ticket_and_stays_escalated():
    ap = pilot(budget=2, budget_days=7, breaker_nodes=50, breaker_percent=100)
    for t in (0, 1000):
        assert _repair_round(ap, fleet(8, {"gpu01": R}), t).chosen == ["gpu01"]
    r = _repair_round(ap, fleet(8, {"gpu01": R}), 2000)
    assert r.chosen == [] and r.decisions[-1].action == "escalate" and "hardware ticket" in r.decisions[-1].message
    # Days later the budget's window has passed, but the node stays for a person.
    assert _repair_round(ap, fleet(8, {"gpu01": R}), 30 * DAY_S).decisions[-1].reason == "escalated"


def test_cooldown_after_a_repair_before_the_node_is_judged_again():
    ap = Autopilot(Limits(cooldown_s=600, breaker_nodes=50, breaker_percent=100), State(canary_passed=True))
    assert _repair_round(ap, fleet(8, {"gpu01": R}), 0).chosen == ["gpu01"]
    r = _repair_round(ap, fleet(8, {"gpu01": R}), 100)
    assert r.chosen == [] and r.decisions[-1].reason == "cooldown"
    assert _repair_round(ap, fleet(8, {"gpu01": R}), 700).chosen == ["gpu01"]


def test_pause_stops_new_repairs():
    ap = pilot()
    ap.decide(fleet(8, {"gpu01": R}), 0)
    r = ap.decide(fleet(8, {"gpu01": R}), 1, paused=True)
    assert r.chosen == [] and r.decisions[0].reason == "paused"


# --- state on disk --------------------------------------------------------------------------------

def test_state_keeps_a_tripped_breaker_and_a_spent_budget_across_a_restart(tmp_path):
    store = StateStore(tmp_path / "state")
    ap = pilot(breaker_nodes=1, breaker_percent=100, budget=1)
    _repair_round(ap, fleet(8, {"gpu01": R, "gpu02": R}), 0)
    assert ap.state.breaker.tripped
    store.save(ap.state)
    again = Autopilot(ap.limits, store.load())
    assert again.state.breaker.tripped and again.budget_used("gpu01", 10) == 1
    assert not list((tmp_path / "state").glob(".*tmp"))  # written whole, then renamed


def test_a_state_file_that_cannot_be_read_is_an_error_never_a_fresh_state(tmp_path):
    (tmp_path / "autopilot-state.json").write_text("{not json")
    with pytest.raises(StateError, match="not JSON"):
        StateStore(tmp_path).load()


def test_limits_refuse_nonsense_with_one_sentence():
    with pytest.raises(ValueError, match="--max-parallel must be at least 1"):
        Limits(max_parallel=0)
    with pytest.raises(ValueError, match="--breaker-percent"):
        Limits(breaker_percent=0)


def test_debounce_counts_a_finding_that_held_not_one_that_came_as_another_went():
    ap = pilot()
    ap.decide([Judged("gpu01", R, ("FM_NOT_RUNNING",), fm_starts=0)], 0)
    r = ap.decide([Judged("gpu01", R, ("FABRIC_OUT_OF_SYNC",), fm_starts=0)], 10)
    assert r.chosen == [] and r.decisions[0].reason == "debounce"
    assert ap.decide([Judged("gpu01", R, ("FABRIC_OUT_OF_SYNC", "XID/RESET_GPU"), fm_starts=0)], 20).chosen == ["gpu01"]


def test_a_repair_a_killed_process_never_ended_is_failed_on_restart_and_frees_its_slot():
    ap = pilot(max_parallel=1)
    ap.started("gpu01", 0)
    again = Autopilot(ap.limits, ap.state)
    assert again.interrupted(100) == ["gpu01"] and again.running() == []
    assert again.state.repairs[0].ok is False and not again.state.canary_passed


def test_the_trip_reason_names_the_node_and_the_repair_it_would_be_not_a_count_that_did_not_happen():
    """Found trying the console's ask mode on sim:seed-incident (8 nodes, bound 1): the trip read "1 repairs in
    3600 s reached the bound of 1" while the limits line said "0 of 1 repairs started" (gpu05 was proposed, not
    started) and the bound was reached, not passed. The reason says which node would pass the bound, as what."""
    ap = pilot(breaker_nodes=5, breaker_percent=5, max_parallel=10)
    r = _repair_round(ap, fleet(8, {"gpu05": R, "gpu06": R}), 0)
    assert r.chosen == ["gpu05"] and r.tripped_now
    assert ap.state.breaker.reason == ("gpu06 would be repair 2 in 3600 s, past the bound of 1 (the lower of "
                                       "5 nodes and 5 % of the 8 nodes watched, at least 1)")


def test_the_limits_are_worded_for_an_operator_not_as_a_python_repr():
    """Found reading the first line of `nvls-tui autopilot ... --mode auto`: 'started (start) limits
    Limits(breaker_nodes=5, breaker_percent=5.0, window_s=3600.0, ...)' (the same in the console's audit log):
    field names and floats, not the options an operator sets. Each limit reads as its option's words."""
    assert Limits().words() == ("breaker: past the lower of 5 nodes and 5 % of the nodes watched in 3600 s; "
                                "at most 2 at once; budget 3 repairs in 7 days; cooldown 900 s; debounce 2 rounds; "
                                "FM flapping: more than 3 starts in 3600 s")
