"""What follows a poll: one path for the console, ``check`` and ``check --watch`` (issue 36 item 3).

A poll reads one node at one moment. Three things turn that reading into what an entry point shows, and
each used to be done in the console's way in one place and in ``check``'s way in another:

- **carries across rounds**: how long the fabric has been ``In Progress`` (a wait that never ends is a
  finding only once it has lasted) and FM's ``NRestarts`` of the last round (a count that climbs between
  two rounds is FM flapping *now*), and FM's start times seen so far (``poll/fm_starts.py``). Carried only from the last read that saw the node: a round that
  could not read it carries nothing forward;
- **the cluster's views**: the scheduler's (Slurm's node state and jobs) and the Kubernetes cluster's
  (the Node, the pods that hold devices), each read on its own cadence and folded into every poll of
  the nodes it knows; the fold functions stay in their packages (``scheduler.slurm.with_scheduler``,
  ``kube.view.with_kube``), which sit above this layer, so an entry point hands them in;
- **the diagnosis, guarded**: a rule that raises marks that node ``DIAGNOSIS_FAILED``, never the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from nvls_tui.diagnosis import carry_fabric_since, diagnose_guarded
from nvls_tui.diagnosis.restarters import carry_fm_restarts
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.fm_starts import carry_fm_starts

Diagnose = Callable[[NodeState], Diagnosis]
# A cluster's view folded into polls: the states, each with what the view knows of it (others unchanged).
Fold = Callable[[Sequence[NodeState]], list[NodeState]]


def carry_across(previous: NodeState | None, current: NodeState, elapsed: float) -> NodeState:
    """``current`` with what the last good read of the same node (``previous``, ``elapsed`` seconds ago)
    tells about it: the fabric's time ``In Progress``, FM's restart count of then, and FM's start times seen
    so far (``poll/fm_starts.py``: flapping counted by FM's own starts, which no counter reset hides)."""
    if current.fabric_since is None:  # a reading that dates the wait itself keeps its own
        current = carry_fabric_since(previous, current, max(0.0, elapsed))
    return carry_fm_starts(previous, carry_fm_restarts(previous, current))


class AfterPoll:
    """The one path from a node's poll to what is shown: carried, folded with the views, diagnosed.

    One instance lives as long as the rounds it connects (a ``check --watch``, a console); a single
    ``check`` makes one for its one round, where nothing is carried.
    """

    def __init__(self, diagnose: Diagnose | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._diagnose = diagnose
        self._clock = clock
        self._last_good: dict[str, tuple[NodeState, float]] = {}
        self._views: dict[str, Fold] = {}

    def set_view(self, name: str, fold: Fold | None) -> None:
        """Fold ``fold`` (the latest read of the view called ``name``) into every poll from now on; None
        stops folding that view. Views fold in the order they were first set."""
        if fold is None:
            self._views.pop(name, None)
        else:
            self._views[name] = fold

    def carried(self, state: NodeState, now: float | None = None) -> NodeState:
        """``state`` with the carries from the last good read of its node; a good read is remembered."""
        if not state.reachable:
            return state
        now = self._clock() if now is None else now
        last = self._last_good.get(state.host)
        state = carry_across(last[0] if last else None, state, now - last[1] if last else 0.0)
        self._last_good[state.host] = (state, now)
        return state

    def folded(self, states: Sequence[NodeState]) -> list[NodeState]:
        """``states`` with every view folded in."""
        out = list(states)
        for fold in self._views.values():
            out = fold(out)
        return out

    def diagnosed(self, state: NodeState) -> Diagnosis:
        """The diagnosis of ``state``; a diagnosis that raises marks this node, never the run."""
        return diagnose_guarded(state, self._diagnose)

    def read(self, state: NodeState, now: float | None = None, *, carry: bool = True) -> tuple[NodeState, Diagnosis]:
        """One poll of one node as it is shown (``carry=False`` where the poll was carried already, as the
        poller process's are)."""
        (read,) = self.read_round([state], now, carry=carry)
        return read

    def read_round(self, states: Sequence[NodeState], now: float | None = None, *,
                   carry: bool = True) -> list[tuple[NodeState, Diagnosis]]:
        """A round of polls as they are shown, in the order given."""
        now = self._clock() if now is None else now
        carried = [self.carried(s, now) for s in states] if carry else list(states)
        return [(s, self.diagnosed(s)) for s in self.folded(carried)]


__all__ = ["AfterPoll", "Diagnose", "Fold", "carry_across"]
