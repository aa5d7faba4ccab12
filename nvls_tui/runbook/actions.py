"""What the node screen's destructive actions do: SIGTERM selected holders, stop/start units.

The async functions here talk to a Backend only and return outcomes; the screen turns them into a
notification. Every PID goes out with the identity the operator selected, and the backend refuses
(``ProcessChanged``) a PID that now belongs to another process.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass

from nvls_tui.backends.base import (
    Backend,
    BackendError,
    CommandResult,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    validate_unit,
)
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


async def sigterm_holders(backend: Backend, holders: Sequence[Holder]) -> list[PidOutcome]:
    """SIGTERM each holder whose identity still matches; one outcome per PID, never raises."""
    outcomes: list[PidOutcome] = []
    for h in holders:
        identity = ProcessIdentity(h.pid, h.start_time, h.command)
        try:
            result = await backend.signal(h.pid, signal.SIGTERM, identity)
        except ProcessGone as exc:
            outcomes.append(PidOutcome(h, "gone", str(exc)))
        except ProcessChanged as exc:
            outcomes.append(PidOutcome(h, "changed", str(exc)))
        except BackendError as exc:
            outcomes.append(PidOutcome(h, "failed", str(exc)))
        else:
            outcomes.append(PidOutcome(h, "signalled" if result.signalled else "failed", result.reason))
    return outcomes


def summarise(host: str, outcomes: Sequence[PidOutcome]) -> tuple[str, str]:
    """The notification text and severity for a batch of SIGTERMs."""
    lines = [o.line for o in outcomes]
    bad = any(o.outcome in ("changed", "failed") for o in outcomes)
    sent = sum(o.outcome == "signalled" for o in outcomes)
    head = f"SIGTERM on {host}: {sent} of {len(outcomes)} signalled"
    return head + "\n" + "\n".join(lines), "warning" if bad else "information"


async def unit_action(backend: Backend, verb: str, unit: str, timeout: float | None = None) -> CommandResult:
    """``systemctl stop|start UNIT`` (privileged); raises BackendError subclasses on failure to run."""
    if verb not in ("stop", "start"):
        raise ValueError(f"unit action must be stop or start, not {verb!r}")
    return await backend.run(["systemctl", verb, validate_unit(unit)], timeout, privileged=True)


def unit_outcome(host: str, verb: str, unit: str, result: CommandResult | Exception) -> tuple[str, str]:
    """The notification text and severity of a unit stop/start."""
    if isinstance(result, Exception):
        return f"{verb} {unit} on {host} failed: {result}", "error"
    if result.ok:
        return f"{unit} on {host}: {'stopped' if verb == 'stop' else 'started'}", "information"
    first = (result.stderr or result.stdout).strip().splitlines()
    why = first[0] if first else f"exit status {result.exit_status}"
    return f"{verb} {unit} on {host} failed: {why}", "error"
