"""A round's node states and diagnoses as Prometheus metric families, in a registry of nvls-tui's own.

Fail closed: a node that was never read has its verdict (``unreachable``) and ``nvls_poll_success 0``
and nothing else: no fabric, FM or holder series that a query could read as 0 = fine. A section that
could not be read leaves its series out (and says so in ``nvls_evidence_missing``). No sample carries a
client-side timestamp (node_exporter skips a textfile that has one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from nvls_tui import __version__
from nvls_tui.diagnosis.story import node_time
from nvls_tui.metrics import labels as lab
from nvls_tui.metrics import names as n
from nvls_tui.metrics.fm_starts import FmStarts, fm_start
from nvls_tui.metrics.repairs import RepairTally
from nvls_tui.model import NodeState, Verdict
from nvls_tui.model.node import Diagnosis

GB = 1e9  # the smoke record's GB/s, as nccl-tests prints it, in bytes per second
OUT_OF_SYNC = "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"


@dataclass
class Round:
    """What one round knew: each node's state and diagnosis, how long it took, the repairs in the audit logs.

    Attributes:
        repairs: host -> tally; None where the audit directory could not be read (no repair series).
        fm_starts: the FM start times seen so far (``check --watch`` keeps one across rounds).
    """

    results: Sequence[tuple[NodeState, Diagnosis]]
    duration: float | None  # None: no round as such (the console polls each node on its own)
    ended: float = field(default_factory=time.time)
    repairs: Mapping[str, RepairTally] | None = None
    fm_starts: FmStarts | None = None


def _family(spec: n.MetricSpec, extra: tuple[str, ...] = ()) -> Metric:
    if spec.kind == n.COUNTER:
        return CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    if spec.kind == n.INFO:
        return InfoMetricFamily(spec.name, spec.help, labels=())
    return GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)


class Families:
    """The families of one round, filled node by node (those of ``specs``: check's by default)."""

    def __init__(self, specs: Sequence[n.MetricSpec] = n.FLEET_METRICS) -> None:
        self.by_spec: dict[str, Metric] = {s.name: _family(s) for s in specs}

    def add(self, spec: n.MetricSpec, values: Sequence[str], value: float) -> None:
        family = self.by_spec[spec.name]
        if isinstance(family, GaugeMetricFamily | CounterMetricFamily):
            family.add_metric(list(values), value)

    def info(self, spec: n.MetricSpec, values: Mapping[str, str]) -> None:
        family = self.by_spec[spec.name]
        if isinstance(family, InfoMetricFamily):
            family.add_metric([], dict(values))

    def families(self) -> list[Metric]:
        return [f for f in self.by_spec.values() if f.samples]


def families(round_: Round) -> list[Metric]:
    """Every metric family of ``round_`` (families with no sample left out)."""
    out = Families()
    out.info(n.BUILD_INFO, {"version": __version__})
    if round_.duration is not None:
        out.add(n.ROUND_DURATION, (), round_.duration)
    out.add(n.ROUND_END, (), round_.ended)
    out.add(n.NODES, (), len(round_.results))
    for state, diag in round_.results:
        _node(out, state, diag, round_)
    return out.families()


def _node(out: Families, state: NodeState, diag: Diagnosis, round_: Round) -> None:
    host = lab.hostname(state.host)
    for verdict in Verdict:
        out.add(n.VERDICT, (host, str(verdict)), 1.0 if diag.verdict is verdict else 0.0)
    read = state.reachable and state.read_anything
    out.add(n.POLL_SUCCESS, (host,), 1.0 if read else 0.0)
    _repairs(out, host, round_.repairs.get(state.host) if round_.repairs is not None else None)
    if not read:
        return  # unknown: nothing more is said of it
    out.info(n.NODE_INFO, {
        "hostname": host, "driver": lab.version(state.driver), "fm_version": lab.version(state.fm_version),
        "platform": str(state.platform), "simulated": "true" if state.simulated or state.lab else "false"})
    counts: dict[tuple[str, str], int] = {}
    for finding in diag.findings:
        key = (finding.code, str(finding.severity))
        counts[key] = counts.get(key, 0) + 1
    for (code, severity), count in counts.items():
        out.add(n.FINDINGS, (host, code, severity), count)
    for section in sorted({lab.section(m.section) for m in state.missing}):
        out.add(n.MISSING, (host, section), 1.0)
    _gpus(out, host, state)
    _fm(out, host, state, round_.fm_starts)
    _kernel(out, host, state)
    if state.was_read("holders"):
        kinds = {kind: 0 for kind in lab.HOLDER_KINDS}
        for holder in state.holders:
            kinds[str(holder.kind)] = kinds.get(str(holder.kind), 0) + 1
        for kind, count in kinds.items():
            out.add(n.HOLDERS, (host, kind), count)
    smoke = state.smoke
    if smoke is not None and state.was_read("smoke"):
        if smoke.avg_busbw is not None:
            out.add(n.SMOKE_BUSBW, (host,), smoke.avg_busbw * GB)
        out.add(n.SMOKE_PASSED, (host,), 1.0 if smoke.passed else 0.0)
        at = node_time(smoke.at)
        if at is not None:
            out.add(n.SMOKE_TIME, (host,), at)


def _gpus(out: Families, host: str, state: NodeState) -> None:
    if state.was_read("gpus"):
        for gpu in state.gpus:
            if not gpu.fabric.supported:
                continue  # a GPU without a fabric has no registration to report
            ids = (host, str(gpu.index), lab.version(gpu.uuid) if gpu.uuid else "", gpu.bus_id.lower(),
                   lab.version(gpu.name))
            out.add(n.FABRIC_STATE, (*ids, lab.fabric_state(gpu.fabric.state), lab.fabric_status(gpu.fabric.status)),
                    1.0)
    if state.was_read("nvswitches"):
        for number in range(len(state.nvswitches)):
            out.add(n.NVSWITCH, (host, str(number)), 1.0)


def _fm(out: Families, host: str, state: NodeState, starts: FmStarts | None) -> None:
    """FM's unit on a node that needs a host FM (an HGX board, or NVSwitches shown); not where FM runs in
    the GPU Operator's driver pod (no host unit to be active)."""
    if not state.was_read("units"):
        return
    in_pod = state.fm_place is not None and state.fm_place.in_container
    needs = state.platform.has_host_fm or bool(state.nvswitches)
    unit = state.service("nvidia-fabricmanager")
    if needs and not in_pod:
        out.add(n.FM_ACTIVE, (host,), 1.0 if unit is not None and unit.active == "active" else 0.0)
    started = fm_start(state)
    if started is not None:
        out.add(n.FM_START_TIME, (host,), started)
    if starts is None:
        starts = FmStarts()
    count = starts.see(state, state.node_clock if state.node_clock is not None else time.time())
    if count is not None and (unit is not None or needs):
        out.add(n.FM_STARTS, (host,), count)


def _kernel(out: Families, host: str, state: NodeState) -> None:
    if not state.was_read("kernel"):
        return
    out_of_sync = 0
    xid_counts: dict[str, int] = {}
    for event in state.kernel_events:
        if event.code == OUT_OF_SYNC:
            out_of_sync += 1
        elif event.code == "XID" and (label := lab.nvlink_xid(event.xid)) is not None:
            xid_counts[label] = xid_counts.get(label, 0) + 1
    out.add(n.OUT_OF_SYNC, (host,), out_of_sync)
    for xid, count in sorted(xid_counts.items()):
        out.add(n.NVLINK_XID, (host, xid), count)


def _repairs(out: Families, host: str, tally: RepairTally | None) -> None:
    if tally is None:
        return
    for result, count in sorted(tally.counts.items()):
        out.add(n.REPAIRS, (host, result), count)
    if tally.last_result is not None:
        out.add(n.REPAIR_LAST, (host, tally.last_result), 1.0)
        out.add(n.REPAIR_LEFT_OUT, (host,), 1.0 if tally.left_out else 0.0)
        if tally.last_at is not None:
            out.add(n.REPAIR_LAST_TIME, (host,), tally.last_at)


class Latest(Collector):
    """A collector that yields the families it was last given: the textfile and ``/metrics`` read the same."""

    def __init__(self) -> None:
        self._families: list[Metric] = []

    def replace(self, built: list[Metric]) -> None:
        """Expose ``built`` from now on (built before, swapped in one assignment)."""
        self._families = built

    def collect(self) -> Iterable[Metric]:
        return list(self._families)


class LatestRound(Latest):
    """The last round's families (``check``'s)."""

    def update(self, round_: Round) -> None:
        """Replace what is exposed by ``round_``'s families."""
        self.replace(families(round_))


class LiveRound(Collector):
    """A collector that builds its families at each scrape from ``source`` (the console's fleet as it stands)."""

    def __init__(self, source: Callable[[], Round]) -> None:
        self.source = source

    def collect(self) -> Iterable[Metric]:
        return families(self.source())


def registry_of(collector: Collector) -> CollectorRegistry:
    """A registry of its own holding only ``collector``: no process or platform metrics leak in."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def registry_for(round_: Round) -> CollectorRegistry:
    """A fresh registry exposing ``round_`` alone."""
    latest = LatestRound()
    latest.update(round_)
    return registry_of(latest)


__all__ = ["Families", "Latest", "LatestRound", "LiveRound", "Round", "families", "registry_for", "registry_of"]
