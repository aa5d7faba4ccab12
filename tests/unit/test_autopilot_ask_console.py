"""The console's ``--autopilot ask`` (issue 40 item 3) without a screen: its options, and when a round is judged.

The screens' side (the mark, the pane, the approval key, the repair) is tests/pilot/test_autopilot_ask.py.
"""

from __future__ import annotations

import json
import time

import pytest

from nvls_tui.autopilot.policy import PolicyError
from nvls_tui.autopilot.state import Repair, State, StateError, StateStore
from nvls_tui.cli import build_parser, build_settings, main
from nvls_tui.console.ask import AskMode
from nvls_tui.model import NodeState, Severity, Verdict
from nvls_tui.model.node import Diagnosis, Finding, ServiceState
from nvls_tui.settings import AutopilotSettings

HEALTHY = Diagnosis((), Verdict.HEALTHY)
FM_DEAD = Diagnosis((Finding("FM_NOT_RUNNING", Severity.ERROR, "Fabric Manager is not running"),), Verdict.BROKEN)


def ask(tmp_path, hosts=("gpu01", "gpu02", "gpu03"), **limits) -> AskMode:
    settings = AutopilotSettings(mode="ask", state_dir=str(tmp_path / "state"), limits=limits)
    return AskMode.open(settings, list(hosts), audit_dir=str(tmp_path / "audit"), every=0)


# FM's unit read (failed: its start times, none, are known) and the node's clock: the flapping limit can judge.
FM_FAILED = ServiceState(name="nvidia-fabricmanager.service", active="failed")
CLOCK = 1_800_000_000.0


def nodes(broken: set[str], hosts=("gpu01", "gpu02", "gpu03")) -> list[tuple[NodeState, Diagnosis]]:
    return [(NodeState(h, reachable=True, services=(FM_FAILED,), node_clock=CLOCK), FM_DEAD if h in broken
             else HEALTHY) for h in hosts]


def proposing_gpu02(tmp_path) -> AskMode:
    """Two rounds of gpu02 broken (a breaker of 100 %, so nothing trips): gpu02 is proposed."""
    mode = ask(tmp_path, breaker_percent=100.0)
    for t in (0.0, 1.0):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        mode.maybe_round(nodes({"gpu02"}), t)
    assert mode.proposed == ["gpu02"]
    return mode


def test_the_console_takes_ask_mode_its_state_dir_policy_and_limits(tmp_path):
    args = build_parser().parse_args(["console", "sim:seed-incident", "--autopilot", "ask", "--state-dir",
                                      str(tmp_path), "--policy", "p.toml", "--budget", "2", "--cooldown", "0"])
    a = build_settings(args).autopilot
    assert a is not None and a.mode == "ask" and a.state_dir == str(tmp_path) and a.policy == "p.toml"
    assert a.limits == {"budget": 2, "cooldown_s": 0.0}
    assert build_settings(build_parser().parse_args(["console", "sim:seed-incident"])).autopilot is None


def test_the_autopilots_options_without_ask_are_one_line_and_exit_2(capsys, tmp_path):
    assert main(["console", "sim:seed-incident", "--budget", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--autopilot ask" in err


def test_a_policy_or_state_it_cannot_use_stops_ask_mode_before_the_console(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('add_buckets = ["CONTACT_SUPPORT"]\n')
    with pytest.raises(PolicyError, match="CONTACT_SUPPORT"):
        AskMode.open(AutopilotSettings(mode="ask", state_dir=str(tmp_path), policy=str(policy)), ["gpu01"],
                     audit_dir=str(tmp_path / "audit"), every=0)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "autopilot-state.json").write_text("{")
    with pytest.raises(StateError):
        AskMode.open(AutopilotSettings(mode="ask", state_dir=str(tmp_path / "bad")), ["gpu01"],
                     audit_dir=str(tmp_path / "audit"), every=0)


def test_one_poll_is_one_round_of_the_debounce_never_two(tmp_path):
    mode = ask(tmp_path)
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert mode.maybe_round(nodes({"gpu02"}), 0.0)
    assert mode.proposals["gpu02"].limit == "debounce"
    # Only the healthy nodes answered again: gpu02's one poll must not count as a second round.
    mode.polled(["gpu01", "gpu03"])
    assert not mode.maybe_round(nodes({"gpu02"}), 1.0)
    mode.polled(["gpu02"])
    assert mode.maybe_round(nodes({"gpu02"}), 2.0)
    assert mode.proposed == ["gpu02"]


def test_rounds_are_at_most_one_poll_interval_apart(tmp_path):
    mode = ask(tmp_path)
    mode.every = 5.0
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert mode.maybe_round(nodes(set()), 100.0)
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert not mode.maybe_round(nodes(set()), 102.0)
    assert mode.maybe_round(nodes(set()), 105.0)


def test_a_round_waits_for_every_node_read_once(tmp_path):
    mode = ask(tmp_path)
    mode.polled(["gpu01"])
    assert not mode.maybe_round([(NodeState("gpu01", reachable=True), HEALTHY),
                                 (NodeState("gpu02"), None), (NodeState("gpu03"), None)], 0.0)


def test_an_approval_is_audited_first_and_counted_then_its_result(tmp_path):
    mode = proposing_gpu02(tmp_path)
    assert mode.approve("gpu01") is not None  # not proposed: nothing starts
    assert mode.approve("gpu02") is None
    assert [(r.host, r.ok) for r in StateStore(tmp_path / "state").load().repairs] == [("gpu02", None)]
    # While it runs, its held polls do not block the rounds, and it is neither proposed nor judged.
    mode.polled(["gpu01", "gpu03"])
    assert mode.maybe_round(nodes({"gpu02"}), 2.0)
    assert "gpu02" not in mode.proposals
    mode.ended({"gpu02": True})
    state = StateStore(tmp_path / "state").load()
    assert [(r.host, r.ok) for r in state.repairs] == [("gpu02", True)] and state.canary_passed
    actions = [(r.get("node"), r["action"]) for f in (tmp_path / "audit").glob("autopilot-*.jsonl")
               for r in map(json.loads, f.read_text().splitlines()) if r.get("event") == "autopilot"]
    assert actions.index(("gpu02", "propose")) < actions.index(("gpu02", "approved")) < actions.index(
        ("gpu02", "repaired"))


def test_a_repair_that_did_not_start_is_a_failure_never_a_pass(tmp_path):
    mode = proposing_gpu02(tmp_path)
    assert mode.approve("gpu02") is None
    mode.ended({"gpu02": False}, error="gpu02 is busy")
    assert [(r.host, r.ok) for r in StateStore(tmp_path / "state").load().repairs] == [("gpu02", False)]


def test_a_pause_refuses_the_approval(tmp_path):
    mode = proposing_gpu02(tmp_path)
    mode.pilot.pause_path.touch()
    assert "paused" in (mode.approve("gpu02") or "")
    assert StateStore(tmp_path / "state").load().repairs == []


def test_a_repair_an_earlier_process_left_running_counts_as_failed_at_start(tmp_path):
    StateStore(tmp_path / "state").save(State(repairs=[Repair("gpu02", 10.0)]))
    ask(tmp_path)
    assert [(r.host, r.ok) for r in StateStore(tmp_path / "state").load().repairs] == [("gpu02", False)]


def test_a_node_under_the_operators_own_repair_neither_blocks_the_rounds_nor_counts(tmp_path):
    mode = ask(tmp_path, breaker_percent=100.0)
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert mode.maybe_round(nodes({"gpu02"}), 0.0)
    # r runs on gpu02: its polls are held; the others' polls still make rounds, and gpu02's streak stays at 1.
    for t in (1.0, 2.0):
        mode.polled(["gpu01", "gpu03"])
        assert mode.maybe_round(nodes({"gpu02"}), t, busy={"gpu02"})
        assert "gpu02" not in mode.proposals
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert mode.maybe_round(nodes({"gpu02"}), 3.0)
    assert mode.proposed == ["gpu02"]  # its second poll, its second round


def test_after_the_console_closed_nothing_is_recorded_and_an_unended_repair_stays_unended(tmp_path):
    mode = proposing_gpu02(tmp_path)
    assert mode.approve("gpu02") is None
    mode.close()
    mode.declined("gpu02")  # a plan screen unmounted after the app: no decline, no write to a closed log
    mode.ended({"gpu02": True})
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert not mode.maybe_round(nodes(set()), 2.0)
    assert [(r.host, r.ok) for r in StateStore(tmp_path / "state").load().repairs] == [("gpu02", None)]


def test_the_limits_approving_a_proposal_brings_to_bear_are_named(tmp_path):
    mode = ask(tmp_path, budget=1, breaker_nodes=1, cooldown_s=0.0)
    for t in (0.0, 1.0):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        mode.maybe_round(nodes({"gpu02"}), t)
    words = mode.binds_next("gpu02")
    assert words[0].startswith("breaker: this repair reaches its bound (1 in 3600 s)")
    assert words[1].startswith("budget: its last repair of 1 in 7 days")
    assert words[2].startswith("canary:") and words[3] == "cooldown: not judged again for 0 s after it"


def test_an_operators_close_breaker_while_the_console_runs_is_read_not_written_over(tmp_path, capsys):
    mode = ask(tmp_path)  # 3 nodes: a bound of 1; gpu01 and gpu02 broken in one round trip it
    for t in (0.0, 1.0):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        mode.maybe_round(nodes({"gpu01", "gpu02"}), t)
    assert mode.tripped and mode.proposed == ["gpu01"]
    assert StateStore(tmp_path / "state").load().breaker.tripped
    assert main(["autopilot", "--close-breaker", "--state-dir", str(tmp_path / "state")]) == 0
    mode.polled(["gpu01", "gpu02", "gpu03"])
    assert mode.maybe_round(nodes({"gpu01", "gpu02"}), 2.0)
    # Read again before the round: closed, so gpu01 is proposed again (gpu02 trips it again, as auto's would).
    assert mode.proposed == ["gpu01"]
    state = StateStore(tmp_path / "state").load()
    assert state.breaker.closed_at is not None  # the operator's closing is in the file, not written over
    said = [(r.get("action"), r.get("reason")) for f in (tmp_path / "audit").glob("autopilot-*.jsonl")
            for r in map(json.loads, f.read_text().splitlines())]
    assert ("state-read", "changed-on-disk") in said


def test_a_read_only_console_judges_but_never_writes_the_state_file(tmp_path):
    """Found trying `nvls-tui sim:seed-incident --autopilot ask --read-only`: nothing could be approved, yet the
    round that would have passed the bound wrote a tripped breaker into autopilot-state.json, which stops an
    autopilot running `--mode auto` on that state directory until an operator closes it. Read-only reads the
    state (an operator's --close-breaker included) and writes none of it, as headless ask."""
    store = StateStore(tmp_path / "state")
    running = Repair("gpu03", time.time() - 10)  # another autopilot's, running now: not "interrupted" here
    store.save(State(repairs=[running]))
    mode = AskMode.open(AutopilotSettings(mode="ask", state_dir=str(tmp_path / "state")), ["gpu01", "gpu02", "gpu03"],
                        audit_dir=str(tmp_path / "audit"), every=0, read_only=True)
    for t in (0.0, 1.0, 2.0):  # a bound of 1 (3 nodes), gpu03's repair in the window: gpu01 would pass it
        mode.polled(["gpu01", "gpu02", "gpu03"])
        assert mode.maybe_round(nodes({"gpu01", "gpu02"}), t)
    assert mode.tripped  # shown in this console, which judged the round
    assert store.load() == State(repairs=[running])  # the file as it was: not tripped, gpu03 unended
    said = [r.get("action") for f in (tmp_path / "audit").glob("autopilot-*.jsonl")
            for r in map(json.loads, f.read_text().splitlines())]
    assert "repair-failed" not in said and "state-read" not in said and said.count("breaker-tripped") == 1


def test_the_proposal_made_before_a_trip_stays_approvable_after_the_next_round(tmp_path):
    """Found on sim:seed-incident with the default limits (8 nodes: a bound of 1): round 2 proposed gpu05 and
    gpu06 tripped the breaker; round 3, one poll interval later, held gpu05 too ("breaker") and the ⚑ went, so
    the canary auto would have started could be approved only in the seconds between two polls. It stays
    proposed (as auto's would run) until it is approved or the node is no longer repairable; nothing new is."""
    mode = ask(tmp_path, cooldown_s=0.0)  # 3 nodes: a bound of 1; gpu01 and gpu02 broken in one round trip it
    for t in (0.0, 1.0, 2.0, 3.0):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        assert mode.maybe_round(nodes({"gpu01", "gpu02"}), t)
    assert mode.tripped and mode.proposed == ["gpu01"] and mode.proposals["gpu02"].limit == "breaker"
    assert mode.approve("gpu01") is None
    # Healthy again, then broken: a new finding after the trip is held by the breaker like any other.
    mode.ended({"gpu01": True})
    for t, broken in ((4.0, set()), (5.0, {"gpu01"}), (6.0, {"gpu01"})):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        assert mode.maybe_round(nodes(broken), t)
    assert mode.proposed == [] and mode.proposals["gpu01"].limit == "breaker"


def test_the_top_line_names_a_tripped_breaker_and_a_pause_before_the_proposals(tmp_path):
    """Found at 160 columns: the top line read '... autopilot ask: nothing proposed, BREAKER TRIPPED: nothing'
    (then '... ⚑ gpu05 proposed (a approves), BREAKER'), cut at the terminal's edge: the alarm came last. It comes
    first now, short, so a cut line loses the proposal's key hint, never the breaker or the pause."""
    from nvls_tui.console.screens.fleet import ask_words

    mode = ask(tmp_path)  # 3 nodes: a bound of 1; gpu01 and gpu02 broken in one round trip it
    for t in (0.0, 1.0):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        mode.maybe_round(nodes({"gpu01", "gpu02"}), t)
    assert ask_words(mode, "a") == " · autopilot ask: BREAKER TRIPPED · ⚑ gpu01 proposed (a approves)"
    mode.pilot.pause_path.touch()
    assert ask_words(mode, "a") == " · autopilot ask: BREAKER TRIPPED · PAUSED · ⚑ gpu01 proposed (a approves)"


def test_what_approving_binds_does_not_foretell_a_trip_that_already_happened(tmp_path):
    """Found on the seed incident: gpu05's kept proposal read 'approving it binds: breaker: this repair reaches
    its bound (1 in 3600 s); the next would trip it' beside 'breaker TRIPPED' (gpu06 had tripped it)."""
    mode = ask(tmp_path)  # 3 nodes: a bound of 1; gpu01 and gpu02 broken in one round trip it
    for t in (0.0, 1.0):
        mode.polled(["gpu01", "gpu02", "gpu03"])
        mode.maybe_round(nodes({"gpu01", "gpu02"}), t)
    assert mode.tripped and mode.proposed == ["gpu01"]
    assert mode.binds_next("gpu01")[0] == ("breaker: tripped already (this proposal came before the trip, as auto's "
                                           "repair would have started); nothing new is proposed until it is closed")
