"""A probe's output read back into its sections: ``{section: (exit status, text)}``.

The probe script (``poll/probe.py``) prints each section between a begin and an end marker carrying a
random nonce per poll, so no text on the node can end a section early; this module reads that output,
whole (:func:`split_probe_output`, a captured paste) or as it streams in under a size cap per section
(:class:`SectionReader`, a live poll).
"""

from __future__ import annotations

from nvls_tui.poll.probe import (
    FILE_SECTIONS,
    FILE_STATUS_WORD,
    MARK,
    NEWLINE_ADDED,
    OVER_CAP_WORD,
    UNCHANGED_WORD,
    file_status,
)


def _end_status(name: str, word: str, body: str) -> int | None:
    """A section's exit status from its end marker's word: a number, or (FILE_STATUS_WORD) from its text."""
    if word == FILE_STATUS_WORD and name in FILE_SECTIONS:
        return file_status(body)
    return int(word) if word.lstrip("-").isdecimal() else None


def split_probe_output(text: str, nonce: str = "0", *, mark: str | None = None) -> dict[str, tuple[int | None, str]]:
    """Split a probe script's output into ``{section: (exit status, text)}``.

    A section whose end marker never came (the link dropped, a command hung) has exit status None.
    Only lines with this poll's nonce count as markers (``mark`` overrides the whole marker, for
    captured outputs of older probes, whose marker was the bare ``@@nvls-tui``).
    """
    mark = mark or f"{MARK}-{nonce}"
    sections: dict[str, tuple[int | None, str]] = {}
    current: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith(mark + " "):
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "begin":
                if current is not None:
                    sections[current] = (None, "\n".join(body) + ("\n" if body else ""))
                current, body = parts[2], []
                continue
            if len(parts) >= 3 and parts[1] == "end" and current == parts[2]:
                text = "\n".join(body) + ("\n" if body else "")
                text = text[:-1] if current in NEWLINE_ADDED and text else text
                sections[current] = (_end_status(current, parts[3] if len(parts) > 3 else "", text), text)
                current = None
                continue
        if current is not None:
            body.append(line)
    if current is not None:
        sections[current] = (None, "\n".join(body) + ("\n" if body else ""))
    return sections


class SectionReader:
    """Splits a probe's output into sections as it arrives, holding at most ``cap`` characters of each.

    Fed chunk by chunk (:meth:`feed`); once a section passes the cap it stops: that section is kept
    cut (``overflow`` names it) and the caller stops the script, so a tool that prints without end
    costs the bastion ``cap`` characters, not its memory.
    """

    def __init__(self, nonce: str, cap: int, *, mark: str | None = None) -> None:
        # ``mark`` overrides the whole marker (a captured output's, see :func:`probe_mark`).
        self.mark = f"{mark or f'{MARK}-{nonce}'} "
        self.cap = cap
        self.sections: dict[str, tuple[int | None, str]] = {}
        self.overflow: str | None = None
        self._cut_on_node: set[str] = set()
        # The sections the node did not re-read (UNCHANGED_WORD): the caller answers them from its last poll.
        self.unchanged: set[str] = set()
        self._current: str | None = None
        self._body: list[str] = []
        self._size = 0
        self._partial = ""

    @property
    def current(self) -> str | None:
        """The section that began and has not ended yet (the command running now), or None."""
        return self._current

    def feed(self, chunk: str) -> bool:
        """Take the next piece of output. False when a section went past the cap (stop the script)."""
        if self.overflow is not None:
            return False
        text = self._partial + chunk
        end = text.rfind("\n") + 1  # complete lines are read now; the rest waits for its newline
        self._partial = text[end:]
        if end and not self._lines(text, end):
            return False
        if len(self._partial) > self.cap:  # one endless line
            return self._over()
        return True

    def _lines(self, text: str, stop: int) -> bool:
        """Read ``text[:stop]`` (whole lines): the marker lines one by one, the bodies between them in
        one piece each (a poll's 40 KB are a dozen finds, not a thousand lines split and joined)."""
        mark, at = self.mark, 0
        while at < stop:
            found = text.find(mark, at, stop)
            while found > 0 and text[found - 1] != "\n":  # a marker only counts at the start of a line
                found = text.find(mark, found + 1, stop)
            if found < 0:
                return self._take(text[at:stop])
            if found > at and not self._take(text[at:found]):
                return False
            eol = text.index("\n", found) + 1
            if not self._marker(text[found:eol]):
                return False
            at = eol
        return True

    def _marker(self, line: str) -> bool:
        """A line that starts with the marker: a section begins or ends, or it is a body line after all."""
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "begin":
            self._close(None)
            self._current, self._body, self._size = parts[2], [], 0
            return True
        if len(parts) >= 3 and parts[1] == "end" and self._current == parts[2]:
            word = parts[3] if len(parts) > 3 else ""
            if word == OVER_CAP_WORD:
                self._cut_on_node.add(parts[2])
            elif word == UNCHANGED_WORD:
                self.unchanged.add(parts[2])
            if self._current in NEWLINE_ADDED and self._body:
                self._body[-1] = self._body[-1][:-1]  # the script's own newline (NEWLINE_ADDED)
            self._close(_end_status(self._current, word, "".join(self._body)))
            return True
        return self._take(line)

    def over_cap(self, name: str) -> bool:
        """Whether section ``name`` passed the cap: here (:attr:`overflow`) or on the node (``over-cap``)."""
        return name == self.overflow or name in self._cut_on_node

    def _take(self, lines: str) -> bool:
        """Whole lines of the current section's body (nothing is kept between sections)."""
        if self._current is None:
            return True
        if self._size + len(lines) > self.cap:
            # Keep the lines that fit whole, as a reader going line by line would have.
            cut = lines.rfind("\n", 0, self.cap - self._size) + 1
            self._body.append(lines[:cut])
            return self._over()
        self._size += len(lines)
        self._body.append(lines)
        return True

    def _over(self) -> bool:
        self.overflow = self._current
        self._close(None)
        return False

    def _close(self, status: int | None) -> None:
        if self._current is not None:
            self.sections[self._current] = (status, "".join(self._body))
        self._current, self._body, self._size = None, [], 0

    def finish(self) -> dict[str, tuple[int | None, str]]:
        """The sections read (a section without its end marker has status None)."""
        if self.overflow is None and self._partial:
            self._lines(self._partial + "\n", len(self._partial) + 1)
        self._partial = ""
        self._close(None)
        return self.sections


def probe_mark(text: str) -> str | None:
    """The marker of a captured probe output (its first ``... begin NAME`` line), or None."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[1] == "begin" and (words[0] == MARK or words[0].startswith(MARK + "-")):
            return words[0]
    return None


__all__ = ["SectionReader", "probe_mark", "split_probe_output"]
