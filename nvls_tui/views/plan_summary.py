"""A repair plan in the operator's terms (pure): what it stops, resets, starts (``is_bookkeeping``, which commands
are the repair's own, is the runbook's: ``runbook/bookkeeping.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nvls_tui.kube.words import kubectl_line_args
from nvls_tui.parsers.restarters import APT_TIMERS
from nvls_tui.runbook.changes import Change, ResetGpus, RunSmoke, SetPersistence, SignalHolder, UnitChange
from nvls_tui.runbook.hold_apt import held_sentence
from nvls_tui.runbook.kube_repair import PAUSED
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import SIDE_EFFECT
from nvls_tui.runbook.steps import FM_UNIT, KUBELET, PERSISTENCED
from nvls_tui.views.deadlines import rechecks_first
from nvls_tui.words import count


def recheck_sentence(host: str) -> str:
    """What the confirmation says of a node whose fabric looks healthy (it is not promised a reset)."""
    return (f"{host} looks healthy: it gets the NVLS smoke test first and is skipped (nothing reset) if it passes; "
            "it is reset only if the test fails twice")


def evictions(outcome: NodeOutcome) -> list[str]:
    """``namespace/pod`` of each workload pod the planned repair evicts (its dry run's Eviction calls), in order."""
    out = []
    for step in outcome.steps:
        for words in filter(None, map(kubectl_line_args, step.commands)):
            # create --raw /api/v1/namespaces/NS/pods/P/eviction
            path = words[2].split("/") if words[:2] == ["create", "--raw"] and len(words) > 2 else []
            if len(path) == 8 and path[7] == "eviction":
                out.append(f"{path[4]}/{path[6]}")
    return out


def evictions_sentence(evicted: Mapping[str, Sequence[str]]) -> str | None:
    """What the typed confirmation says of the evictions: ``evicts 2 workload pods: ns/pod (gpu06), ...``, each
    named (the operator confirms them with the names); None where the repair evicts none."""
    named = [f"{pod} ({host})" for host, pods in evicted.items() for pod in pods]
    if not named:
        return None
    return f"evicts {count(len(named), 'workload pod')}: {', '.join(named)}"


def cluster_words(outcome: NodeOutcome) -> tuple[list[str], str | None]:
    """What the repair does in the node's Kubernetes cluster, from its dry run's kubectl lines: the lines that come
    before the node's own stops (cordon, operands paused, workloads evicted) and the driver pod's restart, which
    is the reset where Fabric Manager runs in that pod (None where it does not). Nothing for a node in no cluster."""
    raw = [c for step in outcome.steps for c in step.commands]
    calls = [w for w in map(kubectl_line_args, raw) if w]
    lines = []
    for note in raw:  # the dry run's own note where the node was cordoned before the repair
        if note.startswith("# ") and " is cordoned already: it is left so" in note:
            node = note[2:].split()[0]
            lines.append(f"{node} is cordoned already (by an earlier nvls-tui repair): a passing repair uncordons it"
                         if note.endswith("until a repair passes")
                         else f"{node} is cordoned already: the repair leaves it cordoned")
    for words in calls:
        if words[:1] == ["cordon"] and len(words) > 1:
            lines.append(f"cordons {words[1]} in Kubernetes (no new pod lands on it); uncordons it only after a "
                         "passing smoke test")
    paused = [w for w in calls if w[:1] == ["label"] and any(a.endswith(f"={PAUSED}") for a in w)]
    if paused:
        lines.append(f"pauses {count(len(paused), 'GPU Operator operand')} on it (their nvidia.com/gpu.deploy.* "
                     "labels); the restore puts them back")
    evicted = evictions(outcome)
    if evicted:
        shown = ", ".join(evicted[:3]) + (f" +{len(evicted) - 3} more" if len(evicted) > 3 else "")
        lines.append(f"evicts {count(len(evicted), 'workload pod')}: {shown}")
    driver = None
    for words in calls:  # delete pod -n NS P --wait=false
        if words[:2] == ["delete", "pod"] and "-n" in words:
            at = words.index("-n")
            rest = [w for w in words[at + 2:] if not w.startswith("-")]
            if at + 1 < len(words) and rest:
                driver = (f"restarts the GPU Operator's driver pod {words[at + 1]}/{rest[0]} (Fabric Manager runs in "
                          "it): the driver reloads, which resets every GPU and NVSwitch")
    return lines, driver


def _planned(outcome: NodeOutcome) -> list[Change]:
    """Every change of the plan, in order (its steps' entries: values, not their lines)."""
    return [e for step in outcome.steps for e in step.entries if isinstance(e, Change)]


def what_it_does(outcome: NodeOutcome) -> list[str]:
    """The plan in the operator's terms, what matters first: what goes down, what is reset, what comes back.

    Read from the plan's changes (each step's ``entries``), never from its command lines."""
    changes = _planned(outcome)
    units = [c for c in changes if isinstance(c, UnitChange)]
    stops = list(dict.fromkeys(c.unit for c in units if c.verb == "stop"))
    starts = list(dict.fromkeys(c.unit for c in units if c.verb == "start" and c.unit != FM_UNIT))
    lines = []
    if rechecks_first(outcome):  # a healthy-looking node: the rest runs only when the re-check fails
        lines += ["looks healthy: runs the NVLS smoke test first; if it passes, the node is skipped (nothing reset)",
                  "only if the test fails twice:"]
    cluster, driver = cluster_words(outcome)
    lines += cluster
    if stops:
        lines.append("stops " + ", ".join(stops))
    if held := tuple(t for t in APT_TIMERS if t in stops):  # FM_RESTARTER: apt held for the repair
        lines.append(held_sentence(held))
    if KUBELET in stops:
        lines.append("kubelet down: the GPU Operator pods on the node stay down until the restore starts it again")
    if any(isinstance(c, SignalHolder) for c in changes) or any(s.name == "quiesce" for s in outcome.steps):
        lines.append("SIGTERMs the remaining management processes on the GPUs (PIDs re-checked first; never SIGKILL)")
    if any(isinstance(c, SetPersistence) and not c.enabled for c in changes):
        lines.append("turns persistence mode off for the reset (nvidia-smi -pm 0; it blocks the reset) and the "
                     "restore turns it back on where it was on (nvidia-smi -pm 1)")
    if PERSISTENCED in stops:
        lines.append("stops the persistence daemon (nvidia-persistenced holds every GPU open); the restore starts it "
                     "again")
    if any(isinstance(c, ResetGpus) for c in changes):
        basis = outcome.basis or {}
        gpus, switches = basis.get("gpus"), basis.get("nvswitches")
        lines.append(f"resets {'all ' + count(gpus, 'GPU') if gpus else 'every GPU'} and "
                     f"{count(switches, 'NVSwitch') if switches else 'every NVSwitch'} (nvidia-smi -r)")
    if driver:
        lines.append(driver)
    # What the reset commits besides (a pending MIG mode change): the reset step's own notes.
    lines += [e[2:] for step in outcome.steps if step.name == "reset" for e in step.entries
              if isinstance(e, str) and e.startswith(SIDE_EFFECT)]
    if any(c.verb == "start" and c.unit == FM_UNIT for c in units):
        lines.append("starts Fabric Manager and waits for every GPU to register")
    if any(isinstance(c, RunSmoke) for c in changes):
        lines.append("runs the NVLS smoke test (all_reduce_perf with NVLS forced)")
    if starts:
        lines.append("then starts again: " + ", ".join(starts))
    return lines
