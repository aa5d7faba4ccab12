"""A fleet: the latest NodeState of every target, in the operator's order."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from nvls_tui.model.node import NodeState


@dataclass(frozen=True)
class Fleet:
    """An immutable, ordered collection of node states keyed by host."""

    nodes: tuple[NodeState, ...] = ()

    @property
    def hosts(self) -> tuple[str, ...]:
        """Host names in fleet order."""
        return tuple(n.host for n in self.nodes)

    @property
    def simulated(self) -> bool:
        """True when any node is simulated (the UI then shows a SIMULATED banner)."""
        return self._marks[0] > 0

    @property
    def lab(self) -> bool:
        """True when any node is a lab node (simulated GPUs on real systemd and processes)."""
        return self._marks[1] > 0

    # A 1,024-node console makes a new fleet on every poll and asks these of each one: a fleet made by
    # with_node takes them from the fleet it came from (the index when the hosts did not change, the
    # counts adjusted by the one node replaced) instead of walking 1,024 nodes again.
    @functools.cached_property
    def _index(self) -> dict[str, int]:
        return {n.host: i for i, n in enumerate(self.nodes)}

    @functools.cached_property
    def _marks(self) -> tuple[int, int]:
        """How many nodes are simulated, and how many are lab nodes."""
        return sum(n.simulated for n in self.nodes), sum(n.lab for n in self.nodes)

    def get(self, host: str) -> NodeState | None:
        """The state of ``host``, or None."""
        at = self._index.get(host)
        return None if at is None else self.nodes[at]

    def with_node(self, state: NodeState) -> Fleet:
        """A new fleet with ``state`` replacing the node of the same host (or appended)."""
        at = self._index.get(state.host)
        if at is None:
            return Fleet(self.nodes + (state,))
        old = self.nodes[at]
        fleet = Fleet(self.nodes[:at] + (state,) + self.nodes[at + 1:])
        fleet.__dict__["_index"] = self._index  # the same hosts at the same places
        if "_marks" in self.__dict__:
            simulated, lab = self._marks
            fleet.__dict__["_marks"] = (simulated - old.simulated + state.simulated, lab - old.lab + state.lab)
        return fleet

    def __len__(self) -> int:
        return len(self.nodes)
