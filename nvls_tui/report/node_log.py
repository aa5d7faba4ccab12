"""One node's records, read once (:class:`NodeLog`), and the operator's changes by hand in words."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from nvls_tui.model import SmokeResult
from nvls_tui.report.clock import NodeClock, measure_clock, utc_moment
from nvls_tui.report.text import as_dict, code_span, prose
from nvls_tui.runbook.event_records import EVENT_KINDS, from_record
from nvls_tui.runbook.events import SmokeFinished, StepFinished
from nvls_tui.runbook.happened import NodeHappened

# Console actions whose signals and unit changes are the operator's own hand, not the runbook's.
BY_HAND_MODES = frozenset({"sigterm", "unit-stop", "unit-start"})


@dataclass
class NodeLog:
    """The records of one node and what the report reads from them more than once."""

    host: str
    records: list[dict[str, Any]]
    clock: NodeClock

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        """The node's records of these kinds, in order."""
        return [r for r in self.records if r.get("event") in kinds]

    def observed(self, label: str) -> dict[str, Any] | None:
        """The summary of the node read ``before`` or ``after`` (the first before, the last after)."""
        found = [as_dict(r.get("summary")) for r in self.events("node-observed") if r.get("label") == label]
        found = [s for s in found if s is not None]
        return (found[0] if label == "before" else found[-1]) if found else None

    @functools.cached_property
    def happened(self) -> NodeHappened:
        """What happened to the node: its records read back as events, through the runbook's one fold (the
        console's columns and the progress lines read the same), e.g. the result and what the restore put back."""
        node = NodeHappened(self.host)
        for record in self.records:
            if record.get("event") in EVENT_KINDS:
                node.fold(from_record(record))
        return node

    @property
    def dry_run(self) -> bool:
        """True when a record of this node says it was a dry run (nothing was changed)."""
        return any(r.get("dry_run") for r in self.records)

    def step(self, name: str) -> StepFinished | None:
        """How step ``name`` last ended (its last ``step-finished``, read back into the event)."""
        record = next((r for r in reversed(self.events("step-finished")) if r.get("step") == name), None)
        event = from_record(record) if record is not None else None
        return event if isinstance(event, StepFinished) else None

    def ok_commands(self, step: str | None = None) -> list[list[str]]:
        """The argv of every command that exited 0 (in ``step``, when given)."""
        return [[str(a) for a in r["argv"]] for r in self.events("command-finished")
                if r.get("exit_status") == 0 and isinstance(r.get("argv"), list)
                and (step is None or r.get("step") == step)]

    def smokes(self) -> list[SmokeResult]:
        """Every smoke test's judged result, in order (the ``smoke-finished`` records read back as events)."""
        events = (from_record(r) for r in self.events("smoke-finished"))
        return [e.smoke for e in events if isinstance(e, SmokeFinished)]

    def stopped_units(self) -> list[str]:
        """The units quiesce stopped, in order."""
        return [a[2] for a in self.ok_commands("quiesce") if a[:2] == ["systemctl", "stop"] and len(a) > 2]

    def by_hand(self) -> list[dict[str, Any]]:
        """The console's own actions in this log: ``manual-change`` records and signals sent by hand."""
        mode, out = "", []
        for r in self.records:
            if r.get("event") == "run-started":
                mode = str(r.get("mode") or "")
            elif r.get("event") == "manual-change" or (r.get("event") == "process-signalled" and mode in BY_HAND_MODES):
                out.append(r)
        return out

    def manual_list(self) -> dict[str, Any] | None:
        """The ``manual-changes`` record: what was changed by hand before this repair."""
        found = self.events("manual-changes")
        return found[-1] if found else None


def operator_of(record: dict[str, Any]) -> str:
    """Who made a change (Markdown): the record's operator, or "the operator" where it names none."""
    return prose(record.get("operator") or "the operator")


def change_words(change: dict[str, Any], who: str, at: str | None) -> str:
    """``kim stopped `nvidia-dcgm.service` at 16:01:02 UTC (it was active)`` (Markdown)."""
    when = f" at {at}" if at else ""
    if change.get("what") == "signalled" or change.get("event") == "process-signalled":
        outcome = change.get("outcome")
        tail = f" → {prose(outcome)}" if outcome and outcome != "signalled" else ""
        return (f"{who} sent {prose(change.get('signal') or 'SIGTERM')} to pid {prose(change.get('pid'))} "
                f"({prose(change.get('holder_kind') or 'process')}: {prose(change.get('command'))}){when}{tail}")
    was = f" (it was {prose(change.get('before'))})" if change.get("before") else ""
    return f"{who} {prose(change.get('what'))} {code_span(change.get('unit'))}{when}{was}"


def node_logs(records: list[dict[str, Any]]) -> list[NodeLog]:
    """One :class:`NodeLog` per node, in the order the nodes first appear, each with its clock."""
    first = utc_moment(records[0].get("time")) if records else None
    day = first.date() if first else None
    hosts: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        node = r.get("node")
        if node and isinstance(node, str):
            hosts.setdefault(node, []).append(r)
    return [NodeLog(host, mine, measure_clock(mine, day)) for host, mine in hosts.items()]
