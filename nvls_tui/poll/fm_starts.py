"""Fabric Manager's start times, kept from poll to poll: flapping counted by FM's own starts. Pure.

systemd's ``NRestarts`` counts only the restarts its ``Restart=`` policy made, and starts again from 0 at a
start by hand, a ``systemctl reset-failed`` or a reboot: a Fabric Manager that something restarts (a
configuration tool, needrestart, a person) never moves it, and one that flapped before a reset-failed looks
calm by it. Two readings of a real node say when FM started, whoever started it:

- the unit's ``ActiveEnterTimestamp`` (the poll's ``systemctl show``): the last start, while FM is active;
- systemd's ``Started`` lines in the unit's journal (the poll's ``fm_log`` section, this boot's last lines):
  the starts before it too, those between two polls included.

:func:`carry_fm_starts` keeps the distinct start times of a node across polls (what follows a poll calls it:
``poll/after_poll.carry_across``), so a reboot (a new boot's journal) forgets none; :func:`fm_starts_in`
counts them in a window of the node's clock, and says None (unknown, never "not flapping") where this poll
could not read them.
"""

from __future__ import annotations

from nvls_tui.diagnosis.story import node_time
from nvls_tui.model import NodeState

FM_UNIT = "nvidia-fabricmanager.service"
#: Two readings of one start (the unit's timestamp, the journal's line) less than this apart are one start.
SAME_START_S = 5.0
#: Starts older than this before the node's clock are forgotten (every window counted is shorter).
KEEP_S = 86400.0
#: And at most this many are kept (a unit restarted every few seconds keeps its state small).
KEEP_AT_MOST = 256
#: A start read this much after the node's clock still counts (two reads of one clock a little apart).
SKEW_S = 60.0


def fm_start(state: NodeState) -> float | None:
    """When the node's active host FM unit started (``ActiveEnterTimestamp``; the node's clock, epoch seconds);
    None where unknown or not active."""
    if not state.was_read("units"):
        return None
    unit = state.service(FM_UNIT)
    if unit is None or unit.active != "active":
        return None
    return node_time(unit.since)


def read_now(state: NodeState) -> tuple[float, ...]:
    """The start times this poll of ``state`` read (the unit's, the journal's)."""
    found = [t for t in (fm_start(state),) if t is not None]
    if state.fm_journal is not None and state.was_read("fm_log"):
        found += state.fm_journal.starts
    return tuple(found)


def _distinct(times: list[float]) -> list[float]:
    """``times`` sorted, readings less than :data:`SAME_START_S` after the one kept before merged into it."""
    out: list[float] = []
    for t in sorted(times):
        if not out or t - out[-1] >= SAME_START_S:
            out.append(t)
    return out


def carry_fm_starts(previous: NodeState | None, current: NodeState) -> NodeState:
    """``current`` with FM's start times seen at the last poll of the node (``previous``) and at this one,
    each once, those older than :data:`KEEP_S` before the node's clock forgotten."""
    seen = _distinct([*(previous.fm_starts if previous is not None else ()), *current.fm_starts,
                      *read_now(current)])
    if current.node_clock is not None:
        seen = [t for t in seen if t >= current.node_clock - KEEP_S]
    return current.replace(fm_starts=tuple(seen[-KEEP_AT_MOST:]))


def fm_starts_in(state: NodeState, window_s: float) -> int | None:
    """FM's starts in the ``window_s`` seconds before the node's clock, those carried and those this poll read.

    None (unknown) where this poll did not read the units or FM's journal, where the node's clock was not
    read, where FM is active and its start time does not read, and where the node has no host FM unit (FM in
    a container, or none): what could not be read is never "not flapping".
    """
    if not (state.was_read("units") and state.was_read("fm_log")) or state.node_clock is None:
        return None
    unit = state.service(FM_UNIT)
    if unit is None or unit.load == "not-found" or (unit.active == "active" and fm_start(state) is None):
        return None
    seen = _distinct([*state.fm_starts, *read_now(state)])
    return sum(1 for t in seen if state.node_clock - window_s <= t <= state.node_clock + SKEW_S)


__all__ = ["FM_UNIT", "carry_fm_starts", "fm_start", "fm_starts_in", "read_now"]
