"""A simulated node whose simulator lives in the console's poller process.

The console's poller process (``nvls_tui.poll.client``) owns the simulated fleet its polls read, so a
simulated node changes in one place only: an action's commands (the session has audited them, as
for any backend) travel to that process and run there (:class:`PollerHeldBackend`), and the next
poll reads what they did. The console keeps the fleet's clock (a frozen clock is moved by the
runbook); each request carries it and each answer brings the process's back.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol

from nvls_tui.backends.base import Backend, CommandResult, ProcessIdentity, SignalOutcome, Unreachable
from nvls_tui.model import NodeState
from nvls_tui.poll.client import PollerGone
from nvls_tui.poll.once import ProbeReading


class NodeRequests(Protocol):
    """What this backend asks of the poller process (``PollerClient``)."""

    async def call(self, host: str, op: str, *args: Any, clock: Any = None, **kwargs: Any) -> Any:
        """Run ``op`` on ``host`` there."""
        ...

    def stream(self, host: str, argv: Sequence[str], *, clock: Any = None, on_end: Any = None,
               **kwargs: Any) -> AsyncGenerator[str, None]:
        """Stream a command's lines there."""
        ...


class PollerHeldBackend(Backend):
    """A simulated node reached through the poller process that holds it.

    Args:
        local: the console's own backend of the node (its fleet gives the clock; it runs nothing).
        requests: the poller process's client.
    """

    simulated = True

    def __init__(self, local: Any, requests: NodeRequests) -> None:
        self.local = local
        self.requests = requests
        self.host = local.host
        self.fleet = local.fleet  # repair_options reads the simulated clock from here
        self.timeout = local.timeout
        self.max_output = local.max_output
        self._read_only = local.read_only
        self.last_exit_status: int | None = None
        self.last_assembly = local.last_assembly

    async def _ask(self, op: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self.requests.call(self.host, op, *args, clock=self.fleet.clock, **kwargs)
        except PollerGone as exc:
            raise Unreachable(f"{self.host}: {exc}") from None

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env: Mapping[str, str] | None = None, stdin: str | None = None,
                  fence: str | None = None) -> CommandResult:
        """Run one command on the node, in the poller process."""
        return await self._ask("run", tuple(argv), timeout, privileged=privileged,
                               env=dict(env) if env is not None else None, stdin=stdin, fence=fence)

    async def stream(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, pty: bool = False,
                     privileged: bool = False, fence: str | None = None) -> AsyncGenerator[str, None]:
        """Yield the command's lines as the poller process runs it at the tool's pace."""
        self.last_exit_status = None

        def ended(status: int | None) -> None:
            self.last_exit_status = status

        lines = self.requests.stream(self.host, tuple(argv), clock=self.fleet.clock, on_end=ended,
                                     env=dict(env) if env is not None else None, pty=pty, privileged=privileged,
                                     fence=fence)
        try:
            async with contextlib.aclosing(lines):
                async for line in lines:
                    yield line
        except PollerGone as exc:
            raise Unreachable(f"{self.host}: {exc}") from None

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity,
                       fence: str | None = None) -> SignalOutcome:
        """Re-read and signal in the poller process (``signal()`` checked the request here first)."""
        return await self._ask("deliver", pid, sig, expected, fence)

    async def read_probe(self) -> ProbeReading:
        """The probe's sections, read in the poller process."""
        return await self._ask("read_probe")

    async def snapshot(self) -> NodeState:
        """The node's state read in the poller process (through its poll state, as in process)."""
        try:
            return await self._ask("snapshot")
        except Unreachable as exc:
            return NodeState(host=self.host, reachable=False, simulated=True, error=str(exc))


__all__ = ["NodeRequests", "PollerHeldBackend"]
