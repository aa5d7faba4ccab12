"""Repair outcomes per node from the audit logs, so that the watch and a repair run's textfile agree.

Each run of a node ends with one ``run-finished`` record (``result``: repaired, failed, aborted, refused,
skipped, restored; ``ok`` for a by-hand session step). Dry runs are left out (they changed nothing). A
run that left the node out of service says so in its own words: the runbook's sentence "... stays
drained in Slurm ..." or "... stays cordoned in Kubernetes ..." is in its message.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from nvls_tui.audit.past import KINDS, READ_LIMIT
from nvls_tui.diagnosis.story import node_time
from nvls_tui.metrics.labels import repair_result

_FINISHED = b'"run-finished"'
_LEFT_OUT = (" stays drained", " stays cordoned", " stays down")


@dataclass
class RepairTally:
    """One node's repair runs: counts by result, and the last run's result, time and whether it left the
    node out of service."""

    counts: dict[str, int] = field(default_factory=dict)
    last_result: str | None = None
    last_at: float | None = None
    left_out: bool = False


def tally_lines(lines: list[bytes], into: dict[str, RepairTally]) -> None:
    """Add the ``run-finished`` records of one log's lines to ``into`` (host -> tally)."""
    for line in lines:
        if _FINISHED not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("event") != "run-finished" or record.get("dry_run"):
            continue
        host = record.get("node")
        if not isinstance(host, str) or not host:
            continue
        tally = into.setdefault(host, RepairTally())
        result = repair_result(record.get("result"))
        tally.counts[result] = tally.counts.get(result, 0) + 1
        at = node_time(record.get("time")) if isinstance(record.get("time"), str) else None
        if tally.last_at is None or (at is not None and at >= tally.last_at):
            message = record.get("message")
            tally.last_result, tally.last_at = result, at
            tally.left_out = isinstance(message, str) and any(word in message for word in _LEFT_OUT)


class AuditTally:
    """The repair tallies of an audit directory, each log parsed again only when its size or time changed."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).expanduser()
        self._logs: dict[Path, tuple[tuple[int, float], dict[str, RepairTally]]] = {}

    def read(self) -> dict[str, RepairTally] | None:
        """Host -> tally over every log; None when the folder exists but cannot be listed (unknown)."""
        try:
            paths = [p for p in self.folder.iterdir() if p.suffix == ".jsonl" and p.name.split("-", 1)[0] in KINDS]
        except FileNotFoundError:
            return {}
        except OSError:
            return None
        kept: dict[Path, tuple[tuple[int, float], dict[str, RepairTally]]] = {}
        for path in paths:
            try:
                st = path.lstat()
                stamp = (st.st_size, st.st_mtime)
                known = self._logs.get(path)
                if known is None or known[0] != stamp:
                    tallies: dict[str, RepairTally] = {}
                    with open(path, "rb") as fh:  # noqa: PTH123 - a bounded read
                        tally_lines(fh.read(READ_LIMIT).splitlines(), tallies)
                    known = (stamp, tallies)
                kept[path] = known
            except OSError:
                continue  # one unreadable log hides no other
        self._logs = kept
        return merge([t for _, t in kept.values()])


def merge(parts: list[dict[str, RepairTally]]) -> dict[str, RepairTally]:
    """Every log's tallies as one: counts added, the latest run's result kept."""
    out: dict[str, RepairTally] = {}
    for part in parts:
        for host, tally in part.items():
            whole = out.setdefault(host, RepairTally())
            for result, n in tally.counts.items():
                whole.counts[result] = whole.counts.get(result, 0) + n
            if tally.last_result is not None and (whole.last_result is None or (tally.last_at or 0) >= (whole.last_at or 0)):
                whole.last_result, whole.last_at, whole.left_out = tally.last_result, tally.last_at, tally.left_out
    return out


__all__ = ["AuditTally", "RepairTally", "merge", "tally_lines"]
