"""The domain model: immutable snapshots of a fleet of NVSwitch nodes.

Everything here is a frozen dataclass or an enum built from the standard library only, so the
parsers, the diagnosis and the runbook can share it without pulling in a UI or a transport.
"""

from nvls_tui.model.command import CommandResult
from nvls_tui.model.enums import HolderKind, Platform, Severity, Verdict
from nvls_tui.model.fleet import Fleet
from nvls_tui.model.node import (
    FabricHealth,
    FabricInfo,
    Finding,
    GpuState,
    Holder,
    KernelEvent,
    MissingEvidence,
    NodeState,
    Restarters,
    ServiceState,
    SmokeResult,
    SwitchState,
)

__all__ = [
    "CommandResult",
    "FabricHealth",
    "FabricInfo",
    "Finding",
    "Fleet",
    "GpuState",
    "Holder",
    "HolderKind",
    "KernelEvent",
    "MissingEvidence",
    "NodeState",
    "Platform",
    "Restarters",
    "ServiceState",
    "Severity",
    "SmokeResult",
    "SwitchState",
    "Verdict",
]
