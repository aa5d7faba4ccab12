"""Issue 40: FM flapping counted by Fabric Manager's own start times, not by systemd's ``NRestarts``.

Each poll of an active FM reads when it started (``ActiveEnterTimestamp`` of ``systemctl show``, on the
node's clock); what follows a poll (``poll/after_poll.carry_across``) keeps the distinct start times seen per
node across rounds, so a counter that starts again (``systemctl reset-failed``, a start by hand, a reboot)
hides no flap. The autopilot refuses to repair a node whose FM started more than ``--fm-starts`` times in
``--fm-window`` seconds (a skip with reason ``fm-flapping``, escalated once to a person); start times it
could not read are unknown, never "not flapping".
"""

from __future__ import annotations

import asyncio

from nvls_tui.audit.log import AuditLog
from nvls_tui.autopilot.decide import Autopilot, Limits
from nvls_tui.autopilot.policy import Judged, Judgement, Policy
from nvls_tui.autopilot.state import State, StateStore
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.headless.autopilot import Pilot
from nvls_tui.headless.check import poll_all
from nvls_tui.model import NodeState
from nvls_tui.model.node import MissingEvidence, ServiceState
from nvls_tui.poll.after_poll import AfterPoll, carry_across
from nvls_tui.poll.fm_starts import fm_starts_in
from nvls_tui.sim.fleet import load_fleet

FM = "nvidia-fabricmanager.service"
T0 = 1_800_000_000.0


def fm_polled(at: float, started: float | None, restarts: int = 0, *, units_read: bool = True) -> NodeState:
    """A poll at ``at`` (node clock) of a node whose FM is active since ``started`` (None: failed)."""
    stamp = None if started is None else _sd(started)
    fm = ServiceState(name=FM, active="active" if started is not None else "failed", since=stamp, restarts=restarts)
    missing = () if units_read else (MissingEvidence("units", "timed out", "the systemd units could not be read"),)
    return NodeState(host="gpu01", services=(fm,) if units_read else (), node_clock=at, missing=missing,
                     driver="580.65.06")


def _sd(ts: float) -> str:
    import time

    return time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def test_starts_are_kept_across_rounds_and_a_counter_that_starts_again_hides_no_flap():
    before = None
    counts = []
    # FM restarted every ten minutes; NRestarts climbs to 2, then `systemctl reset-failed` and a start by hand
    # set it back to 0: the start times still say four starts in the hour.
    for n, restarts in enumerate((1, 2, 0, 0)):
        at = T0 + n * 600
        state = carry_across(before, fm_polled(at + 5, at, restarts), 600)
        counts.append(fm_starts_in(state, 3600))
        before = state
    assert counts == [1, 2, 3, 4]
    # A reboot: FM's start at boot is one more, the starts before it are kept.
    rebooted = carry_across(before, fm_polled(T0 + 2405, T0 + 2400), 600)
    assert fm_starts_in(rebooted, 3600) == 5
    # An hour later the old ones are out of the window (the node's clock decides).
    later = carry_across(rebooted, fm_polled(T0 + 6000, T0 + 2400), 3600)
    assert fm_starts_in(later, 3600) == 1


def test_start_times_that_could_not_be_read_are_unknown_never_not_flapping():
    seen = carry_across(None, fm_polled(T0 + 5, T0), 0)
    unread = carry_across(seen, fm_polled(T0 + 605, T0, units_read=False), 600)
    assert fm_starts_in(unread, 3600) is None
    assert fm_starts_in(NodeState(host="gpu01", reachable=False), 3600) is None
    # Read again: the start seen before the unread round still counts.
    again = carry_across(unread, fm_polled(T0 + 1205, T0 + 1200), 600)
    assert fm_starts_in(again, 3600) == 2
    # An active FM whose start time does not read: unknown.
    odd = NodeState(host="gpu01", services=(ServiceState(name=FM, active="active", since="yesterday"),),
                    node_clock=T0)
    assert fm_starts_in(odd, 3600) is None
    # No host FM unit (FM in a container, or none at all): its starts cannot be read here.
    assert fm_starts_in(NodeState(host="gpu01", services=(), node_clock=T0, driver="580.65.06"), 3600) is None


def test_decide_refuses_a_flapping_node_and_one_whose_starts_are_unknown():
    ap = Autopilot(Limits(cooldown_s=0, fm_starts=3, fm_window_s=3600), State(canary_passed=True))

    def judged(starts):
        return [Judged("gpu01", Judgement.REPAIRABLE, ("FABRIC_OUT_OF_SYNC",), fm_starts=starts),
                Judged("gpu02", Judgement.HEALTHY, fm_starts=0)]

    ap.decide(judged(4), 0)
    second = ap.decide(judged(4), 10)
    assert [(d.host, d.action, d.reason) for d in second.decisions] == [("gpu01", "skip", "fm-flapping")]
    assert "4 times" in second.decisions[0].message and "a reset will not fix it" in second.decisions[0].message
    assert second.flapping_now == [] and ap.decide(judged(4), 15).flapping_now == []
    assert [(d.action, d.reason) for d in ap.decide(judged(None), 20).decisions] == [("skip", "fm-starts-unknown")]
    assert ap.decide(judged(3), 30).chosen == ["gpu01"]  # at the bound, not past it: repaired


def test_a_node_starts_flapping_is_escalated_once():
    ap = Autopilot(Limits(cooldown_s=0), State(canary_passed=True))
    r = [Judged("gpu01", Judgement.REPAIRABLE, ("FABRIC_OUT_OF_SYNC",), fm_starts=9)]
    assert ap.decide(r, 0).flapping_now == ["gpu01"]
    assert ap.decide(r, 10).flapping_now == []


def test_the_simulator_flaps_fm_and_the_autopilot_leaves_the_node_to_a_person(tmp_path):
    """sim:fm-flapping: an out-of-sync node whose FM something restarts every ten minutes (a start by hand
    each time: NRestarts stays 0). Polled for real, round by round, with the fleet's clock moved on."""
    fleet = load_fleet("sim:fm-flapping", speed=0)
    (host,) = fleet.names
    after = AfterPoll()

    def poll():
        states = asyncio.run(poll_all(list(sim_backends(fleet)), 60.0, None))
        return after.read_round(states, now=fleet.clock.now())

    records: list[dict] = []
    repaired: list[str] = []

    def repair(hosts):
        repaired.extend(hosts)
        return dict.fromkeys(hosts, True)

    limits = Limits(cooldown_s=0, fm_starts=3, fm_window_s=3600)
    with AuditLog.create(tmp_path / "audit", "flap", kind="autopilot") as audit:
        pilot = Pilot(Autopilot(limits, State()), Policy(), StateStore(tmp_path), audit, mode="auto", poll=poll,
                      repair=repair, clock=fleet.clock.now, emit=records.append)
        for _ in range(6):
            pilot.round()
            fleet.clock.advance(600.0)
    assert repaired == []
    reasons = [r["reason"] for r in records if r["node"] == host and r["action"] == "skip"]
    assert reasons[0] == "debounce" and reasons[-1] == "fm-flapping", reasons
    assert [r["reason"] for r in records if r["action"] == "escalate"] == ["fm-flapping"]
    assert fleet.node(host).units[FM].restarts == 0  # systemd's counter never saw it


def test_fm_s_journal_gives_every_start_of_the_lines_read_not_only_the_last():
    """systemd 252's words (a forking unit: Starting, then Started once FM configured); FM's own lines that
    say starting are not systemd's and count for nothing."""
    from nvls_tui.model import CommandResult
    from nvls_tui.poll.fm_journal import read_fm_journal
    from nvls_tui.poll.probe import FM_LOG_ARGV

    unit = "nvidia-fabricmanager.service - NVIDIA fabric manager service"
    text = (f"2026-12-02T08:00:00+0000 gpu05 systemd[1]: Starting {unit}...\n"
            f"2026-12-02T08:00:02+0000 gpu05 systemd[1]: Started {unit}.\n"
            "2026-12-02T08:30:00+0000 gpu05 nv-fabricmanager[10]: Started fabric manager\n"
            f"2026-12-02T09:00:00+0000 gpu05 systemd[1]: Stopping {unit}...\n"
            f"2026-12-02T09:00:01+0000 gpu05 systemd[1]: Starting {unit}...\n"
            f"2026-12-02T09:00:03+0000 gpu05 systemd[1]: Started {unit}.\n")
    journal, why = read_fm_journal(CommandResult(FM_LOG_ARGV, 0, text))
    assert why is None and journal is not None
    assert journal.starts == (1_796_198_402.0, 1_796_202_003.0)


def test_one_check_counts_fms_starts_from_its_journal_in_the_metric_too(tmp_path, monkeypatch, capsys):
    """``nvls_fm_starts_last_hour`` counts the same starts: one ``check`` of sim:fm-flapping sees the three
    restarts of the last hour in FM's journal, not only the unit's last start."""
    from nvls_tui.cli import main

    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    prom = tmp_path / "nvls.prom"
    main(["check", "sim:fm-flapping", "--metrics-textfile", str(prom)])
    capsys.readouterr()
    assert 'nvls_fm_starts_last_hour{hostname="gpu-flap01"} 3.0' in prom.read_text()
