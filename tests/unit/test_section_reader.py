"""The probe's section reader finds its markers in bulk; it reads exactly as a line-by-line reader would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.poll.probe_output import SectionReader

NONCE = "0123456789abcdef"
MARK = f"@@nvls-tui-{NONCE}"


class LineReader:
    """The reference: every line looked at in turn (the reader as it was written first)."""

    def __init__(self, cap: int) -> None:
        self.mark, self.cap = MARK + " ", cap
        self.sections: dict[str, tuple[int | None, str]] = {}
        self.overflow: str | None = None
        self.current: str | None = None
        self.body: list[str] = []
        self.size = 0
        self.partial = ""

    def feed(self, chunk: str) -> bool:
        if self.overflow is not None:
            return False
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        for line in lines:
            if not self.line(line):
                return False
        if len(self.partial) > self.cap:
            return self.over()
        return True

    def line(self, line: str) -> bool:
        if line.startswith(self.mark):
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "begin":
                self.close(None)
                self.current, self.body, self.size = parts[2], [], 0
                return True
            if len(parts) >= 3 and parts[1] == "end" and self.current == parts[2]:
                self.close(int(parts[3]) if len(parts) > 3 and parts[3].lstrip("-").isdigit() else None)
                return True
        if self.current is None:
            return True
        self.size += len(line) + 1
        if self.size > self.cap:
            return self.over()
        self.body.append(line)
        return True

    def over(self) -> bool:
        self.overflow = self.current
        self.close(None)
        return False

    def close(self, status: int | None) -> None:
        if self.current is not None:
            self.sections[self.current] = (status, "\n".join(self.body) + ("\n" if self.body else ""))
        self.current, self.body, self.size = None, [], 0

    def finish(self) -> dict[str, tuple[int | None, str]]:
        if self.overflow is None and self.partial:
            self.line(self.partial)
        self.partial = ""
        self.close(None)
        return self.sections


names = st.sampled_from(["gpus", "units", "kernel", "holders", "x"])
plain = st.text(alphabet="ab \t\r@-0123456789n", max_size=30)
marker = st.builds(lambda kind, name, status: f"{MARK} {kind} {name}{status}",
                   st.sampled_from(["begin", "end", "middle", ""]), names,
                   st.sampled_from(["", " 0", " 1", " -1", " x", " 2 3"]))
forged = st.builds(lambda kind, name: f"@@nvls-tui-ffffffffffffffff {kind} {name}", st.sampled_from(["begin", "end"]),
                   names)
lines = st.lists(st.one_of(plain, marker, forged, st.builds(lambda line: " " + line, marker)), max_size=40)


@settings(max_examples=300)
@given(lines, st.booleans(), st.lists(st.integers(1, 60), min_size=1, max_size=8), st.integers(1, 200))
def test_the_bulk_reader_reads_every_output_as_the_line_reader_does(body, last_newline, cuts, cap):
    text = "\n".join(body) + ("\n" if last_newline and body else "")
    chunks, at, i = [], 0, 0
    while at < len(text):  # the output as SSH hands it over: pieces of any size, lines cut anywhere
        chunks.append(text[at:at + cuts[i % len(cuts)]])
        at += cuts[i % len(cuts)]
        i += 1
    bulk, line = SectionReader(NONCE, cap), LineReader(cap)
    for chunk in chunks:
        ok_bulk, ok_line = bulk.feed(chunk), line.feed(chunk)
        assert ok_bulk == ok_line
        assert bulk.current == line.current
        if not ok_line:
            break
    assert bulk.finish() == line.finish()
    assert bulk.overflow == line.overflow
