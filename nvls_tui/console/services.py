"""What a console screen is given when it is made: :class:`ConsoleServices`.

A screen does not reach through ``self.app`` for the fleet, the session or a backend: the App makes
one :class:`ConsoleServices` when it starts and hands it to every screen it makes, and a screen hands
it on to the screens it opens. A test can build a screen with services of its own (a real session
over simulated backends, a fixed clock) and mount it in a bare Textual App.

The two protocols say the little a screen asks of the console beyond plain values: the live fleet it
draws and follows (:class:`LiveFleet`), and the console-wide moves it starts (:class:`ConsoleActions`:
an action in a worker that outlives the screen, a poll now, another screen). The App implements both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.message_pump import MessagePump
    from textual.screen import Screen
    from textual.worker import Worker

    from nvls_tui.backends.base import Backend
    from nvls_tui.console.ask import AskMode
    from nvls_tui.kube.client import Kubectl
    from nvls_tui.model import Fleet, Verdict
    from nvls_tui.model.node import Diagnosis
    from nvls_tui.runbook.session import Session


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """The console's settings a screen reads (fixed for the console's life).

    Attributes:
        read_only: hide and refuse every action that changes a node.
        simulated: some node is simulated (the banner says so from the start).
        periodic: nodes are polled again and again (False: once each, as tests and snapshots do),
            so ages move and screens refresh them.
        timeout: per-command timeout, for the options of a repair or a single action.
        repair: how a repair runs (``wait_pods``, ``sigkill`` ...: ``RepairSettings.tunables``), the command
            line's and the config file's, for the options of a repair or a single action as headless builds them.
    """

    read_only: bool = False
    simulated: bool = False
    periodic: bool = True
    timeout: float = 20.0
    repair: Mapping[str, Any] = field(default_factory=dict)


class LiveFleet(Protocol):
    """The latest state of every node, and a way to follow it."""

    @property
    def fleet(self) -> Fleet:
        """The latest state of every node."""
        ...

    @property
    def diagnoses(self) -> Mapping[str, Diagnosis]:
        """Each polled node's findings and verdict."""
        ...

    def verdict(self, host: str) -> Verdict | None:
        """The node's verdict, or None before its first poll."""
        ...

    def follow(self, watcher: DOMNode, callback: Callable[[Fleet], None]) -> None:
        """Call ``callback`` with the new fleet on every change, for as long as ``watcher`` is mounted."""
        ...

    def cluster_of(self, host: str) -> Kubectl | None:
        """The kubectl of the Kubernetes cluster that has ``host``'s node (what describe reads events with), or
        None where no cluster is configured for it."""
        ...


class ConsoleActions(Protocol):
    """The moves a screen starts that belong to the whole console."""

    def start_action(self, description: str, work: Awaitable[None], *, hosts: Sequence[str] = ()) -> Worker[Any]:
        """Run an action that changes ``hosts`` in a worker that outlives the screen (``q`` asks first)."""
        ...

    def poll_now(self, host: str | None = None) -> None:
        """Poll ``host`` (or every node) now."""
        ...

    def open_node(self, host: str) -> None:
        """Show the node screen of ``host``."""
        ...

    def plan_repair(self, hosts: Sequence[str], *, reply_to: MessagePump | None = None) -> None:
        """Show the dry run of ``hosts``; its approval (``PlanApproved``) goes to ``reply_to`` first."""
        ...

    def hold_for_plan(self, screen: Screen[Any]) -> None:
        """Keep the keys typed after ``r`` for the plan's typed confirmation."""
        ...

    def hold_keys_for(self, ready: Callable[[], bool | None], what: str) -> None:
        """Keep the keys typed after a key that opens ``what`` until ``ready()`` says it has the focus (True:
        replay them there, in order) or never will (False: drop them); widgets/key_hold.py."""
        ...


@dataclass(frozen=True, slots=True)
class ConsoleServices:
    """Everything a console screen needs, handed to it when it is made.

    Attributes:
        live: the fleet and its diagnoses, followed as polls come in.
        session: every node-changing action goes through it (audited, polls paused, the ledger).
        backend_for: the backend that reaches a host (for a repair's options).
        clock: time source for poll ages.
        settings: read-only, simulated, periodic polls, the per-command timeout.
        actions: the console-wide moves (actions in workers, polls, other screens).
        ask: the autopilot's ask mode (its proposals, the approval), or None where it is off.
    """

    live: LiveFleet
    session: Session
    backend_for: Callable[[str], Backend]
    clock: Callable[[], float]
    settings: ConsoleSettings
    actions: ConsoleActions
    ask: AskMode | None = None


def services_of(app: object) -> ConsoleServices:
    """The services the console's App hands every screen (``NvlsApp.services``). The App sits above the
    screens and this module, so they reach it through this, never by importing it."""
    services = getattr(app, "services", None)
    if not isinstance(services, ConsoleServices):
        raise TypeError(f"{type(app).__name__} is not the console's App: it has no ConsoleServices")
    return services


__all__ = ["ConsoleActions", "ConsoleServices", "ConsoleSettings", "LiveFleet", "services_of"]
