"""A recorded node: captured probe output replayed through the same poll as a live node.

The output of the poll script (``nvls-tui analyze probe-output.txt`` reads the same form, captured by
hand or by srun) is split into sections by the same reader as over SSH, its kernel section folded by
the same ``KernelTail``, and the state built by the same ``poll.once`` path, so a capture from a real
node (tests/fixtures/real) reads exactly as that node's live poll did. Target ``replay:FILE``; each
poll reads the capture again. Nothing runs: every command and signal is refused.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path

from nvls_tui.backends.base import (
    DEFAULT_MAX_OUTPUT,
    Backend,
    CommandResult,
    InvalidArgument,
    ProcessIdentity,
    SignalOutcome,
    Unreachable,
)
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.kernel_tail import KernelTail
from nvls_tui.poll.once import ProbeReading
from nvls_tui.poll.probe import section_argv
from nvls_tui.poll.probe_output import SectionReader, probe_mark

REPLAY_PREFIX = "replay:"


def sections_of(text: str, *, mark: str | None = None, cap: int = DEFAULT_MAX_OUTPUT) -> dict[str, CommandResult]:
    """The sections of one probe output, as the SSH path reads its script's (a section without its end
    marker has exit status -1: it did not finish).

    Args:
        text: the script's output.
        mark: its marker (``@@nvls-tui-NONCE``); None: the first ``begin`` line's.
        cap: characters a section may hold (past it, the section is cut and over the cap).
    """
    mark = mark or probe_mark(text)
    if mark is None:
        return {}
    reader = SectionReader("0", cap, mark=mark)
    reader.feed(text if text.endswith("\n") else text + "\n")
    return {name: CommandResult(argv=section_argv(name), exit_status=-1 if status is None else status,
                                stdout=body, truncated=reader.over_cap(name))
            for name, (status, body) in reader.finish().items()}


class RecordedBackend(Backend):
    """One node read from a captured probe output instead of from the node.

    Args:
        host: the name to show.
        text: the probe output; None reads ``path`` at each poll.
        path: the file it comes from (``replay:FILE``).
        mark: the marker of the output (None: found in it).
        cap: characters a section may hold (``--max-output``).
    """

    def __init__(self, host: str, text: str | None = None, *, path: Path | None = None, mark: str | None = None,
                 cap: int = DEFAULT_MAX_OUTPUT) -> None:
        self.host = host
        self.simulated = False
        self.text = text
        self.path = path
        self.mark = mark
        self.cap = cap
        self.last_exit_status: int | None = None
        self.kernel_tail = KernelTail()
        self.last_assembly = LastAssembly()

    @property
    def read_only(self) -> bool:
        """A recording changes nothing."""
        return True

    def _text(self) -> str:
        if self.text is not None:
            return self.text
        assert self.path is not None
        try:
            with self.path.open(encoding="utf-8", errors="replace") as fh:
                return fh.read(self.cap * 4)  # bounded: a few capped sections' worth of a huge file
        except OSError as exc:
            raise Unreachable(f"{self.host}: the recording cannot be read: {exc.strerror or exc}") from None

    async def read_probe(self) -> ProbeReading:
        """The recording's sections, read as the SSH path reads a live script's output.

        Raises:
            Unreachable: the file cannot be read, or holds no probe output.
        """
        sections = sections_of(self._text(), mark=self.mark, cap=self.cap)  # CommandResult cleans each
        if not sections:
            raise Unreachable(f"{self.host}: the recording holds no probe output (no '@@nvls-tui… begin' line)")
        if (kernel := sections.get("kernel")) is not None:
            sections["kernel"] = self.kernel_tail.take(kernel, None)  # each replay reads the whole boot
        return ProbeReading(sections)

    def _refuse(self, what: str) -> InvalidArgument:
        return InvalidArgument(f"{self.host} is a recording: it does not {what}")

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env: Mapping[str, str] | None = None, stdin: str | None = None,
                  fence: str | None = None) -> CommandResult:
        """Refused: a recording runs nothing."""
        raise self._refuse("run commands")

    async def stream(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, pty: bool = False,
                     privileged: bool = False, fence: str | None = None) -> AsyncGenerator[str, None]:
        """Refused: a recording runs nothing."""
        raise self._refuse("run commands")
        yield ""  # pragma: no cover - makes this an async generator

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity,
                       fence: str | None = None) -> SignalOutcome:
        raise self._refuse("signal processes")


def replay_backend(word: str, cap: int = DEFAULT_MAX_OUTPUT) -> RecordedBackend:
    """The backend of target ``replay:FILE``.

    Raises:
        InvalidArgument: no file named, or it is not a regular file.
    """
    name = word[len(REPLAY_PREFIX):]
    path = Path(name)
    if not name or not path.is_file():
        raise InvalidArgument(f"{word!r}: replay: needs a file of captured probe output (the form `analyze` reads)")
    return RecordedBackend(word, path=path, cap=cap)


__all__ = ["REPLAY_PREFIX", "RecordedBackend", "replay_backend", "sections_of"]
