"""One node's state, as read by one poll: GPUs, NVSwitches, units, holders and kernel events."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from nvls_tui.model.enums import HolderKind, Platform, Severity, Verdict
from nvls_tui.model.kube import KubeNode, PodRef
from nvls_tui.model.scheduler import Job, SchedulerState

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
# The fabric states of a GPU that has no fabric (see FabricInfo.supported).
NO_FABRIC = frozenset({"Not Supported", "N/A"})


@dataclass(frozen=True, slots=True)
class FabricHealth:
    """The ``Health`` sub-block of the fabric info (580.159+ drivers); ``None`` where not printed."""

    summary: str | None = None
    bandwidth: str | None = None
    route_recovery_in_progress: str | None = None
    route_unhealthy: str | None = None
    access_timeout_recovery: str | None = None
    incorrect_configuration: str | None = None
    partition_assigned: str | None = None


@dataclass(frozen=True, slots=True)
class FabricInfo:
    """A GPU's fabric registration, in nvidia-smi's own words (``Completed``, ``In Progress``, ...)."""

    state: str = "N/A"
    status: str = "N/A"
    clique_id: str | None = None
    cluster_uuid: str | None = None
    health: FabricHealth | None = None

    @property
    def completed_ok(self) -> bool:
        """Completed/Success: necessary for NVLS, but not proof of health (domain.md)."""
        return self.state == "Completed" and self.status == "Success"

    @property
    def supported(self) -> bool:
        """False where the GPU has no fabric at all.

        NVML says ``Not Supported``; ``nvidia-smi`` 580 prints ``N/A`` for the same GPU (both seen on
        one real H200 without NVSwitch, tests/fixtures/real/nvidia-h200), so both words mean it.
        """
        return self.state not in NO_FABRIC


@dataclass(frozen=True, slots=True)
class GpuState:
    """One GPU as nvidia-smi or NVML reports it."""

    index: int
    bus_id: str
    name: str
    uuid: str
    fabric: FabricInfo = field(default_factory=FabricInfo)
    persistence_mode: str | None = None
    # MIG mode now and after the next reset (``mig.mode.current`` / ``mig.mode.pending``): nvidia-smi's
    # words; None where it printed N/A (a board without MIG) or the poll did not ask: unknown, never "no change".
    mig_current: str | None = None
    mig_pending: str | None = None
    # NVML's GPU recovery action as nvidia-smi -q prints it (``None``, ``Drain and Reset``, ...); None where the
    # text had no such field (older drivers, the poll's query).
    recovery_action: str | None = None

    @property
    def mig_change_pending(self) -> bool:
        """True when a reset (or reboot) would change this GPU's MIG mode; False also when it is unknown."""
        return self.mig_current is not None and self.mig_pending is not None and self.mig_current != self.mig_pending


@dataclass(frozen=True, slots=True)
class SwitchState:
    """One NVSwitch device file (``/dev/nvidia-nvswitchN``) and, where known, its PCI address."""

    device: str
    bus_id: str | None = None


@dataclass(frozen=True, slots=True)
class ServiceState:
    """One systemd unit as ``systemctl show`` reports it.

    Attributes:
        name: unit name including its suffix (``nvidia-snapshot.timer``); ``.service`` may be omitted.
        active: ActiveState (``active``, ``inactive``, ``failed``, ``activating``, ...).
        load: LoadState (``loaded``, ``masked``, ``not-found``).
    """

    name: str
    active: str
    sub: str | None = None
    load: str | None = None
    main_pid: int | None = None
    result: str | None = None
    since: str | None = None
    # NRestarts: how often systemd restarted the service by its Restart= policy since it was last started
    # or reset-failed by hand (a crash-and-restart loop, "flapping"); None for a timer or where not read.
    restarts: int | None = None
    # The signal that ended the service's main process (ExecMainCode killed or dumped, ExecMainStatus its number):
    # 9 for a `kill -9` or the OOM killer's; None where it exited by itself or the poll did not read it.
    killed_by: int | None = None

    @property
    def exists(self) -> bool:
        """False for a unit systemd does not know (``not-found``)."""
        return self.load != "not-found"


@dataclass(frozen=True, slots=True)
class Holder:
    """A process that holds one or more /dev/nvidia* files open.

    ``start_time`` is the identity anchor re-checked before any signal: clock ticks since boot
    (field 22 of /proc/PID/stat) or, when read through ``ps``, the ``lstart`` text.
    """

    pid: int
    user: str
    command: str
    kind: HolderKind = HolderKind.OTHER
    devices: tuple[str, ...] = ()
    unit: str | None = None
    pod: str | None = None
    start_time: str | None = None
    ppid: int | None = None
    job: Job | None = None  # the scheduler's job this process belongs to (a job step: a workload)
    # The container runtime's id from the cgroup (``cri-containerd-ID.scope``): which container of the pod.
    container_id: str | None = None
    # The pod as the cluster names it (namespace, name, container, owner), where a cluster is configured
    # and its pods list has this holder's pod uid; None otherwise.
    pod_ref: PodRef | None = None


# Where a node's Fabric Manager runs (FmPlace.location).
FM_HOST = "host"  # a host ``nvidia-fabricmanager`` unit is installed
FM_CONTAINER = "container"  # no host unit; ``nv-fabricmanager`` runs in the GPU Operator's driver pod
FM_NOWHERE = "none"  # no host unit and no ``nv-fabricmanager`` process
FM_UNKNOWN = "unknown"  # what would tell could not be read, or says neither


@dataclass(frozen=True, slots=True)
class FmPlace:
    """Where Fabric Manager runs on a node, and so how it is restarted.

    With an operator-managed driver (the NVIDIA GPU Operator) there is no host unit: ``nv-fabricmanager``
    runs inside the driver pod, and restarting FM means restarting that pod.

    Attributes:
        location: :data:`FM_HOST`, :data:`FM_CONTAINER`, :data:`FM_NOWHERE` or :data:`FM_UNKNOWN`.
        pid: the ``nv-fabricmanager`` process seen outside a unit, if any.
        pod: the driver pod's name, where the node says it; None when only its uid is known.
        pod_uid: the pod's uid from the process's cgroup (``kubepods-...-pod<uid>.slice``).
        reason: for :data:`FM_UNKNOWN`, why the place could not be told.
    """

    location: str
    pid: int | None = None
    pod: str | None = None
    pod_uid: str | None = None
    reason: str | None = None

    @property
    def in_container(self) -> bool:
        """FM runs in the driver pod: the host-unit repair path does not apply."""
        return self.location == FM_CONTAINER

    @property
    def pod_words(self) -> str:
        """The pod as the operator can find it: its name, else ``(uid 1a2b…)``, else ``(name unknown)``."""
        if self.pod:
            return self.pod
        return f"(uid {self.pod_uid})" if self.pod_uid else "(name unknown)"


@dataclass(frozen=True, slots=True)
class KernelEvent:
    """A kernel log line that matters for the fabric (``NV_ERR_*``, out-of-sync, Xid, SXid)."""

    code: str
    line: str
    xid: int | None = None
    pci: str | None = None
    timestamp: str | None = None


@dataclass(frozen=True, slots=True)
class FmLogLine:
    """One line Fabric Manager (or systemd, for its unit) logged, as read from the unit's journal.

    Attributes:
        level: FM's own level (``ERROR``, ``WARNING``, ...) where FM printed one; None otherwise.
        message: the text after the journal's and FM's prefixes.
        timestamp: the journal's time stamp as printed (short-iso: with its UTC offset).
    """

    level: str | None
    message: str
    timestamp: str | None = None


@dataclass(frozen=True, slots=True)
class FmJournal:
    """What Fabric Manager's unit journal said in this boot since the unit's last start (the ``fm_log`` section).

    Attributes:
        problems: FM's ERROR/WARNING lines, and its multicast team errors at any level, after its last
            successful configuration since that start (every such line where it has not configured since).
        configured: FM said it configured the fabric since the unit's last start.
        mismatch: ``(FM version, driver version)`` from FM's own version-mismatch words since that start.
        lines: how many log lines were read since that start.
        unread: the lines since that start from NVIDIA's stack that say something went wrong and that no FM rule
            reads (systemd's words that FM was killed, ...): ``UNREAD_EVIDENCE`` quotes them.
        starts: when systemd said the unit started (its ``Started`` lines), in every line read of this boot,
            the last start's and the ones before it (epoch seconds, the node's clock): FM's own start times.
    """

    problems: tuple[FmLogLine, ...] = ()
    configured: bool = False
    mismatch: tuple[str, str] | None = None
    lines: int = 0
    unread: tuple[str, ...] = ()
    starts: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Restarters:
    """What on a node may restart ``nvidia-*`` units behind the operator (the apt timers are in ``services``).

    Attributes:
        needrestart: needrestart's configuration is on the node (it runs after every apt/dpkg change); None
            when it could not be read.
        needrestart_mode: the restart mode its configuration sets: ``a`` restarts automatically, unattended
            upgrades included; ``i`` asks on a terminal (pre-selected) and only lists when run unattended;
            ``l`` only lists. None without needrestart.
        needrestart_units: the ``nvidia-*`` units the poll reads that needrestart would pick (restart in
            ``a``, offer pre-selected in ``i``) once a library they map is upgraded.
        uncertain: what in needrestart's configuration could not be read (units it may pick count as picked).
        unattended_upgrades: apt's daily run installs upgrades unattended (``APT::Periodic::Unattended-Upgrade``
            set and the unattended-upgrades package installed); None when apt's settings could not be read.
    """

    needrestart: bool | None = None
    needrestart_mode: str | None = None
    needrestart_units: tuple[str, ...] = ()
    uncertain: tuple[str, ...] = ()
    unattended_upgrades: bool | None = None


@dataclass(frozen=True, slots=True)
class KernelCoverage:
    """From when this boot's kernel lines were read, and from where.

    Attributes:
        since: the node time (ISO 8601 with its offset) of the earliest moment the lines read cover; None
            when it is unknown (nothing read, or the ring buffer's stamps could not be put on the clock).
        sources: what was read: ``journal`` (``journalctl -k``) and/or ``dmesg`` (the ring buffer).
        complete_since_boot: the lines reach back to the boot (one source starts with the kernel's first line).
        journal_since: where the journal's lines of this boot start (None: it has none, or could not be read).
        notes: what could not be read beside, in words ("the ring buffer could not be read: ...").
    """

    since: str | None
    sources: tuple[str, ...]
    complete_since_boot: bool
    journal_since: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnosis result (codes and severities of contract.md).

    Attributes:
        section, reason: for ``EVIDENCE_MISSING``, the section that could not be read and why.
        action: for ``XID``, NVIDIA's resolution bucket that stands (the Xid catalogue's immediate action, or the
            recovery action the driver's line orders): ``RESET_GPU``, ``DRAIN_AND_RESET``, ``CONTACT_SUPPORT``, ...
        next_move: the move that action asks for, in a few words.
    """

    code: str
    severity: Severity
    message: str
    gpu: int | None = None
    section: str | None = None
    reason: str | None = None
    action: str | None = None
    next_move: str | None = None


@dataclass(frozen=True, slots=True)
class MissingEvidence:
    """One section of a poll that could not be read: unknown, which is never "fine".

    Attributes:
        section: the probe section (``gpus``, ``units``, ``fm_version``, ``nvswitches``, ``holders``,
            ``processes``, ``kernel``, ``record``, ``smoke``, ...).
        reason: one of :data:`nvls_tui.poll.evidence.REASONS` (``tool missing``, ``permission denied``,
            ``timed out``, ``unparseable``, ``over the size cap``, ``failed``, ``not run``).
        detail: one sentence for the operator: the command and what it said.
    """

    section: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class SmokeResult:
    """The outcome of the last NVLS all_reduce_perf smoke test run on a node."""

    avg_busbw: float | None
    passed: bool
    out_of_bounds: int | None = None
    nvls_used: bool = False
    completed: bool = False
    errors: tuple[str, ...] = ()
    threshold: float | None = None
    # When the test ended: ISO 8601 in UTC with its offset, on the node's clock; the boot it ran in
    # (/proc/sys/kernel/random/boot_id) and seconds since that boot (/proc/uptime) read just after.
    # Older records carry node-local time without an offset and no boot: they date nothing.
    at: str | None = None
    boot_id: str | None = None
    uptime: float | None = None


@dataclass(frozen=True, slots=True)
class NodeState:
    """Everything one poll learned about one node. Immutable: a new poll makes a new object.

    Attributes:
        host: the target name as the operator wrote it (``gpu05``, ``sim:seed-incident/gpu05``).
        reachable: False when the node could not be reached or read; ``error`` says why.
        simulated: True for simulated nodes (always labelled as such on screen and in JSON).
        lab: a lab node (``nvls-tui lab``): real systemd, sshd and processes, simulated GPUs.
        fm_version: ``nv-fabricmanager --version`` (None where there is no host FM).
        services: every unit of interest, by name.
        repair_record: the crash-safe record a half-finished repair left on the node, if any.
        fabric_since: seconds the fabric has been ``In Progress`` (for the young/stuck warning).
        missing: the sections this poll could not read (each one makes the node not ``healthy``).
        scheduler: what the scheduler (Slurm) says of the node; None when no scheduler was found.
        kernel_unread: the kernel lines from NVIDIA's stack that say something went wrong and that no rule
            reads (code ``UNREAD``): ``UNREAD_EVIDENCE`` quotes them.
        node_clock: the node's own clock at the poll (epoch seconds; None when it could not be read):
            kernel lines and unit times are on that clock, so their ages are read against it.
        boot_id: the node's boot (/proc/sys/kernel/random/boot_id); None when it could not be read.
        uptime: seconds since that boot (/proc/uptime, read just before the clock): with ``node_clock``
            it says whether the clock was stepped since a smoke test (None when it could not be read).
        fm_place: where Fabric Manager runs (a host unit, the GPU Operator's driver pod, ...); None where
            the poll did not tell (an unreachable node, a state built by hand).
        pci_gpus: the GPUs on the PCI bus (lspci), in nvidia-smi's bus id form; None when not read.
        restarters: needrestart and unattended-upgrades on the node (None when neither could be read).
        fm_restarts_before: the FM unit's ``NRestarts`` at the last poll (the console's poller carries it:
            a count climbing between polls is FM flapping now); None at a first poll.
        fm_starts: Fabric Manager's distinct start times seen so far (epoch seconds, the node's clock): its unit's
            ``ActiveEnterTimestamp`` and its journal's ``Started`` lines, carried from poll to poll
            (``poll/fm_starts.py``), so a counter that starts again (reset-failed, a reboot) hides no flap.
        fm_journal: what Fabric Manager's unit journal said since the unit's last start (FM_LOG_ERROR, FM's
            own version-mismatch words); None where the ``fm_log`` section was not read.
        k8s: what the Kubernetes cluster says of the node (ready, cordoned, the GPU Operator's labels, its
            pods); None where no cluster is configured.
    """

    host: str
    reachable: bool = True
    simulated: bool = False
    lab: bool = False
    platform: Platform = Platform.UNKNOWN
    driver: str | None = None
    fm_version: str | None = None
    gpus: tuple[GpuState, ...] = ()
    nvswitches: tuple[SwitchState, ...] = ()
    services: tuple[ServiceState, ...] = ()
    holders: tuple[Holder, ...] = ()
    kernel_events: tuple[KernelEvent, ...] = ()
    kernel_unread: tuple[KernelEvent, ...] = ()
    smoke: SmokeResult | None = None
    repair_record: dict | None = None
    fabric_since: float | None = None
    error: str | None = None
    polled_at: float | None = None
    warnings: tuple[str, ...] = ()
    missing: tuple[MissingEvidence, ...] = ()
    node_clock: float | None = None
    scheduler: SchedulerState | None = None
    boot_id: str | None = None
    uptime: float | None = None
    # From when the kernel lines cover this boot (journal and/or ring buffer); None where the poll did not say.
    kernel_coverage: KernelCoverage | None = None
    fm_place: FmPlace | None = None
    # The NVIDIA display/3D controllers lspci lists (nvidia-smi's bus id form), None when lspci was not
    # read: a GPU on the bus that nvidia-smi does not list is lost (GPU_LOST).
    pci_gpus: tuple[str, ...] | None = None
    restarters: Restarters | None = None
    fm_restarts_before: int | None = None
    fm_starts: tuple[float, ...] = ()
    fm_journal: FmJournal | None = None
    k8s: KubeNode | None = None

    def was_read(self, section: str) -> bool:
        """True when the poll read ``section`` (False for an unreachable node)."""
        return self.reachable and self.missing_section(section) is None

    @property
    def read_anything(self) -> bool:
        """Something of the node was read: at this poll, or (unreachable now) at the last one that answered.

        False before the first poll and for a node that never answered: then nothing of it is known, and
        an empty tuple is no "0 holders" or "no units" (the GB200 wording).
        """
        return bool(self.missing or self.services or self.gpus or self.nvswitches or self.holders
                    or self.kernel_events or self.driver or self.fm_version or self.boot_id
                    or self.node_clock is not None or self.smoke or self.repair_record)

    def missing_section(self, section: str) -> MissingEvidence | None:
        """Why ``section`` could not be read, or None when it was read (by this poll, or by the last one
        that answered for a node unreachable now). Nothing is read of a node before its first answer."""
        missing = next((m for m in self.missing if m.section == section), None)
        if missing is None and not self.read_anything:
            reason = "not polled yet" if self.reachable else "unreachable"
            return MissingEvidence(section, reason, self.error or f"{self.host} has not answered a poll yet")
        return missing

    def service(self, name: str) -> ServiceState | None:
        """The unit called ``name`` (``.service`` optional), or None when it was not read."""
        wanted = {name, f"{name}.service", name.removesuffix(".service")}
        return next((s for s in self.services if s.name in wanted), None)

    def replace(self, **changes) -> NodeState:
        """A copy with ``changes`` applied (the model is immutable)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Findings for one node and the verdict they add up to.

    Attributes:
        smoke_distrust: why the node's passing smoke record dates none of its kernel lines (its older
            lines count again), for every view that shows the record; None when it is trusted or there is
            no passing record.
    """

    findings: tuple[Finding, ...]
    verdict: Verdict
    smoke_distrust: str | None = None


__all__ = [
    "ZERO_UUID",
    "Diagnosis",
    "FabricHealth",
    "FabricInfo",
    "FM_CONTAINER",
    "FM_HOST",
    "FM_NOWHERE",
    "FM_UNKNOWN",
    "Finding",
    "FmJournal",
    "FmLogLine",
    "FmPlace",
    "GpuState",
    "Holder",
    "KernelCoverage",
    "KernelEvent",
    "MissingEvidence",
    "NO_FABRIC",
    "NodeState",
    "Restarters",
    "ServiceState",
    "SmokeResult",
    "SwitchState",
]
