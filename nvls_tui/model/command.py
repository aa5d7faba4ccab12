"""One finished command on a node: the unit every reading of a node is made of.

It lives in the model (not with the backends) so that the pure layers (probe assembly, evidence,
the runbook's steps) read command results without importing any transport.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvls_tui.textsafe import clean


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One finished command: what ran, how it ended, what it printed.

    Attributes:
        exit_status: the command's own status; -1 when it never reported one (it was stopped, or
            the link dropped before its end).
        truncated: the command printed more than the byte cap and was stopped; the output is the
            head that arrived before that.
    """

    argv: tuple[str, ...]
    exit_status: int
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    truncated: bool = False

    def __post_init__(self) -> None:
        # The one door every byte from a node comes through: escapes and controls stop here.
        object.__setattr__(self, "stdout", clean(self.stdout))
        object.__setattr__(self, "stderr", clean(self.stderr))

    @property
    def ok(self) -> bool:
        """True when the command exited 0."""
        return self.exit_status == 0

    @property
    def output(self) -> str:
        """stdout and stderr together (fuser -v writes its table to stderr)."""
        if self.stdout and self.stderr:
            return self.stdout + ("" if self.stdout.endswith("\n") else "\n") + self.stderr
        return self.stdout or self.stderr


__all__ = ["CommandResult"]
