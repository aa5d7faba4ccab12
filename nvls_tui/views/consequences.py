"""What a SIGTERM of selected holders will lead to, said before it is sent (issue 14, item 11).

Pure: from the holders and the node's last poll. A pod's process comes back under a new PID while
kubelet runs; a unit's main process may be restarted by systemd and is better stopped as the unit;
a watch loop's nvidia-smi is replaced within a second unless the loop itself goes.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvls_tui.model import Holder, HolderKind, NodeState
from nvls_tui.textsafe import one_line

KUBELET = "kubelet.service"


def workload_words(holder: Holder) -> str | None:
    """Whose work a holder is, where it is someone's workload: ``Slurm job 4242 (carol/train)``,
    ``bob's process (a user's workload)``, ``a pod's process (pod …, a workload)``; None for NVIDIA's
    own agents (exporters, device plugins, FM, nvidia-smi), which a repair stops as a matter of course."""
    if holder.job is not None:
        job = holder.job
        return f"Slurm job {job.id} ({one_line(job.user)}/{one_line(job.name)})"
    if holder.kind.is_management:
        return None
    if holder.pod:
        return f"a pod's process (pod {one_line(holder.pod)}, a workload)"
    if holder.user != "root":
        return f"{one_line(holder.user)}'s process (a user's workload)"
    return None


def sigterm_consequences(holders: Sequence[Holder], state: NodeState | None) -> list[str]:
    """One sentence per consequence the operator should know before the signal goes."""
    out: list[str] = []
    kubelet = state.service(KUBELET) if state is not None else None
    pods = [h for h in holders if h.pod]
    if pods and kubelet is not None and kubelet.active == "active":
        what = "the pod's process" if len(pods) == 1 else f"the {len(pods)} pods' processes"
        out.append(f"kubelet is running: it will recreate {what} under new PIDs within seconds; stop "
                   "kubelet.service first (s on the units table), or run the whole repair (r).")
    for holder in holders:
        if holder.unit and not holder.pod and holder.unit.endswith(".service"):
            out.append(f"{holder.kind} {holder.pid} belongs to {holder.unit}: systemd may start it again or leave "
                       f"the unit down (then the next repair starts it); stopping the unit (s) is the clean way.")
    pids = {h.pid for h in holders}
    loops = [h for h in holders if h.kind is HolderKind.NVIDIA_SMI and h.ppid and h.ppid not in pids
             and state is not None and any(p.pid == h.ppid and p.kind is HolderKind.WATCH for p in state.holders)]
    for holder in loops:
        out.append(f"nvidia-smi {holder.pid} is run by watch {holder.ppid}: the loop starts a new one every "
                   "second; select the watch too.")
    return out
