"""needrestart's and apt's configuration, read again only when its files change: a stamp kept per node.

Every poll used to run ``grep`` over needrestart's configuration and ``apt-config dump`` (two processes)
on the node, for files that change with a package upgrade or an operator's edit, months apart. The probe
now stamps those files with one ``find`` (size, mtime and ctime of each, see
:data:`nvls_tui.poll.probe.CONFIG_STAMP_ARGV`) and compares the stamp with the one the bastion sends:

- the same: the node does not read them, and their sections end in ``unchanged``; :class:`ConfigCache`
  answers them with the sections of the poll that last read them;
- different, or no stamp sent (the first poll, nothing kept): the node reads them and prints the new
  stamp (the ``config_stamp`` section), which is kept with the two sections for the next poll.

Fail closed: a stamp is kept only with both sections read whole (not cut, not timed out, not missing its
end); a stamp the node could not take (a folder it cannot read, ``find`` missing: no ``config_stamp``
section) keeps nothing, so the next poll reads again. An ``unchanged`` section with nothing kept (which a
node only says when sent a stamp) stays unread (exit status -1): missing evidence, never an empty
configuration. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nvls_tui.model import CommandResult
from nvls_tui.poll.evidence import TIMED_OUT_STATUS
from nvls_tui.poll.probe import CONFIG_SECTIONS, CONFIG_STAMP, CONFIG_STAMP_MAX


@dataclass
class ConfigCache:
    """One node's needrestart and apt sections, and the stamp of their files when they were read.

    Attributes:
        stamp: the stamp to send with the next poll (None: the next poll reads the files).
        sections: the sections read with that stamp.
        hits: polls answered from the kept sections (for tests and the bench).
    """

    stamp: str | None = None
    sections: dict[str, CommandResult] = field(default_factory=dict)
    hits: int = 0

    def reset(self) -> None:
        """Keep nothing: the next poll reads the files."""
        self.stamp, self.sections = None, {}

    def take(self, sections: dict[str, CommandResult], unchanged: set[str]) -> dict[str, CommandResult]:
        """Fold one poll's sections: answer the ``unchanged`` ones from what is kept, keep a new stamp.

        Args:
            sections: the poll's sections as read (the ``config_stamp`` one is taken out of it).
            unchanged: the sections whose end marker said the node did not read them.

        Returns:
            ``sections`` without ``config_stamp``, the unchanged ones answered from the kept poll.
        """
        printed = sections.pop(CONFIG_STAMP, None)
        if unchanged:
            if self.stamp is not None and all(n in self.sections for n in unchanged):
                self.hits += 1
                sections.update({n: self.sections[n] for n in unchanged if n in sections})
            else:
                self.reset()
            return sections
        stamp = _stamp_of(printed)
        read = {n: sections[n] for n in CONFIG_SECTIONS if n in sections}
        if stamp is not None and len(read) == len(CONFIG_SECTIONS) and all(_whole(r) for r in read.values()):
            self.stamp, self.sections = stamp, read
        elif read:
            self.reset()  # read again without a stamp to keep: the next poll reads too
        return sections


def _stamp_of(result: CommandResult | None) -> str | None:
    """The stamp as the script holds it (``$cs``: no final newline), or None when none can be kept."""
    if result is None or result.exit_status != 0 or result.truncated:
        return None
    text = result.stdout[:-1] if result.stdout.endswith("\n") else result.stdout
    return text if text and len(text) <= CONFIG_STAMP_MAX else None


def _whole(result: CommandResult) -> bool:
    """A section that finished and was not cut: fit to answer later polls with."""
    return not result.truncated and result.exit_status not in (-1, TIMED_OUT_STATUS)


def without_stamp(sections: Mapping[str, CommandResult]) -> dict[str, CommandResult]:
    """The sections without ``config_stamp`` (for the readers that keep no stamp)."""
    return {k: v for k, v in sections.items() if k != CONFIG_STAMP}


__all__ = ["ConfigCache", "without_stamp"]
