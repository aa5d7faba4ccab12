"""What the poll needs of a way to reach a node: the ``Transport`` protocol, and the step it waits on.

The poll layer sits below the transports (``nvls_tui.backends``): it says what it needs and they
provide it, so :func:`nvls_tui.poll.once.poll_once` and the console's ``NodePoller`` serve every
transport without importing any of them. ``backends.base.Backend`` is the one implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from nvls_tui.model import NodeState


@dataclass(frozen=True, slots=True)
class Activity:
    """What a transport is waiting on now: a command of the poll, or a step with no command.

    Data, not words for the operator: the CLI decides how to show it (and cleans it: a command line
    is shown as the node would run it).

    Attributes:
        argv: the command being waited on (empty while in a step with no command of its own).
        phase: that step, as a short phrase (``connecting``), when ``argv`` is empty.
        since: ``time.monotonic()`` when it began.
    """

    argv: tuple[str, ...] = ()
    phase: str = ""
    since: float = 0.0


class Transport(Protocol):
    """One node as the poll reaches it.

    Attributes:
        host: the target as shown to the operator.
        simulated: True when the node is simulated.
    """

    host: str
    simulated: bool

    @property
    def activity(self) -> Activity | None:
        """The step begun most recently and not finished (None when idle): what a hung poll is stuck in."""
        ...

    async def snapshot(self) -> NodeState:
        """Read the node once; a node that could not be reached is ``reachable=False`` with ``error``."""
        ...


__all__ = ["Activity", "Transport"]
