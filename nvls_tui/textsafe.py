"""Text from a node is data: no control sequence of it reaches a terminal, a widget or a report.

Any user of a GPU node names their processes, and tools print escapes (``nvidia-smi topo -m``
colours its header). Every byte a backend brings back passes :func:`clean` once, where it enters
nvls-tui (``CommandResult``, each streamed line, NVML and /proc strings): ESC and CSI/OSC/DCS
sequences are removed whole (``ESC ] 0 ; title BEL`` leaves nothing behind), then every other C0
and C1 control, the bidirectional overrides that can make a line read backwards and the characters
drawn as nothing (zero-width space, byte order mark, ...). Tab and newline stay where the text has
lines, and the Unicode line and paragraph separators become newlines; :func:`one_line` folds them
for a cell, a toast or a report.

Markup is the other half: node text is always rendered as plain text (``rich.text.Text``,
``markup=False``), never parsed; :func:`markdown_text` escapes it for the incident report.
"""

from __future__ import annotations

import re
from typing import Any

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC (ESC P|X|^|_ ... ST), two-byte
# ESC sequences, and their 8-bit C1 forms (CSI 0x9b, OSC 0x9d, DCS 0x90, ...).
_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?"
)
# Characters drawn as nothing: Unicode's default-ignorable code points (zero-width space and joiners,
# the byte order mark, soft hyphen, word joiner, Hangul fillers, tags, the bidi marks, embeddings,
# overrides and isolates), but the variation selectors, which pick the emoji or text form of the
# character before them and hide nothing. In node text their only effect is to make two different
# names look alike or (the bidi controls) to reorder a line, so they go; a joiner gone shows an emoji
# family as its members and leaves a Persian or Indic name unjoined, still legible.
_INVISIBLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f"
              "\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f")
# What is left: C0 but tab and newline, DEL, C1, and the invisible characters.
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
# The line and paragraph separators are line breaks to editors, JavaScript and str.splitlines:
# they become the newline that every renderer here already folds or keeps as a line.
_SEPARATORS = str.maketrans("\u2028\u2029", "\n\n")
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}\u2028\u2029]")
# The bytes plain ASCII text is made of (deleting them from such text leaves nothing).
_PLAIN_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
# Inline Markdown: emphasis, code, links/images, strikethrough. ("|" is left to the table code,
# report._cell, which must escape it inside code spans as well; line-start markers such as "#", "-"
# or "1." cannot occur, since node text is never put at the start of a line.)
_MARKDOWN = re.compile(r"([\\`*_\[\]~])")


def clean(text: str) -> str:
    """``text`` without escape sequences, control or invisible characters (tab and newline kept; U+2028 and
    U+2029 become newlines)."""
    if not text:
        return text
    if text.isascii() and not text.encode("ascii").translate(None, _PLAIN_ASCII):
        return text  # the common case: printable ASCII, tabs and newlines (a byte scan, ~10x the regex's pace)
    if _UNSAFE.search(text) is None:
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text)).translate(_SEPARATORS)


def clean_deep(value: Any) -> Any:
    """``value`` with :func:`clean` applied to every string in it, keys included.

    JSON read from a node (the repair record, the last smoke result) decodes ``\\u001b`` escapes into
    real control characters after the byte boundary: they are cleaned again here.
    """
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean_deep(k): clean_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_deep(v) for v in value]
    return value


# In a JSON text: a character other than printable ASCII and the newline, or an escape (\b, \f, \r, \uXXXX)
# that can decode into one. (An escaped backslash before b, f, r or u matches too: a miss costs a walk, no more.)
_JSON_MAY_DECODE_UNSAFE = re.compile(r"[^ -~\n]|\\[bfru]")


def json_is_plain(text: str) -> bool:
    """True when every string ``json.loads(text)`` can decode (keys included) is one :func:`clean` leaves as it is,
    so that :func:`clean_deep` of it would change nothing.

    Such a text is printable ASCII and its escapes are only ``\\"``, ``\\\\``, ``\\/``, ``\\n`` and ``\\t``:
    what they decode into is printable ASCII, tabs and newlines, clean's own fast path. A record nvls-tui
    wrote is almost always so; anything else (``\\u001b``, ``\\r``, any non-ASCII character) answers False
    and is cleaned as before.
    """
    return _JSON_MAY_DECODE_UNSAFE.search(text) is None


def clean_line(line: str) -> str:
    """One line of a stream, cleaned, without its line ending."""
    return clean(line.rstrip("\r\n"))


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` cleaned and folded onto one line (tabs and newlines become spaces), cut with a mark."""
    folded = " ".join(clean(text).replace("\t", " ").split("\n")).strip()
    if limit is not None and len(folded) > limit:
        return folded[: max(0, limit - 1)] + "…"
    return folded


def markdown_text(text: object) -> str:
    """Node text for Markdown prose: cleaned, on one line, every Markdown and HTML character escaped."""
    plain = one_line(str(text if text is not None else ""))
    plain = plain.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # "://" escaped: a bare URL would become a live link (GFM autolinks).
    return _MARKDOWN.sub(r"\\\1", plain).replace("://", "\\://")


def markdown_code(text: object) -> str:
    """Node text as a Markdown code span: cleaned, on one line, fenced with more backticks than it holds."""
    plain = one_line(str(text if text is not None else ""))
    longest = max((len(run) for run in re.findall(r"`+", plain)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if plain.startswith("`") or plain.endswith("`") or not plain else ""
    return f"{fence}{pad}{plain}{pad}{fence}"


__all__ = ["clean", "clean_deep", "clean_line", "json_is_plain", "markdown_code", "markdown_text", "one_line"]
