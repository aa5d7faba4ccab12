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
# Words that say something went wrong (an Xid or SXid line is a report of one whatever its words), each with a
# literal that every match of it contains in lower case (tests/unit/test_unread_anchors.py holds that, word by
# word): a line holding none of them cannot match, and a few substring tests cost far less than the case-blind
# pattern on a line that does not match (most lines), which made this the largest part of a fresh poll's
# bastion CPU (docs/performance.md, 2026-12-07).
ERROR_WORDS = (
    ("error", r"errors?"), ("fail", r"fail(?:ed|ure|s|ing)?"), ("fatal", r"fatal"), ("time", r"timed? ?out|timeout"),
    ("unable", r"unable"), ("cannot", r"cannot"), ("can't", r"can't"), ("could not", r"could not"),
    ("not responding", r"not responding"), ("corrupt", r"corrupt\w*"), ("lost", r"lost"),
    ("abort", r"abort(?:ed|ing)?"), ("uncorrect", r"uncorrect\w*"), ("unrecover", r"unrecover\w*"),
    ("exception", r"exception"), ("panic", r"panic"), ("refused", r"refused"), ("denied", r"denied"),
    ("kill", r"kill(?:ed|ing)"), ("assert", r"assert(?:ion)?"),
)
#: The words after the ``\b(?:...)\b`` group, each with its literal as above.
ERROR_CODES = (("nv_err_", r"\bNV_ERR_[A-Z0-9_]+"), ("xid (", r"\bS?Xid \("))
_ERROR = re.compile(r"\b(?:" + "|".join(w for _, w in ERROR_WORDS) + r")\b|" + "|".join(w for _, w in ERROR_CODES),
                    re.IGNORECASE)
#: Each word's literal, in lower case: a line without any of them says nothing wrong (the kernel log's reader
#: looks for them in the whole log at once, nvls_tui.parsers.kernel_log).
ANCHORS = tuple(a for a, _ in (*ERROR_WORDS, *ERROR_CODES))
# One search of the literals, in lower case, costs less than a test of each in turn.
_ERROR_ANCHORS = re.compile("|".join(re.escape(a) for a in ANCHORS))
# An NCCL INFO line may say "error" in passing (a fallback it took): NCCL's own level says it is no error.
_NCCL_INFO = re.compile(r"\bNCCL INFO\b")
# The kernel's own notices about a module it loads (an unsigned DKMS build taints the kernel): no fault.
_KERNEL_NOTICE = re.compile(r"\bmodule verification failed: signature and/or required key missing")
#: At most this many lines are quoted in one finding; the rest are counted.
QUOTED = 3
LINE_MAX = 200


def might_say_wrong(line: str) -> bool:
    """False only where ``line`` cannot hold one of the words :func:`says_wrong` looks for: an ASCII line without
    any of their literals (a line with other characters is left to the pattern, whose case-blind matching knows
    more equivalences than ``str.lower``)."""
    if not line.isascii():
        return True
    return _ERROR_ANCHORS.search(line.lower()) is not None


def nvidia_error_line(line: str) -> bool:
    """Whether ``line`` is NVIDIA's stack saying something went wrong (see the module's words)."""
    return (might_say_wrong(line) and bool(_ERROR.search(line)) and bool(_SOURCE.search(line))
            and not _NCCL_INFO.search(line) and not _KERNEL_NOTICE.search(line))


def quote(line: str) -> str:
    """A line as a finding quotes it: stripped, cut to :data:`LINE_MAX` characters."""
    line = line.strip()
    return line if len(line) <= LINE_MAX else line[:LINE_MAX - 1] + "…"


def says_wrong(line: str) -> bool:
    """Whether ``line``'s words say something went wrong (the words :func:`nvidia_error_line` looks for), whoever
    wrote it: for a reader that knows by the line's shape that it is NVIDIA's (a service's own log)."""
    return bool(_ERROR.search(line))


__all__ = ["ANCHORS", "ERROR_CODES", "ERROR_WORDS", "LINE_MAX", "QUOTED", "might_say_wrong", "nvidia_error_line", "quote",
           "says_wrong"]
