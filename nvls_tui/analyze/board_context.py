"""What one part of a paste says about the board, read into another part's finding (issue 35, item 1). Pure.

A Fabric Manager that failed to start is an outage on an NVSwitch board and nothing at all on a board without
NVSwitches (FM finds nothing to manage and exits). FM's own lines cannot tell the two apart, so alone they fail
closed (FM_NOT_RUNNING, an error). A transcript often holds more: ``nvidia-smi``'s table or ``-q`` naming the GPUs.
Where every GPU it names is a GeForce, Quadro or RTX workstation GPU (a GPU no NVSwitch board carries), FM's
failure is a warning: the unit is enabled on a node it has nothing to manage on. Any other GPU, or none named,
leaves the error standing.
"""

from __future__ import annotations

import re
from typing import Any

# GPU names NVIDIA ships only on PCIe cards (consumer and workstation lines): never on an NVSwitch baseboard.
_NO_NVSWITCH = re.compile(r"\b(?:GeForce|Quadro|TITAN|RTX)\b", re.IGNORECASE)
_LISTS_GPUS = ("nvidia-smi", "nvidia-smi-q", "nvidia-smi-q-xml")
_FM_CODE = "FM_NOT_RUNNING"
_QUOTED = re.compile(r"“[^”]{0,240}”")


def _gpu_names(parts: list[dict[str, Any]]) -> list[str]:
    return [str(g.get("name") or "") for p in parts if p["kind"] in _LISTS_GPUS
            for g in (p.get("data") or {}).get("gpus") or ()]


def soften_fm_on_boards_without_nvswitch(parts: list[dict[str, Any]]) -> None:
    """Make FM_NOT_RUNNING a warning (in place) where the paste's nvidia-smi names only GPUs no NVSwitch board
    carries (module doc)."""
    names = _gpu_names(parts)
    if not names or not all(_NO_NVSWITCH.search(name) for name in names):
        return
    listed = ", ".join(dict.fromkeys(names))
    for part in parts:
        part["findings"] = [dict(f, severity="warning", message=_softened(f["message"], listed))
                            if f["code"] == _FM_CODE and f["severity"] == "error" else f for f in part["findings"]]


def _softened(message: str, listed: str) -> str:
    said = "; ".join(_QUOTED.findall(message))
    return (f"Fabric Manager did not start{f' ({said})' if said else ''}, but the GPUs nvidia-smi lists here "
            f"({listed}) sit on no NVSwitch board: Fabric Manager has nothing to manage on this node, so its failure "
            "is no NVLS outage; disable its unit (or, if this node should have NVSwitches, read Fabric Manager's log)")


__all__ = ["soften_fm_on_boards_without_nvswitch"]
