"""A failed smoke test's reasons, told apart: NCCL's own lines, and the sentences nvls-tui wrote about them.

A :class:`~nvls_tui.model.SmokeResult`'s ``errors`` hold both: the raw lines all_reduce_perf printed
(``... NCCL WARN Failed to bind NVLink SHARP ...``, ``gpu05: Test NCCL failure common.cu:1177 ...``) and
the judgement (``NVLS multicast bind failed: CUDA error 802 ...``). Glued into one line with ``; `` they
read as one long sentence nobody can parse at 3 a.m.: the sentences make the message, and each NCCL
line is shown on a line of its own (the console's pane, headless progress, the report). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# What only NCCL and nccl-tests print: a WARN/INFO line (``host:pid:tid [dev] file:line NCCL WARN ...``),
# a test's failure line (``host: Test NCCL failure common.cu:1177 ...``, ``.. host pid N: Test failure
# common.cu:893``), its out-of-bounds footer, or any line that starts with NCCL's ``host:pid:tid [dev]``.
_NCCL_LINE = re.compile(r"\bNCCL (?:WARN|INFO)\b|\bTest (?:NCCL |CUDA )?failure\b|Out of bounds values"
                        r"|^\S+:\d+:\d+ \[\d+\]")


def is_nccl_line(text: str) -> bool:
    """True for a line all_reduce_perf printed (kept as printed), False for a sentence about the run."""
    return bool(_NCCL_LINE.search(text))


def nccl_lines(errors: Iterable[str]) -> list[str]:
    """The raw NCCL lines among a smoke test's errors, in order."""
    return [e for e in errors if is_nccl_line(e)]


def reasons(errors: Iterable[str]) -> list[str]:
    """The sentences among a smoke test's errors (what nvls-tui concluded), in order."""
    return [e for e in errors if not is_nccl_line(e)]


def failure_words(errors: Iterable[str], default: str = "no reason given") -> str:
    """One line for a failed smoke test: its reasons, and how many NCCL lines say more (shown apart).

    ``NVLS multicast bind failed: CUDA error 802 ... (+3 NCCL lines, shown apart)``; NCCL's first line when
    nvls-tui drew no conclusion of its own.
    """
    errors = list(errors)
    said, raw = reasons(errors), nccl_lines(errors)
    text = "; ".join(said) or (raw[0] if raw else default)
    shown = len(raw) if said else len(raw) - 1
    return text + (f" (+{shown} NCCL {'line' if shown == 1 else 'lines'}, shown apart)" if shown > 0 else "")


__all__ = ["failure_words", "is_nccl_line", "nccl_lines", "reasons"]
