"""The fleet's top line: which answers are late, and a selection that fits. Pure: no Textual here.

An answer is late when it is older than its node's own interval allows. The console polls a calm
healthy node less often (up to 6 times the interval) and backs off from one that does not answer (up
to 60 s), on purpose: an answer 32 s old is then no news, and a line that always says "oldest answer
32s ago" teaches the operator to ignore it. Each node's interval is learnt from its own answers (the
time between its last two); the line names the nodes whose answer is older than that interval allows.

A selection of 40 nodes does not fit on one 160-column line: it is shortened to the hosts that fit
and ``+N more``, never cut off mid-name with ``(r repairs)`` lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nvls_tui.model import Fleet

# A calm node's interval doubles per calm poll, and each pause is jittered by ±20 %: the next answer may
# come 2.4 times as long after the last as that one came after its own predecessor.
LATE_FACTOR = 2.5
# A poll's own time (its commands), which the gap between two answers does not always include.
LATE_SLACK = 10.0
# With one answer so far, the node's interval is unknown: late only past the longest back-off (60 s) and a
# poll's time.
FIRST_INTERVAL = 90.0


@dataclass(frozen=True, slots=True)
class Late:
    """A node whose last answer is late: its ``age`` (seconds) and the interval it kept before (None: one
    answer so far)."""

    host: str
    age: float
    every: float | None


class AnswerTimes:
    """When each node last answered, and how long it had been since its answer before (its own interval)."""

    def __init__(self) -> None:
        self._at: dict[str, float] = {}
        self._every: dict[str, float] = {}

    def note(self, fleet: Fleet) -> None:
        """Fold in the fleet's latest answers (a node's new answer measures its interval)."""
        for state in fleet.nodes:
            at = state.polled_at
            if at is None:
                continue
            last = self._at.get(state.host)
            if last is not None and at > last:
                self._every[state.host] = at - last
            self._at[state.host] = at

    def allowed(self, host: str) -> float:
        """Seconds ``host``'s answer may age before it is late."""
        every = self._every.get(host)
        return FIRST_INTERVAL if every is None else every * LATE_FACTOR + LATE_SLACK

    def late(self, fleet: Fleet, now: float) -> list[Late]:
        """The nodes whose last answer is older than their interval allows, the oldest first."""
        found = [Late(s.host, now - s.polled_at, self._every.get(s.host)) for s in fleet.nodes
                 if s.polled_at is not None and now - s.polled_at > self.allowed(s.host)]
        return sorted(found, key=lambda item: -item.age)


def age_words(seconds: float) -> str:
    """``45s``, ``2m10s``, ``1h05m``: an age to the second while it is short."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def late_words(late: Sequence[Late]) -> str:
    """``late: gpu03 answered 2m10s ago (every ~30s before), +2 more``; empty when no answer is late."""
    if not late:
        return ""
    first = late[0]
    every = f" (every ~{age_words(first.every)} before)" if first.every is not None else ""
    more = f", +{len(late) - 1} more" if len(late) > 1 else ""
    return f"late: {first.host} answered {age_words(first.age)} ago{every}{more}"


def hosts_within(hosts: Sequence[str], room: int) -> str:
    """``gpu05 gpu06 +38 more``: as many hosts, in order, as fit in ``room`` columns with the count of the rest.

    Whole names only (a cut name reads as another host); with no room for one, ``40 nodes``.
    """
    whole = " ".join(hosts)
    if len(whole) <= room:
        return whole
    fits, used = 0, -1  # hosts shown, and their width with the blanks between them
    for shown, host in enumerate(hosts[:-1], start=1):
        used += len(host) + 1
        if used + len(f" +{len(hosts) - shown} more") > room:
            break
        fits = shown
    if fits == 0:
        return f"{len(hosts)} nodes"
    return f"{' '.join(hosts[:fits])} +{len(hosts) - fits} more"


__all__ = ["FIRST_INTERVAL", "LATE_FACTOR", "LATE_SLACK", "AnswerTimes", "Late", "age_words", "hosts_within",
           "late_words"]
