"""The crash-safe record a repair leaves on the node, and the per-node lock.

Before quiesce changes anything, the node gets ``/var/lib/nvls-tui/repair.json`` (written to a
temporary file and renamed, so a reader never sees half a record) holding the prior state of every
unit and of persistence mode. If nvls-tui dies, the laptop sleeps or the link drops, the next poll
finds the record (``INTERRUPTED_REPAIR``) and ``repair --restore`` puts everything back from it.
The lock is a directory with an owner file and a heartbeat (``runbook/lock.py``): ``mkdir`` is atomic,
so of two repairs of one node only one can take it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.textsafe import clean_deep

RECORD_VERSION = 1


def _mapping(value: Any) -> dict[Any, Any]:
    """``value`` when it is a JSON object, else an empty one (a hand-edited record is data, not trusted)."""
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class RepairRecord:
    """What a repair must remember on the node to undo itself.

    Attributes:
        run_id: the run's id (also in the audit log's name).
        host: the node as the operator named it.
        operator: who ran the repair.
        started: when it began, on the operator's clock (ISO 8601).
        t0: when it began on the node's clock (for ``journalctl -k --since``).
        units: ``{unit: ActiveState}`` before anything was stopped.
        persistence: ``{gpu index: "Enabled"|"Disabled"}`` before ``nvidia-smi -pm 0``.
        tool_pid: the nvls-tui process that wrote it (on the operator's machine).
        audit_log: where that run's audit log is (on the operator's machine).
        manual: units among ``units`` that were stopped by hand in the console (a restore starts them
            too; other units it starts only when a repair stops them).
        kube: on Kubernetes, the node's name there, whether it was cordoned before and the operand labels
            the repair pauses with their values before (``runbook/kube_repair.KubeHold.to_record``); None
            without a cluster.
    """

    run_id: str
    host: str
    operator: str
    started: str
    t0: str | None = None
    units: dict[str, str] = field(default_factory=dict)
    persistence: dict[int, str] = field(default_factory=dict)
    tool_pid: int | None = None
    audit_log: str | None = None
    manual: tuple[str, ...] = ()
    kube: dict[str, Any] | None = None

    def to_json(self) -> str:
        """The record as one JSON document (what ``tee`` writes)."""
        return json.dumps({
            "version": RECORD_VERSION,
            "tool": "nvls-tui",
            "run_id": self.run_id,
            "host": self.host,
            "operator": self.operator,
            "started": self.started,
            "t0": self.t0,
            "units": dict(self.units),
            "persistence": {str(k): v for k, v in self.persistence.items()},
            "tool_pid": self.tool_pid,
            "audit_log": self.audit_log,
            "manual": list(self.manual),
            **({"kube": self.kube} if self.kube is not None else {}),
        }, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RepairRecord:
        """Read a record back; unknown or missing fields are tolerated (an older nvls-tui wrote it)."""
        units = _mapping(data.get("units"))
        persistence: dict[int, str] = {}
        raw = _mapping(data.get("persistence"))
        for key, value in raw.items():
            if str(key).isdecimal() and isinstance(value, str):
                persistence[int(key)] = value
        return cls(
            run_id=str(data.get("run_id", "")),
            host=str(data.get("host", "")),
            operator=str(data.get("operator", "")),
            started=str(data.get("started", "")),
            t0=data.get("t0") if isinstance(data.get("t0"), str) else None,
            units={str(k): str(v) for k, v in units.items()},
            persistence=persistence,
            tool_pid=data.get("tool_pid") if isinstance(data.get("tool_pid"), int) else None,
            audit_log=data.get("audit_log") if isinstance(data.get("audit_log"), str) else None,
            manual=tuple(str(u) for u in data.get("manual") or () if isinstance(u, str))
            if isinstance(data.get("manual"), list) else (),
            kube=data.get("kube") if isinstance(data.get("kube"), dict) else None,
        )

    @classmethod
    def from_json(cls, text: str) -> RepairRecord | None:
        """Parse ``cat repair.json`` output; None when it is empty or not a record."""
        try:
            data = clean_deep(json.loads(text))  # decoded \\u001b escapes are node text too
        except (ValueError, TypeError):
            return None
        return cls.from_dict(data) if isinstance(data, dict) else None


__all__ = ["RECORD_VERSION", "RepairRecord"]
