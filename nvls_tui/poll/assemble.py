"""Probe sections -> one immutable NodeState. Pure: the same code reads real and simulated nodes.

Every backend that polls with the commands of :mod:`nvls_tui.poll.probe` (SSH in one script, the
simulator one command at a time, the local backend beside NVML) hands the outputs here, so a parser
fix helps every backend, and the same facts give the same state whichever backend read them.

Fail closed: a section that could not be read (see :mod:`nvls_tui.poll.evidence`) is listed in
``NodeState.missing`` and contributes nothing, never an empty "all clear".
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nvls_tui.model import (
    CommandResult,
    GpuState,
    Holder,
    KernelEvent,
    MissingEvidence,
    NodeState,
    Platform,
    Restarters,
    ServiceState,
    SmokeResult,
    SwitchState,
)
from nvls_tui.model.enums import HolderKind
from nvls_tui.model.node import FM_CONTAINER, FM_HOST, FM_NOWHERE, FM_UNKNOWN, FmPlace
from nvls_tui.model.scheduler import Job
from nvls_tui.parsers.fabricmanager_log import parse_fm_version
from nvls_tui.parsers.fuser import parse_fuser_streams
from nvls_tui.parsers.holders import build_holders
from nvls_tui.parsers.lspci import parse_lspci
from nvls_tui.parsers.nvidia_smi_csv import (
    driver_from_query,
    gpus_from_query,
    parse_query_csv,
)
from nvls_tui.parsers.ps import parse_ps, parse_ps_cgroups
from nvls_tui.parsers.restarters import (
    UNATTENDED_UNIT,
    parse_apt_periodic,
    parse_needrestart,
    unattended_upgrades_on,
)
from nvls_tui.parsers.slurm import parse_listpids
from nvls_tui.parsers.systemctl import parse_show
from nvls_tui.poll.config_cache import without_stamp
from nvls_tui.poll.evidence import NOT_RUN, missing_evidence, missing_from_unparsed
from nvls_tui.poll.fm_journal import read_fm_journal
from nvls_tui.poll.kernel_coverage import read_kernel
from nvls_tui.poll.probe import CONFIG_STAMP
from nvls_tui.textsafe import clean_deep

# What nvidia-smi prints when the driver is not loaded or no GPU answers: the node cannot be read.
_SMI_FATAL = ("NVIDIA-SMI has failed", "No devices were found", "couldn't communicate with the NVIDIA driver",
              "Failed to initialize NVML")
FM_UNIT = "nvidia-fabricmanager.service"
# /proc/sys/kernel/random/boot_id: a UUID, lower-case hex.
_BOOT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def detect_platform(gpus: tuple[GpuState, ...], nvswitches: tuple[SwitchState, ...] | None,
                    fm_unit_loaded: bool = False) -> Platform:
    """The board family, from the GPU model and whether NVSwitches sit on the host's PCI bus.

    Args:
        gpus: the node's GPUs.
        nvswitches: the NVSwitches lspci listed, or None when lspci could not be read.
        fm_unit_loaded: a ``nvidia-fabricmanager`` unit is installed (without lspci, the only sign of
            a host Fabric Manager board left).
    """
    names = " ".join(g.name for g in gpus).upper()
    if not gpus:
        return Platform.UNKNOWN
    if "GB200" in names or "GB300" in names:
        return Platform.GB200_NVL
    if "B200" in names or "B300" in names:
        return Platform.HGX_B200
    if all(not g.fabric.supported for g in gpus):
        # The GPUs themselves say there is no fabric (a PCIe board, a VM slice without NVSwitch).
        return Platform.NO_NVSWITCH
    if not nvswitches and not (nvswitches is None and fm_unit_loaded):
        # A VM slice whose fabric is managed outside, or the switches could not be listed.
        return Platform.UNKNOWN
    if "H200" in names:
        return Platform.HGX_H200
    if "H100" in names or "H800" in names or "H20" in names:
        return Platform.HGX_H100
    return Platform.UNKNOWN


def _smoke(result: CommandResult | None, warnings: list[str]) -> SmokeResult | None:
    """The last smoke result the runbook left on the node (JSON with SmokeResult's field names)."""
    if result is None or not result.ok or not result.stdout.strip():
        return None
    try:
        data: Any = clean_deep(json.loads(result.stdout))
        return SmokeResult(
            avg_busbw=float(data["avg_busbw"]) if data.get("avg_busbw") is not None else None,
            passed=bool(data.get("passed")),
            out_of_bounds=data.get("out_of_bounds"),
            nvls_used=bool(data.get("nvls_used")),
            completed=bool(data.get("completed")),
            errors=tuple(str(e) for e in data.get("errors") or ()),
            threshold=data.get("threshold"),
            # Fields of another kind (an older or a hand-edited record) date nothing; they never crash.
            at=data["at"] if isinstance(data.get("at"), str) else None,
            boot_id=data["boot_id"] if isinstance(data.get("boot_id"), str) else None,
            uptime=_finite(data.get("uptime")),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        warnings.append("the last smoke-test record on the node could not be read")
        return None


def _finite(value: Any) -> float | None:
    """A JSON number that is a real, finite number; None for anything else (a bool, a string, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _record(result: CommandResult | None, warnings: list[str]) -> dict | None:
    """The crash-safe record of an unfinished repair, if the node holds one."""
    if result is None or not result.ok or not result.stdout.strip():
        return None
    try:
        data = clean_deep(json.loads(result.stdout))
    except ValueError:
        warnings.append("the node holds an unreadable repair record")
        return {"unreadable": True}
    return data if isinstance(data, dict) else {"unreadable": True}


def with_jobs(holders: tuple[Holder, ...], jobs: CommandResult | None) -> tuple[Holder, ...]:
    """Holders named with their Slurm job from ``scontrol listpids`` (where the job's cgroup did not say).

    The job's user and name come from the scheduler on the bastion; here only its id is known.
    An unreadable listing changes nothing: the scheduler's side then shows the node's jobs.
    """
    if jobs is None or not jobs.ok or not jobs.stdout.strip():
        return holders
    by_pid = parse_listpids(jobs.stdout).value
    return tuple(dataclasses.replace(h, job=Job(by_pid[h.pid], h.user, "")) if h.job is None and h.pid in by_pid
                 else h for h in holders)


# `date -u +%Y-%m-%dT%H:%M:%SZ` as it prints: read by slicing, not strptime (about 50 us of every poll, the
# unchanged node's re-poll included, docs/performance.md 2026-12-07); any other text goes through strptime.
_CLOCK = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def _node_clock(result: CommandResult | None) -> float | None:
    """The node's clock from ``date -u +%Y-%m-%dT%H:%M:%SZ``; None when it is absent or unreadable.

    Only ages ("killed 5 days ago") rest on it: without it the console shows the node's times as they are.
    """
    if result is None or not result.ok:
        return None
    text = result.stdout.strip()
    try:
        if _CLOCK.fullmatch(text):
            return dt.datetime(int(text[:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                               int(text[17:19]), tzinfo=dt.UTC).timestamp()
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


def parse_boot(result: CommandResult | None) -> tuple[str | None, float | None]:
    """The boot id and the seconds since that boot from ``cat /proc/sys/kernel/random/boot_id /proc/uptime``;
    (None, None) when it was not read, each None when its line is not what the kernel writes."""
    if result is None or not result.ok:
        return None, None
    lines = result.stdout.splitlines()
    boot_id = lines[0].strip().lower() if lines else ""
    words = lines[1].split() if len(lines) > 1 else []
    try:
        uptime: float | None = float(words[0]) if words else None
    except ValueError:
        uptime = None
    if uptime is not None and not (0 <= uptime < 1e10):  # nan, inf and negatives are no uptime
        uptime = None
    return (boot_id if _BOOT_ID.fullmatch(boot_id) else None), uptime


def _uid(result: CommandResult | None) -> int | None:
    text = result.stdout.strip() if result is not None and result.ok else ""
    return int(text) if text.isdecimal() and len(text) < 12 else None


def _gpus_of(result: CommandResult | None, warnings: list[str]
             ) -> tuple[tuple[GpuState, ...], str | None, MissingEvidence | None]:
    """The GPUs and the driver from the ``gpus`` section, or why they could not be read (no GPU then).

    The CSV's own warnings (a driver's complaint between the rows) are added to ``warnings``.
    """
    why = missing_evidence("gpus", result)
    if why is not None or result is None:
        return (), None, why
    query = parse_query_csv(result.output)
    warnings += query.warnings
    gpus = gpus_from_query(query.value)
    if not gpus:
        # Exit 0 and no GPU: nvidia-smi's own fatal line says why, where it printed one.
        said = next((ln.strip() for ln in result.output.splitlines() if any(m in ln for m in _SMI_FATAL)), None)
        words = "`nvidia-smi` listed no GPU" + (f": {said[:200]}" if said else "")
        return (), None, missing_from_unparsed("gpus", words)
    return gpus, driver_from_query(query.value), None


def node_answered(sections: Mapping[str, CommandResult], gpus: MissingEvidence) -> bool:
    """Whether a node whose GPUs could not be read still answered the poll (it is reachable then).

    nvidia-smi answered (cut at the cap, missing, denied, failing, or listing no GPU) or hung (timed out:
    every transport cuts off only the hung command, so the sections after it are read), and some other
    section was read: the node is read without its GPUs. A poll that ended before nvidia-smi ran is
    unreachable.
    """
    if gpus.reason == NOT_RUN:
        return False
    return any(missing_evidence(name, result) is None for name, result in sections.items() if name != "gpus")


def _unreachable(host: str, simulated: bool, polled_at: float | None, result: CommandResult | None,
                 missing: MissingEvidence | None, warnings: list[str]) -> NodeState:
    text = result.output if result is not None else ""
    reason = next((line.strip() for line in text.splitlines() if any(m in line for m in _SMI_FATAL)), None)
    if reason is None and missing is not None:
        reason = missing.detail
    return NodeState(host=host, reachable=False, simulated=simulated, polled_at=polled_at,
                     error=reason or "no GPU could be read from nvidia-smi", warnings=tuple(warnings))


def assemble_node_state(
    host: str,
    sections: Mapping[str, CommandResult],
    *,
    simulated: bool,
    polled_at: float | None = None,
    gpus: tuple[GpuState, ...] | None = None,
    driver: str | None = None,
    holders: tuple | None = None,
    sudo: bool = False,
    missing: Sequence[MissingEvidence] = (),
) -> NodeState:
    """Build a NodeState from the probe's sections.

    Args:
        host: the target name to show.
        sections: outputs keyed by :data:`nvls_tui.poll.probe.SECTION_NAMES`; a section that is absent never ran.
        simulated: the node is simulated (labelled as such everywhere).
        polled_at: wall-clock time of the poll.
        gpus, driver, holders: read another way (NVML and /proc in local mode) instead of from the
            ``gpus``/``holders`` sections.
        sudo: the privileged sections ran under ``sudo -n`` (as root).
        missing: evidence the backend itself could not read (the local /proc scan).

    Returns:
        The node's state. GPUs that could not be read while the node answered the rest (nvidia-smi cut at
        the cap, missing, failing) are missing evidence on a reachable node; ``reachable=False`` with a
        reason when nvidia-smi hung or nothing else answered either (see :func:`node_answered`).
    """
    if CONFIG_STAMP in sections:  # the node's stamp of its configuration: the SSH backend's, never evidence
        sections = without_stamp(sections)
    warnings: list[str] = []
    lost: list[MissingEvidence] = list(missing)
    marker = sections.get("simulated")
    simulated = simulated or (marker is not None and marker.ok and bool(marker.stdout.strip()))
    # The lab writes "(LAB)" into its marker (nvls_tui/lab/image.py): shown as LAB everywhere.
    lab = marker is not None and marker.ok and "(LAB)" in marker.stdout
    root = True if sudo else (None if (uid := _uid(sections.get("identity"))) is None else uid == 0)

    def read(name: str, *, as_root: bool | None = True) -> CommandResult | None:
        result = sections.get(name)
        why = missing_evidence(name, result, root=as_root)
        if why is not None:
            lost.append(why)
            return None
        return result

    if gpus is None:
        result = sections.get("gpus")
        gpus, driver, why = _gpus_of(result, warnings)
        if why is not None:
            if not node_answered(sections, why):
                return _unreachable(host, simulated, polled_at, result, why, warnings)
            # Unknown GPUs, not none: the diagnosis makes this an error and preflight refuses on it.
            lost.append(why)

    services: tuple[ServiceState, ...] = ()
    units_read = (units := read("units")) is not None
    if units is not None:
        services = parse_show(units.output).value

    fm_version = None
    if (fm := read("fm_version")) is not None:
        fm_version = parse_fm_version(fm.output)
        if fm_version is None:
            lost.append(missing_from_unparsed("fm_version", "`nv-fabricmanager --version` printed no version"))

    nvswitches: tuple[SwitchState, ...] | None = None
    pci_gpus: tuple[str, ...] | None = None
    if (lspci := read("nvswitches")) is not None:
        # Every NVIDIA function with its ids: the NVSwitches by id (an old pci.ids names them "Device
        # 22a3"), the GPUs by class. A capture of the older `lspci -d 10de:22a3` lists switches only.
        devices = parse_lspci(lspci.output).value
        old_form = all(d.vendor_device is None for d in devices)  # no ids: the switch-only listing
        nvswitches = tuple(SwitchState(device=f"/dev/nvidia-nvswitch{i}", bus_id=dev.bus_id)
                           for i, dev in enumerate(d for d in devices if old_form or d.is_nvswitch))
        pci_gpus = tuple(bus for d in devices if d.is_gpu and (bus := d.canonical_bus_id))

    holders_read = True
    if holders is None:
        holders = ()
        holders_read = (table := read("holders", as_root=root)) is not None
        if table is not None:
            fuser = parse_fuser_streams(table.stdout, table.stderr)
            warnings += fuser.warnings
            entries = parse_ps(ps.output).value if (ps := read("processes")) is not None else ()
            cgroups = parse_ps_cgroups(cg.output).value if (cg := read("cgroups")) is not None else {}
            holders = with_jobs(build_holders(fuser.value, entries, cgroups), sections.get("jobs"))


    fm_loaded = any(s.name == FM_UNIT and s.exists for s in services)
    boot_id, uptime = parse_boot(read("boot"))
    # Before the state is built: what it could not read joins ``lost`` (NodeState.missing).
    found_restarters = restarters(sections, tuple(services) if units_read else None, lost, warnings)
    # The journal, and the ring buffer where the journal does not reach back to the boot; missing evidence
    # only when neither could be read.
    clock = _node_clock(sections.get("clock"))
    kernel = read_kernel(sections.get("kernel"), sections.get("ring"), root=root,
                         boot=clock - uptime if clock is not None and uptime is not None else None)
    if kernel.missing is not None:
        lost.append(kernel.missing)
    events: tuple[KernelEvent, ...] = kernel.events
    # FM's own words since its unit's last start; whether the node needs them (a host FM) is the diagnosis's call.
    fm_journal, fm_log_why = read_fm_journal(sections.get("fm_log"), root=root)
    if fm_log_why is not None:
        lost.append(fm_log_why)
    return NodeState(
        host=host,
        reachable=True,
        simulated=simulated,
        lab=lab,
        platform=detect_platform(gpus, nvswitches, fm_loaded),
        driver=driver,
        fm_version=fm_version,
        gpus=gpus,
        nvswitches=nvswitches or (),
        services=tuple(services),
        holders=holders,
        kernel_events=events,
        kernel_unread=kernel.unread,
        kernel_coverage=kernel.coverage,
        smoke=_smoke(read("smoke"), warnings),
        repair_record=_record(read("record"), warnings),
        polled_at=polled_at,
        warnings=tuple(warnings),
        missing=tuple(lost),
        node_clock=clock,
        boot_id=boot_id,
        uptime=uptime,
        pci_gpus=pci_gpus,
        restarters=found_restarters,
        fm_journal=fm_journal,
        fm_place=fm_place(tuple(services) if units_read else None,
                          holders if holders_read and not _lost(lost, "holders") else None,
                          cgroups_read=not _lost(lost, "cgroups")),
    )


# The nvidia-* units needrestart's configuration is asked about (the ones a repair stops and starts).
_NVIDIA_UNITS = ("nvidia-fabricmanager.service", "nvidia-persistenced.service", "nvidia-dcgm.service")
_NO_SUCH = re.compile(r"^grep: \S+: No such file or directory$")


def _needrestart_missing(result: CommandResult | None) -> MissingEvidence | None:
    """Whether grep read needrestart's configuration: exit 2 with only "No such file" lines for the files
    that are not there (needrestart not installed, or no conf.d) is an answer; 1 is files with no line."""
    if result is not None and not result.truncated and result.exit_status in (1, 2):
        errors = [ln for ln in result.output.splitlines() if ln.startswith("grep: ")]
        if all(_NO_SUCH.match(ln) for ln in errors):
            return None
    return missing_evidence("needrestart", result)


def restarters(sections: Mapping[str, CommandResult], services: tuple[ServiceState, ...] | None,
               lost: list[MissingEvidence], warnings: list[str]) -> Restarters | None:
    """needrestart and unattended-upgrades from the ``needrestart`` and ``apt`` sections (FM_RESTARTER).

    What could not be read goes to ``lost``; None when neither could be read. A node without ``apt-config``
    has no apt, so no unattended upgrades; unattended-upgrades runs only where its package (its unit) is
    installed, so without the units that part is unknown.
    """
    found: dict[str, Any] = {}
    result = sections.get("needrestart")
    why = _needrestart_missing(result)
    if why is not None:
        lost.append(why)
    elif result is not None:
        parsed = parse_needrestart(result.output)
        warnings += parsed.warnings
        config = parsed.value
        found["needrestart"] = config is not None
        if config is not None:
            found["needrestart_mode"] = config.mode
            found["uncertain"] = config.uncertain
            found["needrestart_units"] = tuple(u for u in _NVIDIA_UNITS if config.selects(u))
    apt = sections.get("apt")
    if apt is not None and apt.exit_status == 127:
        found["unattended_upgrades"] = False  # no apt-config: no apt, so no apt timers to run upgrades
    elif (apt_why := missing_evidence("apt", apt)) is not None:
        lost.append(apt_why)
    elif apt is not None:
        periodic = parse_apt_periodic(apt.output)
        warnings += periodic.warnings
        installed = None if services is None else any(s.name == UNATTENDED_UNIT and s.exists for s in services)
        on = unattended_upgrades_on(periodic.value)
        found["unattended_upgrades"] = False if not on else installed
    return Restarters(**found) if found else None


def _lost(lost: Sequence[MissingEvidence], section: str) -> bool:
    return any(m.section == section for m in lost)


def fm_place(services: tuple[ServiceState, ...] | None, holders: tuple[Holder, ...] | None, *,
             cgroups_read: bool = True) -> FmPlace:
    """Where Fabric Manager runs, from the units and the holders of /dev/nvidia* (FM holds the NVSwitches).

    A host unit that systemd knows is the host's FM. Without one, an ``nv-fabricmanager`` holder whose
    cgroup is a Kubernetes pod's (``kubepods...pod<uid>.slice``) is the GPU Operator's driver pod. Fail
    closed: units or holders not read, or an FM process neither in a unit nor in a pod, is unknown.

    Args:
        services: the units read (None: the units section could not be read).
        holders: the holders read (None: the holders section could not be read).
        cgroups_read: the holders' cgroups were read (without them no holder can be placed in a pod).
    """
    if services is None:
        return FmPlace(FM_UNKNOWN, reason="the units could not be read")
    unit = next((s for s in services if s.name == FM_UNIT), None)
    if unit is not None and unit.exists:
        return FmPlace(FM_HOST)
    if holders is None:
        return FmPlace(FM_UNKNOWN, reason="no nvidia-fabricmanager unit, and the holders of /dev/nvidia* (where "
                                          "a driver pod's FM shows) could not be read")
    fms = [h for h in holders if h.kind is HolderKind.FABRIC_MANAGER]
    if not fms:
        return FmPlace(FM_NOWHERE)
    podded = [h for h in fms if h.pod]
    if podded and len(podded) == len(fms):
        fm = podded[0]
        return FmPlace(FM_CONTAINER, pid=fm.pid, pod_uid=(fm.pod or "").removeprefix("pod") or None)
    stray = next(h for h in fms if not h.pod)
    if not cgroups_read:
        return FmPlace(FM_UNKNOWN, pid=stray.pid,
                       reason=f"no nvidia-fabricmanager unit, and the cgroup of nv-fabricmanager (pid {stray.pid}) "
                              "could not be read")
    return FmPlace(FM_UNKNOWN, pid=stray.pid,
                   reason=f"no nvidia-fabricmanager unit, and nv-fabricmanager (pid {stray.pid}) runs outside any "
                          "Kubernetes pod (its cgroup says neither a unit nor a pod)")


def _section_key(sections: Mapping[str, CommandResult]) -> tuple:
    """Everything :func:`assemble_node_state` reads of the sections, but what ticks: the node's clock and
    its uptime (the boot section's second line), and how long each command took, which it never reads."""
    return tuple((name, r.argv, r.exit_status, r.truncated, r.stdout.partition("\n")[0] if name == "boot" else r.stdout,
                  r.stderr) for name, r in sorted(sections.items()) if name != "clock")


class LastAssembly:
    """The last poll's sections of one node and the state built from them.

    A node that stays the same answers the same text poll after poll (the probe reads nothing that
    ticks: no temperatures, no CPU times; ps gives start times), so its sections are compared with
    the last poll's and, when only the clock moved, the state is the last one with the new clock:
    nothing is parsed again. The bastion's CPU per node-poll at 1,024 nodes is mostly this parse
    (issue 16). Comparing is a few string compares; anything else that differs assembles afresh,
    so the result is always what :func:`assemble_node_state` gives for these sections.
    """

    __slots__ = ("_key", "_state", "hits")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._state: NodeState | None = None
        self.hits = 0  # polls answered from the last state (tests and benchmarks read it)

    def assemble(self, host: str, sections: Mapping[str, CommandResult], **options: Any) -> NodeState:
        """:func:`assemble_node_state` of ``sections`` (same arguments), from the last state when it can be."""
        polled_at = options.get("polled_at")
        key = (host, sorted((k, v) for k, v in options.items() if k != "polled_at"), _section_key(sections))
        if self._state is not None and key == self._key:
            self.hits += 1
            # What ticks is read afresh: the clock, and the uptime (the boot id is in the key).
            boot = sections.get("boot")
            uptime = parse_boot(boot)[1] if missing_evidence("boot", boot) is None else None
            return self._state.replace(polled_at=polled_at, node_clock=_node_clock(sections.get("clock")),
                                       uptime=uptime)
        state = assemble_node_state(host, sections, **options)
        # Only a read node is kept: an unreachable one carries no clock, and is cheap to build again.
        self._key, self._state = (key, state) if state.reachable else (None, None)
        return state
