"""The kernel's lines about the GPUs and the fabric, and a GPU lost, as findings. Pure.

The kernel log is the fabric's most direct witness: the driver's out-of-sync line wins over a Fabric
Completed/Success, an Xid is read through NVIDIA's catalogue, and a GPU that fell off the bus is lost
whatever else says it is there. A passing NVLS smoke test dates the lines before it (they no longer count),
unless the smoke record cannot be trusted (``smoke_distrust``).
"""

from __future__ import annotations

from nvls_tui import catalogues
from nvls_tui.diagnosis import story
from nvls_tui.diagnosis.driver_status import driver_status_findings
from nvls_tui.diagnosis.unread import unread_finding
from nvls_tui.diagnosis.xids import XidReading, read_xid, strongest
from nvls_tui.model import Finding, NodeState, Severity
from nvls_tui.model.node import KernelEvent
from nvls_tui.words import count

# Kernel codes that mean the fabric itself is unusable.
OUT_OF_SYNC = "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"


FM_NOT_PRESENT = "NV_ERR_FABRIC_MANAGER_NOT_PRESENT"


# The driver's "fallen off the bus" without an Xid (nvls_tui.parsers.kernel_log.FELL_OFF_BUS), and the Xid
# that says the same: the GPU no longer answers on PCIe, which no GPU reset can bring back.
FELL_OFF_BUS = "GPU_FELL_OFF_BUS"


XID_FELL_OFF_BUS = 79


GPU_LOST_ADVICE = "a GPU reset cannot bring it back: reboot the node, and open a hardware ticket if it falls off again"


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
    # Weighed once per device and Xid, not again for each of its lines (n lines of one device were n x n).
    strongest_of = {key: strongest(found) for key, found in readings.items()}
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
            reading = strongest_of[_device_key(event)]
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
