"""What a paste's wrapper said, put to use: the entry's ``wrapper``, NCCL errors' origins, kernel times. Pure.

:func:`nvls_tui.parsers.unwrap.unwrap` keeps, per inner line, the host, rank, time, pod and container its
wrappers printed. Here that becomes contract.md's ``wrapper`` object, the ``origins`` of an NCCL
failure (NCCL's own ``host:pid:tid`` field wins over a launcher's tag: the launcher names where it
collected the line, NCCL names the process that hit the error), and the time stamp of a kernel or
Fabric Manager line whose time the unwrapping took off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from nvls_tui.parsers.unwrap import Line, Unwrapped, times_by_line

# The lines of an NCCL or nccl-tests failure (not its INFO chatter).
_NCCL_ERROR = re.compile(
    r"NCCL WARN|Test NCCL failure|Test CUDA failure|Cuda failure|\bpid \d+: Test failure|Failed to bind NVLink SHARP|"
    r"\bNCCL error\b|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclInvalidUsage|ncclRemoteError"
)
# NCCL's own prefix: "host:pid:tid [dev]" (the host field starts where a word does: see detect.py).
_NCCL_FIELD = re.compile(r"(?<!\S)(?P<host>[A-Za-z0-9][\w.-]{0,62}):(?P<pid>\d{1,9}):\d{1,9} \[\d+\]")
# nccl-tests' failure lines name the host first: "gpu05: Test NCCL failure common.cu:1005 '...'".
_NCCL_TESTS_HOST = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]{0,62}): Test (?:NCCL|CUDA) failure")
# How much of a line's start names it when the parser joined it with the lines after it.
_HEAD = 60


def wrapper_json(unwrapped: Unwrapped) -> dict[str, Any]:
    """contract.md's ``wrapper``: ``form`` (the forms outermost first, joined by ``+``), ``hosts``,
    ``ranks``; ``pods``/``containers`` from kubectl's ``--prefix`` and ``times`` (first and last stamp
    printed) only where the wrapper gave them."""
    out: dict[str, Any] = {"form": "+".join(unwrapped.forms), "hosts": unwrapped.hosts, "ranks": unwrapped.ranks}
    if unwrapped.pods:
        out["pods"] = unwrapped.pods
        out["containers"] = unwrapped.containers
    if unwrapped.times:
        out["times"] = list(unwrapped.times)
    return out


def nccl_origins(lines: Iterable[Line]) -> list[dict[str, Any]]:
    """Where each NCCL failure line came from: ``host``, ``rank``, ``pid`` and ``by`` (``nccl`` when NCCL's
    or nccl-tests' own field named the host, ``wrapper`` when only a launcher's tag or a journal did), one
    entry per distinct origin, in order of appearance."""
    seen: dict[tuple, dict[str, Any]] = {}
    for line in lines:
        if not _NCCL_ERROR.search(line.text):
            continue
        host, pid, by = line.host, None, "wrapper"
        if m := _NCCL_FIELD.search(line.text):
            host, pid, by = m.group("host"), int(m.group("pid")), "nccl"
        elif m := _NCCL_TESTS_HOST.match(line.text.strip()):
            host, by = m.group("host"), "nccl"
        if host is None and line.rank is None:
            continue
        key = (host, line.rank, pid)
        seen.setdefault(key, {"host": host, "rank": line.rank, "pid": pid, "by": by})
    return list(seen.values())


def origins_text(origins: list[dict[str, Any]]) -> str:
    """``gpu05 (rank 3, pid 420), gpu06`` for the readable output."""
    parts = []
    for o in origins:
        extra = ", ".join(x for x in (f"rank {o['rank']}" if o["rank"] is not None else "",
                                      f"pid {o['pid']}" if o["pid"] is not None else "") if x)
        if o["host"] is None:  # only a rank tag said where: the rank is the answer
            parts.append(extra)
            continue
        parts.append(f"{o['host']} ({extra})" if extra else o["host"])
    return ", ".join(parts)


def restore_times(events: list[dict[str, Any]], lines: Iterable[Line], *fields: str) -> None:
    """Give an event without a time stamp the time its wrapper printed for its line (in place).

    The unwrapping took a ``dmesg --time-format iso|reltime|delta`` or a ``--no-hostname`` journal stamp
    off the line so that the parser reads it; the stamp is not lost.
    """
    times = times_by_line(lines)
    if not times:
        return
    # A multi-line kernel record is one event whose line starts with the record's first line.
    heads: dict[str, str] = {}
    for known, printed in times.items():
        heads.setdefault(known[:_HEAD], printed)
    for event in events:
        if event.get("timestamp") is not None:
            continue
        for field in fields:
            value = event.get(field)
            if not isinstance(value, str):
                continue
            text = value.strip()
            if stamp := times.get(text) or (heads.get(text[:_HEAD]) if len(text) >= _HEAD else None):
                event["timestamp"] = stamp
                break


__all__ = ["nccl_origins", "origins_text", "restore_times", "wrapper_json"]
