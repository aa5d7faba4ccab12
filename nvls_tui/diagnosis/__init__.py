"""Diagnosis, pure: a node's state -> findings and a verdict (``node``), and captured outputs ->
their kind, data and findings (``captured``, the ``analyze`` command)."""

from nvls_tui.diagnosis.fabric_manager import FM_UNIT
from nvls_tui.diagnosis.kernel import (
    FM_NOT_PRESENT,
    OUT_OF_SYNC,
    current_kernel_events,
    gpu_lost_finding,
    gpu_lost_findings,
    kernel_findings,
    kernel_unread_findings,
)
from nvls_tui.diagnosis.node import (
    GUARDED_SECTIONS,
    SILENT_SECTIONS,
    DiagnosisOptions,
    carry_fabric_since,
    diagnose,
    diagnose_guarded,
    evidence_findings,
    fabric_findings,
    verdict_of,
)

__all__ = [
    "FM_NOT_PRESENT",
    "FM_UNIT",
    "GUARDED_SECTIONS",
    "OUT_OF_SYNC",
    "SILENT_SECTIONS",
    "DiagnosisOptions",
    "carry_fabric_since",
    "current_kernel_events",
    "diagnose",
    "diagnose_guarded",
    "evidence_findings",
    "fabric_findings",
    "gpu_lost_finding",
    "gpu_lost_findings",
    "kernel_findings",
    "kernel_unread_findings",
    "verdict_of",
]
