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
        return any(n.simulated for n in self.nodes)

    @property
    def lab(self) -> bool:
        """True when any node is a lab node (simulated GPUs on real systemd and processes)."""
        return any(n.lab for n in self.nodes)

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        # Built once per (immutable) fleet: a 256-node console looks hosts up on every poll.
        return {n.host: i for i, n in enumerate(self.nodes)}

    def get(self, host: str) -> NodeState | None:
        """The state of ``host``, or None."""
        at = self._index.get(host)
        return None if at is None else self.nodes[at]

    def with_node(self, state: NodeState) -> Fleet:
        """A new fleet with ``state`` replacing the node of the same host (or appended)."""
        at = self._index.get(state.host)
        if at is None:
            return Fleet(self.nodes + (state,))
        return Fleet(self.nodes[:at] + (state,) + self.nodes[at + 1:])

    def __len__(self) -> int:
        return len(self.nodes)
