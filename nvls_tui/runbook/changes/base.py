"""What every change is: where it runs, the command lines that make it (rendered here and in the modules of this
package, nowhere else), why it is made, how it reads in a plan and what puts it back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nvls_tui.backends.base import join_argv

NODE, SCHEDULER, CLUSTER = "node", "scheduler", "cluster"

Argv = tuple[str, ...]

#: What sets a plan line's note apart from its command (every change's, read's and wait's: one mark, so that a
#: reader of the lines, the plan screen's, splits them one way).
NOTE_MARK = "  # "


def noted(line: str, note: str) -> str:
    """A plan line with its note after :data:`NOTE_MARK` (none: the line alone)."""
    return f"{line}{NOTE_MARK}{note}" if note else line


@dataclass(frozen=True, slots=True)
class Command:
    """One command line of a change: its argv, its environment and what it is given on stdin."""

    argv: Argv
    env: tuple[tuple[str, str], ...] = ()
    stdin: str | None = None
    # Behind the lock's fence while the run holds the lock (only some of the lock's own commands are not:
    # see :class:`TakeLock`, :class:`WriteOwner`, :class:`ReleaseLock`, :class:`GiveBackLock`).
    fenced: bool = True


class Change:
    """What every change is (a base for the frozen dataclasses below; it holds no field)."""

    __slots__ = ()
    where: ClassVar[str] = NODE
    # Needs root on the node (``sudo -n`` where the backend was asked to use it).
    privileged: ClassVar[bool] = True
    # The repair's own bookkeeping on the node (its lock and record): the plan screen and the report's
    # timeline fold these into one line instead of listing them.
    bookkeeping: ClassVar[bool] = False

    def commands(self) -> tuple[Command, ...]:
        """The command lines that make the change, in order."""
        raise NotImplementedError

    def argvs(self) -> tuple[Argv, ...]:
        """Every command line's argv, in order (what a plan and a run are compared by)."""
        return tuple(c.argv for c in self.commands())

    def argv(self) -> Argv:
        """The one command line of a change made by one (a file written takes three: see :meth:`argvs`)."""
        argvs = self.argvs()
        if len(argvs) != 1:
            raise ValueError(f"{type(self).__name__} takes {len(argvs)} commands: use argvs()")
        return argvs[0]

    @property
    def why(self) -> str:
        """Why the change is made, in the operator's words."""
        raise NotImplementedError

    @property
    def note(self) -> str:
        """What the plan says after the command line (``#``); empty for none."""
        return ""

    @property
    def display(self) -> str:
        """The change as one line of the plan (the first command; the others follow in :attr:`lines`)."""
        return self.lines[0]

    @property
    def lines(self) -> tuple[str, ...]:
        """One plan line per command: ``systemctl stop apt-daily.timer  # held for the repair ...``."""
        out = list(self.command_lines())
        out[0] = noted(out[0], self.note)
        return tuple(out)

    def command_lines(self) -> tuple[str, ...]:
        """Each command line as a shell reads it, without the plan's note."""
        return tuple(join_argv(command.argv, dict(command.env)) for command in self.commands())

    def undo(self) -> Change | None:
        """The change that puts this one back (None: nothing can, or nothing needs to)."""
        return None

    def planned(self) -> Change:
        """The change as a plan can know it: what only the run learns (a label write's resourceVersion, the
        path of an eviction's body file) left out. A plan and a run are compared by this."""
        return self


__all__ = ["Argv", "CLUSTER", "Change", "Command", "NODE", "NOTE_MARK", "SCHEDULER", "noted"]
