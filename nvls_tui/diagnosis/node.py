"""NodeState -> findings and a verdict (codes and severities of contract.md). Pure.

The rules encode what the incident taught: Fabric Completed/Success is not proof of health (the
kernel's out-of-sync line wins), a single-node HGX board legitimately reports CliqueId 0 with an
all-zero ClusterUUID, and ``In Progress`` is normal for a while after Fabric Manager starts.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass

from nvls_tui import catalogues
from nvls_tui.diagnosis import fm_container, story
from nvls_tui.diagnosis.driver_status import driver_status_findings
from nvls_tui.diagnosis.restarters import restarter_findings
from nvls_tui.diagnosis.restore_hint import restore_hint
from nvls_tui.diagnosis.unread import fm_unread_finding, unread_finding
from nvls_tui.diagnosis.xids import XidReading, read_xid, strongest
from nvls_tui.model import FabricHealth, Finding, NodeState, Platform, Severity, Verdict
from nvls_tui.model.node import FM_UNKNOWN, Diagnosis, FmLogLine, KernelEvent, MissingEvidence
from nvls_tui.parsers.fabricmanager_log import FmEvent, multicast_error
from nvls_tui.words import count, verb

FM_UNIT = "nvidia-fabricmanager"

# The sections a repair's guards need (they refuse without them): on a board the playbook applies to,
# not reading one of them is an error; elsewhere a warning. Either way the node is never healthy.
GUARDED_SECTIONS = frozenset({"gpus", "holders", "processes", "units", "kernel", "fm_version", "nvswitches",
                              "record"})
# Sections whose absence needs no word of its own (the marker; the user id shows through ``holders``).
# Without ``boot`` (or ``clock``) a smoke record hides no older kernel line: nothing reads as healthy.
SILENT_SECTIONS = frozenset({"simulated", "identity", "smoke", "clock", "jobs", "boot"})

# Kernel codes that mean the fabric itself is unusable.
OUT_OF_SYNC = "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"
FM_NOT_PRESENT = "NV_ERR_FABRIC_MANAGER_NOT_PRESENT"
# The driver's "fallen off the bus" without an Xid (nvls_tui.parsers.kernel_log.FELL_OFF_BUS), and the Xid
# that says the same: the GPU no longer answers on PCIe, which no GPU reset can bring back.
FELL_OFF_BUS = "GPU_FELL_OFF_BUS"
XID_FELL_OFF_BUS = 79
GPU_LOST_ADVICE = "a GPU reset cannot bring it back: reboot the node, and open a hardware ticket if it falls off again"


@dataclass(frozen=True, slots=True)
class DiagnosisOptions:
    """Tunables of the diagnosis.

    Attributes:
        in_progress_grace: seconds a GPU may stay ``In Progress`` before it counts as stuck (one fleet
            tool uses 3 polls 30 s apart, so 90 s).
    """

    in_progress_grace: float = 90.0


# Leeway for the clock's offset from the boot, smoke test against poll: each side reads the clock in
# whole seconds (up to 1 s short), a slow read only makes the clock look stepped forward, and a leap
# second steps it back by one.
STEP_LEEWAY = 2.0


def smoke_distrust(state: NodeState) -> str | None:
    """Why the last passing smoke test cannot date ``state``'s kernel lines; None when it can.

    The record must say when it was written as an instant (UTC with its offset: node-local text breaks at a
    DST fall-back), in this boot, not after the node's clock, and the clock must not have been stepped
    back since: its offset from the boot (clock minus uptime) then and now tells. Anything unread or
    missing on either side is distrust (fail closed: an older line then counts).
    """
    smoke = state.smoke
    if smoke is None or not smoke.passed:
        return "no smoke test passed"
    at = story.node_time(smoke.at)
    if at is None:
        return "the smoke record's time has no UTC offset"
    if not smoke.boot_id:
        return "the smoke record carries no boot id"
    if state.boot_id is None:
        return "the node's boot id could not be read"
    if smoke.boot_id != state.boot_id:
        return "the smoke record is from another boot"
    if state.node_clock is None:
        return "the node's clock could not be read"
    if at > state.node_clock:
        return "the smoke record is dated after the node's clock"
    if smoke.uptime is None:
        return "the smoke record carries no uptime"
    if state.uptime is None:
        return "the node's uptime could not be read"
    if state.node_clock - state.uptime < at - smoke.uptime - STEP_LEEWAY:
        return "the node's clock was stepped back since the smoke test"
    return None


def _is_stale(event: KernelEvent, state: NodeState) -> bool:
    """True when a passing NVLS smoke test ran after the event was logged (the fault was repaired).

    The kernel log since boot keeps the lines of a fault that a reset has since fixed; the smoke test
    is the proof that NVLS works again, so older lines no longer count. The two are compared as instants
    (each with its UTC offset), and only when the record can be trusted (:func:`smoke_distrust`): a line
    without an offset, or a record that cannot date it, keeps the line counting.
    """
    logged = story.node_time(event.timestamp)
    if logged is None or state.smoke is None or smoke_distrust(state) is not None:
        return False
    smoked = story.node_time(state.smoke.at)
    return smoked is not None and logged < smoked


def current_kernel_events(state: NodeState) -> tuple[KernelEvent, ...]:
    """The kernel events that still count (see :func:`_is_stale`)."""
    return tuple(e for e in state.kernel_events if not _is_stale(e, state))


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


def kernel_findings(state: NodeState) -> list[Finding]:
    """Findings from the kernel log lines that still count.

    Every Xid is read through NVIDIA's Xid catalogue (:func:`nvls_tui.diagnosis.xids.read_xid`): its severity,
    NVIDIA's action and the next move are the catalogue's bucket's, or the recovery action the line orders.
    """
    # The findings in log order; an Xid's place is held by its key until all its lines are counted.
    findings: list[Finding | tuple[Severity, str, str]] = []
    codes_seen: set[str] = set()
    events = current_kernel_events(state)
    # One device's lines of one Xid read as one: the strongest reading among them stands for them all (an
    # SXid's "Fatal" line and its "Severity 5 Engine ..." line after it are one event of the switch).
    readings: dict[tuple[str, int | None, object], list[XidReading]] = {}
    for event in events:
        if event.code in ("XID", "SXID"):
            readings.setdefault(_device_key(event), []).append(read_xid(event))
    groups: dict[tuple[Severity, str, str], list[str]] = {}
    stands: dict[tuple[Severity, str, str], XidReading] = {}
    for event in events:
        if event.code == OUT_OF_SYNC and OUT_OF_SYNC not in codes_seen:
            findings.append(Finding("FABRIC_OUT_OF_SYNC", Severity.ERROR,
                                    "the kernel reports the NVLink fabric state cached by the driver is out of "
                                    "sync: stop every holder, reset all GPUs and NVSwitches, then start Fabric "
                                    "Manager"))
        elif event.code == FM_NOT_PRESENT and FM_NOT_PRESENT not in codes_seen:
            findings.append(Finding("FABRIC_MANAGER_NOT_PRESENT", Severity.ERROR, _not_present_message(state)))
        elif event.code in ("XID", "SXID"):
            reading = strongest(readings[_device_key(event)])
            key = (reading.severity, f"{'Xid' if event.code == 'XID' else 'SXid'} {event.xid}", reading.tail)
            if key not in groups:
                groups[key] = []
                stands[key] = reading
                findings.append(key)
            groups[key].append(event.pci or "")
        codes_seen.add(event.code)
    # The driver's other statuses and its NVLink failures without an Xid: read through the status catalogue.
    findings.extend(driver_status_findings(events))
    out: list[Finding] = []
    for item in findings:
        if isinstance(item, Finding):
            out.append(item)
            continue
        severity, head, tail = item
        reading = stands[item]
        out.append(Finding("XID", severity, _xid_message(head, groups[item]) + (f" — {tail}" if tail else ""),
                           action=reading.action, next_move=reading.move))
    return out


def recovery_findings(state: NodeState) -> list[Finding]:
    """``GPU_RECOVERY_ACTION`` for each GPU whose recovery action (NVML's, as ``nvidia-smi -q`` prints it) is not
    ``None``: read through the recovery action catalogue into NVIDIA's bucket, its severity and move. Words the
    catalogue does not name are an error: unknown, never fine."""
    findings = []
    for gpu in state.gpus:
        words = gpu.recovery_action
        if words is None:
            continue
        action = catalogues.recovery_action_said(words)
        if action is not None and action.name == "NONE":
            continue
        where = f"GPU {gpu.index}{f' ({gpu.bus_id})' if gpu.bus_id else ''}"
        if action is None:
            findings.append(Finding("GPU_RECOVERY_ACTION", Severity.ERROR,
                                    f"{where}: the driver's recovery action is {words!r}, which NVML's catalogue does "
                                    "not name: read nvidia-smi -q; unknown is not fine", gpu.index))
            continue
        reading = catalogues.bucket(action.bucket)
        findings.append(Finding("GPU_RECOVERY_ACTION", Severity(reading.severity),
                                f"{where}: the driver's recovery action is {words} (NVML {action.name}): {reading.move}",
                                gpu.index, action=reading.name, next_move=reading.move))
    return findings


def kernel_unread_findings(state: NodeState) -> list[Finding]:
    """``UNREAD_EVIDENCE`` for the kernel lines from NVIDIA's stack that say something went wrong and that no
    rule reads. Lines older than a trusted passing smoke test no longer count."""
    # (The NV_ERR_* statuses the parser names are DRIVER_ERROR's now: read, not quoted.)
    lines = [e.line for e in sorted((e for e in state.kernel_unread if not _is_stale(e, state)),
                                    key=lambda e: story.node_time(e.timestamp) or 0.0)]
    finding = unread_finding(lines, "the kernel log")
    return [finding] if finding is not None else []


def _device_key(event: KernelEvent) -> tuple[str, int | None, object]:
    return event.code, event.xid, pci_key(event.pci) or event.pci


def _xid_message(head: str, wheres: list[str]) -> str:
    """``Xid 45 on 4 GPUs (7 lines): 0000:97:00, ...``: one Xid's lines as one finding naming its GPUs or
    NVSwitches (``Xid 45 on 0000:dc:00 (2 lines)``, ``Xid 45 on 0000:dc:00`` for one line). Here in the diagnosis
    so that check, the console and analyze (a pasted log) say it in the same words."""
    lines = len(wheres)
    places = sorted({w for w in wheres if w}, key=lambda w: pci_key(w) or (0, 0, 0))
    device = "NVSwitch" if head.startswith("SXid") else "GPU"
    if len(places) > 1:
        return f"{head} on {count(len(places), device)} ({lines} lines): {', '.join(places)}"
    where = f" on {places[0]}" if places else ""
    return f"{head}{where}{f' ({lines} lines)' if lines > 1 else ''}"


def pci_key(bus_id: str | None) -> tuple[int, int, int] | None:
    """A PCI address as (domain, bus, device), whatever its spelling: the kernel's ``0000:5a:00``, its
    ``0000:5a:00.0`` and nvidia-smi's ``00000000:5A:00.0`` are one GPU. None when it is not an address."""
    if not bus_id:
        return None
    parts = bus_id.strip().split(".")[0].split(":")
    if len(parts) != 3:
        return None
    try:
        return int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None


def gpu_lost_finding(state: NodeState, bus_id: str | None, why: str) -> Finding:
    """``GPU_LOST`` [error] for the GPU at ``bus_id`` (its index too where nvidia-smi still lists it).

    Args:
        state: the node (its GPUs name the index).
        bus_id: the GPU's PCI address in any spelling (None: the driver did not say which GPU).
        why: what showed it, in a few words ("the kernel logged Xid 79").

    Every trigger of GPU_LOST builds its finding here, so the words and the advice stay one.
    """
    key = pci_key(bus_id)
    gpu = next((g for g in state.gpus if key is not None and pci_key(g.bus_id) == key), None)
    if gpu is not None:
        name = f"GPU {gpu.index} ({bus_id})"
    else:
        name = f"the GPU at {bus_id}" if bus_id else "a GPU"
    return Finding("GPU_LOST", Severity.ERROR, f"{name} is lost: {why}; {GPU_LOST_ADVICE}",
                   gpu.index if gpu is not None else None)


def gpu_lost_findings(state: NodeState) -> list[Finding]:
    """``GPU_LOST`` for each GPU the kernel log says fell off the bus (Xid 79, or the driver's words without
    an Xid), once per GPU whichever lines said it."""
    findings: list[Finding] = []
    seen: set[object] = set()
    for event in current_kernel_events(state):
        if event.code == FELL_OFF_BUS:
            why = "the kernel says it has fallen off the bus"
        elif event.code == "XID" and event.xid == XID_FELL_OFF_BUS:
            why = "the kernel logged Xid 79 (fallen off the bus)"
        else:
            continue
        key = pci_key(event.pci) or event.pci
        if key in seen:
            continue
        seen.add(key)
        findings.append(gpu_lost_finding(state, event.pci, why))
    findings += pci_lost_findings(state, seen)
    return findings


def lost_from_smi(state: NodeState) -> list[str]:
    """The GPUs lspci lists that nvidia-smi does not (their bus ids); none where either was not read.

    A GPU on the PCI bus that the driver does not list fell off the bus or failed to initialise: the poll
    sees it only by comparing the two. Unknown on either side is no comparison (the missing section says so).
    """
    if state.pci_gpus is None or not state.was_read("gpus") or not state.gpus:
        return []
    listed = {pci_key(g.bus_id) for g in state.gpus}
    return [bus for bus in state.pci_gpus if pci_key(bus) not in listed]


def pci_lost_findings(state: NodeState, seen: set[object] | None = None) -> list[Finding]:
    """``GPU_LOST`` for each GPU on the PCI bus that nvidia-smi does not list (``seen``: the GPUs the kernel
    log already named lost, by :func:`pci_key`)."""
    seen = set() if seen is None else seen
    findings = []
    for bus in lost_from_smi(state):
        if pci_key(bus) in seen:
            continue
        seen.add(pci_key(bus))
        findings.append(gpu_lost_finding(state, bus, "it is on the PCI bus but nvidia-smi does not list it (the "
                                                     "driver lost it, or it failed to initialise)"))
    return findings


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


def _not_present_message(state: NodeState) -> str:
    """The kernel's "FM not present", dated: a line older than the running FM is history, yet it still
    counts until a smoke test proves NVLS works (an FM started over held GPUs looks just as active)."""
    lines = [e for e in current_kernel_events(state) if e.code == FM_NOT_PRESENT]
    last = lines[-1]
    age = story.when(last.timestamp, state)
    said = f"the kernel reported Fabric Manager not loaded (NV_ERR_FABRIC_MANAGER_NOT_PRESENT{f', last {age}' if age else ''})"
    if all(story.before_fm_start(e, state) for e in lines):
        return f"{said}, before the running FM started; it counts until an NVLS smoke test passes"
    return said


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


def playbook_may_apply(state: NodeState) -> bool:
    """True on a board that needs a host Fabric Manager, and where the GPUs, so the board, are unknown.

    The platform is read from the GPUs' model: without them it is unknown, and a guard that cannot
    see refuses, so whatever a repair's guards need is as necessary as on an HGX board (fail closed).
    """
    return state.platform.has_host_fm or state.missing_section("gpus") is not None


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


def fm_log_needed(state: NodeState) -> bool:
    """Whether FM's unit journal (the ``fm_log`` section) has anything to say on ``state``'s node: a board that
    needs a host Fabric Manager (or one not known, fail closed) whose FM is not in the driver pod and whose
    unit is not known to be absent (then ``FM_NOT_RUNNING`` says so, and no unit logs anything)."""
    if not playbook_may_apply(state) or fm_container.in_container(state):
        return False
    unit = state.service(FM_UNIT)
    return not (state.was_read("units") and (unit is None or not unit.exists))


def version_mismatch_finding(fm_version: str, driver: str) -> Finding:
    """``FM_VERSION_MISMATCH``, worded the same for check (``--version`` against the driver) and analyze (FM's
    own words): the move that works is the package, since FM checks the versions each time it starts."""
    return Finding("FM_VERSION_MISMATCH", Severity.ERROR,
                   f"Fabric Manager {fm_version} does not match driver {driver}: FM will not start until they match. "
                   f"Install the nvidia-fabricmanager package of version {driver} (the driver's) and hold it "
                   "(apt-mark hold, dnf versionlock) so that an upgrade cannot part them again; clearing the unit's "
                   "failed state, starting it again or resetting GPUs do not help")


def fm_log_finding(errors: tuple[FmEvent, ...] | tuple[FmLogLine, ...], configured: bool) -> Finding | None:
    """``FM_LOG_ERROR`` for FM's ERROR/WARNING lines after its configuration (:func:`fm_log_errors`); an
    error when FM failed a multicast team (NVLS jobs then fail to bind), else a warning. None without any.

    Args:
        errors: the lines, in order.
        configured: the text holds FM's successful configuration (else what came after it is unknown).
    """
    if not errors:
        return None
    multicast = any(multicast_error(e.message) for e in errors)
    n_errors = sum(1 for e in errors if (e.level or "").upper() in ("ERROR", "ERR", "FATAL", "CRITICAL")
                   or (e.level is None and multicast_error(e.message)))
    said = " and ".join(count(n, word) for n, word in ((n_errors, "error"), (len(errors) - n_errors, "warning")) if n)
    where = ("after it configured the fabric" if configured else
             "(no successful configuration in this text, so these may be from before one)")
    what = " (multicast team errors: NVLS multicast setup fails)" if multicast else ""
    last = errors[-1]
    at = f" at {last.timestamp}" if last.timestamp else ""
    move = ("stop every holder, reset all GPUs and NVSwitches, then restart Fabric Manager (the repair's order)"
            if multicast else "read them in FM's log (journalctl -u nvidia-fabricmanager, /var/log/fabricmanager.log)")
    return Finding("FM_LOG_ERROR", Severity.ERROR if multicast else Severity.WARNING,
                   f"Fabric Manager logged {said} {where}{what}; the last{at}: {last.message[:200]} — {move}")


def _fm_findings(state: NodeState) -> list[Finding]:
    """FM's unit and version; a version mismatch comes first, as the cause of a unit that cannot start."""
    findings = []
    journal = state.fm_journal
    # FM's own words since its unit's last start name the versions it compared; else --version against the
    # driver. Words naming another FM than the binary there now, or another driver than the one loaded, are
    # older than a package change or a module reload: not now.
    said = journal.mismatch if journal is not None else None
    if said and (state.fm_version and state.fm_version != said[0] or state.driver and state.driver != said[1]):
        said = None
    mismatch = bool(said) or bool(state.fm_version and state.driver and state.fm_version != state.driver)
    if said:
        findings.append(version_mismatch_finding(*said))
    elif mismatch:
        findings.append(version_mismatch_finding(str(state.fm_version), str(state.driver)))
    unit = state.service(FM_UNIT)
    place = state.fm_place
    if unit is None and not state.was_read("units"):
        pass  # unknown, not absent: EVIDENCE_MISSING says so
    elif fm_container.in_container(state):
        # No host unit, and that is how the GPU Operator runs it: never "FM missing" here.
        findings.append(Finding("FM_IN_CONTAINER", Severity.INFO, fm_container.finding_message(state)))
    elif (why := fm_container.unknown_place(state)) is not None:
        findings.append(Finding("EVIDENCE_MISSING", Severity.ERROR,
                                f"where Fabric Manager runs could not be told: {why}; a repair refuses until it can",
                                section="fm_place", reason="unparseable"))
    elif (unit is None or not unit.exists) and place is not None and place.location == FM_UNKNOWN:
        pass  # no unit, and the holders (where a driver pod's FM shows) were not read: EVIDENCE_MISSING says so
    elif unit is None or not unit.exists:
        findings.append(Finding("FM_NOT_RUNNING", Severity.ERROR,
                                "no nvidia-fabricmanager unit on a board that needs a host Fabric Manager"))
    elif unit.active != "active":
        detail = f" (Result: {unit.result}{killed_words(unit.killed_by)})" if unit.result and unit.result != "success" \
            else ""
        if mismatch:
            why = ": it cannot start while its version differs from the driver's (FM_VERSION_MISMATCH)"
        elif unit.active == "failed":
            why = ": it died and systemd did not restart it; GPUs and NVSwitches need a reset before it starts again"
        else:
            why = ""
        findings.append(Finding("FM_NOT_RUNNING", Severity.ERROR, f"nvidia-fabricmanager is {unit.active}{detail}{why}"))
    if journal is not None and fm_log_needed(state):
        # The same words analyze gives a pasted FM journal (fm_log_finding), from the lines since the last start.
        logged = fm_log_finding(journal.problems, journal.configured)
        if logged is not None:
            findings.append(logged)
        # What no FM rule reads in the same lines, as analyze says it for that text.
        explained = any(f.code in ("FM_NOT_RUNNING", "FM_VERSION_MISMATCH") for f in findings)
        unread = fm_unread_finding(journal.unread, explained, "Fabric Manager's log")
        if unread is not None:
            findings.append(unread)
    return findings


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


def signal_name(signal_number: int) -> str:
    """``SIGKILL`` for 9; ``signal N`` for a number this system does not name."""
    try:
        return signal.Signals(signal_number).name
    except (ValueError, OverflowError):
        return f"signal {signal_number}"


def killed_words(signal_number: int | None) -> str:
    """``, killed by SIGKILL`` for the signal that ended a unit's main process; empty where none did."""
    return f", killed by {signal_name(signal_number)}" if signal_number else ""


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
