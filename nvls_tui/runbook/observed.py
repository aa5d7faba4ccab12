"""A ``node-observed`` event's summary read back, typed: the node as a run saw it before and after.

:func:`nvls_tui.runbook.summary.summarize` writes the summary as plain JSON (so the audit record is the
event serialized); :meth:`ObservedNode.read` reads it back once, so the report reads named fields. The
summary was checked field by field with its record (``record_schema.SUMMARY``): every field here is of
its kind or absent, and absent stays None (an older log has no ``kernel_lines``, an unreachable node no
``driver``), never a default a report would present as read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KernelLine:
    """One kernel line the summary keeps: its code (``XID``, ``NV_ERR_…``), Xid number, node-clock time and
    whether it still counts (False once a later passing smoke test made it history)."""

    code: str | None = None
    xid: int | None = None
    timestamp: str | None = None
    current: bool | None = None


@dataclass(frozen=True, slots=True)
class FabricGpu:
    """One GPU's fabric registration (``state``/``status`` as nvidia-smi printed them)."""

    index: int | None = None
    state: str | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class FindingDetail:
    """One finding with its severity and the diagnosis's sentence."""

    code: str | None = None
    severity: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedSmoke:
    """The last smoke result the node's own record held when it was read."""

    passed: bool | None = None
    avg_busbw: float | None = None
    at: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedNode:
    """What one read of a node found (a ``node-observed`` summary), each field None where not logged.

    Attributes:
        units, unit_results, unit_since: each unit's ActiveState, systemd's Result and since when.
        unit_signals: the signal that killed a unit (systemd's ExecMainStatus), where one did.
        holders: how many processes held /dev/nvidia* (the summary keeps who; the report counts them).
        kernel_lines: None in an older log, which kept the codes only (``kernel_events``).
        simulated: the node is simulated (its clock is the simulator's).
    """

    reachable: bool | None = None
    error: str | None = None
    platform: str | None = None
    driver: str | None = None
    fm_version: str | None = None
    verdict: str | None = None
    findings: tuple[str, ...] = ()
    finding_details: tuple[FindingDetail, ...] = ()
    units: dict[str, str] | None = None
    unit_results: dict[str, str] | None = None
    unit_since: dict[str, str] | None = None
    unit_signals: dict[str, int] | None = None
    fabric: tuple[FabricGpu, ...] = ()
    holders: int = 0
    kernel_events: tuple[str, ...] = ()
    kernel_lines: tuple[KernelLine, ...] | None = None
    kernel_lines_left_out: int | None = None
    smoke: ObservedSmoke | None = None
    simulated: bool = False

    @classmethod
    def read(cls, summary: Mapping[str, Any]) -> ObservedNode:
        """The summary as written (its fields already checked with its record)."""
        get = summary.get
        smoke = get("smoke")
        return cls(
            reachable=_flag(get("reachable")), error=_text(get("error")), platform=_text(get("platform")),
            driver=_text(get("driver")), fm_version=_text(get("fm_version")), verdict=_text(get("verdict")),
            findings=tuple(str(c) for c in _items(get("findings"))),
            finding_details=tuple(FindingDetail(_text(d.get("code")), _text(d.get("severity")), _text(d.get("message")))
                                  for d in _items(get("finding_details")) if isinstance(d, Mapping)),
            units=_map(get("units")), unit_results=_map(get("unit_results")), unit_since=_map(get("unit_since")),
            unit_signals=_map(get("unit_signals")),
            fabric=tuple(FabricGpu(_whole(g.get("index")), _text(g.get("state")), _text(g.get("status")))
                         for g in _items(get("fabric")) if isinstance(g, Mapping)),
            holders=len(_items(get("holders"))),
            kernel_events=tuple(str(c) for c in _items(get("kernel_events"))),
            kernel_lines=tuple(KernelLine(_text(k.get("code")), _whole(k.get("xid")), _text(k.get("timestamp")),
                                          _flag(k.get("current")))
                               for k in _items(get("kernel_lines")) if isinstance(k, Mapping))
            if isinstance(get("kernel_lines"), list) else None,
            kernel_lines_left_out=_whole(get("kernel_lines_left_out")),
            smoke=ObservedSmoke(_flag(smoke.get("passed")), _number(smoke.get("avg_busbw")), _text(smoke.get("at")))
            if isinstance(smoke, Mapping) else None,
            simulated=get("simulated") is True,
        )


# What a report reads where nothing was observed: every field absent.
NOTHING_OBSERVED = ObservedNode()


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


__all__ = ["NOTHING_OBSERVED", "FabricGpu", "FindingDetail", "KernelLine", "ObservedNode", "ObservedSmoke"]
