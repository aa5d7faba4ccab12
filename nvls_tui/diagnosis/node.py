"""NodeState -> findings and a verdict (codes and severities of contract.md). Pure.

The rules encode what the incident taught: Fabric Completed/Success is not proof of health (the
kernel's out-of-sync line wins), a single-node HGX board legitimately reports CliqueId 0 with an
all-zero ClusterUUID, and ``In Progress`` is normal for a while after Fabric Manager starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nvls_tui.diagnosis import fm_container, story
from nvls_tui.diagnosis.fabric_manager import _fm_findings, fm_log_needed, playbook_may_apply
from nvls_tui.diagnosis.kernel import (
    gpu_lost_findings,
    kernel_findings,
    kernel_unread_findings,
    recovery_findings,
    smoke_distrust,
)
from nvls_tui.diagnosis.restarters import restarter_findings
from nvls_tui.diagnosis.restore_hint import restore_hint
from nvls_tui.model import FabricHealth, Finding, NodeState, Platform, Severity, Verdict
from nvls_tui.model.node import Diagnosis, MissingEvidence
from nvls_tui.words import count, verb

# The sections a repair's guards need (they refuse without them): on a board the playbook applies to,
# not reading one of them is an error; elsewhere a warning. Either way the node is never healthy.
GUARDED_SECTIONS = frozenset({"gpus", "holders", "processes", "units", "kernel", "fm_version", "nvswitches",
                              "record"})
# Sections whose absence needs no word of its own (the marker; the user id shows through ``holders``).
# Without ``boot`` (or ``clock``) a smoke record hides no older kernel line: nothing reads as healthy.
SILENT_SECTIONS = frozenset({"simulated", "identity", "smoke", "clock", "jobs", "boot"})


@dataclass(frozen=True, slots=True)
class DiagnosisOptions:
    """Tunables of the diagnosis.

    Attributes:
        in_progress_grace: seconds a GPU may stay ``In Progress`` before it counts as stuck (one fleet
            tool uses 3 polls 30 s apart, so 90 s).
    """

    in_progress_grace: float = 90.0


def fabric_findings(state: NodeState, opts: DiagnosisOptions | None = None) -> list[Finding]:
    """Findings about each GPU's fabric registration."""
    opts = opts or DiagnosisOptions()
    findings = []
    young = state.fabric_since is None or state.fabric_since < opts.in_progress_grace
    for gpu in state.gpus:
        fabric = gpu.fabric
        if not fabric.supported and not state.platform.has_host_fm:
            continue  # no NVSwitch fabric to speak of (PCIe boards, GH200, a VM without NVSwitch)
        if fabric.state != "Completed":
            if fabric.state == "In Progress" and young:
                findings.append(Finding("FABRIC_NOT_COMPLETED", Severity.WARNING,
                                        f"GPU {gpu.index} fabric registration is In Progress (normal shortly "
                                        "after Fabric Manager starts)", gpu.index))
            else:
                findings.append(Finding("FABRIC_NOT_COMPLETED", Severity.ERROR,
                                        f"GPU {gpu.index} fabric state is {fabric.state}, not Completed",
                                        gpu.index))
        elif fabric.status != "Success":
            findings.append(Finding("FABRIC_STATUS_ERROR", Severity.ERROR,
                                    f"GPU {gpu.index} fabric is Completed with status {fabric.status}; "
                                    "a reset does not fix this: escalate to the vendor", gpu.index))
        elif (health := fabric.health) is not None and health.summary not in (None, "Healthy"):
            findings.append(_unhealthy(gpu.index, health))
    return findings


def _unhealthy(index: int, health: FabricHealth) -> Finding:
    """``FABRIC_UNHEALTHY`` [warning]: the driver's fabric Health summary is not Healthy although the GPU is
    registered (Completed/Success): NVLS may run degraded, the fields beside the summary say which part."""
    said = {"Bandwidth": health.bandwidth, "Route Recovery in progress": health.route_recovery_in_progress,
            "Route Unhealthy": health.route_unhealthy, "Access Timeout Recovery": health.access_timeout_recovery,
            "Incorrect Configuration": health.incorrect_configuration}
    fields = ", ".join(f"{name}: {value}" for name, value in said.items() if value is not None)
    return Finding("FABRIC_UNHEALTHY", Severity.WARNING,
                   f"GPU {index} fabric is Completed/Success but its Health summary is {health.summary}"
                   f"{f' ({fields})' if fields else ''}: the fabric may be degraded; read nvidia-smi -q's Fabric "
                   "Health block on the node and the Fabric Manager log", index)


def mig_findings(state: NodeState) -> list[Finding]:
    """``MIG_PENDING`` [warning] for each GPU whose MIG mode changes at the next reset (or reboot).

    A repair's ``nvidia-smi -r`` commits it as a side effect. A mode nvidia-smi printed as N/A is unknown,
    not "no change": no finding claims either (the plan says it is unknown).
    """
    return [Finding("MIG_PENDING", Severity.WARNING,
                    f"GPU {g.index} has a pending MIG mode change ({g.mig_current} -> {g.mig_pending}): a GPU reset "
                    "or reboot commits it, and the repair resets every GPU", g.index)
            for g in state.gpus if g.mig_change_pending]


HOST_SIDE_SENTENCE = "the host or provider must finish fabric initialisation"


def host_side(state: NodeState) -> str | None:
    """Why the fabric can only be finished outside this node, or None.

    A VM (or a slice of a board) whose GPUs wait for a fabric (``In Progress``, ``Not Started``) while no
    NVSwitch is visible on its PCI bus: the switches and their Fabric Manager are the host's (a local FM
    finds nothing to manage: NV_WARN_NOTHING_TO_DO), so no reset or FM restart inside can finish it.
    Only where both the GPUs and lspci were read, and lspci listed GPUs (fail closed: an unread bus, or a
    listing that shows none of the GPUs nvidia-smi drives, is no view of the board and proves no switch
    absent; the fabric findings and EVIDENCE_MISSING speak for such a node instead).
    """
    if not state.reachable or not state.gpus or not state.was_read("gpus") or not state.was_read("nvswitches"):
        return None
    if not state.pci_gpus:
        return None
    if state.nvswitches or state.platform in (Platform.GB200_NVL, Platform.HGX_B200):
        return None
    waiting = [g for g in state.gpus if g.fabric.supported and g.fabric.state != "Completed"]
    if not waiting:
        return None
    states = ", ".join(sorted({g.fabric.state for g in waiting}))
    gpus = f"GPU {waiting[0].index}" if len(waiting) == 1 else f"GPUs {_gpu_list([g.index for g in waiting])}"
    return (f"{gpus} fabric {states} with no NVSwitch visible inside this node (a VM or a slice whose fabric is "
            f"managed outside it): {HOST_SIDE_SENTENCE}; no GPU reset or Fabric Manager restart here can")


def coverage_findings(state: NodeState) -> list[Finding]:
    """``KERNEL_COVERAGE`` [warning] where the kernel lines read do not reach back to the boot: lines logged
    before ``kernel_coverage.since`` (a fault among them) are unknown, so the node is not healthy."""
    cov = state.kernel_coverage
    if cov is None or cov.complete_since_boot:
        return []
    since = story.when(cov.since, state) if cov.since else None
    said = f"the kernel log covers this boot only since {cov.since} ({since})" if since else \
        "the kernel log does not reach back to this boot's start (from when it covers is unknown)"
    journal = (f"the journal starts at {cov.journal_since}; earlier lines rotated away" if cov.journal_since
               else "the journal holds no kernel line of this boot")
    ring = "the ring buffer was read as well" if "dmesg" in cov.sources else "the ring buffer could not be read"
    notes = f" ({'; '.join(cov.notes)})" if cov.notes else ""
    return [Finding("KERNEL_COVERAGE", Severity.WARNING, f"{said}: {journal}; {ring}{notes}; a fault logged "
                    "before then is not seen")]


def scheduler_findings(state: NodeState) -> list[Finding]:
    """``SCHEDULER_DRAINED`` (information) while the scheduler sends the node no work, with its reason;
    a scheduler that could not be read, or that says jobs hold the node while none was read, is missing
    evidence (a repair would not know the node's jobs)."""
    sched = state.scheduler
    if sched is None:
        return []
    if sched.error:
        return [Finding("EVIDENCE_MISSING", Severity.WARNING, f"the scheduler could not be read: {sched.error}",
                        section="scheduler", reason="unparseable" if sched.unreadable else "failed")]
    findings = []
    if sched.jobs_unseen:  # Slurm's word that jobs hold the node, with none read: never "no jobs"
        findings.append(Finding("EVIDENCE_MISSING", Severity.WARNING,
                                f"Slurm has {sched.node} {sched.state}{f' ({sched.raw})' if sched.raw else ''} but no "
                                "job on it was read: its jobs are unknown, and a repair refuses", section="scheduler",
                                reason="failed"))
    if sched.held_back:
        why = f": {sched.reason}" if sched.reason else ""
        findings.append(Finding("SCHEDULER_DRAINED", Severity.INFO, f"Slurm has {sched.node} {sched.state}{why}"))
    return findings


def evidence_findings(state: NodeState) -> list[Finding]:
    """``EVIDENCE_MISSING`` for every section the poll could not read (contract.md)."""
    findings = []
    for missing in state.missing:
        if missing.section in SILENT_SECTIONS:
            continue
        if missing.section == "fm_version" and not playbook_may_apply(state):
            continue  # no host Fabric Manager on this board: nothing to compare
        if missing.section == "fm_log" and not fm_log_needed(state):
            continue  # no host FM unit whose journal could say anything (a driver pod's, GB200, a VM)
        if missing.section == "fm_version" and fm_container.in_container(state):
            # The host has no nv-fabricmanager: FM and its binary live in the driver pod. The version stays
            # unknown (never healthy), but no host repair needs it: preflight refuses the host path there.
            findings.append(Finding("EVIDENCE_MISSING", Severity.WARNING,
                                    f"the Fabric Manager version could not be read on the host ({missing.reason}): "
                                    "nv-fabricmanager runs in the GPU Operator's driver pod, whose image carries it; "
                                    "compare it with the driver there", section=missing.section,
                                    reason=missing.reason))
            continue
        findings.append(_evidence_finding(state, missing))
    return findings


def _evidence_finding(state: NodeState, missing: MissingEvidence) -> Finding:
    guarded = missing.section in GUARDED_SECTIONS and playbook_may_apply(state)
    severity = Severity.ERROR if guarded else Severity.WARNING
    tail = "; a repair refuses until it can be read" if guarded else ""
    return Finding("EVIDENCE_MISSING", severity, f"{missing.detail} ({missing.reason}){tail}",
                   section=missing.section, reason=missing.reason)


def _gpu_list(indices: list[int]) -> str:
    """``0-7``, ``0,3,5``, ``2-4,6``: GPU indices as a short list."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)


def collapse_per_gpu(findings: list[Finding]) -> list[Finding]:
    """One finding for the GPUs that say the same thing: ``GPUs 0-7: fabric state is Not Started``.

    The per-GPU findings read ``GPU N <the rest>``; those with the same code, severity and rest merge,
    at the place of the first of them. A single GPU keeps its own finding (and its ``gpu`` index).
    """
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        if f.gpu is not None and f.message.startswith(f"GPU {f.gpu} "):
            groups.setdefault((f.code, f.severity, f.message[len(f"GPU {f.gpu} "):]), []).append(f)
    out: list[Finding] = []
    done: set[tuple] = set()
    for f in findings:
        key = (f.code, f.severity, f.message[len(f"GPU {f.gpu} "):]) if f.gpu is not None else None
        if key is None or key not in groups or len(groups[key]) == 1:
            out.append(f)
        elif key not in done:
            done.add(key)
            out.append(Finding(f.code, f.severity, f"GPUs {_gpu_list([g.gpu for g in groups[key] if g.gpu is not None])}: "
                                                   f"{key[2]}"))
    return out


def diagnose(state: NodeState, options: DiagnosisOptions | None = None) -> Diagnosis:
    """Findings for ``state`` and the verdict they add up to.

    Args:
        state: one poll of one node.
        options: tunables (the In Progress grace time).

    Returns:
        The findings, most severe first, and the verdict.
    """
    opts = options or DiagnosisOptions()
    if not state.reachable:
        reason = state.error or "the node could not be reached"
        return Diagnosis((Finding("UNREACHABLE", Severity.ERROR, reason),), Verdict.UNREACHABLE)

    # First: a lost GPU decides the move (no reset; a reboot), whatever else is wrong.
    findings: list[Finding] = gpu_lost_findings(state)
    if state.repair_record:
        started = state.repair_record.get("started", "an earlier time")
        operator = state.repair_record.get("operator", "an operator")
        findings.append(Finding("INTERRUPTED_REPAIR", Severity.ERROR,
                                f"a repair started {started} by {operator} did not finish; "
                                f"{restore_hint(state.host)}"))
    host = host_side(state)
    if host is not None:
        # The fabric is the host's: its words replace "platform unsupported" and each GPU's fabric finding.
        findings.append(Finding("FABRIC_HOST_SIDE", Severity.ERROR, host))
    elif state.platform.has_host_fm:
        findings += _fm_findings(state)
    elif state.missing_section("gpus") is not None:
        pass  # the board is unknown, not unsupported: EVIDENCE_MISSING on gpus says why (an error)
    elif state.platform is not Platform.UNKNOWN or not state.gpus or not state.was_read("nvswitches"):
        findings.append(Finding("PLATFORM_UNSUPPORTED", Severity.WARNING,
                                _platform_reason(state.platform)))
    if host is None:
        findings += fabric_findings(state, opts)
    findings += mig_findings(state)
    findings += kernel_findings(state)
    findings += kernel_unread_findings(state)
    findings += recovery_findings(state)
    findings += coverage_findings(state)
    findings += evidence_findings(state)
    if state.smoke and not state.smoke.passed:
        bw = f"{state.smoke.avg_busbw:.1f} GB/s" if state.smoke.avg_busbw is not None else "no bandwidth"
        findings.append(Finding("NVLS_SMOKE_FAILED", Severity.ERROR,
                                f"the last NVLS smoke test failed ({bw})"))
    findings += scheduler_findings(state)
    findings += restarter_findings(state)
    findings = collapse_per_gpu(findings)
    # Holders are normal on a healthy node (DCGM, the GPU Operator's pods): they matter, and are
    # named, only where a repair would have to get past them.
    if state.holders and verdict_of(findings) is not Verdict.HEALTHY:
        findings.append(Finding("HOLDERS_PRESENT", Severity.INFO,
                                f"{count(len(state.holders), 'process')} {verb(len(state.holders), 'holds')} /dev/nvidia* (a reset would be refused)"))
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    findings.sort(key=lambda f: order[f.severity])
    distrust = smoke_distrust(state) if state.smoke is not None and state.smoke.passed else None
    return Diagnosis(tuple(findings), verdict_of(findings), distrust)


def verdict_of(findings: list[Finding] | tuple[Finding, ...]) -> Verdict:
    """broken if any error, degraded if any warning, else healthy."""
    severities = {f.severity for f in findings}
    if Severity.ERROR in severities:
        return Verdict.BROKEN
    if Severity.WARNING in severities:
        return Verdict.DEGRADED
    return Verdict.HEALTHY


def _platform_reason(platform: Platform) -> str:
    reasons = {
        Platform.GB200_NVL: "GB200/GB300 NVL racks have no host Fabric Manager (the fabric is managed by the "
                            "rack and needs IMEX): this H100/H200 playbook does not apply",
        Platform.HGX_B200: "B200/B300 boards (NVLink 5) run NVLSM and reset after Fabric Manager starts: "
                           "this H100/H200 playbook does not apply",
        Platform.NO_NVSWITCH: "no NVSwitch on this node: there is no NVLink fabric to repair",
        Platform.UNKNOWN: "the board could not be identified as an H100/H200 NVSwitch board",
    }
    return reasons.get(platform, f"platform {platform} is not an H100/H200 NVSwitch board with a host FM")


def carry_fabric_since(previous: NodeState | None, current: NodeState, elapsed: float) -> NodeState:
    """Track how long any GPU has been ``In Progress`` across polls (for the stuck warning).

    Args:
        previous: the last poll of the same node, or None.
        current: this poll.
        elapsed: seconds between the two polls.
    """
    in_progress = any(g.fabric.state == "In Progress" for g in current.gpus)
    if not in_progress:
        return current.replace(fabric_since=None)
    was = previous.fabric_since if previous and previous.fabric_since is not None else None
    if was is None:
        was_in_progress = previous is not None and any(g.fabric.state == "In Progress" for g in previous.gpus)
        return current.replace(fabric_since=elapsed if was_in_progress else 0.0)
    return current.replace(fabric_since=was + elapsed)


def diagnose_guarded(state: NodeState, diagnose_with: Callable[[NodeState], Diagnosis] | None = None) -> Diagnosis:
    """The diagnosis of ``state``; where the diagnosis itself raises (a rule meeting a reading nobody foresaw),
    that node is ``DIAGNOSIS_FAILED``: broken, the exception named, so that every entry point (the console's
    poller, ``check``, ``check --watch``, ``analyze`` of a probe's output) reports the node and goes on with
    the others instead of losing them all. An unreachable node stays unreachable.
    """
    try:
        found = (diagnose_with or diagnose)(state)
    except Exception as exc:  # noqa: BLE001 - show the node rather than lose the run
        found = Diagnosis((Finding("DIAGNOSIS_FAILED", Severity.ERROR,
                                   f"the diagnosis of this node failed ({type(exc).__name__}: {exc}); "
                                   "what it read is shown as it is"),), Verdict.BROKEN)
    if not state.reachable and found.verdict is not Verdict.UNREACHABLE:
        found = Diagnosis(found.findings, Verdict.UNREACHABLE)
    return found
