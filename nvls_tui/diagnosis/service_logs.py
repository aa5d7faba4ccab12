"""Findings from the logs of NVIDIA's services around the fabric (issue 35, items 2 to 4). Pure.

- DCGM's own logs: the lines DCGM itself marks as a problem (ERROR and worse, a WARN about the fabric, a
  ``DCGM_FR_*`` failure reason) are ``UNREAD_EVIDENCE``: nvls-tui has no rule for DCGM's words, and they may be
  the fabric's fault or DCGM's own (a module it could not load). INFO and DEBUG lines stay quiet.
- ``dcgmi health``: links DCGM says are down are ``NVLINK_DOWN``; any other system DCGM does not call healthy is
  ``UNREAD_EVIDENCE`` quoting DCGM's words.
- The GPU Operator's containers: a validator still waiting at the end of its log is ``OPERATOR_NOT_READY``; the
  containers' words of a failure are ``UNREAD_EVIDENCE``.
- NVIDIA's Kubernetes GPU plugins: an Xid is read through NVIDIA's Xid catalogue, as a kernel line's is (``XID``,
  severity and move from its bucket); a device marked unhealthy that no Xid line explains, and klog's E and F
  lines, are ``UNREAD_EVIDENCE``.
- nvidia-persistenced: its and systemd's words of a failure are ``UNREAD_EVIDENCE``; a start, a registration, a
  stop by signal 15 stay quiet.
"""

from __future__ import annotations

from nvls_tui import words
from nvls_tui.diagnosis.links import DOWN_MOVE, link_ranges
from nvls_tui.diagnosis.unread import unread_finding
from nvls_tui.diagnosis.xids import read_xid
from nvls_tui.model import Finding, KernelEvent, Severity
from nvls_tui.parsers.dcgmi_health import HEALTHY
from nvls_tui.parsers.unread import nvidia_error_line, quote


def unread_lines(lines: list[str], where: str) -> list[Finding]:
    """``UNREAD_EVIDENCE`` for ``lines`` (none for none)."""
    finding = unread_finding(lines, where)
    return [finding] if finding is not None else []


def dcgm_log_findings(problems: list[str], others: list[str]) -> list[Finding]:
    """``UNREAD_EVIDENCE`` for DCGM's problem lines and for NVIDIA's error text among the lines that are not
    DCGM's (``others``: a kernel line pasted in)."""
    return unread_lines(problems + [line for line in others if nvidia_error_line(line)], "DCGM's log")


def dcgmi_health_findings(data: dict) -> list[Finding]:
    """``NVLINK_DOWN`` for the links DCGM's health check says are down; ``UNREAD_EVIDENCE`` for every other system
    not healthy (or an overall verdict that is not, with no system named)."""
    findings = []
    by_gpu: dict[int, list[int]] = {}
    for item in data["links_down"]:
        by_gpu.setdefault(item["gpu"], []).append(item["link"])
    if by_gpu:
        said = "; ".join(f"GPU {gpu}: {'link' if len(links) == 1 else 'links'} {link_ranges(links)} down"
                         for gpu, links in by_gpu.items())
        findings.append(Finding("NVLINK_DOWN", Severity.ERROR, f"DCGM's health check reports NVLinks down: {said}: "
                                f"{DOWN_MOVE}", next_move=DOWN_MOVE))
    unread = []
    for system in data["systems"]:
        if system["health"] in HEALTHY or (by_gpu and system["system"].upper() == "NVLINK"):
            continue
        where = f"GPU {system['gpu']} " if system["gpu"] is not None else ""
        unread.append(f"DCGM health: {where}{system['system']} system {system['health']}: "
                      + " ".join(system["messages"]))
    if not unread and not findings and data["overall"] not in (None, *HEALTHY):
        unread.append(f"DCGM health: overall {data['overall']}")
    return findings + unread_lines(unread, "DCGM's health check")


def operator_findings(data: dict) -> list[Finding]:
    """``OPERATOR_NOT_READY`` where a validator still waits at the end of the log; ``UNREAD_EVIDENCE`` for the
    containers' words of a failure."""
    findings = []
    if data["waiting"]:
        findings.append(Finding(
            "OPERATOR_NOT_READY", Severity.WARNING,
            f"the GPU Operator's validator is still waiting for {quote(data['waiting'])} at the end of its log "
            f"({words.count(data['waited'], 'line')}): what it validates never came up, so the GPU pods on this node "
            "do not start; read that component's own pod (the driver's or the container toolkit's)"))
    return findings + unread_lines(data["problems"], "the GPU Operator's container log")


def gpu_plugin_findings(data: dict, errors: list[str]) -> list[Finding]:
    """``XID`` for each Xid the plugin reports (through NVIDIA's Xid catalogue, one finding per Xid naming its
    devices); ``UNREAD_EVIDENCE`` for devices marked unhealthy that no Xid line names and for ``errors`` (the
    plugin's error lines)."""
    by_xid: dict[int, list[str]] = {}
    lines: dict[int, str] = {}
    for item in data["xids"]:
        by_xid.setdefault(item["xid"], [])
        if item["device"] not in by_xid[item["xid"]]:
            by_xid[item["xid"]].append(item["device"])
        lines.setdefault(item["xid"], item["line"])
    findings = []
    for xid, devices in by_xid.items():
        reading = read_xid(KernelEvent("XID", lines[xid], xid=xid))
        findings.append(Finding(
            "XID", reading.severity,
            f"Xid {xid} on {', '.join(devices)} (the device plugin's report; it marks the device unhealthy)"
            + (f" — {reading.tail}" if reading.tail else ""), action=reading.action, next_move=reading.move))
    named = {device for devices in by_xid.values() for device in devices}
    unexplained = [f"device marked unhealthy: {device}" for device in data["unhealthy"] if device not in named]
    return findings + unread_lines(unexplained + errors, "the GPU plugin's log")


def persistenced_findings(problems: list[str]) -> list[Finding]:
    """``UNREAD_EVIDENCE`` for nvidia-persistenced's (and systemd's, about its unit) words of a failure."""
    return unread_lines(problems, "nvidia-persistenced's log")


__all__ = ["dcgm_log_findings", "dcgmi_health_findings", "gpu_plugin_findings", "operator_findings",
           "persistenced_findings", "unread_lines"]
