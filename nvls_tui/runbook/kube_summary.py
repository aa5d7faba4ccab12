"""What a planned repair does in the node's Kubernetes cluster, in the operator's terms, read from its changes.

The dry run hands the door each change the run would make (``NodeOutcome.changes``), the cluster's included
(:mod:`nvls_tui.runbook.changes`: :class:`Cordon`, :class:`SetOperandLabel`, :class:`EvictPod`,
:class:`DeleteDriverPod`), and each step keeps its entries, a cordon left as it was included (:class:`CordonKept`);
the plan's summary and the typed confirmation read those values, never the lines the plan shows.
"""

from __future__ import annotations

from nvls_tui.runbook.changes import Cordon, CordonKept, DeleteDriverPod, EvictPod, SetOperandLabel
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.words import count


def evictions(outcome: NodeOutcome) -> list[str]:
    """``namespace/pod`` of each workload pod the planned repair evicts, in order."""
    return [c.name for c in outcome.changes if isinstance(c, EvictPod)]


def cluster_words(outcome: NodeOutcome) -> tuple[list[str], str | None]:
    """What the repair does in the node's Kubernetes cluster: the lines that come before the node's own stops
    (cordon, operands paused, workloads evicted) and the driver pod's restart, which is the reset where Fabric
    Manager runs in that pod (None where it does not). Nothing for a node in no cluster."""
    lines = [f"{kept.node} is cordoned already (by an earlier nvls-tui repair): a passing repair uncordons it"
             if kept.inherited else f"{kept.node} is cordoned already: the repair leaves it cordoned"
             for step in outcome.steps for kept in step.entries if isinstance(kept, CordonKept)]
    changes = outcome.changes
    lines += [f"cordons {c.node} in Kubernetes (no new pod lands on it); uncordons it only after a passing smoke test"
              for c in changes if isinstance(c, Cordon)]
    paused = [c for c in changes if isinstance(c, SetOperandLabel) and c.pauses]
    if paused:
        lines.append(f"pauses {count(len(paused), 'GPU Operator operand')} on it (their nvidia.com/gpu.deploy.* "
                     "labels); the restore puts them back")
    evicted = evictions(outcome)
    if evicted:
        shown = ", ".join(evicted[:3]) + (f" +{len(evicted) - 3} more" if len(evicted) > 3 else "")
        lines.append(f"evicts {count(len(evicted), 'workload pod')}: {shown}")
    driver = None
    for change in changes:
        if isinstance(change, DeleteDriverPod):
            driver = (f"restarts the GPU Operator's driver pod {change.name} (Fabric Manager runs in it): the driver "
                      "reloads, which resets every GPU and NVSwitch")
    return lines, driver


__all__ = ["cluster_words", "evictions"]
