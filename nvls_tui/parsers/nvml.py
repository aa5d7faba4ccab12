"""NVML's fabric numbers -> the words nvidia-smi prints for them. Pure (no pynvml here).

The local backend reads the fabric through NVML and the SSH backend through ``nvidia-smi
--query-gpu``; one node must read the same either way. On a real H200 without NVSwitch
(tests/fixtures/real/nvidia-h200) NVML reads state 0 (``NOT_SUPPORTED``) with cliqueId 0 and an
all-zero cluster UUID, while nvidia-smi prints ``N/A`` for every fabric field: the words here are
nvidia-smi's, so both backends hand the diagnosis the same facts.
"""

from __future__ import annotations

from collections.abc import Callable

from nvls_tui.model import FabricHealth, FabricInfo

STATES = {0: "N/A", 1: "Not Started", 2: "In Progress", 3: "Completed"}  # 0 is NVML's NOT_SUPPORTED
HEALTH_SUMMARY = {1: "Healthy", 2: "Unhealthy", 3: "Limited Capacity"}  # 0: not supported (N/A)


def cluster_uuid_text(raw: bytes) -> str:
    """16 bytes as ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``."""
    h = bytes(raw)[:16].ljust(16, b"\0").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def fabric_from_nvml(state: int, status: int, clique_id: int, cluster_uuid: bytes, *,
                     health_summary: int | None = None,
                     error_string: Callable[[int], str] = lambda code: f"NVML error {code}") -> FabricInfo:
    """A GPU's fabric info from ``nvmlDeviceGetGpuFabricInfoV``'s fields.

    Args:
        state: ``NVML_GPU_FABRIC_STATE_*`` (0 not supported, 1 not started, 2 in progress, 3 completed).
        status: an NVML return code, meaningful only when the state is completed.
        clique_id, cluster_uuid: the clique and the 16-byte cluster UUID.
        health_summary: ``healthSummary`` of the v3 struct (None for a v2 struct, which has no health).
        error_string: NVML's words for a status code (``nvmlErrorString``).
    """
    word = STATES.get(int(state), "N/A")
    health = None if health_summary is None else FabricHealth(summary=HEALTH_SUMMARY.get(int(health_summary)))
    if word == "N/A":
        return FabricInfo(state="N/A", status="N/A", health=health)
    result = "N/A"
    if word == "Completed":
        result = "Success" if int(status) == 0 else str(error_string(int(status)))
    return FabricInfo(state=word, status=result, clique_id=str(int(clique_id)),
                      cluster_uuid=cluster_uuid_text(cluster_uuid), health=health)


__all__ = ["HEALTH_SUMMARY", "STATES", "cluster_uuid_text", "fabric_from_nvml"]
