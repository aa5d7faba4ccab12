"""Every finding code nvls-tui can emit, in the order of docs/contract.md's finding table.

Scripts match on these names (``check --json``'s and ``analyze --json``'s ``findings[].code``), so they
are part of the contract: tests/unit/test_contract_doc.py checks that every ``Finding("CODE", ...)`` in the
code is named here and that this tuple and the doc's table name the same codes. A new code goes here,
into docs/contract.md (with the name /work/shared/docs/contract.md gives it, where it gives one), and
into the code, together.
"""

from __future__ import annotations

FINDING_CODES: tuple[str, ...] = (
    "FM_NOT_RUNNING",
    "FM_VERSION_MISMATCH",
    "FABRIC_NOT_COMPLETED",
    "FABRIC_STATUS_ERROR",
    "FABRIC_UNHEALTHY",
    "FABRIC_OUT_OF_SYNC",
    "FABRIC_MANAGER_NOT_PRESENT",
    "XID",
    "HOLDERS_PRESENT",
    "NVLS_SMOKE_FAILED",
    "PLATFORM_UNSUPPORTED",
    "INTERRUPTED_REPAIR",
    "UNREACHABLE",
    "EVIDENCE_MISSING",
    "RESET_REFUSED",
    "SCHEDULER_DRAINED",
    "GPU_LOST",
    "MIG_PENDING",
    "FM_LOG_ERROR",
    "FM_RESTARTER",
    "FM_IN_CONTAINER",
    "FABRIC_HOST_SIDE",
    "KERNEL_COVERAGE",
    "DIAGNOSIS_FAILED",
    "UNREAD_EVIDENCE",
    "GPU_RECOVERY_ACTION",
    "NVLINK_DOWN",
    "NVLINK_ERRORS",
    "DRIVER_ERROR",
)

__all__ = ["FINDING_CODES"]
