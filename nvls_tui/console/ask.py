"""The console's autopilot ``ask`` mode (issue 40 item 3): the autopilot's proposals, one key approves.

The console judges each round of its own poll with the autopilot's policy and limits, through the headless
autopilot's :class:`~nvls_tui.headless.autopilot.Pilot` in ``ask`` mode (the same judging, the same
decisions, the same audit records: no second implementation), and keeps what the round proposes. Nothing
runs without the operator: the approval key opens the same plan screen as ``r``, the typed names approve
it, and the console's own repair runs. The approval, the decline and the repair's result are records of the
autopilot's audit log; a repair approved here counts in the state file (``--state-dir``) against the node's
budget and the breaker, as one the headless autopilot started.

A *round* is the console's poll of the fleet: once every node has answered (or failed) at least once, a
round is judged at most every poll interval, and only when every node the policy calls repairable has been
polled again since the last round (one poll must not count as two rounds of the debounce). A node under a
repair is judged unknown meanwhile (neither recovery nor failure: its polls are held). No Textual here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nvls_tui import paths
from nvls_tui.audit.log import AuditLog
from nvls_tui.autopilot.decide import Autopilot, Decision, Limits
from nvls_tui.autopilot.pilot import Pilot, Polled
from nvls_tui.autopilot.policy import Judgement, Policy, load_policy
from nvls_tui.autopilot.state import StateStore
from nvls_tui.model import NodeState, Verdict
from nvls_tui.model.node import Diagnosis
from nvls_tui.settings import AutopilotSettings

#: The reasons a repairable node is held back by a limit (decide.py's names): shown beside the proposals.
LIMITS = ("escalated", "cooldown", "debounce", "budget", "paused", "breaker", "canary", "max-parallel")
#: What the console says wherever a proposal is shown.
NOTHING_RUNS = "nothing runs without your approval"


@dataclass(frozen=True, slots=True)
class Proposal:
    """What the last round made of one node the policy calls repairable.

    Attributes:
        host: the node.
        proposed: the autopilot proposes its repair now (else a limit holds it: ``limit``).
        limit: the limit that binds ("" when proposed): cooldown, debounce, budget, breaker, canary ...
        message: the decision's words.
        findings: the findings that made the judgement (``CODE`` or ``CODE/BUCKET``).
    """

    host: str
    proposed: bool
    limit: str
    message: str
    findings: tuple[str, ...]


class AskMode:
    """The autopilot's ask mode in the console: rounds judged, proposals kept, approvals and results recorded.

    Args:
        autopilot: the limits and the state (loaded from the state file).
        policy: what is safe to repair unattended.
        store: the state file, saved after every change (a trip, an approval, a result).
        audit: the autopilot's audit log (``autopilot-RUN.jsonl``).
        hosts: every node the console watches (the breaker's percentage is of these).
        every: seconds between two rounds at least (the poll interval; 0: as polls come).
        clock: wall-clock seconds (the state's times are compared across restarts).
        read_only: the console's ``--read-only``: rounds are judged and shown, nothing can be approved, and the
            state file is read (an operator's ``--close-breaker``) but never written, as headless ask: a trip
            judged here must not stop an autopilot that runs ``--mode auto`` on the same state directory.
    """

    def __init__(self, autopilot: Autopilot, policy: Policy, store: StateStore, audit: AuditLog,
                 hosts: Sequence[str], *, every: float = 0.0, clock: Callable[[], float] = time.time,
                 read_only: bool = False) -> None:
        self.autopilot, self.policy, self.store, self.audit = autopilot, policy, store, audit
        self.read_only = read_only
        # Read-only: the state as last read from the file (this console's own judging changes only its copy).
        self._disk = store.load() if read_only else None
        self.hosts = list(hosts)
        self.every = every
        self.clock = clock
        self._polled: Polled = []
        self.pilot = Pilot(autopilot, policy, store, audit, mode="ask", poll=lambda: self._polled,
                           repair=_never, clock=clock, follow_disk=False)
        self.fresh: set[str] = set()  # nodes polled since the last round
        self.last_round: float | None = None  # time.monotonic() of the last round
        self.proposals: dict[str, Proposal] = {}
        self.unsafe: dict[str, tuple[str, ...]] = {}  # nodes the policy leaves to a person, and why
        self.approved: set[str] = set()  # approved here, their repair not ended yet
        self.closed = False  # the console is going: nothing more is recorded (an open plan's close is no decline)
        self.pilot.record({"node": None, "action": "started", "reason": "console", "message": f"console ask mode: "
                           f"limits {autopilot.limits.words()}; policy {policy.source}; breaker "
                           f"{'tripped' if autopilot.state.breaker.tripped else 'closed'}; {NOTHING_RUNS}"
                           + ("; read-only: the state file is read, never written" if read_only else "")})
        # A repair left unended is another autopilot's to count failed: a read-only console may be beside it.
        for host in () if read_only else autopilot.interrupted(clock()):
            self.pilot.record({"node": host, "action": "repair-failed", "reason": "interrupted", "message":
                               "an earlier autopilot stopped during this repair: counted as failed"})
        self.pilot.flush()
        self._save()

    @classmethod
    def open(cls, settings: AutopilotSettings, hosts: Sequence[str], *, audit_dir: str | None,
             every: float, read_only: bool = False) -> AskMode:
        """Ask mode from the console's ``--autopilot ask`` options: the limits, the policy file, the state file
        of ``--state-dir`` and a new audit log (``audit_dir``, else the state directory's ``audit/``).

        Raises:
            ValueError: a limit, the policy file or the state file cannot be used (PolicyError, StateError: one
                sentence each), or the audit log cannot be created (OSError).
        """
        limits = Limits(**dict(settings.limits))  # type: ignore[arg-type]  # argparse typed each value
        policy = load_policy(settings.policy) if settings.policy else Policy()
        state_dir = Path(settings.state_dir).expanduser() if settings.state_dir else paths.state_dir() / "autopilot"
        store = StateStore(state_dir)
        state = store.load()
        run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        audit = AuditLog.create(audit_dir or str(state_dir / "audit"), run_id, kind="autopilot")
        return cls(Autopilot(limits, state), policy, store, audit, hosts, every=every, read_only=read_only)

    # ---- rounds ----------------------------------------------------------------------------------------
    def polled(self, hosts: Iterable[str]) -> None:
        """These nodes answered (or failed) a poll since the last round."""
        self.fresh.update(hosts)

    def due(self, now: float) -> bool:
        """A round may be judged now (some node was polled, the last round is ``every`` seconds old): the cheap
        test the console makes on every batch of polls before it gathers the fleet for :meth:`maybe_round`."""
        return not self.closed and bool(self.fresh) and (self.last_round is None or now - self.last_round >= self.every)

    def maybe_round(self, nodes: Sequence[tuple[NodeState, Diagnosis | None]], now: float, *,
                    busy: Collection[str] = ()) -> bool:
        """Judge a round of ``nodes`` (every node watched, its latest state and diagnosis) when one is due.

        Args:
            now: ``time.monotonic()`` (rounds are at least ``every`` seconds apart).
            busy: nodes under a repair the operator started with ``r`` (their polls are held too): unknown.

        Returns:
            True when a round was judged (the proposals are new).
        """
        if not self.due(now) or any(d is None for _, d in nodes):
            return False  # a node never read yet: the first round waits for the whole fleet
        try:
            self._sync()
        except ValueError:
            self.last_round = now  # tried again a poll interval later, not on every batch of polls
            raise
        running = set(self.autopilot.running()) | set(busy)
        for state, diagnosis in nodes:
            if state.host in self.fresh or state.host in running or diagnosis is None:
                continue
            if self.policy.judge(state.host, state.reachable, diagnosis).judgement is Judgement.REPAIRABLE:
                return False  # its last poll already counted: wait for the next one
        # A node under a repair is not read now (its polls are held): unknown, which neither counts nor clears.
        self._polled = [(s.replace(reachable=False) if s.host in running else s, d or _UNREAD) for s, d in nodes]
        self.fresh.clear()
        self.last_round = now
        decisions = self.pilot.round()
        for d in decisions:
            if d.action == "escalate":  # headless auto drains it; here a person acts on the console's word
                self.pilot.record({"node": d.host, "action": "not-drained", "reason": "ask-mode", "message":
                                   "ask mode drains nothing by itself: take the node out of service by hand"})
        self.pilot.flush()
        self._save()
        self._keep(decisions)
        return True

    def _sync(self) -> None:
        """Read the state file again where it changed on disk since this console last wrote or read it (an
        operator's ``nvls-tui autopilot --close-breaker``): the next save must not write the old state back.

        Raises:
            StateError: the file can no longer be read (the round or the approval stops there: fail closed).
        """
        disk = self.store.load()
        if disk != (self._disk if self.read_only else self.autopilot.state):
            if self.read_only:
                self._disk = self.store.load()  # its own copy: the judging below changes ``disk``
            self.autopilot.state = disk
            self.pilot.record({"node": None, "action": "state-read", "reason": "changed-on-disk", "message":
                               f"{self.store.path} changed since this console wrote it (--close-breaker, another "
                               f"autopilot): read again; breaker {'tripped' if disk.breaker.tripped else 'closed'}"})

    def _save(self) -> None:
        """The state to its file, after every change; never from a read-only console."""
        if not self.read_only:
            self.store.save(self.autopilot.state)

    def _keep(self, decisions: Sequence[Decision]) -> None:
        # A proposal the breaker's trip found already made (in its own round or before) stays: auto would have
        # started that repair, and the breaker stops only new ones. Held by anything else, or no longer
        # repairable (healthy, unsafe, unknown), it goes.
        before = {h: p for h, p in self.proposals.items() if p.proposed}
        self.proposals = {d.host: before[d.host] if d.host in before and d.action == "skip" and d.reason == "breaker"
                          else Proposal(d.host, d.action == "propose", "" if d.action == "propose" else d.reason,
                                        d.message, d.why)
                          for d in decisions if d.action == "propose" or d.reason in LIMITS}
        self.unsafe = {d.host: d.why for d in decisions if d.reason == "unsafe"}

    @property
    def proposed(self) -> list[str]:
        """The nodes whose repair is proposed now, in the fleet's order."""
        return [h for h, p in self.proposals.items() if p.proposed]

    @property
    def tripped(self) -> bool:
        """The breaker is tripped: nothing new is proposed until an operator closes it."""
        return self.autopilot.state.breaker.tripped

    # ---- the operator's decisions ------------------------------------------------------------------------
    def approve(self, host: str) -> str | None:
        """The operator approved the plan of ``host``'s proposed repair: recorded (audit first), then counted
        against its budget and the breaker (saved before it runs). Returns None, or why it may not start."""
        proposal = self.proposals.get(host)
        if proposal is None or not proposal.proposed:
            held = f" ({proposal.limit}: {proposal.message})" if proposal is not None else ""
            return f"{host} is not proposed now{held}: nothing was started."
        self._sync()
        if self.pilot.paused():  # a pause stops new repairs at once, between rounds too
            return f"The autopilot is paused ({self.pilot.pause_path} exists): {host} was not started."
        # A breaker that tripped in or after the round that proposed this node does not hold it: auto would have
        # started it before the trip (``_keep``). One that tripped before left no proposal to approve.
        self.pilot.record({"node": host, "action": "approved", "reason": "operator", "by": self.audit.operator,
                           "message": f"approved in the console by {self.audit.operator}: the plan shown runs",
                           "findings": list(proposal.findings)})
        self.pilot.flush()  # audit first: an approval the log cannot hold raises before anything runs
        self.autopilot.started(host, self.clock())
        self.approved.add(host)
        del self.proposals[host]
        self._save()  # it counts against the budget even if the console dies
        return None

    def declined(self, host: str) -> None:
        """The operator closed the plan of a proposed repair without approving it."""
        if self.closed:
            return
        self.pilot.record({"node": host, "action": "declined", "reason": "operator", "by": self.audit.operator,
                           "message": f"declined in the console by {self.audit.operator}: nothing ran"})
        self.pilot.flush()

    def ended(self, results: Mapping[str, bool], *, error: str | None = None) -> None:
        """The console's repair of approved nodes ended: ``results`` True only where its smoke test passed
        (a repair that did not start, ``error``, is a failure: never a pass). After :meth:`close` nothing is
        recorded: the state keeps the repair unended, and the next start counts it failed (``interrupted``)."""
        if self.closed:
            return
        self._sync()
        for host, ok in results.items():
            if host not in self.approved:
                continue  # the operator's own `r`: not the autopilot's
            self.approved.discard(host)
            if error is not None:
                from nvls_tui.textsafe import one_line

                self.pilot.record({"node": host, "action": "repair-error", "reason": "not-started",
                                   "message": one_line(error, 300)})
            self.autopilot.finished(host, ok, self.clock())
            self.pilot.record({"node": host, "action": "repaired" if ok else "repair-failed", "reason": "smoke-test",
                               "message": "the NVLS smoke test passed" if ok else
                               "the repair did not end with a passing NVLS smoke test"})
        self.pilot.flush()
        self._save()

    # ---- words ------------------------------------------------------------------------------------------
    def limits_words(self, host: str) -> list[str]:
        """Each limit as it stands for ``host``: which would bind next (budget, breaker, canary, cooldown)."""
        ap, limits, now = self.autopilot, self.autopilot.limits, self.clock()
        bound = limits.breaker_bound(len(self.hosts))
        started = len(ap.in_window(now))
        cooling = ap.cooling(host, now)
        words = [f"budget {ap.budget_used(host, now)} of {limits.budget} repairs in {limits.budget_days:g} days",
                 f"breaker {'TRIPPED' if self.tripped else 'closed'}: {started} of {bound} repairs started in "
                 f"{limits.window_s:g} s",
                 "canary: passed" if ap.state.canary_passed else "canary: the first repair runs alone and must "
                 "pass its smoke test",
                 f"cooldown: {cooling:.0f} s left" if cooling is not None else f"cooldown {limits.cooldown_s:g} s "
                 "after a repair"]
        if self.pilot.paused():
            words.insert(0, "PAUSED")
        return words

    def binds_next(self, host: str) -> list[str]:
        """The limits approving ``host``'s proposal brings to bear: the breaker's bound reached, the budget's last
        repair, the canary holding the others, the cooldown after it."""
        ap, limits, now = self.autopilot, self.autopilot.limits, self.clock()
        bound = limits.breaker_bound(len(self.hosts))
        words = []
        if self.tripped:  # a proposal kept from before the trip (``_keep``): the bound is behind us, not ahead
            words.append("breaker: tripped already (this proposal came before the trip, as auto's repair would have "
                         "started); nothing new is proposed until it is closed")
        elif len(ap.in_window(now)) + 1 >= bound:
            words.append(f"breaker: this repair reaches its bound ({bound} in {limits.window_s:g} s); the next "
                         "would trip it")
        if (used := ap.budget_used(host, now)) + 1 >= limits.budget:
            words.append(f"budget: its last repair of {limits.budget} in {limits.budget_days:g} days; the next "
                         "makes it a hardware ticket" if used + 1 == limits.budget else "budget: spent")
        if not ap.state.canary_passed:
            words.append("canary: the others wait until this one passes its smoke test")
        words.append(f"cooldown: not judged again for {limits.cooldown_s:g} s after it")
        return words

    def close(self) -> None:
        """Close the audit log (the console is going)."""
        self.closed = True
        self.audit.close()


# A node with no diagnosis yet (never read): unknown to the policy, as it is to the grid.
_UNREAD = Diagnosis((), Verdict.UNREACHABLE)


def _never(hosts: Sequence[str]) -> dict[str, bool]:
    """Ask mode repairs nothing by itself (the console's approved repair runs through the plan screen)."""
    raise AssertionError(f"ask mode never repairs unapproved: {', '.join(hosts)}")


__all__ = ["LIMITS", "NOTHING_RUNS", "AskMode", "Proposal"]
