"""Probe sections -> one immutable NodeState. Pure: the same code reads real and simulated nodes.

Every backend that polls with the commands of :mod:`nvls_tui.probe` (SSH in one script, the
simulator one command at a time) hands the outputs here, so a parser fix helps every backend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from nvls_tui.backends.base import CommandResult
from nvls_tui.model import GpuState, NodeState, Platform, SmokeResult, SwitchState
from nvls_tui.parsers.fabricmanager_log import parse_fm_version
from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.parsers.holders import build_holders
from nvls_tui.parsers.kernel_log import parse_kernel_log
from nvls_tui.parsers.lspci import parse_lspci
from nvls_tui.parsers.nvidia_smi_csv import driver_from_query, gpus_from_query, parse_query_csv
from nvls_tui.parsers.ps import parse_ps
from nvls_tui.parsers.systemctl import parse_show

# What nvidia-smi prints when the driver is not loaded or no GPU answers: the node cannot be read.
_SMI_FATAL = ("NVIDIA-SMI has failed", "No devices were found", "couldn't communicate with the NVIDIA driver")


def detect_platform(gpus: tuple[GpuState, ...], nvswitches: tuple[SwitchState, ...]) -> Platform:
    """The board family, from the GPU model and whether NVSwitches sit on the host's PCI bus."""
    names = " ".join(g.name for g in gpus).upper()
    if not gpus:
        return Platform.UNKNOWN
    if "GB200" in names or "GB300" in names:
        return Platform.GB200_NVL
    if "B200" in names or "B300" in names:
        return Platform.HGX_B200
    if not nvswitches:
        # A VM slice (fabric managed outside) or a board without NVSwitch: no host FM to repair.
        fabric_words = {g.fabric.state for g in gpus}
        return Platform.NO_NVSWITCH if fabric_words <= {"Not Supported", "N/A"} else Platform.UNKNOWN
    if "H200" in names:
        return Platform.HGX_H200
    if "H100" in names or "H800" in names or "H20" in names:
        return Platform.HGX_H100
    return Platform.UNKNOWN


def _text(result: CommandResult | None) -> str:
    return result.output if result is not None else ""


def _ok(result: CommandResult | None) -> bool:
    return result is not None and result.exit_status == 0


def _smoke(result: CommandResult | None, warnings: list[str]) -> SmokeResult | None:
    """The last smoke result the runbook left on the node (JSON with SmokeResult's field names)."""
    if not _ok(result) or not result.stdout.strip():
        return None
    try:
        data = json.loads(result.stdout)
        return SmokeResult(
            avg_busbw=float(data["avg_busbw"]) if data.get("avg_busbw") is not None else None,
            passed=bool(data.get("passed")),
            out_of_bounds=data.get("out_of_bounds"),
            nvls_used=bool(data.get("nvls_used")),
            completed=bool(data.get("completed")),
            errors=tuple(str(e) for e in data.get("errors") or ()),
            threshold=data.get("threshold"),
            at=data.get("at"),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        warnings.append("the last smoke-test record on the node could not be read")
        return None


def _record(result: CommandResult | None, warnings: list[str]) -> dict | None:
    """The crash-safe record of an unfinished repair, if the node holds one."""
    if not _ok(result) or not result.stdout.strip():
        return None
    try:
        data = json.loads(result.stdout)
    except ValueError:
        warnings.append("the node holds an unreadable repair record")
        return {"unreadable": True}
    return data if isinstance(data, dict) else {"unreadable": True}


def assemble_node_state(
    host: str,
    sections: Mapping[str, CommandResult],
    *,
    simulated: bool,
    polled_at: float | None = None,
    gpus: tuple[GpuState, ...] | None = None,
    driver: str | None = None,
    holders: tuple | None = None,
) -> NodeState:
    """Build a NodeState from the probe's sections.

    Args:
        host: the target name to show.
        sections: outputs keyed by :data:`nvls_tui.probe.SECTIONS` names plus ``processes``.
        simulated: the node is simulated (labelled as such everywhere).
        polled_at: wall-clock time of the poll.
        gpus, driver, holders: read another way (NVML and /proc in local mode) instead of from the
            ``gpus``/``holders`` sections.

    Returns:
        The node's state; ``reachable=False`` with a reason when its GPUs could not be read at all.
    """
    warnings: list[str] = []
    simulated = simulated or (_ok(sections.get("simulated")) and bool(sections["simulated"].stdout.strip()))
    gpus_result = sections.get("gpus")
    if gpus is None:
        query = parse_query_csv(gpus_result.stdout if gpus_result else "")
        warnings += query.warnings
        gpus = gpus_from_query(query.value)
        driver = driver_from_query(query.value)
    if not gpus:
        reason = next((line.strip() for line in _text(gpus_result).splitlines()
                       if any(m in line for m in _SMI_FATAL)), None)
        if gpus_result is None or gpus_result.exit_status is None:
            reason = "nvidia-smi did not answer"
        return NodeState(host=host, reachable=False, simulated=simulated, polled_at=polled_at,
                         error=reason or "no GPU could be read from nvidia-smi", warnings=tuple(warnings))

    switches_parsed = parse_lspci(_text(sections.get("nvswitches")))
    nvswitches = tuple(SwitchState(device=f"/dev/nvidia-nvswitch{i}", bus_id=dev.bus_id)
                       for i, dev in enumerate(switches_parsed.value))

    units = parse_show(sections["units"].stdout) if _ok(sections.get("units")) else None
    services = units.value if units else ()

    fm_version = parse_fm_version(_text(sections.get("fm_version")))

    if holders is None:
        fuser = parse_fuser_v(_text(sections.get("holders")))
        ps = parse_ps(_text(sections.get("processes")))
        holders = build_holders(fuser.value, ps.value)
        warnings += fuser.warnings

    kernel = parse_kernel_log(_text(sections.get("kernel")))

    return NodeState(
        host=host,
        reachable=True,
        simulated=simulated,
        platform=detect_platform(gpus, nvswitches),
        driver=driver,
        fm_version=fm_version,
        gpus=gpus,
        nvswitches=nvswitches,
        services=tuple(services),
        holders=holders,
        kernel_events=kernel.value,
        smoke=_smoke(sections.get("smoke"), warnings),
        repair_record=_record(sections.get("record"), warnings),
        polled_at=polled_at,
        warnings=tuple(warnings),
    )
