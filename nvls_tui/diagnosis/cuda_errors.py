"""``CUDA_ERROR``: an application's failed CUDA call, read through the CUDA error catalogue. Pure.

The error's name and the runtime's words come from nvls_tui/catalogues/cuda_error.csv, the severity and the next
move from the catalogue's reading of the code (:data:`nvls_tui.catalogues.BUCKETS`): 802 (the system is not ready:
on an NVSwitch node Fabric Manager or the fabric) an error whose move is the repair, a driver the CUDA stack cannot
use an error a reset will not fix, an illegal memory access the application's fault. A code without a reading, or
one the catalogue does not list, is still an error that quotes the line. The lines of one code are one finding.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvls_tui import catalogues
from nvls_tui.model import Finding, Severity
from nvls_tui.parsers.cuda_app import CudaErrorLine
from nvls_tui.parsers.unread import quote


def named(error: CudaErrorLine) -> str:
    """The error in words: ``CUDA error 802 (cudaErrorSystemNotReady: system not yet initialized)``."""
    if error.entry is not None:
        return f"CUDA error {error.entry.code} ({error.entry.name}: {error.entry.text})"
    if error.code is not None:
        return f"CUDA error {error.code} (not in the CUDA error catalogue)"
    return f"CUDA error {error.said} (not in the CUDA error catalogue)"


def reading(error: CudaErrorLine) -> catalogues.Bucket:
    """The catalogue's reading of the error: its bucket, or :data:`nvls_tui.catalogues.CUDA_NO_BUCKET`."""
    if error.entry is None or not error.entry.bucket:
        return catalogues.CUDA_NO_BUCKET
    return catalogues.bucket(error.entry.bucket)


def cuda_error_findings(errors: Sequence[CudaErrorLine]) -> list[Finding]:
    """One ``CUDA_ERROR`` per code (or unlisted name), in the order the output first names them."""
    groups: dict[int | str, list[CudaErrorLine]] = {}
    for error in errors:
        groups.setdefault(error.code if error.code is not None else error.said, []).append(error)
    findings = []
    for lines in groups.values():
        first = lines[0]
        bucket = reading(first)
        said = f" ({len(lines)} lines)" if len(lines) > 1 else ""
        findings.append(Finding("CUDA_ERROR", Severity(bucket.severity),
                                f"the application reports {named(first)}{said}: “{quote(first.line)}” — {bucket.move}",
                                action=bucket.name or None, next_move=bucket.move))
    return findings


__all__ = ["cuda_error_findings", "named", "reading"]
