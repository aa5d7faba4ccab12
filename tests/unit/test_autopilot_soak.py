"""Issue 40's acceptance: a soak of 200 rounds over a 64-node simulated fleet with random faults.

Faults are injected between rounds by rebuilding sim nodes in a faulty state (FM killed, out of sync: safe;
a version mismatch, a GPU fallen off the bus: never safe), some rounds read a node as unreachable
(unknown), and the repair is the simulator's: a repaired node is rebuilt healthy, one in five repairs fails
(its smoke test would not pass, the node stays broken). The clock is the test's: ten minutes a round, so the
window, the cooldown and the budget's days all pass during the soak. A simulated operator closes the
breaker every 20 rounds. Only the nodes that changed are polled again (through the real poll, AfterPoll and
diagnosis): an unchanged simulated node answers the same, and the soak stays a few seconds of CPU.

The soak ends with: no node repaired beyond its budget in any window of the budget's days, never more
repairs at once than allowed (one while no canary has passed), every decision in the audit log, and each
kind of limit seen binding at least once.
"""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from nvls_tui.audit.log import AuditLog
from nvls_tui.autopilot.decide import DAY_S, Autopilot, Limits
from nvls_tui.autopilot.pilot import Pilot
from nvls_tui.autopilot.policy import Policy
from nvls_tui.autopilot.state import State, StateStore
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.headless.check import poll_all
from nvls_tui.model import NodeState
from nvls_tui.poll.after_poll import AfterPoll
from nvls_tui.sim import faults as sim_faults
from nvls_tui.sim.fleet import load_fleet

ROUNDS = 200
ROUND_S = 600.0
SAFE_FAULTS = (sim_faults.seed_fm_killed, sim_faults.seed_out_of_sync)
UNSAFE_FAULTS = (sim_faults.version_mismatch, sim_faults.gpu_fell_off)


class SoakFleet:
    """64 simulated nodes, polled for real where they changed, faulted and repaired by the test."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.fleet = load_fleet("sim:fleet-256/gpu[001-064]", speed=0)
        self.names = list(self.fleet.names)
        self.after = AfterPoll()
        self.cache: dict[str, tuple] = {}
        self.dirty = set(self.names)
        self.flaky = self.names[:8]  # faults come back on these: their budgets are spent during the soak
        self.unknown_now: set[str] = set()

    def rebuild(self, name: str, build) -> None:
        self.fleet._nodes[name] = build(name, self.fleet.clock.now())
        self.dirty.add(name)

    def inject(self) -> None:
        for name in self.names:
            chance = 0.15 if name in self.flaky else 0.01
            if self.rng.random() < chance:
                faults = SAFE_FAULTS if self.rng.random() < 0.85 else UNSAFE_FAULTS
                self.rebuild(name, self.rng.choice(faults))
        self.unknown_now = {n for n in self.names if self.rng.random() < 0.01}

    def poll(self) -> list:
        backends = [b for b in sim_backends(self.fleet) if b.host in self.dirty]
        if backends:
            states = asyncio.run(poll_all(backends, 60.0, None))
            for state, diagnosis in self.after.read_round(states, now=self.fleet.clock.now()):
                self.cache[state.host] = (state, diagnosis)
        self.dirty.clear()
        out = []
        for name in self.names:
            if name in self.unknown_now:  # this round could not read it: unknown, for one round
                lost = NodeState(host=name, reachable=False, simulated=True, error="timed out")
                out.append((lost, self.after.diagnosed(lost)))
            else:
                out.append(self.cache[name])
        return out


@pytest.mark.long  # seconds: handed out first of its tier (tests/conftest.py)
def test_soak_200_rounds_64_nodes_no_budget_overrun_no_excess_concurrency_every_decision_audited(tmp_path):
    rng = random.Random(40)
    sim = SoakFleet(rng)
    limits = Limits(max_parallel=2, budget=3, budget_days=7, cooldown_s=1800, window_s=3600)
    autopilot = Autopilot(limits, State())
    clock = {"now": 1_800_000_000.0}
    concurrency: list[tuple[int, bool]] = []
    emitted: list[dict] = []
    drained: list[tuple[str, str]] = []

    def drain(host, reason):
        drained.append((host, reason))
        return None

    def repair(hosts):
        concurrency.append((len(hosts) + len(set(autopilot.running()) - set(hosts)), autopilot.state.canary_passed))
        results = {}
        for host in hosts:
            ok = rng.random() < 0.8
            if ok:
                sim.rebuild(host, sim_faults.healthy)
            results[host] = ok
        clock["now"] += 60.0
        return results

    with AuditLog.create(tmp_path / "audit", "soak", kind="autopilot") as audit:
        pilot = Pilot(autopilot, Policy(), StateStore(tmp_path), audit, mode="auto", poll=sim.poll, repair=repair,
                      clock=lambda: clock["now"], emit=emitted.append, drain=drain)
        times: dict[int, float] = {}
        for number in range(1, ROUNDS + 1):
            sim.inject()
            times[number] = clock["now"]
            pilot.round()
            clock["now"] += ROUND_S
            if number % 20 == 0 and autopilot.state.breaker.tripped:
                autopilot.close_breaker(clock["now"])  # the operator, having looked
        audit_path = audit.path

    audited = [json.loads(line) for line in audit_path.read_text().splitlines()]
    audited = [r for r in audited if r["event"] == "autopilot"]
    # Every decision is in the audit log, in order, and nothing is there that was not decided.
    strip = ("time", "operator", "dry_run")
    assert [{k: v for k, v in r.items() if k not in strip} for r in audited] == emitted
    assert len([r for r in emitted if r["action"] == "round"]) == ROUNDS

    # No node repaired beyond its budget in any window of the budget's days.
    starts: dict[str, list[float]] = {}
    for r in emitted:  # a repair that started ended in its round (a node chosen may not start: pause, canary)
        if r["action"] in ("repaired", "repair-failed") and r["reason"] == "smoke-test":
            starts.setdefault(r["node"], []).append(times[r["round"]])
    for host, at in starts.items():
        for t in at:
            inside = [s for s in at if t <= s < t + limits.budget_days * DAY_S]
            assert len(inside) <= limits.budget, (host, at)

    # Never more repairs at once than allowed; one at a time while no canary has passed.
    assert concurrency and max(n for n, _ in concurrency) <= limits.max_parallel
    assert all(n == 1 for n, canary in concurrency if not canary)

    # The soak exercised every limit, and the unsafe and unknown nodes were never repaired.
    reasons = {r["reason"] for r in emitted if r["action"] in ("skip", "escalate")}
    assert {"debounce", "cooldown", "budget", "breaker", "unsafe", "unknown"} <= reasons, reasons
    assert {"canary", "max-parallel"} & reasons, reasons
    repaired_while_unsafe = [r for r in emitted if r["action"] == "repair" and
                             any(f.startswith(("GPU_LOST", "FM_VERSION_MISMATCH")) for f in r["findings"])]
    assert not repaired_while_unsafe
    assert sum(1 for r in emitted if r["action"] == "repaired") >= 20
    # A spent budget: the node escalated once, left drained with the reason (recorded before and after).
    escalated = [r["node"] for r in emitted if r["action"] == "escalate"]
    assert escalated and sorted(h for h, _ in drained) == sorted(escalated) and len(set(escalated)) == len(escalated)
    assert all("hardware ticket" in reason for _, reason in drained)
    order = [(r["node"], r["action"]) for r in emitted if r["action"] in ("drain", "drained")]
    assert order == [(h, a) for h in escalated for a in ("drain", "drained")]
    print("soak:", {a: sum(1 for r in emitted if r["action"] == a) for a in
                    ("repair", "repaired", "repair-failed", "escalate", "breaker-tripped", "skip")},
          "reasons:", sorted(reasons), "max at once:", max(n for n, _ in concurrency))
