"""The node's past repairs: the audit logs in the audit directory whose records name a host.

A record names its node in ``node`` (a run's start names its nodes in ``nodes``). Logs are read
newest first, each at most ``READ_LIMIT`` bytes (a log is JSON lines the console wrote itself, yet a
disk can hold anything): a line that is not JSON is skipped, and a directory that cannot be listed
is an error the caller shows, never "no past repairs".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

READ_LIMIT = 8 * 1024 * 1024  # bytes of one log read to find the host
KINDS = ("repair", "restore", "session")  # AuditLog.create's kinds that change or may change nodes


@dataclass(frozen=True, slots=True)
class PastLog:
    """One audit log that names the host.

    Attributes:
        path: the JSONL file.
        kind: ``repair``, ``restore`` or ``session`` (the file name's first word).
        modified: its modification time (seconds since the epoch).
    """

    path: Path
    kind: str
    modified: float


def _names(line: bytes, host: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    nodes = record.get("nodes")
    return record.get("node") == host or (isinstance(nodes, list) and host in nodes)


def names_host(path: Path, host: str, limit: int = READ_LIMIT) -> bool:
    """True when a record of the log at ``path`` (its first ``limit`` bytes) names ``host``."""
    needle = json.dumps(host).encode()
    with open(path, "rb") as fh:  # noqa: PTH123 - read a bounded prefix
        data = fh.read(limit)
    if needle not in data:  # most logs name other nodes: skip them without parsing
        return False
    return any(_names(line, host) for line in data.splitlines() if needle in line)


def audit_logs_naming(host: str, folder: str | os.PathLike[str]) -> list[PastLog]:
    """The audit logs in ``folder`` that name ``host``, newest first (none when the folder does not exist).

    Raises:
        OSError: the folder exists but cannot be listed (unknown is not "no past repairs").
    """
    where = Path(folder).expanduser()
    if not where.exists():
        return []
    found = []
    for path in where.iterdir():
        kind = path.name.split("-", 1)[0]
        if kind not in KINDS or path.suffix != ".jsonl" or path.is_symlink() or not path.is_file():
            continue
        try:
            if names_host(path, host):
                found.append(PastLog(path, kind, path.stat().st_mtime))
        except OSError:
            continue  # one unreadable log hides no other; the caller lists what it could read
    return sorted(found, key=lambda p: p.modified, reverse=True)


__all__ = ["KINDS", "READ_LIMIT", "PastLog", "audit_logs_naming", "names_host"]
