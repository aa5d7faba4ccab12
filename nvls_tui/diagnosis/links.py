"""Findings from the NVLink views (``nvidia-smi nvlink -s``/``-e``, ``dcgmi nvlink --link-status``, ``dcgmi
diag``). Pure.

A link that is not up is ``NVLINK_DOWN`` [error]: on an NVSwitch H100/H200 board every GPU has 18 NVLinks to the
switches and all are expected up; NVLS multicast spans every GPU, so one GPU's missing links fail it (a GPU reset,
then FM's retraining, is the repair's move; a link that stays down is a hardware ticket). Non-zero replay,
recovery or CRC counters are ``NVLINK_ERRORS`` [warning]: the link retried or retrained and still works, but a
counter that grows marks a link going bad.
"""

from __future__ import annotations

import re

from nvls_tui.model import Finding, Severity

#: NVLinks per GPU on an NVSwitch H100/H200 (HGX) board: all are expected up.
HGX_LINKS = 18
DOWN_MOVE = ("reset the GPU and its NVSwitches and let Fabric Manager train the links again (the repair); a link "
             "that stays down after that is a hardware ticket")
_COUNTED = re.compile(r"replay|recovery|crc", re.I)


def link_ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    out: list[str] = []
    numbers = sorted(set(numbers))
    start = prev = None
    for n in [*numbers, None]:
        if n is not None and prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ", ".join(out)


def _links(numbers: list[int]) -> str:
    return f"{'link' if len(numbers) == 1 else 'links'} {link_ranges(numbers)}"


def nvlink_status_findings(gpus: list[dict]) -> list[Finding]:
    """``NVLINK_DOWN`` for the GPUs of ``nvidia-smi nvlink -s`` with links printed inactive."""
    said = []
    for gpu in gpus:
        inactive = gpu.get("inactive_links") or []
        if gpu.get("all_inactive"):
            said.append(f"GPU {gpu['index']}: all links inactive (NVML could not read any)")
        elif inactive:
            said.append(f"GPU {gpu['index']}: {_links(inactive)} inactive ({gpu['active_links']} of "
                        f"{len(gpu['links'])} active)")
    if not said:
        return []
    return [Finding("NVLINK_DOWN", Severity.ERROR,
                    f"NVLinks not up: {'; '.join(said)}. On an NVSwitch H100/H200 board every GPU has {HGX_LINKS} "
                    f"links, all expected active, and NVLS needs them: {DOWN_MOVE}", next_move=DOWN_MOVE)]


def nvlink_error_findings(gpus: list[dict]) -> list[Finding]:
    """``NVLINK_ERRORS`` for the links of ``nvidia-smi nvlink -e`` whose replay, recovery or CRC counters are not 0."""
    said = []
    for gpu in gpus:
        for link in gpu["links"]:
            nonzero = [f"{name} {value}" for name, value in link["counters"].items() if value and _COUNTED.search(name)]
            if nonzero:
                said.append(f"GPU {gpu['index']} link {link['link']}: {', '.join(nonzero)}")
    if not said:
        return []
    shown = "; ".join(said[:8]) + (f"; and {len(said) - 8} more links" if len(said) > 8 else "")
    return [Finding("NVLINK_ERRORS", Severity.WARNING,
                    f"NVLink error counters are not zero: {shown}. The links retried or retrained and still carry "
                    "traffic; a counter that keeps growing marks a link going bad (reset the counters with "
                    "`nvidia-smi nvlink -r`, watch them, and open a hardware ticket for a link that climbs)")]


def dcgm_link_findings(gpus: list[dict], nvswitches: list[dict]) -> list[Finding]:
    """``NVLINK_DOWN`` for the GPUs and NVSwitches of ``dcgmi nvlink --link-status`` with links down (``D``)."""
    said = [f"GPU {g['id']}: {_links(g['down'])} down" for g in gpus if g["down"]]
    said += [f"NVSwitch {s['id']}: {_links(s['down'])} down" for s in nvswitches if s["down"]]
    if not said:
        return []
    return [Finding("NVLINK_DOWN", Severity.ERROR, f"DCGM reports NVLinks down: {'; '.join(said)}: {DOWN_MOVE}",
                    next_move=DOWN_MOVE)]


def dcgm_diag_findings(results: list[dict], links_down: list[dict]) -> list[Finding]:
    """``NVLINK_DOWN`` for the links ``dcgmi diag`` says are down, with the tests that failed."""
    if not links_down:
        return []
    by_gpu: dict[int, list[int]] = {}
    for item in links_down:
        by_gpu.setdefault(item["gpu"], []).append(item["link"])
    failed = [f"{r['test']} {r['result']}" for r in results if r["result"].lower().startswith("fail")]
    where = f" (failed: {', '.join(failed)})" if failed else ""
    said = "; ".join(f"GPU {gpu}: {_links(links)} down" for gpu, links in by_gpu.items())
    return [Finding("NVLINK_DOWN", Severity.ERROR, f"DCGM's diagnostic reports NVLinks down{where}: {said}: "
                    f"{DOWN_MOVE}", next_move=DOWN_MOVE)]


__all__ = ["HGX_LINKS", "dcgm_diag_findings", "dcgm_link_findings", "link_ranges", "nvlink_error_findings",
           "nvlink_status_findings"]
