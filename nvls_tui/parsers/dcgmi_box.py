"""The rows of dcgmi's boxes (``dcgmi diag``, ``dcgmi health``): ``| name | value |``. Pure."""

from __future__ import annotations


def box_cells(line: str) -> tuple[str, str] | None:
    """A box row's two cells (``| name | value |``, the closing bar optional: a paste may cut it), stripped; None
    for a border (``+---+``, ``|===|``) or anything else. Split, not matched: a long row is read in one pass (a
    pattern with a lazy cell before ``\\s*\\|?\\s*$`` tried a long run of spaces from every position)."""
    text = line.strip()
    if not text.startswith("|") or set(text) <= set("+-=| "):
        return None
    name, bar, value = text[1:].partition("|")
    if not bar:
        return None
    value = value.rstrip()
    return name.strip(), (value[:-1] if value.endswith("|") else value).strip()


__all__ = ["box_cells"]
