"""A fleet: the latest NodeState of every target, in the operator's order."""

from __future__ import annotations

from dataclasses import dataclass

from nvls_tui.model.node import NodeState


@dataclass(frozen=True, slots=True)
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

    def get(self, host: str) -> NodeState | None:
        """The state of ``host``, or None."""
        return next((n for n in self.nodes if n.host == host), None)

    def with_node(self, state: NodeState) -> Fleet:
        """A new fleet with ``state`` replacing the node of the same host (or appended)."""
        if self.get(state.host) is None:
            return Fleet(self.nodes + (state,))
        return Fleet(tuple(state if n.host == state.host else n for n in self.nodes))

    def __len__(self) -> int:
        return len(self.nodes)
