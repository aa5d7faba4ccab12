"""A node's Kubernetes and Slurm sides in full (``d`` on the node screen, as k9s's describe), and its x-ray
(``x``): node → GPU → holder → pod, job or unit. Pure: lines and a tree of plain text, never markup.

The node screen shows what decides a repair; these show everything the poll and the clusters said, where a
3 a.m. operator looks next: the node's taints, labels and every pod on it (not only the holders), its Slurm
state and jobs, and which process holds which GPU on behalf of which pod, job or unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nvls_tui.model import NodeState
from nvls_tui.model.kube import NodeEvents
from nvls_tui.model.node import Holder
from nvls_tui.textsafe import one_line
from nvls_tui.views.fleet_top import age_words

# What a line of the describe view is, for its style: a section's heading, a key and its value, a note.
HEADING, ITEM, NOTE = "heading", "item", "note"
# How many of a node's events the view shows: the newest, as ``kubectl describe node`` ends with them.
LAST_EVENTS = 10


def _pairs(pairs: tuple[tuple[str, str], ...]) -> list[str]:
    return [f"  {one_line(k)}={one_line(v)}" for k, v in pairs]


def event_lines(node: str, read: NodeEvents | None) -> list[tuple[str, str]]:
    """The node's newest events (age, type, reason, message), or why they are not shown: being read, or not read
    (unknown, never "no events")."""
    by_hand = (f"  kubectl get events -A --field-selector involvedObject.kind=Node,involvedObject.name={one_line(node)}",
               NOTE)
    if read is None:
        return [("Events: reading them from the cluster…", HEADING)]
    if read.error is not None:
        return [(f"Events: not read (unknown): {one_line(read.error)}", HEADING), by_hand]
    events = read.events
    shown = events[-LAST_EVENTS:]
    out = [(f"Events (last {len(shown)} of {len(events)})" if len(shown) < len(events) else f"Events ({len(events)})",
            HEADING)]
    if not events:
        # Said as the cluster's word, not as health: kube-apiserver keeps events an hour by default (--event-ttl).
        return [*out, ("  the cluster holds none about this node (it keeps events 1 h by default)", NOTE)]
    for event in shown:
        age = "?" if event.last_seen is None else age_words(read.read_at - event.last_seen)
        times = f" (x{event.count})" if event.count and event.count > 1 else ""
        out.append((f"  {age:>6}  {one_line(event.type or '?'):<7}  {one_line(event.reason or '?')}{times}  "
                    f"{one_line(event.message or '')}", ITEM))
    return out


def describe_lines(state: NodeState, events: NodeEvents | None = None) -> list[tuple[str, str]]:
    """The node's Kubernetes side (readiness, cordon, taints, labels, annotations, identity, every pod on it, its
    newest events: ``events``, None while they are being read) and its Slurm side (state, reason, jobs), as
    ``(text, kind)`` lines; what was not read says so."""
    out: list[tuple[str, str]] = [(f"Kubernetes: {state.host}", HEADING)]
    kube = state.k8s
    if kube is None:
        out.append(("  no cluster is configured for this node (--kubeconfig, [kubernetes] in the config file)", NOTE))
    elif kube.error is not None:
        out.append((f"  not read: {one_line(kube.error)} ({kube.reason or 'failed'})", NOTE))
    elif not kube.found:
        out.append((f"  the cluster has no node {one_line(kube.node)} (map the target: --kube-node-map)", NOTE))
    else:
        def word(value: bool | None, yes: str, no: str) -> str:
            return "unknown (not read)" if value is None else yes if value else no

        out += [(f"  node {one_line(kube.node)}: Ready {word(kube.ready, 'True', 'False/Unknown')}, "
                 f"{word(kube.cordoned, 'cordoned (unschedulable)', 'schedulable')}", ITEM),
                (f"  identity: bootID {kube.boot_id or '–'}, machineID {kube.machine_id or '–'}, "
                 f"systemUUID {kube.system_uuid or '–'}", ITEM),
                (f"Conditions ({len(kube.conditions)})", HEADING)]
        out += [(f"  {one_line(kind)}={one_line(status)}" + (f" ({one_line(reason)})" if reason else ""), ITEM)
                for kind, status, reason in kube.conditions] or [("  none read", NOTE)]
        out.append((f"Taints ({len(kube.taints)})", HEADING))
        out += [(f"  {one_line(t.key)}{'=' + one_line(t.value) if t.value else ''}:{one_line(t.effect)}", ITEM)
                for t in kube.taints] or [("  none", NOTE)]
        out.append((f"Labels ({len(kube.labels)})", HEADING))
        out += [(line, ITEM) for line in _pairs(kube.labels)] or [("  none", NOTE)]
        out.append((f"Annotations ({len(kube.annotations)})", HEADING))
        out += [(line, ITEM) for line in _pairs(kube.annotations)] or [("  none", NOTE)]
        out.append((f"Pods on it ({len(kube.pods)})", HEADING))
        for pod in sorted(kube.pods, key=lambda p: (p.namespace, p.name)):
            owner = f"{pod.owner_kind} {pod.owner_name}" if pod.owner_kind and pod.owner_name else "bare pod"
            containers = ", ".join(c.name for c in pod.containers) or "–"
            out.append((f"  {one_line(pod.namespace)}/{one_line(pod.name)}  {pod.phase or '?'}  {one_line(owner)}  "
                        f"containers: {one_line(containers)}", ITEM))
        if not kube.pods:
            out.append(("  none", NOTE))
        out += event_lines(kube.node, events)
    out.append(("Slurm", HEADING))
    sched = state.scheduler
    if sched is None:
        out.append(("  no Slurm cluster is configured for this node (--slurm-conf, [slurm] in the config file)", NOTE))
    elif sched.error is not None:
        out.append((f"  not read: {one_line(sched.error)}", NOTE))
    else:
        reason = f", reason: {one_line(sched.reason)}" if sched.reason else ""
        out.append((f"  node {one_line(sched.node)}: {sched.state} ({one_line(sched.raw or '?')}){reason}", ITEM))
        out += [(f"  job {j.id} {one_line(j.user)}/{one_line(j.name)} {j.state or '?'}"
                 + (f", ends {one_line(j.end)}" if j.end else ""), ITEM) for j in sched.jobs]
        if not sched.jobs:
            out.append(("  no job runs on it" if not sched.jobs_unseen else "  jobs hold it, but none was read", NOTE))
    return out


@dataclass(frozen=True)
class XrayNode:
    """One line of the x-ray tree and the lines under it."""

    label: str
    children: tuple[XrayNode, ...] = field(default_factory=tuple)


def pod_uid_words(pod: str) -> str:
    """A pod the cluster did not name, by its uid: the cgroup's ``pod<uid>`` said ``pod uid <uid>`` (not "pod pod…")."""
    return f"pod uid {pod.removeprefix('pod')}" if pod.startswith("pod") else f"pod {pod}"


def _owner(h: Holder) -> str:
    if h.pod_ref is not None:
        ref = h.pod_ref
        owner = f", owned by {ref.owner_kind} {ref.owner_name}" if ref.owner_kind and ref.owner_name else ", bare pod"
        return one_line(f"pod {ref.namespace}/{ref.name} (container {ref.container or '?'}{owner})")
    if h.job is not None:
        return one_line(f"Slurm job {h.job.id} {h.job.user}/{h.job.name}")
    if h.unit:
        return one_line(f"unit {h.unit}")
    if h.pod:
        return one_line(f"{pod_uid_words(h.pod)} (its name not read: no cluster)")
    return "no unit, pod or job: a process started by hand"


def _holder(h: Holder) -> XrayNode:
    return XrayNode(f"PID {h.pid} {one_line(h.user)} {h.kind.value}: {one_line(h.command)[:120]}",
                    (XrayNode(_owner(h)),))


def xray(state: NodeState) -> XrayNode:
    """node → each GPU → the holders of its device file → their pod, job or unit; the holders of the shared
    device files (``/dev/nvidiactl``, ``/dev/nvidia-uvm``, the NVSwitches) under their own branch."""
    gpus = []
    by_gpu: set[int] = set()
    for gpu in state.gpus:
        device = f"/dev/nvidia{gpu.index}"
        holders = [h for h in state.holders if device in h.devices]
        by_gpu.update(h.pid for h in holders)
        label = (f"GPU {gpu.index} {gpu.bus_id} {one_line(gpu.name)}: {gpu.fabric.state}/{gpu.fabric.status}, "
                 f"{len(holders)} holder{'s' if len(holders) != 1 else ''}")
        gpus.append(XrayNode(label, tuple(_holder(h) for h in holders)))
    shared = [h for h in state.holders if h.pid not in by_gpu]
    if shared:
        gpus.append(XrayNode(f"shared device files only (ctl, uvm, NVSwitches): {len(shared)} holders",
                             tuple(_holder(h) for h in shared)))
    if state.missing_section("holders") is not None:
        gpus.append(XrayNode("holders: not read (unknown, never none)"))
    return XrayNode(f"{state.host}: {len(state.gpus)} GPUs, {len(state.holders)} holders", tuple(gpus))


__all__ = ["HEADING", "ITEM", "LAST_EVENTS", "NOTE", "XrayNode", "describe_lines", "event_lines", "xray"]
