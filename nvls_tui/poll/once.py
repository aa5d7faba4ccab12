"""One poll of one node, the same for every caller and every transport.

A transport (SSH, the simulator, this machine, a recording, one srun task) only reads: it hands back
the probe's sections in a :class:`ProbeReading`. :func:`build_state` turns that into a ``NodeState``
(through the transport's ``LastAssembly``, so an unchanged node is not parsed again), and
:func:`poll_once` is the one way the console's poller, ``check`` and ``check --via slurm`` poll: under
one deadline, whatever goes wrong becomes an unreachable state with the reason, never an exception.

``--timeout`` is per command: a transport cuts off a hung command alone (its section timed out, the
rest read), so a poll takes at most about one timeout more per hung command than a healthy one. The
deadline here is only the backstop for a node stuck in more than that (or in a step with no command).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nvls_tui.model import CommandResult, GpuState, Holder, MissingEvidence, NodeState
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.transport import Activity, Transport
from nvls_tui.textsafe import one_line

# Commands' worth of time a whole poll may take before the node counts as unreachable: each command
# has --timeout, and a hung one costs the poll one of them.
DEADLINE_COMMANDS = 3
REASON_CHARS = 60


def poll_deadline(command_timeout: float) -> float:
    """Seconds a whole poll may take, from the per-command ``--timeout``."""
    return command_timeout * DEADLINE_COMMANDS


@dataclass(frozen=True, slots=True)
class ProbeReading:
    """What a transport read of one node.

    Attributes:
        sections: the probe's sections (``nvls_tui.poll.probe.SECTION_NAMES``); an absent one never ran.
        simulated: the transport reaches a simulated node.
        sudo: the privileged sections ran under ``sudo -n``.
        polled_at: wall-clock time of the read (None: not stamped here).
        gpus, driver, holders: read another way (NVML and /proc on this machine), else None.
        missing: evidence the transport itself could not read.
    """

    sections: Mapping[str, CommandResult]
    simulated: bool = False
    sudo: bool = False
    polled_at: float | None = None
    gpus: tuple[GpuState, ...] | None = None
    driver: str | None = None
    holders: tuple[Holder, ...] | None = None
    missing: Sequence[MissingEvidence] = ()


def build_state(host: str, reading: ProbeReading, last: LastAssembly) -> NodeState:
    """The node's state from one reading (from ``last`` when nothing but the clock moved)."""
    options: dict = {"simulated": reading.simulated}
    if reading.sudo:
        options["sudo"] = True
    if reading.polled_at is not None:
        options["polled_at"] = reading.polled_at
    if reading.gpus is not None:
        options.update(gpus=reading.gpus, driver=reading.driver)
    if reading.holders is not None:
        options["holders"] = reading.holders
    if reading.missing:
        options["missing"] = tuple(reading.missing)
    return last.assemble(host, reading.sections, **options)


def no_answer(deadline: float, hung: Activity | None) -> str:
    """The unreachable reason of a node cut off at the deadline, naming what it was stuck in."""
    said = f"no answer within {deadline:g} s"
    if hung is None:
        return said
    if hung.argv:
        return f"{said}: `{one_line(shlex.join(hung.argv), REASON_CHARS)}` did not finish"
    return f"{said}: still {one_line(hung.phase, REASON_CHARS)}"


def _unreachable(backend: Transport, error: str) -> NodeState:
    return NodeState(host=backend.host, reachable=False, simulated=backend.simulated, error=error)


async def poll_once(backend: Transport, deadline: float) -> NodeState:
    """Poll ``backend``'s node once; never raises (but on cancellation, which stops the poll too).

    Past ``deadline`` the reason names the command (or step) the poll was stuck in: it is read before
    the poll is stopped, since a stopped poll goes idle.
    """
    task = asyncio.ensure_future(backend.snapshot())
    try:
        done, _ = await asyncio.wait({task}, timeout=deadline)
    except asyncio.CancelledError:  # Ctrl-C, a console closing: stop the poll (its commands on the node)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if not done:
        hung = backend.activity
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return _unreachable(backend, no_answer(deadline, hung))
    try:
        return task.result()
    except TimeoutError:
        return _unreachable(backend, no_answer(deadline, None))
    except OSError as exc:
        return _unreachable(backend, exc.strerror or str(exc))
    except Exception as exc:  # noqa: BLE001 - a transport's bug reads as a node not read, never a crash
        return _unreachable(backend, str(exc) or type(exc).__name__)


__all__ = ["DEADLINE_COMMANDS", "ProbeReading", "build_state", "no_answer", "poll_deadline", "poll_once"]
