"""The NVLink views operators paste besides ``nvidia-smi nvlink -s``: ``nvidia-smi nvlink -e`` (per-link error
counters), ``dcgmi nvlink --link-status`` (DCGM's U/D/X table for GPUs and NVSwitches) and ``dcgmi diag``'s result
table. Pure, never raise.

The shapes are the tools' own: nvidia-smi prints ``GPU N: NAME (UUID: ...)`` (the UUID is left out by some
releases), then one ``Link L: COUNTER: VALUE`` line per counter, and some drivers fold the quiet links into one
``Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0`` line; dcgmi prints ``gpuId N:`` / ``physicalId N:`` and one row
of letters per device (``U`` up, ``D`` down, ``X`` disabled, ``_`` not supported); ``dcgmi diag`` a boxed table
whose cells wrap at a fixed width, so its words are joined before they are read.
"""

from __future__ import annotations

import re

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.dcgmi_box import box_cells

_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: (GPU-[0-9a-fA-F-]+)\))?\s*$")
_COUNTER = re.compile(r"^\s*Link (\d+): ([A-Za-z][A-Za-z /]*?Errors?): (\d+)\s*$")
# A folded line for links with nothing to report: "Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0", "Links 1-5: No errors".
_FOLDED = re.compile(r"^\s*Links ([\d,\- ]+): (?:[A-Za-z/ ]*Errors: 0|No errors)\s*$")


def _link_numbers(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            first, _, last = part.partition("-")
            if first.strip().isdecimal() and last.strip().isdecimal():
                out.extend(range(int(first), int(last) + 1))
        elif part.isdecimal():
            out.append(int(part))
    return out


def parse_nvlink_errors(text: str) -> Parsed[dict]:
    """``nvidia-smi nvlink -e``: ``gpus[]`` with ``index``, ``name``, ``uuid`` and ``links[]`` (``link``,
    ``counters`` {name as printed: value}); links a folded line reports quiet have empty counters and
    ``quiet`` True."""
    gpus: list[dict] = []
    for line in text.splitlines():
        if m := _GPU.match(line):
            gpus.append({"index": int(m[1]), "name": m[2].strip(), "uuid": m[3], "links": []})
            continue
        if not gpus:
            continue
        links = gpus[-1]["links"]
        if m := _COUNTER.match(line):
            number = int(m[1])
            link = next((x for x in links if x["link"] == number), None)
            if link is None:
                link = {"link": number, "counters": {}, "quiet": False}
                links.append(link)
            link["counters"][m[2].strip()] = int(m[3])
        elif m := _FOLDED.match(line):
            for number in _link_numbers(m[1]):
                if all(x["link"] != number for x in links):
                    links.append({"link": number, "counters": {}, "quiet": True})
    for gpu in gpus:
        gpu["links"].sort(key=lambda x: x["link"])
    return Parsed({"gpus": gpus}, () if gpus else ("no GPU lines found",))


# dcgmi's tree output (its DcgmiOutputTree): "| GPU N" in the header, "| Link N" sections, "| -> NAME | VALUE |" rows.
_TREE_GPU = re.compile(r"^\|\s*GPU (\d+)\s*\|\s*$")
_TREE_LINK = re.compile(r"^\|\s*Link (\d+)\s*\|")
_TREE_COUNTER = re.compile(r"^\|\s*->\s*([A-Za-z][A-Za-z ]*?)\s*\|\s*(\d+)\s*\|\s*$")


def parse_dcgmi_nvlink_errors(text: str) -> Parsed[dict]:
    """``dcgmi nvlink -e -g N``: ``gpus[]`` shaped as :func:`parse_nvlink_errors`' (``index``, ``name`` None,
    ``uuid`` None, ``links[]`` with ``counters`` {DCGM's name: value}); DCGM's "Unable to retrieve" lines are
    warnings (those counters are unknown)."""
    gpus: list[dict] = []
    warnings: list[str] = []
    link: dict | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if m := _TREE_GPU.match(stripped):
            gpus.append({"index": int(m[1]), "name": None, "uuid": None, "links": []})
            link = None
        elif gpus and (m := _TREE_LINK.match(stripped)):
            link = {"link": int(m[1]), "counters": {}, "quiet": False}
            gpus[-1]["links"].append(link)
        elif link is not None and (m := _TREE_COUNTER.match(stripped)):
            link["counters"][m[1]] = int(m[2])
        elif stripped.startswith("Warning: Unable to retrieve nvlink"):
            warnings.append(stripped[:200])
    return Parsed({"gpus": gpus}, tuple(warnings) if gpus else (*warnings, "no GPU header found"))


_DCGM_DEVICE = re.compile(r"^\s+(gpuId|physicalId) (\d+):\s*$")
_DCGM_ROW = re.compile(r"^\s+([UDX_](?: [UDX_])*)\s*$")


def parse_dcgmi_link_status(text: str) -> Parsed[dict]:
    """``dcgmi nvlink --link-status``: ``gpus[]`` and ``nvswitches[]``, each ``{id, down[], disabled[], up}``
    (link numbers by their place in the row; ``_`` links are not supported and not counted)."""
    out: dict[str, list[dict]] = {"gpus": [], "nvswitches": []}
    current: dict | None = None
    for line in text.splitlines():
        if m := _DCGM_DEVICE.match(line):
            current = {"id": int(m[2]), "down": [], "disabled": [], "up": 0}
            out["gpus" if m[1] == "gpuId" else "nvswitches"].append(current)
        elif current is not None and (m := _DCGM_ROW.match(line)):
            for number, letter in enumerate(m[1].split()):
                if letter == "D":
                    current["down"].append(number)
                elif letter == "X":
                    current["disabled"].append(number)
                elif letter == "U":
                    current["up"] += 1
            current = None
    found = out["gpus"] or out["nvswitches"]
    return Parsed(out, () if found else ("no gpuId or physicalId rows found",))


# A row of the diag table: "| Name    | Result    |" (dcgmi_box.box_cells); a continuation row has an empty first
# cell; a row cut by the paste may lack its closing bar.
# DCGM's words for a link that is down, once the cells are joined: "GPU 0's NvLink link 3 is currently down".
# A cell cut at a space loses the space when the rows are joined, so every space is optional.
_DIAG_DOWN = re.compile(r"GPU ?(\d+) ?'s ?NvLink ?link ?(\d+) ?is ?currently ?down", re.I)
_RESULT = re.compile(r"^(Pass|Fail|Warn|Skip)\b", re.I)


def parse_dcgmi_diag(text: str) -> Parsed[dict]:
    """``dcgmi diag -r N``'s table: ``results[]`` (``test``, ``result`` as printed, for rows whose result starts
    Pass/Fail/Warn/Skip), ``warnings_text[]`` (each Warning/Info row's words joined across its wrapped rows) and
    ``links_down[]`` (``{gpu, link}`` from DCGM's "GPU N's NvLink link L is currently down")."""
    results: list[dict] = []
    notes: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        row = box_cells(line)
        if row is None:
            current = None
            continue
        name, value = row
        if name in ("Warning", "Info", "Error"):
            current = [value]
            notes.append("")
        elif not name and current is not None:
            current.append(value)
        else:
            current = None
            if _RESULT.match(value):
                results.append({"test": name, "result": value})
            continue
        # The cells wrap at a fixed width, cutting words: joined without a space, as DCGM wrote them.
        notes[-1] = "".join(current)
    down = []
    for note in notes:
        for gpu, link in _DIAG_DOWN.findall(note):
            if {"gpu": int(gpu), "link": int(link)} not in down:
                down.append({"gpu": int(gpu), "link": int(link)})
    found = results or notes
    return Parsed({"results": results, "warnings_text": notes, "links_down": down},
                  () if found else ("no diagnostic result rows found",))


__all__ = ["parse_dcgmi_diag", "parse_dcgmi_link_status", "parse_dcgmi_nvlink_errors", "parse_nvlink_errors"]
