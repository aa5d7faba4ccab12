"""The autopilot's rounds: poll, judge, decide, act, record (issue 40). Polling, repairing, draining and publishing
are handed in: ``nvls-tui autopilot`` (headless/autopilot.py) hands in the real ones, the console's ask mode
(console/ask.py) its own polls and no repair, the soak test the simulator's."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from nvls_tui.audit.log import AuditLog
from nvls_tui.autopilot.decide import TRIPPED, WOULD_TRIP, Autopilot, Decision
from nvls_tui.autopilot.policy import Judged, Policy
from nvls_tui.autopilot.state import StateStore
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.fm_starts import fm_starts_in
from nvls_tui.runbook.outcome import NodeOutcome

PAUSE_FILE = "pause"

Polled = list[tuple[NodeState, Diagnosis]]
#: Repairs a list of hosts; returns each host's success (True only where its smoke test passed).
Repairer = Callable[[Sequence[str]], dict[str, bool]]
#: Takes one host out of service with a reason for a person (its budget spent): returns None where it was
#: done, else what was not, in words (the command's: headless/autopilot.py's ``_drainer``).
Drainer = Callable[[str, str], str | None]


class Pilot:
    """The rounds of one autopilot: poll, judge, decide, act, record. Polling and repairing are handed in
    (the command's are headless/autopilot.py's ``_poller`` and ``_repairer``; the soak test's are the
    simulator's)."""

    def __init__(self, autopilot: Autopilot, policy: Policy, store: StateStore, audit: AuditLog, *, mode: str,
                 poll: Callable[[], Polled], repair: Repairer, clock: Callable[[], float] = time.time,
                 emit: Callable[[dict[str, Any]], None] | None = None, drain: Drainer | None = None,
                 publish: Callable[[Pilot, list[str]], None] | None = None, follow_disk: bool = True) -> None:
        """``follow_disk``: take an operator's closing of the breaker from the state file before each round
        (:meth:`take_breaker`); the console's ask mode reads the whole file itself (console/ask.py)."""
        self.autopilot, self.policy, self.store, self.audit = autopilot, policy, store, audit
        self.follow_disk = follow_disk
        self.mode, self.poll, self.repair, self.clock = mode, poll, repair, clock
        self.emit = emit
        self.drain = drain
        # The metrics (--metrics-textfile / --metrics-listen), after every round: given this pilot and the hosts.
        self.publish = publish
        self.decided: Counter[tuple[str, str]] = Counter()  # (action, reason) of every record on the log
        self.number = 0
        self._pending: list[dict[str, Any]] = []
        self.pause_path = store.directory / PAUSE_FILE
        # The breaker as the state file last had it (read at the start, or written since): an operator's
        # --close-breaker from another shell changes the file, and the next round takes it (take_breaker).
        self._disk_breaker = dataclasses.replace(autopilot.state.breaker)

    def record(self, record: dict[str, Any]) -> None:
        """One decision record, held until :meth:`flush` (a round's records are one group commit)."""
        self._pending.append({"event": "autopilot", "round": self.number, "mode": self.mode, **record})

    def flush(self) -> None:
        """The held records to the audit log in one write and one fsync, then to stdout: a decision the log
        cannot hold raises (AuditWriteError) before anything acts on it or prints it."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        self.audit.append([self.audit.encode(r) for r in pending])
        self.decided.update((str(r["action"]), str(r["reason"])) for r in pending
                            if r["action"] not in ("round", "started", "stopped"))
        if self.emit is not None:
            for record in pending:
                self.emit(record)

    def save(self) -> None:
        """Save the state; observe and ask change nothing, their breaker and budgets included (in memory only)."""
        if self.mode == "auto":
            self.store.save(self.autopilot.state)
            self._disk_breaker = dataclasses.replace(self.autopilot.state.breaker)

    def take_breaker(self) -> None:
        """Take the breaker from the state file where it changed there since this autopilot read or wrote it: an
        operator closed it (``--close-breaker``) while this one runs. Without this the running autopilot kept the
        breaker it started with, and its next save wrote a tripped breaker back over the closing. Only the
        breaker is taken: the repairs and budgets are this process's own record.

        Raises:
            StateError: the file cannot be read now (the round stops there: fail closed).
        """
        disk = self.store.load().breaker
        if disk == self._disk_breaker:
            return
        self._disk_breaker = dataclasses.replace(disk)
        self.autopilot.state.breaker = dataclasses.replace(disk)
        self.record({"node": None, "action": "state-read", "reason": "changed-on-disk", "message":
                     f"{self.store.path} changed under this autopilot (--close-breaker from another shell): its "
                     f"breaker read again: {'tripped' if disk.tripped else 'closed'}"})

    def paused(self) -> bool:
        return self.pause_path.exists()

    def _drain_escalated(self, escalated: list[Decision]) -> None:
        """Leave each node whose budget is spent drained with the reason (the scheduler's change is recorded
        first, then its result)."""
        for d in escalated:
            if self.drain is None:
                self.record({"node": d.host, "action": "not-drained", "reason": "no-scheduler",
                             "message": "neither a Slurm nor a Kubernetes cluster is configured to take it out of "
                             "service in: a person does"})
                continue
            reason = f"nvls-tui autopilot: {d.message}"
            self.record({"node": d.host, "action": "drain", "reason": "budget", "message": reason})
            self.flush()  # audit first (each change of the drain is on its own log, under the node's lock)
            said = self.drain(d.host, reason)
            self.record({"node": d.host, "action": "drained" if said is None else "drain-failed",
                         "reason": "budget", "message": "left out of service with the reason (drained in Slurm, "
                         "cordoned and annotated in Kubernetes, where it is in them)" if said is None else said})

    def _wave(self, chosen: list[str]) -> None:
        """Repair a round's chosen nodes, batch by batch (:meth:`Autopilot.batches`: the canary alone, then the
        rest), reading the pause before each batch starts: a pause written while the canary runs stops the rest
        of the wave. A batch after a canary that failed does not start either."""
        ap = self.autopilot
        for number, batch in enumerate(ap.batches(chosen)):
            if number and not ap.state.canary_passed:
                self._not_started(batch, "canary", "the canary's repair did not pass its smoke test: the rest of "
                                                   "its wave does not start")
            elif self.paused():
                self._not_started(batch, "paused", "paused before this repair started: no new repair starts")
            else:
                self._repair_batch(batch)
            self.flush()

    def _not_started(self, hosts: list[str], reason: str, message: str) -> None:
        for host in hosts:
            self.record({"node": host, "action": "skip", "reason": reason, "message": message})

    def _repair_batch(self, batch: list[str]) -> None:
        """One batch of repairs at once; each counts against its node's budget from its start (saved first)."""
        ap = self.autopilot
        began = self.clock()
        for host in batch:
            ap.started(host, began)
        self.save()  # started repairs count against the budget even if this process dies
        try:
            results = self.repair(batch)
        except Exception as exc:  # noqa: BLE001 - fail closed: a repair that raised did not pass a smoke test
            from nvls_tui.textsafe import one_line

            results = {}
            for host in batch:
                self.record({"node": host, "action": "repair-error", "reason": type(exc).__name__,
                             "message": one_line(str(exc), 300)})
        ended = self.clock()
        for host in batch:
            ok = results.get(host, False)
            ap.finished(host, ok, ended)
            self.record({"node": host, "action": "repaired" if ok else "repair-failed",
                         "reason": "smoke-test", "message": "the NVLS smoke test passed" if ok else
                         "the repair did not end with a passing NVLS smoke test"})
        self.save()

    def round(self) -> list[Decision]:
        """One round; the decisions taken."""
        self.number += 1
        polled = self.poll()
        if self.follow_disk:
            self.take_breaker()
        ap = self.autopilot
        window = ap.limits.fm_window_s
        judged: list[Judged] = [self.policy.judge(s.host, s.reachable, d, fm_starts_in(s, window)) for s, d in polled]
        now = self.clock()
        decided = ap.decide(judged, now, paused=self.paused())
        decisions = list(decided.decisions)
        if self.mode == "observe":  # what it would do, recorded; nothing changes
            decisions = [dataclasses.replace(d, action="would-repair") if d.action == "repair" else
                         dataclasses.replace(d, message=WOULD_TRIP + d.message.removeprefix(TRIPPED))
                         if d.reason == "breaker" and d.message.startswith(TRIPPED) else d
                         for d in decisions]
        elif self.mode == "ask":  # proposed to a person one batch at a time: the canary alone until one passed
            batches = ap.batches([d.host for d in decisions if d.action == "repair"])
            first = set(batches[0]) if batches else set()
            decisions = [d if d.action != "repair" else dataclasses.replace(d, action="propose") if d.host in first
                         else dataclasses.replace(d, action="skip", reason="canary", message="a canary repair must "
                                                  "pass its smoke test before the next is proposed")
                         for d in decisions]
        for d in decisions:
            self.record(d.to_json())
        for host in decided.flapping_now:  # FM flapping: a person finds what restarts it (once, as it starts)
            self.record({"node": host, "action": "escalate", "reason": "fm-flapping", "message": "for a person: "
                         "something restarts Fabric Manager; the autopilot leaves this node alone while it flaps"})
        if self.mode == "auto":
            self._drain_escalated([d for d in decisions if d.action == "escalate"])
        if decided.tripped_now:
            observing = " (observe: what auto would do; nothing is changed or saved)" if self.mode == "observe" else ""
            self.record({"node": None, "action": "breaker-tripped", "reason": "breaker",
                         "message": f"{ap.state.breaker.reason}{observing}"})
        self.save()
        self.flush()  # audit first: the decisions are on disk before any repair starts
        self._wave([d.host for d in decisions if d.action == "repair"])
        ap.prune(self.clock())
        self.save()
        breaker = ap.state.breaker
        self.record({"node": None, "action": "round", "reason": "breaker-tripped" if breaker.tripped else
                     "breaker-closed", "message": breaker.reason or "closed", "paused": self.paused(),
                     "nodes": len(polled), "running": ap.running(), "canary_passed": ap.state.canary_passed})
        self.flush()
        if self.publish is not None:
            self.publish(self, [s.host for s, _ in polled])
        return decisions


def smoke_passed(outcome: NodeOutcome) -> bool:
    """A repair the autopilot counts as a success: repaired (or left alone) with a passing NVLS smoke test; the
    console's ask mode judges the repairs it approved by the same rule."""
    return outcome.result in ("repaired", "skipped") and outcome.smoke is not None and outcome.smoke.passed
