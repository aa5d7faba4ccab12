"""Label values, kept bounded: a node's words become a label only through a fixed set (else ``other``).

An Xid's text, a holder's command line or a job's name never become a label (each is unbounded and
would make a new series per value); the Xid number may, bounded by NVIDIA's catalogue. Versions go on
the one ``_info`` series per node, cut to a length, as dcgm-exporter puts its driver version.
"""

from __future__ import annotations

import functools
import re

from nvls_tui.catalogues import xids
from nvls_tui.model import HolderKind
from nvls_tui.poll.probe import SECTIONS
from nvls_tui.textsafe import one_line

OTHER = "other"
VERSION_CHARS = 40

FABRIC_STATES = {"completed": "completed", "in progress": "in_progress", "not started": "not_started"}
# NVML's fabric status words as nvidia-smi prints them; any other word is "other".
FABRIC_STATUSES = frozenset({"success", "insufficient_resources", "in_progress", "not_supported", "uninitialized",
                             "timeout", "unknown", "n_a"})
# The poll's sections and the readers beside it that may name a missing one.
SECTION_NAMES = frozenset({s.name for s in SECTIONS} | {"processes", "k8s", "scheduler", "lspci", "pci_gpus"})
REPAIR_RESULTS = frozenset({"repaired", "failed", "aborted", "refused", "skipped", "restored", "planned", "ok"})
HOLDER_KINDS = tuple(str(kind) for kind in HolderKind)


# The same few thousand names and versions come back every round: cleaned once each (a 1,024-node round
# asks for 16,000 of them, and the textfile must follow the round's end within a second).
@functools.lru_cache(maxsize=1 << 16)
def hostname(host: str) -> str:
    """The node as dcgm-exporter names it: lowercase (a ``sim:`` target's node name, as the table shows it)."""
    return one_line(host, 253).lower()


def _word(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


def fabric_state(word: str) -> str:
    """``completed``, ``in_progress``, ``not_started`` or ``other``."""
    return FABRIC_STATES.get(word.strip().lower(), OTHER)


def fabric_status(word: str) -> str:
    """``success``, ``insufficient_resources``, ... or ``other``."""
    status = _word(word)
    return status if status in FABRIC_STATUSES else OTHER


def section(name: str) -> str:
    """A poll section's name, or ``other`` for a name no reader gives."""
    return name if name in SECTION_NAMES else OTHER


def repair_result(result: object) -> str:
    """A repair run's result as the runbook names it, or ``other``."""
    return result if isinstance(result, str) and result in REPAIR_RESULTS else OTHER


def nvlink_xid(number: int | None) -> str | None:
    """The Xid as a label where NVIDIA's catalogue names it an NVLink error; None for any other."""
    entry = xids().get(number) if number is not None else None
    return str(number) if entry is not None and "NVLINK" in entry.mnemonic.upper() else None


def decision_word(text: object) -> str:
    """An autopilot record's action or reason as a label: its own words (``skip``, ``max-parallel``,
    ``SIGTERM``, an exception's name) kept where they are one short word, else ``other``."""
    return text if isinstance(text, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,40}", text) else OTHER


@functools.lru_cache(maxsize=1 << 16)
def version(text: str | None) -> str:
    """A version for an ``_info`` label: cleaned, one line, cut; empty where unknown."""
    return one_line(text, VERSION_CHARS) if text else ""


__all__ = ["OTHER", "decision_word", "fabric_state", "fabric_status", "hostname", "nvlink_xid", "repair_result", "section", "version"]
