"""The fleet's memory of the console's last repair of each node, while it is still the news.

After a repair failed at a step or was aborted, the node's poll alone told the fleet's story as if
nothing had happened (recommending the very step that had just failed). This keeps, per node, how the
last repair ended, from when it ended until a later poll shows the node changed (its verdict or its
findings differ from the first poll after the repair) or a new repair of it starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nvls_tui.diagnosis.story import LastRepair
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.session import RepairRun

REMEMBERED = ("failed", "aborted")


def last_repair_of(outcome: NodeOutcome) -> LastRepair | None:
    """A failed or aborted repair's end (where it stopped, whether it restored); None for any other end."""
    if outcome.dry_run or outcome.result not in REMEMBERED:
        return None
    failed = next((s.name for s in outcome.steps if s.status == "failed" and s.name != "restore"), None)
    step = failed or (outcome.reason.partition(":")[0].strip() or None)
    restore = next((s for s in outcome.steps if s.name == "restore"), None)
    return LastRepair(outcome.result, step, restored=restore is None or restore.status != "failed")


@dataclass(slots=True)
class _Held:
    last: LastRepair
    since: float
    baseline: tuple[object, ...] | None = None


def _signature(diagnosis: Diagnosis | None) -> tuple[object, ...]:
    if diagnosis is None:
        return (None,)
    return (diagnosis.verdict, tuple(sorted({f.code for f in diagnosis.findings})))


class RepairMemory:
    """Each node's :class:`LastRepair`, kept until the node is seen to change or is repaired again."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self._taken: set[int] = set()

    def remember(self, repairs: Iterable[RepairRun], now: float) -> set[str]:
        """Take in the repairs that ended since the last call; a repair under way forgets its nodes.

        Returns:
            The hosts whose last repair changed (their story must be drawn again).
        """
        changed: set[str] = set()
        for run in repairs:
            if not run.finished:
                changed |= {host for host in run.hosts if self._held.pop(host, None) is not None}
                continue
            for outcome in run.outcomes:
                if id(outcome) in self._taken:
                    continue
                self._taken.add(id(outcome))
                last = last_repair_of(outcome)
                if last is not None:
                    self._held[outcome.host] = _Held(last, now)
                    changed.add(outcome.host)
                elif self._held.pop(outcome.host, None) is not None:
                    changed.add(outcome.host)
        return changed

    def seen(self, state: NodeState, diagnosis: Diagnosis | None) -> bool:
        """A poll of the node: the first after the repair is its baseline; one that differs forgets it.

        Returns:
            True when the node's last repair was forgotten just now.
        """
        held = self._held.get(state.host)
        if held is None or state.polled_at is None or state.polled_at < held.since:
            return False
        signature = _signature(diagnosis)
        if held.baseline is None:
            held.baseline = signature
            return False
        if signature != held.baseline:
            del self._held[state.host]
            return True
        return False

    @property
    def hosts(self) -> list[str]:
        """The nodes whose last repair is remembered now."""
        return list(self._held)

    def get(self, host: str) -> LastRepair | None:
        """The node's last repair, while it is still the news."""
        held = self._held.get(host)
        return held.last if held is not None else None


__all__ = ["RepairMemory", "last_repair_of"]
