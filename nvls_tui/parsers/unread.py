"""NVIDIA's error text that no rule reads (issue 35, item 2): never dropped silently.

A line counts when it comes from NVIDIA's stack (the driver's ``NVRM:``, an ``nvidia-*`` kernel module such as
``nvidia-nvswitch0:``, Fabric Manager, NCCL, NVSHMEM, DCGM) and says something went wrong (``failed``, ``error``,
``fatal``, ``timeout``, an ``NV_ERR_*`` status, ...). The driver's banner (printed at ``err`` level on a healthy
boot), its notices (``Persistence mode is deprecated``, ``FBHUB Interrupt detected. Clearing it.``) and lines
from anything else (ACPI, a NIC's link flaps) do not count. Which of the counted lines a rule reads is the
caller's to say; the rest become ``UNREAD_EVIDENCE``.
"""

from __future__ import annotations

import re

# Where the line comes from: the driver and its kernel modules, FM (and its NVLSM), NCCL, NVSHMEM, DCGM.
_SOURCE = re.compile(
    r"\bNVRM:|\bnvidia(?:-[a-z]+)?\d*(?: [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)?:"
    r"|nv-fabricmanager|nvidia-fabricmanager|\bNCCL (?:WARN|ERROR)\b|\bNVSHMEM\b|\bnvshmem\w*|\bDCGM\b|\bdcgm\w*"
    # NVLSM, the NVLink subnet manager FM starts on NVLink 5 boards, logs as "nvlsm: ..." (under Talos's wrapper)
    r"|nv-hostengine|\bnvlsm: ")
# Words that say something went wrong (an Xid or SXid line is a report of one whatever its words).
_ERROR = re.compile(
    r"\b(?:errors?|fail(?:ed|ure|s|ing)?|fatal|timed? ?out|timeout|unable|cannot|can't|could not|not responding"
    r"|corrupt\w*|lost|abort(?:ed|ing)?|uncorrect\w*|unrecover\w*|exception|panic|refused|denied|kill(?:ed|ing)"
    r"|assert(?:ion)?)\b|\bNV_ERR_[A-Z0-9_]+|\bS?Xid \(", re.IGNORECASE)
# An NCCL INFO line may say "error" in passing (a fallback it took): NCCL's own level says it is no error.
_NCCL_INFO = re.compile(r"\bNCCL INFO\b")
# The kernel's own notices about a module it loads (an unsigned DKMS build taints the kernel): no fault.
_KERNEL_NOTICE = re.compile(r"\bmodule verification failed: signature and/or required key missing")
#: At most this many lines are quoted in one finding; the rest are counted.
QUOTED = 3
LINE_MAX = 200


def nvidia_error_line(line: str) -> bool:
    """Whether ``line`` is NVIDIA's stack saying something went wrong (see the module's words)."""
    return (bool(_SOURCE.search(line)) and bool(_ERROR.search(line)) and not _NCCL_INFO.search(line)
            and not _KERNEL_NOTICE.search(line))


def quote(line: str) -> str:
    """A line as a finding quotes it: stripped, cut to :data:`LINE_MAX` characters."""
    line = line.strip()
    return line if len(line) <= LINE_MAX else line[:LINE_MAX - 1] + "…"


def says_wrong(line: str) -> bool:
    """Whether ``line``'s words say something went wrong (the words :func:`nvidia_error_line` looks for), whoever
    wrote it: for a reader that knows by the line's shape that it is NVIDIA's (a service's own log)."""
    return bool(_ERROR.search(line))


__all__ = ["LINE_MAX", "QUOTED", "nvidia_error_line", "quote", "says_wrong"]
