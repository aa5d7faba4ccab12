"""A repair plan in the operator's terms (pure): what it stops, resets, starts (``is_bookkeeping``, which commands
are the repair's own, is the runbook's: ``runbook/bookkeeping.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nvls_tui.parsers.restarters import APT_TIMERS
from nvls_tui.runbook.changes import Change, ResetGpus, RunSmoke, SetPersistence, SignalHolder, UnitChange
from nvls_tui.runbook.hold_apt import held_sentence
from nvls_tui.runbook.kube_summary import cluster_words
from nvls_tui.runbook.kube_summary import evictions as evictions  # the confirmation's, here with its sentence
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import SIDE_EFFECT
from nvls_tui.runbook.steps import FM_UNIT, KUBELET, PERSISTENCED
from nvls_tui.views.deadlines import rechecks_first
from nvls_tui.words import count


def recheck_sentence(host: str) -> str:
    """What the confirmation says of a node whose fabric looks healthy (it is not promised a reset)."""
    return (f"{host} looks healthy: it gets the NVLS smoke test first and is skipped (nothing reset) if it passes; "
            "it is reset only if the test fails twice")


def evictions_sentence(evicted: Mapping[str, Sequence[str]]) -> str | None:
    """What the typed confirmation says of the evictions: ``evicts 2 workload pods: ns/pod (gpu06), ...``, each
    named (the operator confirms them with the names); None where the repair evicts none."""
    named = [f"{pod} ({host})" for host, pods in evicted.items() for pod in pods]
    if not named:
        return None
    return f"evicts {count(len(named), 'workload pod')}: {', '.join(named)}"


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
