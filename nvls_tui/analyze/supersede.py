"""Which of a paste's parts stands where a later one supersedes it (issue 35, item 1). Pure.

A transcript says what happened in order: a reset refused while a process held the GPU, the process
killed, the reset run again and done. Read part by part, the refusal is still said, but it no longer
stands: its finding becomes ``info`` saying so ("superseded by the reset at line N"), and the exit status
follows what stands. Only a later output about the same thing supersedes an earlier one:

- a refused ``nvidia-smi -r``: by a later reset that reset every GPU it refused (where the refusal named
  none, as many GPUs as it counted);
- a pending MIG mode change (``MIG_PENDING``): by a later reset of its GPU, which commits it;
- a ``systemctl status``: by a later status of the same unit.

Anything else stands: a later kernel line does not undo an earlier Xid, and a reset of another GPU does not
undo a refusal.
"""

from __future__ import annotations

from typing import Any

_CODES = {"nvidia-smi-reset": ("RESET_REFUSED",), "nvidia-smi-mig": ("MIG_PENDING",),
          "systemctl-status": ("FM_NOT_RUNNING",)}


def _bus(bus_id: str) -> str:
    """``00000000:1B:00.0`` and ``0000:1b:00.0`` alike."""
    return bus_id.upper()[-12:]


def _resets(part: dict[str, Any]) -> set[str]:
    if part["kind"] != "nvidia-smi-reset":
        return set()
    return {_bus(b) for b in part["data"].get("reset") or ()}


def _superseded_by(earlier: dict[str, Any], later: dict[str, Any]) -> str | None:
    """How ``later`` supersedes ``earlier`` ("the reset at line N"), or None where it does not."""
    data = earlier["data"]
    at = later["lines"][0]
    if earlier["kind"] == "nvidia-smi-reset" and data.get("refused"):
        done = _resets(later)
        refused = {_bus(f["bus_id"]) for f in data.get("failed") or ()}
        if done and (refused <= done if refused else len(done) >= data["refused"]):
            return f"superseded by the reset at line {at}"
    if earlier["kind"] == "nvidia-smi-mig" and data.get("pending"):
        done = _resets(later)
        if done and {_bus(p["bus_id"]) for p in data["pending"]} <= done:
            return f"committed by the reset at line {at}, which this change waited for"
    if earlier["kind"] == later["kind"] == "systemctl-status" and data.get("unit") and \
            data.get("unit") == later["data"].get("unit"):
        return f"superseded by the status at line {at}"
    return None


def supersede(parts: list[dict[str, Any]]) -> None:
    """Mark the parts a later part supersedes (in place): ``superseded_by`` (the later part's first line) and
    their findings of what no longer stands made ``info``, the message saying by what."""
    for i, earlier in enumerate(parts):
        codes = _CODES.get(earlier["kind"])
        if not codes or earlier.get("error"):
            continue
        for later in parts[i + 1:]:
            if later.get("error") or (said := _superseded_by(earlier, later)) is None:
                continue
            earlier["superseded_by"] = later["lines"][0]
            earlier["findings"] = [dict(f, severity="info", message=f"{f['message']} — {said}")
                                   if f["code"] in codes else f for f in earlier["findings"]]
            break


__all__ = ["supersede"]
