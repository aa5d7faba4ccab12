"""The poll's ``fm_log`` section: Fabric Manager's unit journal of this boot, read from the unit's last start.

The section is one journalctl (``nvls_tui.poll.probe.FM_LOG_ARGV``: the unit's last lines of this boot),
so what came before the unit's last start is dropped here, at systemd's ``Starting`` line for the unit
(``Started`` for a unit without an activating phase; systemd writes one for every start, by hand or by
``Restart=``). Where the lines read hold no such line, the last start is older than all of them, and every
line read is after it.

The lines are then read as ``analyze`` reads a pasted FM journal (the same parser, the same selection of
ERROR/WARNING lines after FM's last successful configuration), so ``check`` and ``analyze`` say the same
words for the same text. Pure.
"""

from __future__ import annotations

import re

from nvls_tui.diagnosis.story import node_time
from nvls_tui.model import CommandResult, MissingEvidence
from nvls_tui.model.node import FmJournal, FmLogLine
from nvls_tui.parsers.fabricmanager_log import (
    configured,
    fm_log_errors,
    parse_fm_log,
    unread_fm_lines,
    version_mismatch,
)
from nvls_tui.poll.evidence import OVER_CAP, PURPOSE, TIMED_OUT, missing_evidence
from nvls_tui.poll.probe import FM_LOG_BYTES, journal_hung_in

# systemd's lines about a start of the unit (journalctl -u lists the unit's own lines and PID 1's about it):
# "2026-12-02T09:00:00+0000 gpu05 systemd[1]: Starting nvidia-fabricmanager.service - NVIDIA fabric manager
# service..." (systemd 252; "Starting NVIDIA fabric manager service..." in 249) when the start has an
# activating phase (FM's unit is Type=forking: its lines come between that and "Started ..."); a unit that
# goes straight to active (Type=simple) logs only "Started ...", before its process prints anything. PID 1
# only: a line FM itself printed never moves the cut.
_UNIT_START = re.compile(r"^\S+(?: +\S+){0,2} +\S+ +systemd\[1\]: +(Starting|Started)\b", re.M)


def since_last_start(text: str) -> str:
    """The part of a unit journal from the unit's last start on (the start line left out); all of it
    where no start line was read.

    A start begins at systemd's ``Starting`` line, or at its ``Started`` line where no ``Starting`` came
    since the last start (a unit without an activating phase)."""
    cut, pending = None, False
    for found in _UNIT_START.finditer(text):
        if found.group(1) == "Starting":
            cut, pending = found, True
        else:
            if not pending:
                cut = found
            pending = False
    if cut is None:
        return text
    end = text.find("\n", cut.end())
    return "" if end < 0 else text[end + 1:]


def start_times(text: str) -> tuple[float, ...]:
    """When systemd said the unit started (its ``Started`` lines, PID 1's only), in every line of ``text``:
    FM's start times (epoch seconds, the node's clock), the ones before the last start included. A line whose
    time does not read is left out."""
    found = (node_time(m.group(0).split(None, 1)[0]) for m in _UNIT_START.finditer(text) if m.group(1) == "Started")
    return tuple(t for t in found if t is not None)


def over_bound(result: CommandResult | None) -> CommandResult | None:
    """``result`` marked over the cap, its text dropped, where that text passes :data:`FM_LOG_BYTES`, so every
    transport bounds the section the same way (the node bounds it in lines only)."""
    if result is None or result.truncated or len(result.output.encode()) <= FM_LOG_BYTES:
        return result
    return CommandResult(result.argv, -1, "", "", result.duration, truncated=True)


def read_fm_journal(result: CommandResult | None, *, root: bool | None = True) -> tuple[FmJournal | None,
                                                                                     MissingEvidence | None]:
    """The ``fm_log`` section as an :class:`FmJournal`, or why it could not be read.

    Args:
        result: the section's command (None: it never ran).
        root: whether it ran as root (journalctl shows a user outside ``systemd-journal`` no system unit's lines).
    """
    result = over_bound(result)
    if (hung := journal_hung_in(result)) is not None:
        return None, MissingEvidence("fm_log", TIMED_OUT, f"{PURPOSE['fm_log']} could not be read: journalctl did "
                                                          f"not answer in the {hung} section, so it was not asked again")
    why = missing_evidence("fm_log", result, root=root)
    if why is not None or result is None:
        if why is not None and why.reason == OVER_CAP:
            why = MissingEvidence(why.section, why.reason,
                                  f"{why.detail} (more than {FM_LOG_BYTES >> 10} KiB in its last lines)")
        return None, why
    text = since_last_start(result.output)
    events = parse_fm_log(text).value
    return FmJournal(problems=tuple(FmLogLine(e.level, e.message, e.timestamp) for e in fm_log_errors(events)),
                     configured=configured(events), mismatch=version_mismatch(events), lines=len(events),
                     unread=unread_fm_lines(text), starts=start_times(result.output)), None


__all__ = ["over_bound", "read_fm_journal", "since_last_start", "start_times"]
