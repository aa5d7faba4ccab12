"""The autopilot's decisions and limits as Prometheus metric families (``autopilot --metrics-textfile`` /
``--metrics-listen``): what it decided, counted by action and reason, the breaker, each node's budget left,
the escalated nodes, the pause. Pure: built from plain values the command hands in (this package sits beside
the autopilot's, not above it), the names and help from :mod:`nvls_tui.metrics.names`.

Only the autopilot's own families: its textfile sits beside ``check``'s in node_exporter's folder, and a
series in both would be a duplicate node_exporter refuses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client.core import Metric

from nvls_tui.metrics import labels as lab
from nvls_tui.metrics import names as n
from nvls_tui.metrics.build import Families, Latest


@dataclass(frozen=True, slots=True)
class AutopilotRound:
    """The autopilot after a round.

    Attributes:
        decided: (action, reason) -> records of it since the autopilot started (each on its audit log first).
        tripped: the breaker; in_window: repairs started in its window; bound: repairs it allows there.
        budget_left: host -> repairs left in its budget (every node of the round).
        escalated: the nodes escalated to a person.
        paused: the pause file is there.
        ended: when the round ended (the bastion's clock).
    """

    decided: Mapping[tuple[str, str], int]
    tripped: bool
    in_window: int
    bound: int
    budget_left: Mapping[str, int]
    paused: bool
    escalated: frozenset[str] = frozenset()
    ended: float = field(default_factory=time.time)


def autopilot_families(r: AutopilotRound) -> list[Metric]:
    """Every family of ``r`` (those with no sample left out)."""
    out = Families(n.AUTOPILOT_METRICS)
    decided: dict[tuple[str, str], int] = {}
    for (action, reason), count in r.decided.items():  # two odd words may both read "other": one series
        key = (lab.decision_word(action), lab.decision_word(reason))
        decided[key] = decided.get(key, 0) + count
    for labels, count in sorted(decided.items()):
        out.add(n.AP_DECISIONS, labels, count)
    out.add(n.AP_BREAKER_TRIPPED, (), 1.0 if r.tripped else 0.0)
    out.add(n.AP_BREAKER_REPAIRS, (), r.in_window)
    out.add(n.AP_BREAKER_BOUND, (), r.bound)
    for host, left in sorted(r.budget_left.items()):
        out.add(n.AP_BUDGET_LEFT, (lab.hostname(host),), max(0, left))
    for host in sorted(r.escalated):
        out.add(n.AP_ESCALATED, (lab.hostname(host),), 1.0)
    out.add(n.AP_PAUSED, (), 1.0 if r.paused else 0.0)
    out.add(n.AP_ROUND_END, (), r.ended)
    return out.families()


class LatestDecisions(Latest):
    """The autopilot's last round's families: the textfile and ``/metrics`` read the same."""

    def update(self, r: AutopilotRound) -> None:
        """Replace what is exposed by ``r``'s families."""
        self.replace(autopilot_families(r))


__all__ = ["AutopilotRound", "LatestDecisions", "autopilot_families"]
