"""What a repair changed in the Kubernetes cluster, told from the kubectl calls its audit log holds.

Each change a repair makes to the cluster is a typed change through the door (runbook/changes.py,
runbook/kube_repair.py), audited as its argv. The log's reader puts each command's change on its entry (read back
once at the edge: ``runbook/logged_changes``), and the report reads the ones that exited 0: the cordon, the
operand labels paused and put back, the evictions, the cordon lifted, or kept with the annotation that names the
step the repair stopped at (with how to lift it).
"""

from __future__ import annotations

from nvls_tui.report.node_log import NodeLog
from nvls_tui.report.text import code_span, code_spans
from nvls_tui.runbook.changes import (
    STOPPED_AT,
    Annotate,
    Cordon,
    EvictPod,
    InCluster,
    SetOperandLabel,
    Uncordon,
)
from nvls_tui.runbook.events import Note
from nvls_tui.words import count


def _changes(log: NodeLog) -> list[InCluster]:
    """The cluster changes the log shows made (exit 0), in order."""
    return [c for c in log.changes_made() if isinstance(c, InCluster)]


def cluster_done(log: NodeLog) -> list[str]:
    """Phrases of what the repair did in the cluster (none without a cluster)."""
    changes = _changes(log)
    parts: list[str] = [f"{code_span(c.node)} cordoned in Kubernetes" for c in changes if isinstance(c, Cordon)]
    labels = [c for c in changes if isinstance(c, SetOperandLabel)]
    paused = [c.key for c in labels if c.pauses]
    back = [c.key for c in labels if not c.pauses]
    if paused:
        again = " and put back by the restore" if set(paused) <= set(back) else ""
        parts.append(f"{count(len(paused), 'operand label')} paused ({code_spans(paused)}){again}")
    evicted = [c.name for c in changes if isinstance(c, EvictPod)]
    if evicted:
        parts.append(f"{count(len(evicted), 'pod')} evicted ({code_spans(evicted)})")
    parts += [f"{code_span(c.node)} uncordoned after the smoke test passed" for c in changes if isinstance(c, Uncordon)]
    return parts


# The preflight's note (runbook/kube_repair.cordon) on a node someone else cordoned: the repair leaves it so.
_THEIRS = " was cordoned already (by someone else)"


def cluster_left(log: NodeLog) -> list[str]:
    """A cordon the repair kept (after a failure or an interruption), with how to lift it; a cordon that was
    someone else's before the repair, which it leaves whatever the result."""
    out = []
    for note in log.events(Note):
        message = note.message
        if _THEIRS in message:
            node = message.split(_THEIRS, 1)[0]
            out.append(f"{code_span(node)} stays cordoned in Kubernetes: it was cordoned before the repair, not by "
                       f"nvls-tui; {code_span(f'kubectl uncordon {node}')} once whoever cordoned it agrees")
    for change in _changes(log):
        if isinstance(change, Annotate) and change.step is not None:
            node, step = change.node, change.step
            out.append(f"{code_span(node)} stays cordoned in Kubernetes ({code_span(f'{STOPPED_AT}={step}')}): "
                       f"once it is repaired, {code_span(f'kubectl uncordon {node}')}")
    return out


__all__ = ["cluster_done", "cluster_left"]
