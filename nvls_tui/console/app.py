"""The Textual App: the fleet reactive, its poller process (or in-process poll workers), global bindings.
Screens do the rest."""

from __future__ import annotations

import asyncio
import gc
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from textual import on
from textual.app import App, SystemCommand
from textual.dom import DOMNode
from textual.message_pump import MessagePump
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker

import nvls_tui
from nvls_tui.backends.base import Backend
from nvls_tui.console.ask import AskMode
from nvls_tui.console.bindings import bindings_for
from nvls_tui.console.commands import ConsoleCommands
from nvls_tui.console.fleet_store import FleetStore
from nvls_tui.console.key_holding import KeyHolding
from nvls_tui.console.messages import (
    ActionFailed,
    ActionFinished,
    ActionStarted,
    NodePolled,
    PlanApproved,
    RepairFinished,
    RepairNeedsOperator,
)
from nvls_tui.console.notify import Notifier
from nvls_tui.console.services import ConsoleServices, ConsoleSettings
from nvls_tui.console.signals import ConsoleDriver, SignalExit
from nvls_tui.console.widgets import palette
from nvls_tui.diagnosis.restore_hint import restore_commands
from nvls_tui.kube.client import Kubectl
from nvls_tui.kube.fleet import KubeFleet
from nvls_tui.model import Fleet, NodeState, Verdict
from nvls_tui.model.kube import KubeNode
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.client import PollerClient, PollerGone
from nvls_tui.poll.once import poll_deadline
from nvls_tui.poll.poller import Diagnose, NodePoller, PollResult, default_diagnose
from nvls_tui.runbook.session import Session
from nvls_tui.scheduler.slurm import Slurm
from nvls_tui.settings import Settings
from nvls_tui.textsafe import clean

# How long an action's outcome stays on screen: a restore's words are the longest (the lock, the units).
TOAST_SECONDS = {"unit-stop": 6, "unit-start": 6, "restore": 10}
STYLE_FILES = ("app.tcss", "palette.tcss", "fleet.tcss", "node.tcss", "modals.tcss", "runbook.tcss")


def style_dir() -> Path:
    """``nvls_tui/_styles`` inside an installed wheel, else the checkout's top-level ``styles/``."""
    package = Path(nvls_tui.__file__).parent
    packaged = package / "_styles"
    return packaged if packaged.is_dir() else package.parent / "styles"


def settle_garbage_collector() -> bool:
    """Keep the collector from pausing the keyboard once the console has settled; True if it froze the heap.

    With hundreds of nodes a full (generation 2) collection walked every widget and every node
    state and stopped the event loop for 200-500 ms at a time (bench/ui_bench.py). Freezing what
    exists after the first full poll takes those long-lived objects out of every later collection,
    and larger thresholds make the collections that remain rarer.

    A process that froze objects of its own before (a test worker freezes its imports and collected
    tests once) keeps its freeze: the console only raises the thresholds. Its release could not give
    back only the console's objects (``gc.unfreeze`` thaws all), and a full collection here would walk
    that process's whole heap again for every console it starts. Whether it did is asked once a process, at the
    first settle: ``gc.get_freeze_count`` walks every frozen object (about 8 ms at a test worker's 276,000, at
    each of the hundreds of consoles a worker starts); a process that freezes objects of its own does so before its
    first console.
    """
    if _FREEZE["theirs"] is None:
        _FREEZE["theirs"] = gc.get_freeze_count() > 0
    froze = not _FREEZE["theirs"] and not _FREEZE["ours"]
    if froze:
        gc.collect()  # what is garbage now is not frozen with the rest
        gc.freeze()
        _FREEZE["ours"] = True
    gc.set_threshold(20_000, 20, 20)
    return froze


def release_garbage_collector(froze: bool) -> None:
    """Undo :func:`settle_garbage_collector` (the app is gone; its objects may be collected): the default
    thresholds again, and the freeze given back if the settle made it (``froze``, what it returned)."""
    if froze:
        gc.unfreeze()
        _FREEZE["ours"] = False
    gc.set_threshold(*DEFAULT_GC_THRESHOLD)


_FREEZE: dict[str, bool | None] = {"theirs": None, "ours": False}
"""The process's freeze: ``theirs`` (it froze objects before its first console; None until that settle asks) and
``ours`` (a console's settle froze the heap and has not released it yet)."""


DEFAULT_GC_THRESHOLD = gc.get_threshold()


class NvlsApp(KeyHolding):
    """The console.

    Args:
        backends: one per node, in the operator's order.
        read_only: hide and refuse every action that changes a node.
        poll_interval: seconds between polls of a node; None polls each node once (tests, snapshots).
        timeout: per-command timeout.
        poll_timeout: how long a whole poll may take (default: ``check``'s, ``poll_deadline(timeout)``, so that
            a node with a hung command or two reads the same in the console as in ``check``).
        clock: time source for poll stamps and ages (tests fix it).
        keymap: binding id -> key overrides (already checked against the binding table).
        diagnose: NodeState -> Diagnosis.
        notes: sentences to show once the console is up (config warnings).
        audit_dir: where repairs write their audit log and report (None: the XDG state directory).
        poller: the client of a poller process that polls ``backends``' nodes off this event loop
            (``from_settings`` makes one); None polls them here, one worker per node (tests).
        repair: how a repair runs (``RepairSettings.tunables``: the command line's and the config file's), for
            every repair and single action of this console.
        ask: the autopilot's ask mode (``--autopilot ask``): each round of the console's poll judged by the
            autopilot's policy and limits, its proposals shown, one key approves (console/ask.py); None: off.

    Attributes:
        session: every node-changing action goes through it (audited, polls paused, the ledger).
        services: what every screen is given when it is made (the fleet, the session, the backends, the
            clock, the settings, the console-wide moves): the App makes it once, here, and screens
            never reach through ``self.app`` for these.
    """

    TITLE = "nvls-tui"
    CSS_PATH = [style_dir() / name for name in STYLE_FILES]
    BINDINGS = bindings_for("app")
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    # The colour roles of Rich text (styles/palette.tcss), read once by palette.load on mount.
    COMPONENT_CLASSES = palette.COMPONENT_CLASSES

    # A var, not a repainting reactive: the screens redraw what changed, and a repaint of the whole
    # screen on every poll (30 a second at 1,024 nodes) was the console's longest stall.
    fleet: var[Fleet] = var(Fleet, always_update=True)
    """The latest state of every node; screens watch it and redraw what changed."""

    def __init__(
        self,
        backends: Sequence[Backend],
        *,
        read_only: bool = False,
        poll_interval: float | None = 5.0,
        timeout: float = 20.0,
        clock: Callable[[], float] = time.time,
        keymap: dict[str, str] | None = None,
        diagnose: Diagnose = default_diagnose,
        notes: Sequence[str] = (),
        poll_timeout: float | None = None,
        audit_dir: str | None = None,
        slurm: Slurm | None = None,
        kube: KubeFleet | None = None,
        notify: bool = True,
        poller: PollerClient | None = None,
        repair: Mapping[str, Any] | None = None,
        ask: AskMode | None = None,
        config_path: Path | None = None,
    ) -> None:
        super().__init__(driver_class=ConsoleDriver)  # safe on a terminal that hung up (console_signals)
        self.poller = poller
        self.ask = ask
        self._ask_failed = ""  # the last reason an autopilot round failed (said once)
        self.slurm = slurm
        self.kube = kube
        self.backends = {b.host: b for b in backends}
        self.read_only = read_only
        self.periodic = poll_interval is not None
        self.timeout = timeout
        self.clock = clock
        self.keymap = dict(keymap or {})
        self.config_path = config_path  # the file --config named, or the one read; None: the XDG default's
        self.notes = list(notes)
        self.audit_dir = audit_dir
        self.simulated = any(b.simulated for b in backends)
        # In process only without a poller process: there the nodes are polled off this loop.
        self.pollers = {} if poller is not None else {
            b.host: NodePoller(b, interval=poll_interval, timeout=poll_timeout or poll_deadline(timeout), clock=clock,
                               diagnose=diagnose) for b in backends}
        # The fleet and its diagnoses, the cluster's views: polls fold in there, published to ``fleet``.
        self.store = FleetStore([(b.host, b.simulated) for b in backends], diagnose,
                                publish=self._publish, current=lambda: self.fleet)
        self.set_reactive(NvlsApp.fleet, self.store.initial)
        # With a scheduler, console repairs drain and resume through it as headless ones do (a purely
        # simulated node is in no cluster).
        schedulers = {h: slurm.hook(h) for h, b in self.backends.items() if not b.simulated} if slurm else {}
        # On Kubernetes, console repairs cordon, pause operand labels and evict through the API as headless ones do.
        kubes = {h: k for h in self.backends if kube is not None and (k := kube.for_host(h)) is not None}
        self.session = Session(self.backends, audit_dir=audit_dir, timeout=timeout, pause=self.polls_paused,
                               read_only=read_only, on_audit_failure=self._audit_failed, schedulers=schedulers,
                               kube=kubes)
        self.services = ConsoleServices(
            live=self, session=self.session, backend_for=self.backend_for, clock=clock,
            settings=ConsoleSettings(read_only=read_only, simulated=self.simulated, periodic=self.periodic,
                                     timeout=timeout, repair=dict(repair or {})),
            actions=self, ask=ask)
        # A long repair's end rings the bell and raises a desktop notification (nvls_tui/console/notify.py).
        self.notifier = Notifier(notify, self._write_terminal, time.monotonic)
        self._signals: SignalExit | None = None  # SIGINT, SIGTERM, SIGHUP: abort, restore, exit (console_signals)
        self._froze_collector = False  # the first poll's settle froze the heap: the end gives it back

    @classmethod
    def from_settings(cls, settings: Settings, *, poll_process: bool = True) -> NvlsApp:
        """Build the console from the one Settings (command line > config file > defaults, keymap checked).

        The nodes are polled by a poller process of the console's own (``poll_process``), except where the
        settings bring their own fleet (``connect``: a test's objects, which another process cannot have)
        or a simulated fleet is on Kubernetes (its simulated cluster acts on the console's copy of the nodes).
        """
        from nvls_tui.targets import kube_from_settings, resolve_backends, scheduler_from_settings

        backends = resolve_backends(settings)
        ask = None
        if settings.autopilot is not None:  # --autopilot ask: a policy, limit or state it cannot use stops here
            ask = AskMode.open(settings.autopilot, [b.host for b in backends], audit_dir=settings.audit_dir,
                               every=settings.poll_interval, read_only=settings.read_only)
        poller = None
        if poll_process and settings.connect is None and not any(
                getattr(getattr(getattr(b, "fleet", None), "scenario", None), "kubernetes", False) for b in backends):
            from nvls_tui.poller.process import console_poller

            backends, poller = console_poller(settings, backends, interval=settings.poll_interval,
                                              poll_timeout=poll_deadline(settings.timeout))
        return cls(backends, read_only=settings.read_only, poll_interval=settings.poll_interval,
                   timeout=settings.timeout, keymap=dict(settings.keymap), audit_dir=settings.audit_dir,
                   slurm=scheduler_from_settings(settings), kube=kube_from_settings(settings, backends),
                   notify=settings.notify, poller=poller, repair=settings.repair.tunables(), ask=ask,
                   config_path=settings.config_file)

    def _write_terminal(self, text: str) -> None:
        """Write raw text (a bell, an OSC sequence) to the terminal, past the screen's rendering."""
        if self._driver is not None:
            self._driver.write(text)
            self._driver.flush()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A toast whose text is plain by default: toasts quote node text (process command lines,
        unit results, tool errors), and node text is data, never markup (``x [/x]`` must not raise)."""
        super().notify(clean(message), title=clean(title), severity=severity,
                       timeout=timeout, markup=markup)

    async def run_action(self, action: Any, default_namespace: DOMNode | None = None,
                         namespaces: Any = None) -> bool:
        """Run an action; where it cannot act now, its screen's ``why_not`` words come as a toast.

        Textual drops a key whose ``check_action`` is not True without a word: ``s`` outside the Units
        table, ``t`` in ``--read-only`` did nothing at all (issue 28 item 5).
        """
        handled = await super().run_action(action, default_namespace, namespaces)
        if not handled:
            target, name, params = self._parse_action(action, self if default_namespace is None else default_namespace,
                                                      namespaces)
            why_not = getattr(target, "why_not", None)
            if callable(why_not) and target.check_action(name, params) is not True:
                reason = why_not(name)
                if reason:
                    self.notify(reason, severity="warning", timeout=5)
        return handled

    def get_system_commands(self, screen: Screen[Any]) -> Iterator[SystemCommand]:
        """Textual's own palette entries the console keeps, and its screenshot (commands.system_commands)."""
        from nvls_tui.console.commands import system_commands

        return system_commands(self, super().get_system_commands(screen))

    def action_help_quit(self) -> None:
        """ctrl+c: say how to quit, in plain words (Textual's own toast is markup, and toasts here are plain)."""
        self.notify("Press q to quit nvls-tui (it asks first while an action runs).", title="Do you want to quit?")

    async def on_unmount(self) -> None:
        """Close the session's audit log; give the frozen objects back to the collector."""
        if self._signals is not None:
            self._signals.remove()
        if self.poller is not None:
            await self.poller.close()
        await self.session.close()
        if self.ask is not None:
            self.ask.close()
        release_garbage_collector(self._froze_collector)

    def polls_paused(self, host: str):
        """Hold ``host``'s poller while an action runs on it (the session asks for this).

        With a poller process the hold is in place once that process acknowledged it; a process that
        is gone refuses (``PollerGone``), and the action does not start.
        """
        if self.poller is not None:
            return self.poller.paused(host)
        return self.pollers[host].paused()

    def _audit_failed(self, message: str) -> None:
        self.notify(f"audit log write failed: {message}", severity="error", timeout=15)

    def on_mount(self) -> None:
        """Read the colour roles, apply the keymap, show the fleet, start one poll worker per node."""
        from nvls_tui.console.screens.fleet import FleetScreen

        palette.load(self)  # before any screen draws a cell
        self.set_keymap(self.keymap)
        if not self.is_headless:  # a real terminal (tests drive the handler, interrupted(), themselves)
            self._signals = SignalExit(self, self._stop_input)
            self._signals.install()
        self.push_screen(FleetScreen(self.services))
        for host, poller in self.pollers.items():
            self.run_worker(poller.run(lambda r: self.post_message(NodePolled.of(r))), group="poll",
                            name=f"poll {host}", exit_on_error=False)
        if self.poller is not None:
            self.run_worker(self._run_poller(self.poller), group="poll", name="poller process", exit_on_error=False)
        for note in self.notes:
            self.notify(note, severity="warning", timeout=10)
        if self.slurm is not None:  # a purely simulated node is in no cluster
            hosts = [h for h, b in self.backends.items() if not b.simulated]
            self.run_worker(self.store.watch_scheduler(self.slurm, hosts), group="scheduler", name="scheduler",
                            exit_on_error=False)
        if self.kube is not None:
            self.run_worker(self.store.watch_kube(self.kube), group="kube", name="kubernetes", exit_on_error=False)

    # ---- the fleet (console/fleet_store.py holds it; the screens watch ``fleet``) ----------------------
    def _publish(self, fleet: Fleet) -> None:
        self.fleet = fleet

    @property
    def diagnoses(self) -> dict[str, Diagnosis]:
        """Every node's latest diagnosis (none before its first poll)."""
        return self.store.diagnoses

    def take_kube_view(self, view: dict[str, KubeNode]) -> None:
        """Fold a fresh read of the cluster into every node already polled (and every poll from now on)."""
        self.store.take_kube_view(view)

    def _fold(self, state: NodeState, diagnosis: Diagnosis | None) -> None:
        self.store.fold(state, diagnosis)

    async def _run_poller(self, poller: PollerClient) -> None:
        """Start the poller process, fold its batches as they come; if it ends, every node is unknown."""
        try:
            await poller.start(self.fold_polls)
            reason = await poller.wait_closed()
        except PollerGone as exc:
            reason = str(exc)
        if poller.stopped:
            return  # the console closed it
        self.store.unknown_all(reason)  # fail closed: what the grid last showed is not known now
        self.notify(f"Polling stopped: {reason}. Restart the console to poll again.", severity="error", timeout=30)

    def fold_polls(self, results: list[PollResult]) -> None:
        """Fold one batch of the poller process's polls into the fleet (one change of ``fleet``)."""
        if self.store.fold_polls(results):
            self._froze_collector = settle_garbage_collector()  # most nodes in: do not wait for a hung node (it may take a timeout)
        self._ask_round([r.state.host for r in results])

    def on_node_polled(self, message: NodePolled) -> None:
        """Fold one poll into the fleet (screens redraw from the ``fleet`` watcher)."""
        self.store.fold(message.state, message.diagnosis)
        if self.store.note_polled(message.state.host):
            self._froze_collector = settle_garbage_collector()
        self._ask_round([message.state.host])

    def _ask_round(self, hosts: Sequence[str]) -> None:
        """Ask mode: these nodes were polled; judge a round when one is due (console/ask.py says when). A
        round that cannot be recorded or saved is said, and proposes nothing (fail closed)."""
        if self.ask is None:
            return
        self.ask.polled(hosts)
        now = time.monotonic()
        if not self.ask.due(now):
            return  # most batches (30 a second at 1,024 nodes): nothing gathered
        fleet, diagnoses = self.fleet, self.store.diagnoses
        try:
            busy = {h for run in self.session.running for h in run.hosts}  # r's repairs: their polls are held
            judged = self.ask.maybe_round([(s, diagnoses.get(s.host)) for s in fleet.nodes], now, busy=busy)
        except (OSError, ValueError) as exc:  # AuditWriteError, a state file that cannot be written or read
            self.ask.proposals = {}
            if str(exc) != self._ask_failed:  # said once, not every poll interval while it lasts
                self._ask_failed = str(exc)
                self.notify(f"Autopilot round not recorded: {exc}. Nothing is proposed.", severity="error",
                            timeout=15)
            self.fleet = fleet  # the marks and the pane drop the proposals
            return
        if judged:
            self._ask_failed = ""
            self.fleet = fleet  # the screens redraw: the marks and the pane follow the new proposals

    async def wait_for_first_poll(self, timeout: float = 10.0) -> None:
        """Return once every node has been polled at least once (a screenshot script; tests use
        ``tests.waiting.first_poll``, which also draws the grid's coalesced redraw)."""
        async with asyncio.timeout(timeout):
            await self.store.first_round.wait()

    # ---- what screens and the palette call ------------------------------------------------------
    def verdict(self, host: str) -> Verdict | None:
        """The node's verdict, or None before its first poll."""
        return self.store.verdict(host)

    def backend_for(self, host: str) -> Backend:
        """The backend that reaches ``host``."""
        return self.backends[host]

    def cluster_of(self, host: str) -> Kubectl | None:
        """The kubectl of the cluster that has ``host``'s node, or None where no cluster reads it."""
        return self.kube.for_host(host) if self.kube is not None else None

    def follow(self, watcher: DOMNode, callback: Callable[[Fleet], None]) -> None:
        """Call ``callback`` with the new fleet on every change, while ``watcher`` is mounted (a screen's
        redraw; Textual drops the watch when the watcher closes)."""
        watcher.watch(self, "fleet", callback, init=False)

    def poll_now(self, host: str | None = None) -> None:
        """Poll ``host`` (or every node) now rather than at the next interval."""
        if self.poller is not None:
            self.poller.poke(host)
        for h, poller in self.pollers.items():
            if host is None or h == host:
                poller.poke()

    def open_node(self, host: str) -> None:
        """Show the node screen of ``host`` (replacing another node screen)."""
        from nvls_tui.console.screens.node import NodeScreen

        if isinstance(self.screen, NodeScreen):
            self.pop_screen()
        self.push_screen(NodeScreen(host, self.services))

    def plan_repair(self, hosts: Sequence[str], *, reply_to: MessagePump | None = None) -> None:
        """The dry run of ``hosts`` on the plan screen; once approved (typed names), the runbook screen.

        Args:
            reply_to: the screen that asked: it hears :class:`PlanApproved` first (the fleet clears its
                selection), then the message bubbles here (:meth:`_plan_approved`).
        """
        from nvls_tui.console.screens.plan import PlanScreen

        screen = PlanScreen(hosts, self.services, reply_to=reply_to)
        self.push_screen(screen)
        self.hold_for_plan(screen)

    @on(PlanApproved)
    def _plan_approved(self, message: PlanApproved) -> None:
        """The names were typed: the repair runs on the runbook screen."""
        from nvls_tui.console.screens.runbook import RunbookScreen

        if message.approval.hosts:
            self.notifier.repair_started()
            self.push_screen(RunbookScreen(list(message.approval.hosts), services=self.services,
                                           approval=message.approval))

    def start_action(self, description: str, work: Awaitable[None], *, hosts: Sequence[str] = ()) -> Worker:
        """Run an action that changes ``hosts`` in a worker (``q`` asks first while one runs).

        The worker posts :class:`ActionStarted`; ``work`` posts its own past-tense message when it ends
        (:class:`ActionFinished`, :class:`RepairFinished`); what it raises becomes :class:`ActionFailed`.
        """

        async def guarded() -> None:
            self.post_message(ActionStarted(description, hosts))
            try:
                await work
            except Exception as exc:  # noqa: BLE001 - an action failure is a notification, not a crash
                self.post_message(ActionFailed(description, str(exc), hosts))

        return self.run_worker(guarded(), group="action", name=description, exit_on_error=False)

    # ---- how actions ended (messages.py): said here, once, whichever screen started them -------------
    @on(ActionFinished)
    def _action_finished(self, message: ActionFinished) -> None:
        done = message.outcome
        self.notify(message.words, severity=done.severity, timeout=TOAST_SECONDS.get(done.action, 8))
        self.poll_now(done.host)

    @on(ActionFailed)
    def _action_failed(self, message: ActionFailed) -> None:
        if message.refused:  # refused up front: its own sentence says why, and nothing changed to re-read
            self.notify(message.error, severity="warning", timeout=12)
            return
        self.notify(f"{message.description} failed: {message.error}", severity="error", timeout=10)
        for host in message.hosts:  # what the node is now is unknown: read it
            self.poll_now(host)

    @on(RepairFinished)
    def _repair_finished(self, message: RepairFinished) -> None:
        if self.ask is not None and self.ask.approved & set(message.hosts):
            from nvls_tui.autopilot.pilot import smoke_passed

            passed = {o.host: smoke_passed(o) for o in message.outcomes}
            try:
                self.ask.ended({h: passed.get(h, False) for h in message.hosts}, error=message.error)
            except (OSError, ValueError) as exc:
                self.notify(f"Autopilot: the repair's result was not recorded: {exc}", severity="error", timeout=15)
        for host in message.hosts:
            self.poll_now(host)
        if message.error is not None:
            self.notify(f"The repair did not start: {message.error}", severity="error", timeout=15)
            return
        self.notifier.repair_ended(message.hosts, message.ok,
                                   ", ".join(f"{h} {r}" for h, r in message.results.items()) or "ended")
        self.notify("Repair finished: " + ", ".join(f"{h} {r}" for h, r in message.results.items())
                    + ". e writes the incident report.", severity="information" if message.ok else "error", timeout=8)

    @on(RepairNeedsOperator)
    def _repair_needs_operator(self, message: RepairNeedsOperator) -> None:
        """A running repair stopped for the operator's decision: ring (issue 28 item 13), once per wait."""
        self.notifier.operator_needed(message.host, message.question)

    @property
    def actions_running(self) -> list[str]:
        """Descriptions of the actions still running."""
        return [w.name for w in self.workers if w.group == "action" and not w.is_finished]

    # ---- global actions -------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """Quit; while a repair runs, ask whether to abort and restore first or to stay."""
        repairs = self.session.running
        running = self.actions_running
        if not running and not repairs:
            self.exit()
            return
        from nvls_tui.console.screens.confirm import ConfirmScreen

        if repairs:
            hosts = [h for r in repairs for h in r.hosts]

            def answer(ok: bool | None) -> None:
                if ok:
                    self.run_worker(self._abort_and_quit(), group="quit", exit_on_error=False)

            self.push_screen(ConfirmScreen(
                f"A repair is running on {' '.join(hosts)}. Abort it, restore every node, then quit?",
                [f"{h}: stops before its next command, then puts back what it stopped" for h in hosts],
                confirm_label="Abort, restore, quit", cancel_label="Stay",
                note="Staying lets the repair finish. Quitting waits for every restore to end."), answer)
            return

        def done(ok: bool | None) -> None:
            if ok:
                self.exit(return_code=1, message=self.exit_summary())

        self.push_screen(ConfirmScreen("An action is still running. Quit anyway?", running,
                                       confirm_label="Quit",
                                       note="The action stops where it stands; its audit log says how far it got."),
                         done)

    def interrupted(self, name: str, *, first: bool, terminal_gone: bool = False) -> None:
        """SIGINT, SIGTERM or SIGHUP (``console_signals.SignalExit``): what headless ``repair`` does with them.

        The first aborts every running repair (each node restores what it stopped; the abort is in the run's
        audit log), waits for every action still running and exits 1; with nothing running the console exits
        at once (128 + the signal's number, as if it had not been caught). A later signal only says that the
        restore goes on. ``terminal_gone``: the terminal hung up (nobody reads what is said; it is said anyway).
        """
        hosts = [h for r in self.session.running for h in r.hosts]
        if not first:
            if hosts:
                # Killed, this console leaves its lock with no live owner: stale, so only --force takes it over.
                self.notify(f"{name}: the restore goes on. If nvls-tui is killed before it ends, run "
                            + "; ".join(restore_commands(h)[1] for h in hosts),
                            severity="warning", timeout=30)
            return
        if not hosts and not self.actions_running:
            self.exit(return_code=128 + signal.Signals[name].value)
            return
        self.run_worker(self._abort_and_quit(f"{name} received"), group="quit", exit_on_error=False)

    def _stop_input(self) -> None:
        """Stop reading the terminal (it hung up: every read would say end of file at once)."""
        if self._driver is not None:
            self._driver.disable_input()

    async def _abort_and_quit(self, reason: str = "the operator quit the console") -> None:
        """Interrupt every repair, wait for the restores, then exit with the summary printed."""
        self.session.interrupt(reason)
        self.notify(f"Aborting ({reason}): every node restores what it stopped; the console quits when they are "
                    "done.", severity="warning", timeout=30)
        for worker in [w for w in self.workers if w.group == "action" and not w.is_finished]:
            await worker.wait()
        outcomes = [o for r in self.session.repairs for o in r.outcomes]
        self.exit(return_code=0 if all(o.ok for o in outcomes) else 1, message=self.exit_summary())

    def exit_summary(self) -> str:
        """What the terminal shows after the console: each repair's nodes, the logs, the restore hint."""
        from nvls_tui.textsafe import one_line

        lines: list[str] = []
        for run in self.session.repairs:
            for o in run.outcomes:
                lines.append(f"{o.host}: {o.result} - {one_line(o.message)}")
            left = [o.host for o in run.outcomes if o.result in ("failed", "aborted") and "--restore" in o.message]
            if not run.finished:
                left = run.hosts
            for host in left:
                plain, forced = restore_commands(host)
                lines.append(f"  to put {host} back by hand: {plain} ({forced} where it says the lock is stale)")
            if run.audit_log:
                lines.append(f"audit log: {run.audit_log}")
        if self.session.audit_path:
            lines.append(f"session audit log: {self.session.audit_path}")
        return "\n".join(lines)

    def action_help(self) -> None:
        """Show every key, generated from the binding table."""
        from nvls_tui.console.screens.help import HelpScreen, screen_scope

        if not isinstance(self.screen, HelpScreen):
            # The keys of the screen it is opened on come first.
            self.push_screen(HelpScreen(self.keymap, self.read_only, screen_scope(self.screen), self.config_path))

    async def action_back(self) -> None:
        """Go back one screen (never past the fleet)."""
        if len(self.screen_stack) > 2:
            self.pop_screen()
