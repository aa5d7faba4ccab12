"""Enumerations shared by the model, the parsers and the diagnosis."""

from __future__ import annotations

import enum


class Verdict(enum.StrEnum):
    """Overall health of one node, worst first when sorted by :attr:`rank`."""

    BROKEN = "broken"
    UNREACHABLE = "unreachable"
    DEGRADED = "degraded"
    HEALTHY = "healthy"

    @property
    def rank(self) -> int:
        """Sort key that puts the nodes needing attention first."""
        return _VERDICT_RANK[self]


# Looked up on every redraw for every row of a 1,024-node grid: a dict, not a walk of the members.
_VERDICT_RANK = {verdict: i for i, verdict in enumerate(Verdict)}


class Severity(enum.StrEnum):
    """Severity of a finding (contract.md)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class Platform(enum.StrEnum):
    """Board families that decide which repair playbook applies (domain.md, "Platforms differ")."""

    HGX_H100 = "hgx-h100"
    HGX_H200 = "hgx-h200"
    HGX_B200 = "hgx-b200"
    GB200_NVL = "gb200-nvl"
    NO_NVSWITCH = "no-nvswitch"
    UNKNOWN = "unknown"

    @property
    def has_host_fm(self) -> bool:
        """True for the boards whose Fabric Manager runs on the host (this playbook)."""
        return self in (Platform.HGX_H100, Platform.HGX_H200)


class HolderKind(enum.StrEnum):
    """What kind of process holds a /dev/nvidia* file, as far as its command line tells."""

    DCGM_EXPORTER = "dcgm-exporter"
    NV_HOSTENGINE = "nv-hostengine"
    DEVICE_PLUGIN = "nvidia-device-plugin"
    MIG_MANAGER = "nvidia-mig-manager"
    FEATURE_DISCOVERY = "gpu-feature-discovery"
    NVIDIA_SMI = "nvidia-smi"
    WATCH = "watch"
    FABRIC_MANAGER = "fabric-manager"
    PERSISTENCED = "persistenced"
    CUDA_APP = "cuda-app"
    OTHER = "other"

    @property
    def is_management(self) -> bool:
        """True for monitoring/management processes that a repair may stop (never user workloads)."""
        return self not in (HolderKind.CUDA_APP, HolderKind.OTHER)
