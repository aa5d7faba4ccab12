"""``UNREAD_EVIDENCE``: NVIDIA's error text that no rule reads, quoted rather than dropped (issue 35, item 2). Pure.

Which lines count is :mod:`nvls_tui.parsers.unread`'s; this says them as one warning, quoting the first
:data:`~nvls_tui.parsers.unread.QUOTED` lines and counting the rest, with the driver's own text beside each
``NV_ERR_*`` status it names (the status catalogue, nvls_tui/catalogues/nv_status.csv).
"""

from __future__ import annotations

import re

from nvls_tui import catalogues
from nvls_tui.model import Finding, Severity
from nvls_tui.parsers.fabricmanager_log import parse_fm_line
from nvls_tui.parsers.unread import QUOTED, quote
from nvls_tui.words import count

_STATUS = re.compile(r"\bNV_ERR_[A-Z0-9_]+")
# FM's and systemd's words of a failed start, and FM's "nothing to do" (no NVSwitch it could manage): a finding
# that says FM is down or cannot start explains them.
_EXPLAINED = frozenset({"FAILED", "START_FAILED", "NV_WARN_NOTHING_TO_DO"})


def _with_status(line: str) -> str:
    said = quote(line)
    for name in dict.fromkeys(_STATUS.findall(line)):
        status = catalogues.nv_status(name)
        if status is not None:
            said += f" [{name} (0x{status.code:08X}: {status.text})]"
    return said


def unread_finding(lines: list[str], where: str) -> Finding | None:
    """``UNREAD_EVIDENCE`` [warning] for ``lines`` (None for none), ``where`` naming what was read."""
    lines = list(dict.fromkeys(line.strip() for line in lines if line.strip()))
    if not lines:
        return None
    quoted = "; ".join(f"“{_with_status(line)}”" for line in lines[:QUOTED])
    more = f"; and {len(lines) - QUOTED} more" if len(lines) > QUOTED else ""
    return Finding("UNREAD_EVIDENCE", Severity.WARNING,
                   f"{count(len(lines), 'line')} from NVIDIA's stack in {where} that nvls-tui has no rule for: "
                   f"{quoted}{more}. Read {'it' if len(lines) == 1 else 'them'}: "
                   f"{'it' if len(lines) == 1 else 'they'} may be a fault nvls-tui cannot name")


def fm_unread_finding(lines: list[str] | tuple[str, ...], explained: bool, where: str) -> Finding | None:
    """``UNREAD_EVIDENCE`` for a Fabric Manager log's unread lines; ``explained``: a finding already says FM is
    down or cannot start (FM_NOT_RUNNING, FM_VERSION_MISMATCH), so systemd's and FM's start script's words of that
    failure are its."""
    if explained:
        lines = [ln for ln in lines if (e := parse_fm_line(ln)) is None or e.code not in _EXPLAINED]
    return unread_finding(list(lines), where)


__all__ = ["fm_unread_finding", "unread_finding"]
