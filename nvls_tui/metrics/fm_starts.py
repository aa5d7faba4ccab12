"""Fabric Manager's starts in the last hour, counted by start time.

systemd's ``NRestarts`` counts only the restarts its policy made, and ``systemctl reset-failed`` sets it
back to 0: a flapping FM that someone reset-failed looks calm by it. Each poll of an active FM gives its
start time (``ActiveEnterTimestamp``), and FM's unit journal the ones before it (systemd's ``Started``
lines, ``poll/fm_starts.py``); this keeps the distinct start times seen per node, so a start that came and
went between two polls still counts.
"""

from __future__ import annotations

from nvls_tui.model import NodeState
from nvls_tui.poll.fm_starts import SAME_START_S, fm_start, read_now

HOUR_S = 3600.0


class FmStarts:
    """The FM start times seen per node, pruned to the last hour of each node's own clock."""

    def __init__(self) -> None:
        self._seen: dict[str, set[float]] = {}

    def see(self, state: NodeState, now: float) -> int | None:
        """Record the node's FM start (if any) and return its starts in the hour before ``now``.

        Args:
            now: the node's clock (``node_clock``) where read, else the bastion's.

        Returns None where the node's units could not be read (unknown, not 0).
        """
        if not state.was_read("units"):
            return None
        starts = self._seen.setdefault(state.host, set())
        # The unit's start, those of FM's journal (the starts between two polls) and those carried so far.
        starts.update(t for t in (*read_now(state), *state.fm_starts) if not any(abs(t - s) < SAME_START_S
                                                                              for s in starts))
        starts -= {t for t in starts if t < now - HOUR_S}
        return sum(1 for t in starts if t <= now + 60)  # a minute's skew between two reads of one clock


__all__ = ["FmStarts", "fm_start"]
