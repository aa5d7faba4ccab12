"""``nvidia-smi -q -x`` (XML) -> :class:`~nvls_tui.parsers.nvidia_smi_q.SmiReport`.

The same report as the text parser gives for the same machine. Safety and damage:

- nvidia-smi writes ``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">``. That plain external
  DOCTYPE is removed before parsing (expat never fetches it anyway). A DOCTYPE with an internal subset
  or any ``<!ENTITY`` declaration is refused outright, so entity-expansion bombs never reach the parser.
- Truncated or malformed XML is read incrementally with :class:`xml.etree.ElementTree.XMLPullParser`:
  the elements built before the error are kept, and the error becomes a warning.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.nvidia_smi_q import (
    BUS_ID,
    UNREAD,
    GpuBuilder,
    SmiProcess,
    SmiReport,
    memory_mib,
    na_to_none,
    small_int,
)

_PLAIN_DOCTYPE = re.compile(r"<!DOCTYPE\s+[\w.:-]+(?:\s+(?:SYSTEM|PUBLIC)(?:\s+(?:\"[^\"<>\[]*\"|'[^'<>\[]*'))+)?\s*>")
_DANGEROUS = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_BUS_ID = re.compile(rf"^{BUS_ID}$")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(elem: ET.Element | None, tag: str) -> str | None:
    """Stripped text of ``elem``'s child ``tag``, or None when the child is missing."""
    if elem is None:
        return None
    child = elem.find(tag)
    if child is None:
        return None
    return (child.text or "").strip()


def _read_tree(text: str, warnings: list[str], ended: set[int] | None = None) -> ET.Element | None:
    """The root element, complete or as far as the input could be read; ``ended`` gets the ids of the
    elements whose end tag was read (one without it was cut)."""
    # Lone surrogates cannot be encoded for expat and would lose the whole document: replace them.
    cleaned = _SURROGATE.sub("\ufffd", _PLAIN_DOCTYPE.sub("", text, count=1))
    if _DANGEROUS.search(cleaned):
        warnings.append("Refused XML with a DOCTYPE internal subset or ENTITY declarations.")
        return None
    parser: ET.XMLPullParser[Any] = ET.XMLPullParser(events=("start", "end"))
    root: ET.Element | None = None
    error: Exception | None = None

    def drain() -> None:
        nonlocal root, error
        try:
            events: Any = parser.read_events()  # (event, element) pairs
            for event, elem in events:
                if root is None:
                    root = elem
                if event == "end" and ended is not None:
                    ended.add(id(elem))
        except ET.ParseError as exc:
            error = error or exc

    try:
        parser.feed(cleaned)
    except (ET.ParseError, ValueError, UnicodeError) as exc:
        error = exc
    drain()
    try:
        parser.close()
    except (ET.ParseError, ValueError, UnicodeError) as exc:
        error = error or exc
    drain()
    if error is not None:
        warnings.append(f"The XML is damaged or cut short ({str(error)[:120]}); kept what was read before it.")
    return root


def _gpu(elem: ET.Element, order: int, warnings: list[str]) -> GpuBuilder:
    """A GpuBuilder from one ``<gpu>`` element (possibly partial)."""
    bus_id = (elem.get("id") or "").strip()
    if not _BUS_ID.match(bus_id):
        bus_id = _text(elem.find("pci"), "pci_bus_id") or bus_id
    b = GpuBuilder(bus_id, order)
    b.name = _text(elem, "product_name")
    b.uuid = _text(elem, "uuid")
    b.minor = _text(elem, "minor_number")
    b.persistence = _text(elem, "persistence_mode")
    b.recovery = _text(elem, "gpu_recovery_action")
    fabric = elem.find("fabric")
    if fabric is not None:
        b.has_fabric = True
        for tag, key in (("state", "state"), ("status", "status"), ("cliqueId", "cliqueid"),
                         ("clusterUuid", "clusteruuid")):
            value = _text(fabric, tag)
            if value is not None:
                b.set_fabric(key, value)
        health = fabric.find("health")
        if health is not None:
            b.health = {}
            for child in health:
                b.set_health(child.tag.lower(), (child.text or "").strip())
    return b


def _processes(elem: ET.Element, bus_id: str, warnings: list[str]) -> list[SmiProcess]:
    out = []
    for info in elem.iterfind("processes/process_info"):
        pid = small_int(_text(info, "pid"))
        if pid is None:
            warnings.append(f"GPU {bus_id}: a process without a readable pid was skipped.")
            continue
        out.append(
            SmiProcess(
                gpu_bus_id=bus_id,
                pid=pid,
                name=_text(info, "process_name") or "",
                type=na_to_none(_text(info, "type")),
                used_memory=memory_mib(_text(info, "used_memory")),
            )
        )
    return out


def _cut(elem: ET.Element, b: GpuBuilder, ended: set[int], warnings: list[str]) -> None:
    """A ``<gpu>`` whose end tag never came: say so, and leave fabric words it did not reach unread."""
    if id(elem) in ended:
        return
    fabric = elem.find("fabric")
    for tag in ("state", "status"):
        if fabric is None or (id(fabric) not in ended and _text(fabric, tag) is None):
            b.fabric[tag] = UNREAD
    index = small_int(b.minor)
    warnings.append(f"the text ends inside GPU {b.order if index is None else index}'s section ({b.bus_id}): "
                    "what it did not reach is unknown, not N/A")


def _report(root: ET.Element | None, warnings: list[str], ended: set[int]) -> SmiReport:
    if root is None:
        return SmiReport()
    if root.tag != "nvidia_smi_log":
        warnings.append(f"Expected <nvidia_smi_log>, found <{root.tag[:40]}>.")
    gpus, processes = [], []
    for order, elem in enumerate(root.iterfind("gpu")):
        builder = _gpu(elem, order, warnings)
        _cut(elem, builder, ended, warnings)
        gpus.append(builder.build(warnings))
        processes.extend(_processes(elem, builder.bus_id, warnings))
    attached = small_int(_text(root, "attached_gpus"))
    if attached is not None and attached != len(gpus):
        warnings.append(f"nvidia-smi says {attached} GPUs are attached but {len(gpus)} were read.")
    return SmiReport(
        driver=na_to_none(_text(root, "driver_version")),
        cuda=na_to_none(_text(root, "cuda_version")),
        gpus=tuple(gpus),
        processes=tuple(processes),
    )


def parse_nvidia_smi_xml(text: str) -> Parsed[SmiReport]:
    """Parse ``nvidia-smi -q -x``. Never raises.

    Args:
        text: the XML document as text.

    Returns:
        The same :class:`SmiReport` the text parser gives for the same machine; for damaged or
        truncated XML, what could be read before the damage, plus a warning.
    """
    if not isinstance(text, str):
        return Parsed(SmiReport(), (f"Expected text, got {type(text).__name__}.",))
    warnings: list[str] = []
    try:
        ended: set[int] = set()
        report = _report(_read_tree(text, warnings, ended), warnings, ended)
    except Exception as exc:  # the never-raise promise
        return Parsed(SmiReport(), tuple(warnings) + (f"Could not read nvidia-smi XML: {exc!r}"[:200],))
    if not report.gpus and report.driver is None and not warnings:
        warnings.append("No nvidia-smi XML was recognised.")
    return Parsed(report, tuple(warnings))


__all__ = ["parse_nvidia_smi_xml"]
