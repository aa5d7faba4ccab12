"""Each round's decisions: which repairable nodes are repaired now, and why each other one is not.

The limits, in the order they are weighed for a node the policy calls repairable:

- **escalated**: its budget was spent; a person acts (a hardware ticket), the node stays drained;
- **FM flapping**: Fabric Manager started more than ``fm_starts`` times in ``fm_window_s`` seconds (counted by
  its own start times, ``poll/fm_starts.py``): something restarts it, and a reset will not fix that; the
  node is left to a person (escalated once, when it starts binding). Start times that could not be read are
  unknown (``fm-starts-unknown``), never "not flapping";
- **cooldown**: a node repaired less than ``cooldown_s`` ago is not judged again yet;
- **debounce**: a finding must hold ``debounce_rounds`` rounds in a row; an unknown round neither adds to
  the count nor clears it (unknown is neither recovery nor failure); a healthy or unsafe round clears it;
- **budget**: ``budget`` repairs in ``budget_days`` days, then the node is escalated ("hardware ticket");
- **paused**: a pause file or signal stops every new repair;
- **breaker**: at most ``breaker_bound(fleet)`` repairs started in the last ``window_s`` seconds; the
  repair that would pass the bound trips the breaker instead, and it stays tripped until an operator
  closes it. The breaker only stops *new* repairs: a repair already started runs to its end, restore,
  resume and uncordon included;
- **max parallel**: at most ``max_parallel`` repairs at once: a round's chosen nodes are its *wave*;
- **canary**: until one repair has passed its smoke test (and again after any failed), the wave's first node
  runs alone and the rest start only once it passed (:meth:`Autopilot.batches`); while such a canary runs,
  nothing else starts. The pause is read again before each batch of a wave starts (the command's Pilot).

Pure: every call takes ``now`` (wall-clock seconds: they are compared with times saved before a restart).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from nvls_tui.autopilot.policy import Judged, Judgement
from nvls_tui.autopilot.state import Repair, State

DAY_S = 86400.0
# The first words of a node's ``skip`` when its repair would pass the breaker's bound (observe says it would).
TRIPPED = "tripped the breaker"
WOULD_TRIP = "would trip the breaker"


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit, with the defaults docs/autopilot.md explains."""

    breaker_nodes: int = 5
    breaker_percent: float = 5.0
    window_s: float = 3600.0
    max_parallel: int = 2
    budget: int = 3
    budget_days: float = 7.0
    cooldown_s: float = 900.0
    debounce_rounds: int = 2
    fm_starts: int = 3
    fm_window_s: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("breaker_nodes", "max_parallel", "budget", "debounce_rounds", "fm_starts"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        if not 0 < self.breaker_percent <= 100:
            raise ValueError("--breaker-percent must be more than 0 and at most 100")
        for name, flag in (("window_s", "--window"), ("budget_days", "--budget-days"), ("fm_window_s", "--fm-window")):
            if getattr(self, name) <= 0:
                raise ValueError(f"{flag} must be more than 0")
        if self.cooldown_s < 0:
            raise ValueError("--cooldown must be 0 or more")

    def words(self) -> str:
        """Every limit in the words of its option (the start record's, for an operator reading the audit log)."""
        return (f"breaker: past the lower of {self.breaker_nodes} nodes and {self.breaker_percent:g} % of the nodes "
                f"watched in {self.window_s:g} s; at most {self.max_parallel} at once; budget {self.budget} repairs "
                f"in {self.budget_days:g} days; cooldown {self.cooldown_s:g} s; debounce {self.debounce_rounds} "
                f"rounds; FM flapping: more than {self.fm_starts} starts in {self.fm_window_s:g} s")

    def breaker_bound(self, fleet: int) -> int:
        """Repairs allowed in a window: the lower of the count and the percentage of the fleet watched, never
        below 1 (a fleet of 4 at 5 % still allows 1)."""
        return max(1, min(self.breaker_nodes, math.floor(fleet * self.breaker_percent / 100)))


@dataclass(frozen=True, slots=True)
class Decision:
    """One node's decision in one round: ``repair``, ``skip`` or ``escalate``, the limit or reason, words."""

    host: str
    action: str
    reason: str
    message: str
    why: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"node": self.host, "action": self.action, "reason": self.reason, "message": self.message,
                "findings": list(self.why)}


@dataclass(slots=True)
class Round:
    """A round's decisions and the breaker as it stands after them."""

    decisions: list[Decision] = field(default_factory=list)
    tripped_now: bool = False
    flapping_now: list[str] = field(default_factory=list)  # FM flapping binds on these from this round: escalate

    @property
    def chosen(self) -> list[str]:
        return [d.host for d in self.decisions if d.action == "repair"]


class Autopilot:
    """The decisions across rounds; ``state`` is what survives a restart, the debounce counts are not (a
    restart judges every node afresh: two more rounds, never fewer)."""

    def __init__(self, limits: Limits, state: State) -> None:
        self.limits = limits
        self.state = state
        self.streak: dict[str, tuple[int, frozenset[str]]] = {}  # host -> rounds in a row, the codes held
        self.flapping: set[str] = set()  # nodes FM flapping held back last round (escalated once, not each round)

    # --- the limits, each on its own -------------------------------------------------------------
    def in_window(self, now: float) -> list[Repair]:
        since = self.state.breaker.closed_at
        return [r for r in self.state.repairs
                if now - r.at < self.limits.window_s and (since is None or r.at >= since)]

    def budget_used(self, host: str, now: float) -> int:
        return sum(1 for r in self.state.repairs if r.host == host and now - r.at < self.limits.budget_days * DAY_S)

    def cooling(self, host: str, now: float) -> float | None:
        """Seconds of cooldown left after the node's last repair (None: none)."""
        ends = [r.ended if r.ended is not None else r.at for r in self.state.repairs if r.host == host]
        if not ends:
            return None
        left = max(ends) + self.limits.cooldown_s - now
        return left if left > 0 else None

    def interrupted(self, now: float) -> list[str]:
        """Repairs a previous process started and never ended (it was killed): failed, so that they neither
        hold a slot forever nor count as passed; the node's own record (INTERRUPTED_REPAIR) asks for a person."""
        hosts = []
        for r in self.state.repairs:
            if r.ok is None:
                r.ok, r.ended = False, now
                hosts.append(r.host)
        if hosts:
            self.state.canary_passed = False
        return hosts

    def running(self) -> list[str]:
        return [r.host for r in self.state.repairs if r.ok is None]

    def debounce(self, judged: Judged) -> int:
        """The node's streak of repairable rounds after this one: rounds in a row that share a finding (one
        finding that came and another that went is not a finding that held)."""
        if judged.judgement is Judgement.REPAIRABLE:
            codes = frozenset(judged.why) or frozenset({""})  # a judgement that names none: one finding
            count, held = self.streak.get(judged.host, (0, frozenset()))
            self.streak[judged.host] = (count + 1, held & codes) if held & codes else (1, codes)
        elif judged.judgement is not Judgement.UNKNOWN:  # unknown: neither recovery nor failure
            self.streak.pop(judged.host, None)
        return self.streak.get(judged.host, (0, frozenset()))[0]

    # --- a round ---------------------------------------------------------------------------------
    def decide(self, judged: Sequence[Judged], now: float, *, paused: bool = False) -> Round:
        """The decisions of one round over the whole fleet watched (``judged``: every node of it)."""
        out = Round()
        bound = self.limits.breaker_bound(len(judged))
        running = self.running()
        started = len(self.in_window(now))
        # A canary still running (no repair passed yet): nothing else starts until it passed.
        slots = self.limits.max_parallel - len(running) if self.state.canary_passed or not running else 0
        for j in judged:
            streak = self.debounce(j)
            if j.judgement is Judgement.HEALTHY:
                self.flapping.discard(j.host)  # should it flap again, a person hears of it again
            if j.host in running or j.judgement is Judgement.HEALTHY:
                continue
            if j.host in self.state.escalated:
                out.decisions.append(Decision(j.host, "skip", "escalated", self.state.escalated[j.host], j.why))
                continue
            if j.judgement is Judgement.UNKNOWN:
                out.decisions.append(Decision(j.host, "skip", "unknown", "not read whole: unknown is neither "
                                              "recovery nor failure", j.why))
                continue
            if j.judgement is Judgement.UNSAFE:
                out.decisions.append(Decision(j.host, "skip", "unsafe", "not safe to repair unattended: "
                                              "for a person", j.why))
                continue
            if (flapping := self._flapping(j, out)) is not None:
                out.decisions.append(flapping)
                continue
            if (left := self.cooling(j.host, now)) is not None:
                out.decisions.append(Decision(j.host, "skip", "cooldown", f"repaired recently: {left:.0f} s of "
                                              "cooldown left", j.why))
                continue
            if streak < self.limits.debounce_rounds:
                out.decisions.append(Decision(j.host, "skip", "debounce", f"seen {streak} of "
                                              f"{self.limits.debounce_rounds} rounds in a row", j.why))
                continue
            if (used := self.budget_used(j.host, now)) >= self.limits.budget:
                why = (f"hardware ticket: {used} repairs in {self.limits.budget_days:g} days did not hold; "
                       "left drained for a person")
                self.state.escalated[j.host] = why
                out.decisions.append(Decision(j.host, "escalate", "budget", why, j.why))
                continue
            if paused:
                out.decisions.append(Decision(j.host, "skip", "paused", "paused: no new repair starts", j.why))
                continue
            if self.state.breaker.tripped:
                out.decisions.append(Decision(j.host, "skip", "breaker", "the breaker is tripped "
                                              f"({self.state.breaker.reason}): an operator closes it", j.why))
                continue
            if started >= bound:
                self.state.breaker.tripped, self.state.breaker.since = True, now
                # Which node would pass the bound, as which repair: ``started`` counts this round's chosen
                # nodes too (in ask mode proposals, none started yet), so no count of repairs done is claimed.
                self.state.breaker.reason = (f"{j.host} would be repair {started + 1} in {self.limits.window_s:g} s, "
                                             f"past the bound of {bound} (the lower of {self.limits.breaker_nodes} "
                                             f"nodes and {self.limits.breaker_percent:g} % of the {len(judged)} "
                                             "nodes watched, at least 1)")
                out.tripped_now = True
                out.decisions.append(Decision(j.host, "skip", "breaker", f"{TRIPPED}: "
                                              f"{self.state.breaker.reason}", j.why))
                continue
            if slots <= 0:
                limit = "max-parallel" if self.state.canary_passed or not running else "canary"
                words = (f"{self.limits.max_parallel} repairs at once already" if limit == "max-parallel"
                         else "a canary repair must pass its smoke test before the next starts")
                out.decisions.append(Decision(j.host, "skip", limit, words, j.why))
                continue
            slots -= 1
            started += 1
            out.decisions.append(Decision(j.host, "repair", "policy", "safe to repair unattended", j.why))
        return out

    def _flapping(self, j: Judged, out: Round) -> Decision | None:
        """The FM-flapping limit on a repairable node: a skip where FM started too often or its starts are
        unknown; None where it does not bind. A node it starts holding back is in ``out.flapping_now``."""
        if j.fm_starts is None:
            self.flapping.discard(j.host)
            return Decision(j.host, "skip", "fm-starts-unknown", "Fabric Manager's start times could not be read: "
                            "whether it flaps is unknown", j.why)
        if j.fm_starts <= self.limits.fm_starts:
            self.flapping.discard(j.host)
            return None
        if j.host not in self.flapping:
            self.flapping.add(j.host)
            out.flapping_now.append(j.host)
        return Decision(j.host, "skip", "fm-flapping",
                        f"FM flapping: Fabric Manager started {j.fm_starts} times in {self.limits.fm_window_s:g} s "
                        f"(more than {self.limits.fm_starts}): something restarts it; a reset will not fix it, "
                        "a person finds what does", j.why)

    def batches(self, chosen: Sequence[str]) -> list[list[str]]:
        """A wave's batches, in order: until a repair has passed its smoke test, the first node alone (the
        canary), then the rest; once one has, the whole wave at once (``decide`` keeps it to max parallel)."""
        if not chosen:
            return []
        if self.state.canary_passed:
            return [list(chosen)]
        return [list(chosen[:1]), list(chosen[1:])] if len(chosen) > 1 else [list(chosen)]

    def started(self, host: str, now: float) -> None:
        """A chosen repair began: it counts in the window and the budget from now."""
        self.state.repairs.append(Repair(host, now))
        self.streak.pop(host, None)

    def finished(self, host: str, ok: bool, now: float) -> None:
        """A repair ended; ``ok`` only where its NVLS smoke test passed. A failure puts the canary back."""
        for r in reversed(self.state.repairs):
            if r.host == host and r.ok is None:
                r.ok, r.ended = ok, now
                break
        self.state.canary_passed = ok

    def close_breaker(self, now: float) -> None:
        """An operator closed the breaker: the window starts afresh (the repairs that tripped it stay in the
        budgets)."""
        self.state.breaker.tripped, self.state.breaker.since, self.state.breaker.reason = False, None, ""
        self.state.breaker.closed_at = now

    def prune(self, now: float) -> None:
        """Forget repairs older than both the window and the budget's days (the file stays small)."""
        keep = max(self.limits.window_s, self.limits.budget_days * DAY_S)
        self.state.repairs = [r for r in self.state.repairs if r.ok is None or now - r.at < keep]


__all__ = ["TRIPPED", "WOULD_TRIP", "Autopilot", "Decision", "Limits", "Round"]
