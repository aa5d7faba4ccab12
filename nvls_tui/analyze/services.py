"""``analyze``'s readers for the logs of NVIDIA's services around the fabric (issue 35, item 4). Pure.

Each returns what :data:`nvls_tui.analyze.captured.HANDLERS` does: ``(data, findings, warnings)``. The findings are
:mod:`nvls_tui.diagnosis.service_logs`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nvls_tui.diagnosis import service_logs
from nvls_tui.model import Finding
from nvls_tui.parsers import dcgm_log, gpu_plugin_log
from nvls_tui.parsers.dcgmi_health import HEALTHY, parse_dcgmi_health
from nvls_tui.parsers.fabricmanager_log import journal_lines
from nvls_tui.parsers.gpu_operator_log import parse_gpu_operator_log
from nvls_tui.parsers.persistenced_log import parse_persistenced_log
from nvls_tui.parsers.unread import says_wrong
from nvls_tui.words import count

Result = tuple[dict[str, Any], list[Finding], tuple[str, ...]]


def _dcgm_log(text: str) -> Result:
    parsed = dcgm_log.parse_dcgm_log(text)
    others = [line for line in text.splitlines() if dcgm_log.parse_dcgm_line(line) is None]
    return parsed.value, service_logs.dcgm_log_findings(dcgm_log.problem_lines(text), others), parsed.warnings


def _dcgmi_health(text: str) -> Result:
    parsed = parse_dcgmi_health(text)
    return parsed.value, service_logs.dcgmi_health_findings(parsed.value), parsed.warnings


def _gpu_operator(text: str) -> Result:
    parsed = parse_gpu_operator_log(text)
    return parsed.value, service_logs.operator_findings(parsed.value), parsed.warnings


def _gpu_plugin(text: str) -> Result:
    parsed = gpu_plugin_log.parse_gpu_plugin_log(text)
    findings = service_logs.gpu_plugin_findings(parsed.value, gpu_plugin_log.error_lines(text))
    return parsed.value, findings, parsed.warnings


def _persistenced(text: str) -> Result:
    parsed = parse_persistenced_log(text)
    return parsed.value, service_logs.persistenced_findings(parsed.value["problems"]), parsed.warnings


SERVICE_HANDLERS: dict[str, Callable[[str], Result]] = {
    "dcgm-log": _dcgm_log,
    "dcgmi-health": _dcgmi_health,
    "gpu-operator-log": _gpu_operator,
    "k8s-device-plugin-log": _gpu_plugin,
    "persistenced-log": _persistenced,
}

# NVIDIA's units other than Fabric Manager's (whose state and journal have rules of their own): nvidia-persistenced,
# nvidia-dcgm / nv-hostengine, nvidia-imex, ...
_NVIDIA_UNIT = re.compile(r"^(?:nvidia-(?!fabricmanager)|nv-hostengine|dcgm)")
_ACTIVE_LINE = re.compile(r"^\s*Active:\s*failed\b.*$", re.M)


def unit_status_findings(unit: str, text: str) -> list[Finding]:
    """For ``systemctl status`` of NVIDIA's unit ``unit`` (not FM's): its ``Active: failed`` line and the journal lines
    under it that say something went wrong, as ``UNREAD_EVIDENCE``; nothing for another unit."""
    if not _NVIDIA_UNIT.match(unit):
        return []
    lines = [m.group(0) for m in _ACTIVE_LINE.finditer(text)][:1]
    lines += [line for line in journal_lines(text).splitlines() if says_wrong(line)]
    return service_logs.unread_lines(lines, f"the status of {unit}")


def service_summary(kind: str, data: dict[str, Any]) -> str:
    """The readable output's one line for a document (or part) of one of these kinds ("" for another kind)."""
    if kind == "dcgm-log":
        levels: dict[str, int] = {}
        for event in data["events"]:
            levels[event["level"]] = levels.get(event["level"], 0) + 1
        said = ", ".join(f"{n} {level}" for level, n in levels.items())
        return f"{count(len(data['events']), 'DCGM line')}" + (f": {said}" if said else "")
    if kind == "dcgmi-health":
        sick = [s for s in data["systems"] if s["health"] not in HEALTHY]
        return (f"overall {data['overall'] or '?'}, {count(len(sick), 'system')} not healthy, "
                f"{count(len(data['links_down']), 'NVLink')} down")
    if kind == "gpu-operator-log":
        waiting = f", still waiting for {data['waiting']}" if data["waiting"] else ""
        return f"driver {data['driver_version'] or '?'}{waiting}, {count(len(data['problems']), 'failure line')}"
    if kind == "k8s-device-plugin-log":
        return (f"{count(len(data['xids']), 'Xid report')}, {count(len(data['unhealthy']), 'device')} marked "
                "unhealthy")
    if kind == "persistenced-log":
        return (f"{count(len(data['registered']), 'GPU')} registered, "
                f"{count(len(data['problems']), 'failure line')}")
    return ""


__all__ = ["SERVICE_HANDLERS", "service_summary", "unit_status_findings"]
