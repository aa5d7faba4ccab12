"""A simulated fleet: one scenario's nodes (built on first use, so 256 nodes cost nothing) and a clock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nvls_tui.sim.clock import SimClock
from nvls_tui.sim.commands import Output, Result, execute
from nvls_tui.sim.scenarios import SCENARIOS, Scenario
from nvls_tui.sim.state import Node

DEFAULT_SCENARIO = "seed-incident"


class SimFleet:
    """The nodes of one scenario (or a subset of them) sharing one :class:`SimClock`.

    Attributes:
        scenario: the scenario these nodes come from.
        names: the selected node names, in order.
        clock: simulated time for every node of the fleet.
    """

    def __init__(self, scenario: Scenario, names: Sequence[str], clock: SimClock) -> None:
        self.scenario = scenario
        self.names = list(names)
        self._known = frozenset(self.names)  # every command of every poll looks its node up
        self.clock = clock
        self._nodes: dict[str, Node] = {}

    def node(self, name: str) -> Node:
        """The node called ``name`` (built on first access). KeyError if it is not in the fleet."""
        if name not in self._known:
            raise KeyError(f"{name} is not a node of sim:{self.scenario.name}")
        if name not in self._nodes:
            self._nodes[name] = self.scenario.build_node(name, self.clock.now())
        return self._nodes[name]

    def run(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
            stdin: str | None = None) -> Result:
        """Run one command on a node now, synchronously (tests and tools; the backend adds timing)."""
        return execute(self.node(name), argv, self.clock.now(), env=env, stdin=stdin)

    def sh(self, name: str, *argv: str, env: Mapping[str, str] | None = None, stdin: str | None = None) -> Output:
        """Like :meth:`run` but a finished :class:`Output` always (an all_reduce_perf plan is flattened)."""
        result = self.run(name, list(argv), env=env, stdin=stdin)
        if isinstance(result, Output):
            return result
        from nvls_tui.sim.render_nccl import Plan

        if isinstance(result, Plan):
            if self.clock.speed == 0:
                self.clock.advance(result.duration)
            return Output(result.exit_status, result.text(), "")
        raise TimeoutError(f"{' '.join(argv)} never returns on {name}")

    def __len__(self) -> int:
        return len(self.names)


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``sim:NAME[/NODESET]`` (``sim:`` optional) -> (scenario name, node set or None)."""
    body = spec.removeprefix("sim:")
    name, _, nodeset = body.partition("/")
    return (name or DEFAULT_SCENARIO), (nodeset or None)


def expand_nodeset(text: str) -> list[str]:
    """ClusterShell node set syntax (``gpu[05-06]``, ``gpu01,gpu03``) -> names, in order."""
    from ClusterShell.NodeSet import NodeSet, NodeSetParseError

    try:
        return list(NodeSet(text))
    except NodeSetParseError as exc:
        raise ValueError(f"cannot read the node set {text!r}: {exc}") from exc


def load_fleet(spec: str, speed: float = 1.0) -> SimFleet:
    """The simulated fleet for ``sim:NAME[/NODESET]``.

    Args:
        spec: ``sim:seed-incident``, ``sim:seed-incident/gpu[05-06]``, ``sim:fleet-256``...
        speed: simulated seconds per real second (0 freezes the clock; tests advance it).

    Raises:
        ValueError: unknown scenario, or a node set naming nodes the scenario does not have.
    """
    name, nodeset = parse_spec(spec)
    scenario = SCENARIOS.get(name)
    if scenario is None:
        raise ValueError(f"unknown simulated scenario {name!r} (known: {', '.join(SCENARIOS)})")
    names = list(scenario.nodes)
    if nodeset:
        wanted = expand_nodeset(nodeset)
        missing = [n for n in wanted if n not in scenario.nodes]
        if missing:
            raise ValueError(f"sim:{name} has no node {missing[0]} (its nodes: {scenario.nodes[0]} ...)")
        names = wanted
    return SimFleet(scenario, names, SimClock(speed=speed))
