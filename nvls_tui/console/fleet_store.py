"""The fleet as the console holds it: every node's latest state and diagnosis, and the cluster's views.

Polls come in from the poller process in batches (or, in tests, one node-poller message at a time);
the scheduler's and the Kubernetes cluster's watchers read their views on their own cadence. Each is
folded into the node through ``poll/after_poll.AfterPoll``, the path ``check`` and ``check --watch``
take too, so the console and the headless commands read a node the same way. No Textual here: the App
publishes each new fleet to the screens (its ``fleet`` var), and runs the watchers as its workers.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Sequence

from nvls_tui.kube.fleet import KubeFleet
from nvls_tui.kube.view import with_kube
from nvls_tui.model import Fleet, NodeState, Verdict
from nvls_tui.model.kube import KubeNode
from nvls_tui.model.node import Diagnosis
from nvls_tui.model.scheduler import SchedulerState
from nvls_tui.poll.after_poll import AfterPoll, Diagnose
from nvls_tui.poll.poller import PollResult
from nvls_tui.scheduler.slurm import Slurm, with_scheduler

# Seconds between two reads of the scheduler (one scontrol and one squeue for the whole fleet).
SCHEDULER_EVERY = 10.0
# Seconds between two reads of the Kubernetes cluster (one node list and one pods list a node).
KUBE_EVERY = 10.0


class FleetStore:
    """Every node's latest state (``fleet``, published through ``publish``) and diagnosis, the views.

    Args:
        hosts: the nodes, in the operator's order, and whether each is simulated.
        diagnose: NodeState -> Diagnosis (guarded: a diagnosis that raises marks its node).
        publish: called with each new fleet (the App's ``fleet`` var, which the screens watch).
        current: the fleet as published now (the App's var, which a test may have set).
    """

    def __init__(self, hosts: Sequence[tuple[str, bool]], diagnose: Diagnose | None,
                 publish: Callable[[Fleet], None], current: Callable[[], Fleet]) -> None:
        self.initial = Fleet(tuple(NodeState(host, simulated=simulated) for host, simulated in hosts))
        self.diagnoses: dict[str, Diagnosis] = {}
        self.kube_view: dict[str, KubeNode] = {}  # the cluster's view, refreshed by its own watcher
        self.scheduler: dict[str, SchedulerState] = {}  # the scheduler's view, refreshed by its own watcher
        # What follows a poll (the cluster's views folded in, the diagnosis guarded): check's path too.
        self.after = AfterPoll(diagnose)
        self._publish = publish
        self._current = current
        self._hosts = [host for host, _ in hosts]
        self.polled: set[str] = set()
        self.first_round = asyncio.Event()

    # ---- polls ----------------------------------------------------------------------------------------
    def fold(self, state: NodeState, diagnosis: Diagnosis | None) -> None:
        """Fold one node's state (a poll, or a view's news about it) into the fleet."""
        self._publish(self._current().with_node(self.folded(state, diagnosis)))

    def fold_polls(self, results: Iterable[PollResult]) -> bool:
        """Fold a batch of polls: one new fleet for the batch (each runs every screen's watcher). True when
        this batch brought most of the fleet in (see :meth:`note_polled`)."""
        results = list(results)
        fleet = self._current()
        for result in results:
            fleet = fleet.with_node(self.folded(result.state, result.diagnosis))
        self._publish(fleet)
        return any([self.note_polled(result.state.host) for result in results])  # every one noted

    def folded(self, state: NodeState, diagnosis: Diagnosis | None) -> NodeState:
        """``state`` as the fleet holds it (with the scheduler's and the cluster's views); its diagnosis noted.

        The poller carried and diagnosed the poll; a node a view knows is diagnosed again with it (a reachable
        one, or one with no diagnosis yet), through the guard every entry point uses.
        """
        if state.host in self.scheduler or state.host in self.kube_view:
            (state,) = self.after.folded([state])
            if state.reachable or diagnosis is None:
                diagnosis = self.after.diagnosed(state)
        if diagnosis is not None:
            self.diagnoses[state.host] = diagnosis
        return state

    def note_polled(self, host: str) -> bool:
        """Count ``host`` as polled once; True when this makes most of the fleet (90 %) polled at last."""
        before = len(self.polled)
        self.polled.add(host)
        if len(self.polled) == len(self._hosts):
            self.first_round.set()
        threshold = 0.9 * len(self._hosts)
        return before < threshold <= len(self.polled)

    def unknown_all(self, reason: str) -> None:
        """Nothing reads the nodes any more (the poller process ended): what the grid last showed is not
        known now, so every node is unreachable with the reason (fail closed)."""
        for host in self._hosts:
            state = self._current().get(host) or NodeState(host)
            self.fold(state.replace(reachable=False, error=reason), Diagnosis((), Verdict.UNREACHABLE))

    def verdict(self, host: str) -> Verdict | None:
        """The node's verdict, or None before its first poll."""
        diagnosis = self.diagnoses.get(host)
        return diagnosis.verdict if diagnosis else None

    # ---- the cluster's views -----------------------------------------------------------------------------
    def take_kube_view(self, view: dict[str, KubeNode]) -> None:
        """Fold a fresh read of the cluster into every node already polled (and every poll from now on)."""
        self.kube_view = view
        self.after.set_view("kube", functools.partial(with_kube, view=view))
        self._refold(view, keep_diagnosis=False)

    def take_scheduler_view(self, view: dict[str, SchedulerState]) -> None:
        """Fold a fresh read of the scheduler into every node already polled (and every poll from now on)."""
        self.scheduler = view
        self.after.set_view("scheduler", functools.partial(with_scheduler, scheduler=view))
        self._refold(view, keep_diagnosis=True)

    def _refold(self, hosts: Iterable[str], *, keep_diagnosis: bool) -> None:
        """Fold a view's news into each of ``hosts`` already polled (an unreachable one keeps its diagnosis
        where ``keep_diagnosis``; a reachable one is diagnosed again with the view)."""
        for host in hosts:
            state = self._current().get(host)
            if state is not None and state.polled_at is not None:
                self.fold(state, self.diagnoses.get(host) if keep_diagnosis else None)

    async def watch_kube(self, kube: KubeFleet) -> None:
        """Read the cluster's view of every node in one (one node list, one pods list a node), every
        KUBE_EVERY seconds, until cancelled."""
        while kube.hosts:
            self.take_kube_view(await kube.read())
            await asyncio.sleep(KUBE_EVERY)

    async def watch_scheduler(self, slurm: Slurm, hosts: Sequence[str]) -> None:
        """Read the scheduler's view of ``hosts`` every SCHEDULER_EVERY seconds, until cancelled."""
        while hosts:
            self.take_scheduler_view(await slurm.states(list(hosts)))
            await asyncio.sleep(SCHEDULER_EVERY)


__all__ = ["KUBE_EVERY", "SCHEDULER_EVERY", "FleetStore"]
