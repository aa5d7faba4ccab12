"""``nvls-tui autopilot TARGET ... [--mode observe|ask|auto] [limits] [--rounds N] [--json]``: issue 40.

Each round polls every target as ``check`` does (the same :class:`~nvls_tui.poll.after_poll.AfterPoll`:
carried across rounds, with the cluster's views, diagnosed), judges each node by the policy
(:mod:`nvls_tui.autopilot.policy`), and lets the limits decide (:mod:`nvls_tui.autopilot.decide`). In
``auto`` mode the chosen nodes get the same repair as ``repair --yes`` (one
:class:`~nvls_tui.runbook.session.Session`, the same door and audit log), and only a passing NVLS smoke test
counts as success. Every decision, the breaker's state each round, a trip, an escalation, a pause, a closing
of the breaker, is a record of the autopilot's audit log (``autopilot-RUN.jsonl``) and, with ``--json``,
a line on stdout. The state (breaker, budgets) is saved after every change, so a restart keeps both.

A pause file (``STATE_DIR/pause``) or SIGUSR1 (which writes that file) stops new repairs at once: a wave
not started yet does not start; repairs already running finish, restores and resumes included. Removing
the file resumes. SIGTERM (``systemctl stop``) ends the autopilot after the round in progress, its repairs
finished (restores and resumes included): a repair is never cut short by a stop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nvls_tui import paths
from nvls_tui.audit.log import AuditLog
from nvls_tui.autopilot.decide import Autopilot, Decision, Limits
from nvls_tui.autopilot.policy import Judged, Policy, PolicyError, load_policy
from nvls_tui.autopilot.state import StateError, StateStore
from nvls_tui.backends.base import InvalidArgument
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.after_poll import AfterPoll
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.settings import AutopilotSettings, Settings

PAUSE_FILE = "pause"

Polled = list[tuple[NodeState, Diagnosis]]
#: Repairs a list of hosts; returns each host's success (True only where its smoke test passed).
Repairer = Callable[[Sequence[str]], dict[str, bool]]
#: Drains one host with a reason for a person (its budget spent); returns what happened, in words, or None
#: where there is no scheduler to drain it in.
Drainer = Callable[[str, str], str | None]


class Pilot:
    """The rounds of one autopilot: poll, judge, decide, act, record. Polling and repairing are handed in
    (the command's are :func:`_poller` and :func:`_repairer`; the soak test's are the simulator's)."""

    def __init__(self, autopilot: Autopilot, policy: Policy, store: StateStore, audit: AuditLog, *, mode: str,
                 poll: Callable[[], Polled], repair: Repairer, clock: Callable[[], float] = time.time,
                 emit: Callable[[dict[str, Any]], None] | None = None, drain: Drainer | None = None) -> None:
        self.autopilot, self.policy, self.store, self.audit = autopilot, policy, store, audit
        self.mode, self.poll, self.repair, self.clock = mode, poll, repair, clock
        self.emit = emit
        self.drain = drain
        self.number = 0
        self._pending: list[dict[str, Any]] = []
        self.pause_path = store.directory / PAUSE_FILE

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
        if self.emit is not None:
            for record in pending:
                self.emit(record)

    def save(self) -> None:
        """Save the state; observe and ask change nothing, their breaker and budgets included (in memory only)."""
        if self.mode == "auto":
            self.store.save(self.autopilot.state)

    def paused(self) -> bool:
        return self.pause_path.exists()

    def _drain_escalated(self, escalated: list[Decision]) -> None:
        """Leave each node whose budget is spent drained with the reason (the scheduler's change is recorded
        first, then its result)."""
        for d in escalated:
            if self.drain is None:
                self.record({"node": d.host, "action": "not-drained", "reason": "no-scheduler",
                             "message": "no scheduler configured to drain it in: a person takes it out of service"})
                continue
            reason = f"nvls-tui autopilot: {d.message}"
            self.record({"node": d.host, "action": "drain", "reason": "budget", "message": reason})
            self.flush()  # audit first
            said = self.drain(d.host, reason)
            self.record({"node": d.host, "action": "drained" if said is None else "drain-failed",
                         "reason": "budget", "message": "left drained with the reason" if said is None else said})

    def round(self) -> list[Decision]:
        """One round; the decisions taken."""
        self.number += 1
        polled = self.poll()
        judged: list[Judged] = [self.policy.judge(s.host, s.reachable, d) for s, d in polled]
        now = self.clock()
        ap = self.autopilot
        decided = ap.decide(judged, now, paused=self.paused())
        decisions = list(decided.decisions)
        if self.mode != "auto":  # observe and ask: what it would do, recorded; nothing changes
            word = "would-repair" if self.mode == "observe" else "propose"
            decisions = [dataclasses.replace(d, action=word) if d.action == "repair" else d for d in decisions]
        for d in decisions:
            self.record(d.to_json())
        if self.mode == "auto":
            self._drain_escalated([d for d in decisions if d.action == "escalate"])
        if decided.tripped_now:
            self.record({"node": None, "action": "breaker-tripped", "reason": "breaker",
                         "message": ap.state.breaker.reason})
        self.save()
        chosen = [d.host for d in decisions if d.action == "repair"]
        if chosen and self.paused():  # the pause came while this round was decided: the wave does not start
            for host in chosen:
                self.record({"node": host, "action": "skip", "reason": "paused", "message": "paused before the "
                             "wave started: no new repair starts"})
            chosen = []
        for host in chosen:
            ap.started(host, now)
        self.flush()  # audit first: the decisions are on disk before any repair starts
        if chosen:
            self.save()  # started repairs count against the budget even if this process dies
            try:
                results = self.repair(chosen)
            except Exception as exc:  # noqa: BLE001 - fail closed: a repair that raised did not pass a smoke test
                from nvls_tui.textsafe import one_line

                results = {}
                for host in chosen:
                    self.record({"node": host, "action": "repair-error", "reason": type(exc).__name__,
                                 "message": one_line(str(exc), 300)})
            ended = self.clock()
            for host in chosen:
                ok = results.get(host, False)
                ap.finished(host, ok, ended)
                self.record({"node": host, "action": "repaired" if ok else "repair-failed",
                             "reason": "smoke-test", "message": "the NVLS smoke test passed" if ok else
                             "the repair did not end with a passing NVLS smoke test"})
        ap.prune(self.clock())
        self.save()
        breaker = ap.state.breaker
        self.record({"node": None, "action": "round", "reason": "breaker-tripped" if breaker.tripped else
                     "breaker-closed", "message": breaker.reason or "closed", "paused": self.paused(),
                     "nodes": len(polled), "running": ap.running(), "canary_passed": ap.state.canary_passed})
        self.flush()
        return decisions


def _limits(a: AutopilotSettings) -> Limits:
    given: dict[str, Any] = {k: (int(v) if k in ("breaker_nodes", "max_parallel", "budget") else float(v))
                             for k, v in a.limits.items()}
    return Limits(**given)


def _poller(settings: Settings, after: AfterPoll) -> Callable[[], Polled]:
    """A round of ``check``: every target polled (fresh connections), carried, folded, diagnosed."""
    from nvls_tui.headless.check import _round

    def poll() -> Polled:
        results, _ = _round(settings, None, after)
        return results

    return poll


def _repairer(settings: Settings, audit_dir: str) -> Repairer:
    """``repair --yes`` of the chosen hosts: the same Session, door and audit log; success only where the
    outcome is repaired (or left alone) with a passing smoke test."""
    from nvls_tui.headless.repair import _options
    from nvls_tui.runbook.session import Session
    from nvls_tui.targets import kube_from_settings, resolve_backends, scheduler_from_settings

    def repair(hosts: Sequence[str]) -> dict[str, bool]:
        backends = [b for b in resolve_backends(settings) if b.host in hosts]
        options = _options(settings, backends)
        slurm = scheduler_from_settings(settings)
        schedulers = {b.host: slurm.hook(b.host) for b in backends if not b.simulated} if slurm else {}
        fleet = kube_from_settings(settings, backends)
        kubes = {b.host: k for b in backends if fleet is not None and (k := fleet.for_host(b.host)) is not None}
        session = Session({b.host: b for b in backends}, audit_dir=settings.audit_dir or audit_dir, options=options,
                          schedulers=schedulers, kube=kubes)

        async def run() -> list:
            try:
                started = session.start_repair(list(hosts), "parallel")
                return await session.repair(started, options, kind="repair")
            finally:
                await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)

        outcomes = asyncio.run(run())
        return {o.host: smoke_passed(o) for o in outcomes}

    return repair


def smoke_passed(outcome: NodeOutcome) -> bool:
    """A repair the autopilot counts as a success: repaired (or left alone) with a passing NVLS smoke test; the
    console's ask mode judges the repairs it approved by the same rule."""
    return outcome.result in ("repaired", "skipped") and outcome.smoke is not None and outcome.smoke.passed


def _keep_simulated_fleets(settings: Settings) -> Settings:
    """``settings`` whose ``sim:`` fleets are loaded once and kept: every round polls, and every repair
    repairs, the same simulated nodes (a fleet loaded anew each round would forget each repair)."""
    if settings.connect is not None or not any(w.startswith("sim:") for w in settings.targets):
        return settings
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.sim.fleet import load_fleet
    from nvls_tui.targets import resolve_backends

    fleets = [load_fleet(w, speed=settings.sim_speed) for w in settings.targets if w.startswith("sim:")]
    others = tuple(w for w in settings.targets if not w.startswith("sim:"))

    def connect(s: Settings) -> list:
        out: list = []
        for fleet in fleets:
            out += sim_backends(fleet, timeout=s.timeout, max_output=s.max_output)
        if others:
            out += resolve_backends(dataclasses.replace(s, targets=others, connect=None))
        return out

    return dataclasses.replace(settings, connect=connect)


def _drainer(settings: Settings) -> Drainer | None:
    """``scontrol update NodeName=N State=DRAIN Reason=...`` through the Slurm cluster's configuration (the
    runbook's DrainNode change's argv); None without a Slurm cluster. Returns None on success, else what
    scontrol said."""
    from nvls_tui.runbook.changes import DrainNode
    from nvls_tui.targets import scheduler_from_settings

    slurm = scheduler_from_settings(settings)
    if slurm is None:
        return None

    def drain(host: str, reason: str) -> str | None:
        hook = slurm.hook(host)
        status, said = asyncio.run(hook.command(DrainNode(hook.node, reason).argv()))
        return None if status == 0 else f"scontrol exited {status}: {said.strip()[:200]}"

    return drain


def _say(text: str) -> None:
    print(f"nvls-tui autopilot: {text}", file=sys.stderr, flush=True)


def run(settings: Settings) -> int:
    """The autopilot's rounds (or ``--close-breaker``). Exit: 0 stopped cleanly, 2 usage."""
    from nvls_tui.targets import read_targets

    a = settings.autopilot or AutopilotSettings()
    try:
        limits = _limits(a)
        policy = load_policy(a.policy) if a.policy else Policy()
    except (ValueError, PolicyError) as exc:
        _say(str(exc))
        return 2
    state_dir = Path(a.state_dir).expanduser() if a.state_dir else paths.state_dir() / "autopilot"
    store = StateStore(state_dir)
    try:
        state = store.load()
    except StateError as exc:
        _say(f"{exc}; refusing to start with a state it cannot read (a tripped breaker could be lost)")
        return 2
    audit_dir = settings.audit_dir or str(state_dir / "audit")
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    autopilot = Autopilot(limits, state)
    if a.close_breaker:
        with AuditLog.create(audit_dir, run_id, kind="autopilot") as audit:
            was = state.breaker.reason
            autopilot.close_breaker(time.time())
            audit.write({"event": "autopilot", "node": None, "action": "breaker-closed", "reason": "operator",
                         "message": f"closed by the operator (was: {was or 'not tripped'})"})
            store.save(state)
        _say(f"breaker closed (was: {was or 'not tripped'})")
        return 0
    if settings.read_only and a.mode == "auto":
        _say("--read-only forbids --mode auto (observe or ask decide without changing a node)")
        return 2
    try:
        words, _ = read_targets(settings)
    except InvalidArgument as exc:
        _say(str(exc))
        return 2
    settings = _keep_simulated_fleets(dataclasses.replace(settings, targets=tuple(words), hosts_file=None,
                                                          demo=False))
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    pause_path = state_dir / PAUSE_FILE

    def pause_now() -> None:  # SIGUSR1: the pause file, so the pause outlives this process and is undone by rm
        pause_path.touch(mode=0o600)

    stop: list[str] = []  # SIGTERM (systemctl stop): end after the round in progress, its repairs finished
    before = signal.signal(signal.SIGUSR1, lambda *_: pause_now())
    before_term = signal.signal(signal.SIGTERM, lambda *_: stop.append("SIGTERM"))
    try:
        return _rounds(settings, a, autopilot, policy, store, audit_dir, run_id, limits, stop)
    finally:
        signal.signal(signal.SIGUSR1, before)
        signal.signal(signal.SIGTERM, before_term)


def _rounds(settings: Settings, a: AutopilotSettings, autopilot: Autopilot, policy: Policy, store: StateStore,
            audit_dir: str, run_id: str, limits: Limits, stop: list[str]) -> int:
    """Round after round until ``--rounds`` (or a signal) ends them."""
    state = autopilot.state
    emit = (lambda r: print(json.dumps(r, default=str), flush=True)) if settings.json else _print_line
    with AuditLog.create(audit_dir, run_id, kind="autopilot") as audit:
        pilot = Pilot(autopilot, policy, store, audit, mode=a.mode, poll=_poller(settings, AfterPoll()),
                      repair=_repairer(settings, audit_dir), emit=emit, drain=_drainer(settings))
        pilot.record({"node": None, "action": "started", "reason": "start", "message": f"limits {limits}; policy "
                      f"{policy.source}; breaker {'tripped' if state.breaker.tripped else 'closed'}"})
        if a.mode == "auto":
            for host in autopilot.interrupted(time.time()):
                pilot.record({"node": host, "action": "repair-failed", "reason": "interrupted", "message":
                              "an earlier autopilot stopped during this repair: counted as failed"})
            pilot.save()
        pilot.flush()
        while (a.rounds is None or pilot.number < a.rounds) and not stop:
            began = time.monotonic()
            pilot.round()
            if a.rounds is not None and pilot.number >= a.rounds:
                break
            deadline = began + a.every
            while not stop and (left := deadline - time.monotonic()) > 0:
                time.sleep(min(left, 1.0))  # a SIGTERM ends the wait within a second
        if stop:
            pilot.record({"node": None, "action": "stopped", "reason": stop[0], "message": "stopped after the round "
                          "in progress; no repair was cut short"})
            pilot.flush()
    return 0


def _print_line(record: dict[str, Any]) -> None:
    """A decision as one line of text (node words are data: one_line)."""
    from nvls_tui.textsafe import one_line

    if record.get("action") == "round" and not record.get("running") and record.get("reason") == "breaker-closed":
        return  # a quiet round says nothing in text; --json and the audit log keep it
    node = record.get("node") or "-"
    print(one_line(f"round {record['round']} {node}: {record['action']} ({record['reason']}) {record['message']}"),
          flush=True)


__all__ = ["PAUSE_FILE", "Pilot", "run", "smoke_passed"]
