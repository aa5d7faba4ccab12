"""What a repair changed in the Kubernetes cluster, told from the kubectl calls its audit log holds.

Each kubectl call of a repair is an audited command (runbook/kube_repair.py). The report reads the ones that
exited 0: the cordon, the operand labels paused and put back, the evictions, the cordon lifted, or kept with
the annotation that names the step the repair stopped at (with how to lift it).
"""

from __future__ import annotations

from nvls_tui.kube.words import kubectl_args
from nvls_tui.report.node_log import NodeLog
from nvls_tui.report.text import code_span, code_spans
from nvls_tui.runbook.events import Note
from nvls_tui.runbook.kube_repair import PAUSED, STOPPED_AT
from nvls_tui.words import count


def _calls(log: NodeLog) -> list[list[str]]:
    return [w for a in log.ok_commands() if (w := kubectl_args(a)) is not None]


def cluster_done(log: NodeLog) -> list[str]:
    """Phrases of what the repair did in the cluster (none without a cluster)."""
    calls = _calls(log)
    parts: list[str] = []
    for words in calls:
        if words[:1] == ["cordon"] and len(words) > 1:
            parts.append(f"{code_span(words[1])} cordoned in Kubernetes")
    paused = [w[-1].split("=", 1)[0] for w in calls if w[:2] == ["label", "node"] and w[-1].endswith(f"={PAUSED}")]
    back = [w[-1].rstrip("-").split("=", 1)[0] for w in calls
            if w[:2] == ["label", "node"] and not w[-1].endswith(f"={PAUSED}")]
    if paused:
        again = " and put back by the restore" if set(paused) <= set(back) else ""
        parts.append(f"{count(len(paused), 'operand label')} paused ({code_spans(paused)}){again}")
    # /api/v1/namespaces/NS/pods/P/eviction
    evicted = [f"{bits[4]}/{bits[6]}" for w in calls if w[:2] == ["create", "--raw"] and len(w) > 2
               and len(bits := w[2].split("/")) == 8 and bits[7] == "eviction"]
    if evicted:
        parts.append(f"{count(len(evicted), 'pod')} evicted ({code_spans(evicted)})")
    for words in calls:
        if words[:1] == ["uncordon"] and len(words) > 1:
            parts.append(f"{code_span(words[1])} uncordoned after the smoke test passed")
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
    for words in _calls(log):
        if words[:2] == ["annotate", "node"] and len(words) > 3 and words[3].startswith(f"{STOPPED_AT}="):
            node, step = words[2], words[3].split("=", 1)[1]
            out.append(f"{code_span(node)} stays cordoned in Kubernetes ({code_span(f'{STOPPED_AT}={step}')}): "
                       f"once it is repaired, {code_span(f'kubectl uncordon {node}')}")
    return out


__all__ = ["cluster_done", "cluster_left", "kubectl_args"]
