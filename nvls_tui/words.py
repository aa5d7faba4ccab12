"""Numbers in sentences: ``1 GPU``, ``8 GPUs``, ``1 process holds``, bandwidth to one decimal."""

from __future__ import annotations

IRREGULAR = {"process": "processes", "switch": "switches", "NVSwitch": "NVSwitches", "is": "are", "holds": "hold",
             "was": "were", "has": "have", "reports": "report", "remains": "remain"}


def plural(word: str) -> str:
    """The plural of ``word`` (English, with the few irregular words nvls-tui says)."""
    return IRREGULAR.get(word, word + "s")


def count(n: int | None, word: str) -> str:
    """``count(1, "GPU") == "1 GPU"``, ``count(8, "GPU") == "8 GPUs"``; ``None`` reads "an unknown number of"."""
    if n is None:
        return f"an unknown number of {plural(word)}"
    return f"{n} {word if n == 1 else plural(word)}"


def verb(n: int, singular: str) -> str:
    """The verb agreeing with ``n``: ``verb(1, "holds") == "holds"``, ``verb(2, "holds") == "hold"``."""
    return singular if n == 1 else plural(singular)


def gbps(value: float | None) -> str:
    """A bandwidth as operators read it: ``235.2 GB/s`` (one decimal), ``–`` when unknown."""
    return "–" if value is None else f"{value:.1f} GB/s"


__all__ = ["count", "gbps", "plural", "verb"]
