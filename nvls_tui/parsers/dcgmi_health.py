"""``dcgmi health -c``: DCGM's health report box. Pure.

    | Overall Health            | Failure                                       |
    | -> 0                      | Failure                                       |
    |    -> NVLINK system       | Failure                                       |
    |                           | GPU 0's NvLink link 0 is currently down ...   |

``-> N`` is a GPU (an entity id), ``-> NAME system`` one of its watched systems with its health, and the rows with
an empty first cell under a system are DCGM's words about it, wrapped at the box's width.
"""

from __future__ import annotations

import re

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.dcgmi_box import box_cells

#: Detection (nvls_tui.parsers.detect_services): the box's title or its overall row.
DETECT = re.compile(r"^\|\s*Health Monitor Report\s+\||^\|\s*Overall Health\s+\|", re.M)

_ENTITY = re.compile(r"^->\s*(?:GPU\s*(?:ID:?\s*)?)?(\d+)$", re.I)
_SYSTEM = re.compile(r"^->\s*(.+?)\s+system$", re.I)
# DCGM's words for a link that is down; a row cut at the box's width may split them, so spaces are optional.
_DOWN = re.compile(r"GPU ?(\d+) ?'s ?NvLink ?link ?(\d+) ?is ?currently ?down", re.I)
#: DCGM's health words, best first.
HEALTHY = ("Healthy", "Pass")


def parse_dcgmi_health(text: str) -> Parsed[dict]:
    """``overall`` (DCGM's word, or None), ``systems[]`` (``{gpu, system, health, messages[]}``, ``gpu`` None
    where no ``-> N`` row came before), ``links_down[]`` (``{gpu, link}``)."""
    overall: str | None = None
    gpu: int | None = None
    systems: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        row = box_cells(line)
        if row is None:
            continue
        name, value = row
        if name.lower() == "overall health":
            overall, current = value, None
        elif e := _ENTITY.match(name):
            gpu, current = int(e[1]), None
        elif s := _SYSTEM.match(name):
            current = {"gpu": gpu, "system": s[1], "health": value, "messages": []}
            systems.append(current)
        elif not name and current is not None and value:
            current["messages"].append(value)
    down: list[dict] = []
    for system in systems:
        for g, link in _DOWN.findall(" ".join(system["messages"])):
            if (item := {"gpu": int(g), "link": int(link)}) not in down:
                down.append(item)
    found = overall is not None or systems
    return Parsed({"overall": overall, "systems": systems, "links_down": down},
                  () if found else ("no health rows found",))


__all__ = ["DETECT", "HEALTHY", "parse_dcgmi_health"]
