"""Text that wraps under its own words (a hanging indent), and says ``…`` where a panel cuts it.

A finding is ``error   FM_NOT_RUNNING  nvidia-fabricmanager is failed…``: wrapped as plain text, its
words continued at column 0, under the severity, and where the code filled the line the next line
began with the words (``PLATFORM_UNSUPPORTED`` / ``no NVSwitch``, read together as one). Here every
line a paragraph wraps onto starts under its text, so a code and its words never touch, at any width.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions

# Where a finding's words start after ``error   `` (severity, padded to 7, and a space).
FINDING_INDENT = 8
ELLIPSIS = "…"


def _indent_of(line: str, default: int) -> int:
    """Where a paragraph's wrapped lines start: under its text (after ``↳ `` for an NCCL line)."""
    lead = len(line) - len(line.lstrip(" "))
    if line[lead:].startswith("↳ "):
        return lead + 2
    return lead or default


def _segments(plain: str, first: int, rest: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``plain`` wrapped at spaces: ``first`` cells, then ``rest``."""
    out: list[tuple[int, int]] = []
    start, limit = 0, first
    while cell_len(plain[start:]) > limit:
        end = start
        while end < len(plain) and cell_len(plain[start:end + 1]) <= limit:
            end += 1
        cut = plain.rfind(" ", start, end + 1)
        if cut <= start:  # one word longer than the line: fold it
            cut = max(end, start + 1)
        end_text = cut
        while end_text > start and plain[end_text - 1] == " ":  # no trailing blanks before the break
            end_text -= 1
        out.append((start, end_text if end_text > start else cut))
        start = cut
        while start < len(plain) and plain[start] == " ":
            start += 1
        limit = rest
    if start < len(plain) or not out:
        out.append((start, len(plain)))
    return out


def hang(text: Text, width: int, indent: int = FINDING_INDENT) -> Text:
    """``text`` with explicit line breaks for ``width`` cells, each wrapped line indented under its paragraph.

    Args:
        text: paragraphs separated by ``\\n``.
        width: the cells a line may take.
        indent: where wrapped lines start when the paragraph itself starts at column 0.
    """
    out = Text(style=text.style)
    for i, para in enumerate(text.split("\n", allow_blank=True)):
        if i:
            out.append("\n")
        plain = para.plain
        lead = min(_indent_of(plain, indent), max(0, width - 8))  # keep some room for words
        for n, (start, end) in enumerate(_segments(plain, max(1, width), max(1, width - lead))):
            if n:
                out.append("\n" + " " * lead)
            out.append_text(para[start:end])
    return out


class Hanging(Content):
    """Content laid out with :func:`hang` at whatever width it is given; ``str()`` is the plain text.

    Where the height given is smaller than the text, the last line shown ends in ``…``: a panel never
    cuts a finding without a mark.
    """

    def __init__(self, text: Text, indent: int = FINDING_INDENT) -> None:
        whole = Content.from_rich_text(text)
        super().__init__(whole.plain, list(whole.spans))
        self._source = text
        self._indent = indent

    def at(self, width: int) -> Content:
        """The content with its line breaks for ``width`` cells."""
        return Content.from_rich_text(hang(self._source, width, self._indent))

    def get_height(self, rules: RulesMap, width: int) -> int:
        """The number of lines at ``width``."""
        return self.at(width).get_height(rules, width)

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        """The lines at ``width``; the last one shown ends in ``…`` when ``height`` cuts the rest."""
        lines = self.at(width).render_strips(width, None, style, options)
        if height is None or len(lines) <= height or height <= 0:
            return lines
        kept = lines[:height]
        last = kept[-1].crop(0, max(0, width - 1))
        return [*kept[:-1], Strip.join([last, Strip([Segment(ELLIPSIS, style.rich_style)])])]


__all__ = ["ELLIPSIS", "FINDING_INDENT", "Hanging", "hang"]
