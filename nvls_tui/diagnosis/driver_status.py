"""``DRIVER_ERROR``: the driver's lines that name an ``NV_ERR_*`` status (by name, or by number in "failed with
status 0x...") or an NVLink failure without an Xid, read through the driver's status catalogue. Pure.

The two fabric statuses have their own findings (FABRIC_OUT_OF_SYNC, FABRIC_MANAGER_NOT_PRESENT). For the rest the
status name, number and the driver's own text come from nvls_tui/catalogues/nv_status.csv; the severity and the
move from :data:`nvls_tui.catalogues.STATUS_BUCKETS` where it names the status (a reset required, a GPU lost, an
NVLink error), else a warning that quotes the line. The lines of one status are one finding.

The driver's failures in words without an Xid or a status (nvls_tui/parsers/driver_failures.py: a GPU it cannot
boot or does not support, an API mismatch, a GSP timeout, a module that failed to load) are DRIVER_ERROR too: their
gravity and move are the Xid catalogue's for the Xid of the same failure, else the bucket's the failure names,
else a warning.
"""

from __future__ import annotations

from nvls_tui import catalogues
from nvls_tui.model import Finding, KernelEvent, Severity
from nvls_tui.parsers.driver_failures import DriverFailure, by_code
from nvls_tui.parsers.kernel_log import FELL_OFF_BUS, FM_NOT_PRESENT, GPU_INIT_FAILED, NVLINK_FAILED, OUT_OF_SYNC
from nvls_tui.parsers.unread import quote

PROBE_FAILED = "GPU_PROBE_FAILED"
_PROBE_REASONS = frozenset({FELL_OFF_BUS, GPU_INIT_FAILED, "GPU_NOT_SUPPORTED", "GPU_BOOT_FAILED"})
NVLINK_MOVE = ("reset the GPUs and NVSwitches and let Fabric Manager train the links again (the repair); a failure "
               "that comes back is a hardware ticket")
READ_MOVE = "read the driver's line: the status is the driver's own word for what failed"
INIT_MOVE = ("reboot the node (a GPU reset cannot run on a GPU the driver did not bring up); if the GPU fails to "
             "initialise again, a hardware ticket (its firmware, its power, its seating)")


def is_driver_status(event: KernelEvent) -> bool:
    """Whether ``event`` is one DRIVER_ERROR reads (a status other than the two fabric ones, an NVLink failure)."""
    return event.code in (NVLINK_FAILED, GPU_INIT_FAILED) or by_code(event.code) is not None or (
        event.code.startswith("NV_ERR_") and event.code not in (OUT_OF_SYNC, FM_NOT_PRESENT))


def driver_status_findings(events: list[KernelEvent] | tuple[KernelEvent, ...]) -> list[Finding]:
    """One ``DRIVER_ERROR`` per status (or for the NVLink failures), in log order."""
    groups: dict[str, list[KernelEvent]] = {}
    explained = any(_says_why_probe_failed(e) for e in events)
    for event in events:
        if is_driver_status(event) and not (explained and event.code == PROBE_FAILED):
            groups.setdefault(event.code, []).append(event)
    return [_finding(code, lines) for code, lines in groups.items()]


def _says_why_probe_failed(event: KernelEvent) -> bool:
    """Whether ``event`` is a reason the driver's probe of a GPU fails (the GPU off the bus, not supported, not
    booted or initialised): the probe failure after it is its consequence, read but not a finding of its own."""
    return event.code in _PROBE_REASONS or (event.code == "XID" and event.xid == 79)


def _finding(code: str, events: list[KernelEvent]) -> Finding:
    lines = len(events)
    said = f" ({lines} lines)" if lines > 1 else ""
    first = quote(events[0].line)
    if code == GPU_INIT_FAILED:
        gpus = sorted({e.pci for e in events if e.pci})
        which = f"GPU {', '.join(gpus)}" if gpus else "a GPU"
        return Finding("DRIVER_ERROR", Severity.ERROR,
                       f"{which} failed to initialize: the driver cannot use it{said}: “{first}” — {INIT_MOVE}",
                       action="RESTART_BM", next_move=INIT_MOVE)
    if code == NVLINK_FAILED:
        return Finding("DRIVER_ERROR", Severity.ERROR,
                       f"the driver reports an NVLink failure without an Xid{said}: “{first}” — {NVLINK_MOVE}",
                       action="RESET_GPU", next_move=NVLINK_MOVE)
    if (failure := by_code(code)) is not None:
        return _failure_finding(failure, first, said)
    status = catalogues.nv_status(code)
    named = f"{code} (0x{status.code:08X}: {status.text})" if status is not None else f"{code} (not in the driver's status list)"
    reading = catalogues.STATUS_BUCKETS.get(code)
    if reading is None:
        return Finding("DRIVER_ERROR", Severity.WARNING, f"the driver reports {named}{said}: “{first}” — {READ_MOVE}")
    bucket = catalogues.bucket(reading)
    return Finding("DRIVER_ERROR", Severity(bucket.severity), f"the driver reports {named}{said}: “{first}” — "
                   f"{bucket.move}", action=bucket.name, next_move=bucket.move)


def _failure_finding(failure: DriverFailure, first: str, said: str) -> Finding:
    """DRIVER_ERROR for a failure in the driver's words: graded by the Xid of the same failure, else its bucket."""
    entry = catalogues.xid(failure.xid)
    bucket_name = entry.immediate if entry is not None else failure.bucket
    if not bucket_name:
        move = failure.move
        return Finding("DRIVER_ERROR", Severity.WARNING, f"{failure.what}{said}: “{first}” — {move}", next_move=move)
    bucket = catalogues.bucket(bucket_name)
    move = failure.move or bucket.move
    via = f" (the Xid catalogue's {bucket.name} for Xid {failure.xid})" if entry is not None else ""
    return Finding("DRIVER_ERROR", Severity(bucket.severity), f"{failure.what}{said}: “{first}” — {move}{via}",
                   action=bucket.name, next_move=move)


__all__ = ["driver_status_findings", "is_driver_status"]
