"""How the outcome of a manual SIGTERM reads: one line per PID, and the notification's words.

The signals themselves go through :class:`nvls_tui.runbook.session.Session`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nvls_tui.model import Holder


@dataclass(frozen=True, slots=True)
class PidOutcome:
    """What happened to one PID: ``signalled``, ``gone``, ``changed`` (refused) or ``failed``."""

    holder: Holder
    outcome: str
    detail: str = ""

    @property
    def line(self) -> str:
        """``37538(root) dcgm-exporter: signalled`` for the notification."""
        words = {"signalled": "signalled", "gone": "already gone",
                 "changed": "changed since selected, refused", "failed": "failed"}[self.outcome]
        tail = f" ({self.detail})" if self.detail and self.outcome in ("changed", "failed") else ""
        return f"{holder_label(self.holder)}: {words}{tail}"


def holder_label(h: Holder, width: int = 60) -> str:
    """``pid(user) command``, the command shortened to ``width`` characters."""
    command = h.command if len(h.command) <= width else h.command[: width - 1] + "…"
    return f"{h.pid}({h.user}) {command}"


def summarise(host: str, outcomes: Sequence[PidOutcome]) -> tuple[str, Literal["information", "warning"]]:
    """The notification text and severity for a batch of SIGTERMs."""
    lines = [o.line for o in outcomes]
    bad = any(o.outcome in ("changed", "failed") for o in outcomes)
    sent = sum(o.outcome == "signalled" for o in outcomes)
    head = f"SIGTERM on {host}: {sent} of {len(outcomes)} signalled"
    return head + "\n" + "\n".join(lines), "warning" if bad else "information"
