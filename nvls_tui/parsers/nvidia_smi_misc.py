"""Parsers for the other NVIDIA views operators paste: the plain ``nvidia-smi`` table,
``nvidia-smi nvlink -s``, ``nvidia-smi topo -m`` and an NVML fabric-info dump. Pure, never raise.

None of these is a fabric-health signal on its own (NVLink links all Active does not mean NVLS
works: domain.md), but ``analyze`` should still recognise and summarise them.
"""

from __future__ import annotations

import ast
import re

from nvls_tui.parsers.base import Parsed, number

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SMI_HEADER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")
_SMI_GPU = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|\s+([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_SMI_PROC = re.compile(r"^\|\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.+?)\s+(\d+MiB|N/A)\s+\|")
# The UUID as printed, or as a paste redacted it ("(UUID: ...)", "GPU-xxx").
_LINK_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]*)\)")
# NVML's words for a GPU none of whose links is up (nvidia-smi prints them instead of the link lines).
_ALL_INACTIVE = re.compile(r"Unable to retrieve NVLink information as all links are inactive", re.I)
_LINK = re.compile(r"^\s+Link (\d+): (.+?)\s*$")
_NVML_LINE = re.compile(r"^(\d+)\s+(v\d)\s+\S+\s+(\{.*\})\s*$")

FABRIC_STATE_WORDS = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}


def parse_smi_table(text: str) -> Parsed[dict]:
    """The plain ``nvidia-smi`` table: versions, one entry per GPU, and the process list."""
    data: dict = {"smi_version": None, "driver": None, "cuda": None, "gpus": [], "processes": []}
    in_processes = False
    for line in text.splitlines():
        if m := _SMI_HEADER.search(line):
            data["smi_version"], data["driver"], data["cuda"] = m.groups()
        elif "Processes:" in line:
            in_processes = True
        elif in_processes and (m := _SMI_PROC.match(line)):
            gpu, gi, ci, pid, ptype, name, mem = m.groups()
            data["processes"].append({"gpu": int(gpu), "pid": int(pid), "type": ptype, "name": name,
                                      "memory": mem})
        elif not in_processes and (m := _SMI_GPU.match(line)):
            index, name, persistence, bus = m.groups()
            data["gpus"].append({"index": int(index), "name": name.strip(), "persistence_mode": persistence,
                                 "bus_id": bus})
    warnings = () if data["driver"] else ("no NVIDIA-SMI header line found",)
    return Parsed(data, warnings)


def parse_nvlink_status(text: str) -> Parsed[dict]:
    """``nvidia-smi nvlink -s``: per GPU, each link's speed (``inactive`` kept as the word); ``all_inactive`` where
    NVML said no link of the GPU is up."""
    gpus: list[dict] = []
    for line in text.splitlines():
        if m := _LINK_GPU.match(line):
            gpus.append({"index": int(m[1]), "name": m[2], "uuid": m[3], "links": [], "all_inactive": False})
        elif gpus and _ALL_INACTIVE.search(line):
            gpus[-1]["all_inactive"] = True
        elif (m := _LINK.match(line)) and gpus:
            speed = m[2].removesuffix(" GB/s")
            gpus[-1]["links"].append({"link": int(m[1]), "gbps": number(speed), "text": m[2]})
    for gpu in gpus:
        gpu["active_links"] = sum(1 for link in gpu["links"] if link["gbps"])
        # A link nvidia-smi prints without a speed (``<inactive>``, or 0 GB/s) is not up.
        gpu["inactive_links"] = [link["link"] for link in gpu["links"] if not link["gbps"]]
    return Parsed({"gpus": gpus}, () if gpus else ("no GPU lines found",))


def parse_topo_matrix(text: str) -> Parsed[dict]:
    """``nvidia-smi topo -m``: the GPU-to-GPU connection matrix (ANSI escapes removed)."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header: list[str] = []
    matrix: dict[str, dict[str, str]] = {}
    for line in lines:
        # Tab-separated as printed; a paste that turned the tabs into spaces keeps two or more between cells.
        cells = [c.strip() for c in (line.split("\t") if "\t" in line else re.split(r" {2,}", line))]
        # The header row starts with an empty corner cell; data rows start with their GPU name.
        if not header and len(cells) > 1 and cells[0] == "" and cells[1] == "GPU0":
            header = [c for c in cells if re.fullmatch(r"GPU\d+", c)]
            continue
        if header and cells and re.fullmatch(r"GPU\d+", cells[0]):
            matrix[cells[0]] = dict(zip(header, cells[1:1 + len(header)], strict=False))
    return Parsed({"gpus": header, "matrix": matrix}, () if matrix else ("no topology matrix found",))


def parse_nvml_fabric_dump(text: str) -> Parsed[dict]:
    """Lines ``<gpu> <v1|v2|v3> <how> {...}`` as printed by a pynvml fabric-info probe.

    The state numbers become nvidia-smi's words; v1 results are flagged, because the deprecated v1
    struct misreads the driver's answer (fixtures README).
    """
    entries = []
    warnings = []
    for line in text.splitlines():
        m = _NVML_LINE.match(line)
        if not m:
            continue
        try:
            info = ast.literal_eval(m[3])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            warnings.append(f"unreadable NVML line: {line[:80]}")
            continue
        if not isinstance(info, dict):
            continue
        state = info.get("state")
        entries.append({
            "gpu": int(m[1]),
            "api": m[2],
            "state": FABRIC_STATE_WORDS.get(state, "N/A") if isinstance(state, int) else "N/A",
            "status": info.get("status"),
            "clique_id": info.get("cliqueId"),
            "cluster_uuid": info.get("clusterUuid"),
            "trustworthy": m[2] != "v1",
        })
    return Parsed({"entries": entries}, tuple(warnings) if entries else ("no NVML fabric lines found",))


def parse_help_query(text: str) -> Parsed[dict]:
    """``nvidia-smi --help-query-gpu``: the field names this driver accepts (fabric ones flagged)."""
    fields = re.findall(r'^"([\w.]+)"', text, re.M)
    fabric = [f for f in fields if f.startswith("fabric.")]
    return Parsed({"fields": fields, "fabric_fields": fabric}, () if fields else ("no field names found",))


# ``nvidia-smi [-i N] -mig 0|1``: the change made ("Enabled MIG Mode for GPU 00000000:36:00.0"), or left
# pending until a reset or reboot ("Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:In
# use by another client", then a line saying why and "All done."). Searched, not anchored: the lines often
# arrive inside a journal's or a tool's prefix.
_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d"
_MIG_PENDING = re.compile(rf"Warning: MIG mode is in pending (enable|disable) state for GPU ({_BUS}):\s*(.*?)\s*$")
_MIG_SET = re.compile(rf"\b(Enabled|Disabled) MIG Mode for GPU ({_BUS})\b")


def parse_mig_messages(text: str) -> Parsed[dict]:
    """nvidia-smi's MIG mode messages: ``pending[]`` (``bus_id``, ``mode`` Enabled/Disabled after the reset,
    ``reason`` as printed) and ``changed[]`` (``bus_id``, ``mode``), each GPU once, in order."""
    pending: list[dict] = []
    changed: list[dict] = []
    for line in text.splitlines():
        if m := _MIG_PENDING.search(line):
            bus = m[2].upper()
            if all(p["bus_id"] != bus for p in pending):
                pending.append({"bus_id": bus, "mode": "Enabled" if m[1] == "enable" else "Disabled",
                                "reason": m[3] or None})
        elif m := _MIG_SET.search(line):
            bus = m[2].upper()
            if all(c["bus_id"] != bus for c in changed):
                changed.append({"bus_id": bus, "mode": m[1]})
    found = pending or changed
    return Parsed({"pending": pending, "changed": changed}, () if found else ("no MIG mode message found",))
