"""The state of one simulated node: plain, mutable, JSON-serialisable dataclasses.

Behaviour lives in :mod:`nvls_tui.sim.processes` (what time and signals do) and the renderers
(what each command prints); this module only holds the facts, so the shims can keep a node in a
JSON file between two commands.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from nvls_tui.poll.node_paths import SIMULATED_MARKER, STATE_DIR

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
H100_NAME = "NVIDIA H100 80GB HBM3"
GB200_NAME = "NVIDIA GB200"
DRIVER = "580.82.07"
CUDA = "13.0"

# PCI buses of the eight SXM GPUs of an HGX board (the incident's 0F ... D8) and its four NVSwitches.
HGX_BUSES = ("0F", "34", "48", "5A", "87", "AE", "C2", "D8")
NVSWITCH_BUSES = ("05", "06", "07", "08")
GB200_BUSES = ("08", "09", "18", "19")  # GB200 GPUs sit in PCI domains 0x8, 0x9, 0x18, 0x19

FM_ARGV = ["/usr/bin/nv-fabricmanager", "-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg"]


def digest(*parts: object) -> str:
    """A stable hex digest: every "random" fact of a node derives from its name, never from RNG state."""
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


@dataclass
class Gpu:
    """One GPU and its fabric registration (nvidia-smi's own words)."""

    index: int
    bus_id: str
    uuid: str
    name: str = H100_NAME
    serial: str = "1654024077178"
    persistence: bool = False
    fabric_state: str = "Completed"
    fabric_status: str = "Success"
    clique_id: str = "0"
    cluster_uuid: str = ZERO_UUID
    health_summary: str = "N/A"
    temp: int = 33
    power: int = 115
    mem_total: int = 81559
    # MIG mode now and after the next reset ("Enabled"/"Disabled"; "[N/A]" on a board without MIG).
    mig_current: str = "Disabled"
    mig_pending: str = "Disabled"
    # NVML's GPU recovery action as nvidia-smi prints it (-q's "GPU Recovery Action", --query-gpu's
    # gpu_recovery_action): "None" on a healthy GPU.
    recovery_action: str = "None"
    # On the PCI bus but lost to the driver (fell off the bus, failed to initialise): lspci lists it,
    # nvidia-smi does not.
    lost: bool = False


@dataclass
class Unit:
    """One systemd unit as ``systemctl show`` would describe it."""

    name: str
    description: str
    load: str = "loaded"
    enabled: str = "enabled"
    active: str = "inactive"
    sub: str = "dead"
    main_pid: int = 0
    result: str = "success"
    since: float | None = None
    exec_code: str = ""
    exec_status: str = ""
    last_pid: int = 0
    cpu: str = ""
    needs_reset_failed: bool = False
    active_enter: float | None = None
    # NRestarts: the restarts systemd made by the unit's Restart= policy since a start or reset-failed by
    # hand (which zero it); restart_policy overrides the Restart= a unit has by default (a site's drop-in).
    restarts: int = 0
    restart_policy: str = ""

    @property
    def path(self) -> str:
        """The unit file (Ubuntu 22.04 layout, as in the incident's status output)."""
        return f"/lib/systemd/system/{self.name}"


@dataclass
class Proc:
    """One process: identity, place in the process tree, cgroup and the device files it holds."""

    pid: int
    ppid: int
    user: str
    start: float
    argv: list[str]
    cgroup: str
    devices: list[str] = field(default_factory=list)
    role: str = "other"
    unit: str | None = None
    pod: str | None = None
    expires: float | None = None
    access: str = "F...."

    @property
    def comm(self) -> str:
        """The kernel's 15-character process name (what fuser and ``Main PID: N (comm)`` show)."""
        return self.argv[0].rsplit("/", 1)[-1][:15]

    @property
    def args(self) -> str:
        """The command line as ps prints it."""
        return " ".join(self.argv)


@dataclass
class PodSpec:
    """A GPU Operator container that kubelet keeps running (recreated with a new PID when killed)."""

    name: str
    role: str
    argv: list[str]
    devices: list[str]
    uid: str
    container: str
    user: str = "root"
    gone_at: float | None = None
    restarts: int = 0
    shim_pid: int = 1
    # The pod as the Kubernetes API names it (sim/kubectl.py): a workload's namespace, controlling owner and
    # container name; None: a GPU Operator DaemonSet's pod in gpu-operator, its container named by its role.
    k8s_namespace: str | None = None
    k8s_owner_kind: str | None = None
    k8s_owner_name: str | None = None
    k8s_container: str | None = None
    # A PodDisruptionBudget that selects the pod and allows no disruption now (its name): an eviction is
    # refused with the API's 429, as the real disruption controller answers.
    k8s_budget: str | None = None

    @property
    def cgroup(self) -> str:
        """The cgroup v2 path of the container (systemd cgroup driver, containerd)."""
        uid = self.uid.replace("-", "_")
        return (f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid}.slice/"
                f"cri-containerd-{self.container}.scope")


@dataclass
class LogLine:
    """One journal entry: kernel lines have ident ``kernel`` and no pid."""

    ts: float
    ident: str
    text: str
    pid: int | None = None
    unit: str | None = None
    # The journal's sequence number (arrival order, as journald numbers entries): what a cursor's i= names.
    seq: int = 0


def _log_order(line: LogLine) -> tuple[float, int]:
    """A log's order: time, then the order lines were logged in (``seq`` is unique, so the order is total)."""
    return line.ts, line.seq


@dataclass
class Node:
    """One simulated node.

    Attributes:
        platform: ``hgx-h100`` (host FM, NVSwitches) or ``gb200`` (no host FM, rack fabric).
        needs_reset: the driver's cached fabric state went stale (FM died or stopped); only a GPU
            reset clears it. An FM start while this is set leaves NVLS out of sync.
        out_of_sync: NVLS multicast binds fail with 802 and the kernel logs the out-of-sync line.
        reg_in_progress_at / reg_complete_at: when the GPUs' registration moves on after an FM start.
        stuck_in_progress: registration never completes (scenario).
        fabric_fault: a Completed status other than Success that survives resets (scenario).
        wedged: nvidia-smi never returns (scenario).
        silent: the node does not answer at all: every command hangs, behind sshd even its shell (scenario).
        transient_802: NVLS smoke runs that still fail by themselves before the fabric settles.
        fm_mismatch: FM refuses to start (its version differs from the driver's).
    """

    name: str
    scenario: str = "healthy"
    platform: str = "hgx-h100"
    driver: str = DRIVER
    fm_version: str | None = DRIVER
    cuda: str = CUDA
    boot: float = 0.0
    gpus: list[Gpu] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    units: dict[str, Unit] = field(default_factory=dict)
    procs: dict[int, Proc] = field(default_factory=dict)
    pods: list[PodSpec] = field(default_factory=list)
    kernel: list[LogLine] = field(default_factory=list)
    journal: list[LogLine] = field(default_factory=list)
    # Every simulated node carries the marker file the probe reads, so it is labelled as simulated
    # whether it is polled in process or through shims behind a real sshd.
    files: dict[str, str] = field(default_factory=lambda: {SIMULATED_MARKER: "simulated by nvls-tui\n"})
    dirs: list[str] = field(default_factory=lambda: [STATE_DIR])
    # When each file was last written, as [simulated time, real epoch seconds] (tee writes, mv keeps it):
    # ``stat -c %Y`` reads it on the node's clock, its age in real seconds (sim/files.py says why).
    mtimes: dict[str, list[float]] = field(default_factory=dict)
    cmdlog: list[list] = field(default_factory=list)
    # The newest commands cmdlog keeps (None: every one; tests read what a run did). A long-lived
    # simulator (the console's poller process) sets it: its nodes run a dozen commands a poll.
    cmdlog_keep: int | None = None
    next_pid: int = 40000
    # /proc/sys/kernel/pid_max: systemd raises it to 2^22 on 64-bit hosts; ps sizes its PID columns by it.
    pid_max: int = 4194304
    # Faults of the node's tools (fail-closed tests): commands not installed, and what journalctl
    # does for the poll's user: "ok", "hint" (a user without journal access: the hint, exit 0) or
    # "denied" (no journal file could be opened, exit 1).
    missing_tools: list[str] = field(default_factory=list)
    # Tools that never return on this node (a wedged journald: journalctl), as nvidia-smi does on a wedged one.
    hung_tools: list[str] = field(default_factory=list)
    # Shared device files this node lacks (the real H200 has no nvidia-modeset, nvidia-nvlink or
    # nvidia-nvswitchctl: tests/fixtures/real/nvidia-h200/ls-l-dev-nvidia.txt).
    absent_devices: list[str] = field(default_factory=list)
    journal_access: str = "ok"
    last_advance: float = 0.0
    needs_reset: bool = False
    out_of_sync: bool = False
    reg_in_progress_at: float | None = None
    reg_complete_at: float | None = None
    stuck_in_progress: bool = False
    fabric_fault: str = ""
    wedged: bool = False
    silent: bool = False
    transient_802: int = 0
    # Something restarts Fabric Manager by hand every this many seconds (a configuration tool, a cron job): a
    # stop and a start, so systemd's NRestarts stays 0 while its start time moves (0: nothing does).
    fm_flap_every: float = 0.0
    fm_mismatch: bool = False
    snapshot_last_run: float = 0.0
    watch_cycle: int = -1
    smoke_runs: int = 0
    journal_seq: int = 0
    # The node's own clock: the zone its local times print in (journalctl -o short-iso, date without -u,
    # systemctl), and the steps it took as [when (simulated time), seconds]: from ``when`` on it reads
    # that many seconds more (an NTP step back: negative). Entries keep simulated time, so the journal's
    # order stays the true one, as journald's (by boot and monotonic time) does.
    tz: str = "UTC"
    clock_steps: list[list[float]] = field(default_factory=list)
    # The kernel log's reach: the journal holds kernel entries only from ``journal_since`` on (rotated,
    # vacuumed: None keeps them all), the ring buffer (dmesg) only from ``ring_since`` on (wrapped).
    journal_since: float | None = None
    ring_since: float | None = None
    # The node as the Kubernetes API sees it (sim/kubectl.py): labels over the GPU Operator's defaults (an
    # administrator's `nvidia.com/gpu.deploy.X=false`), and whether it is cordoned.
    k8s_labels: dict[str, str] = field(default_factory=dict)
    k8s_cordoned: bool = False
    # The node's annotations set through the API, and the GPU Operator's operand pods whose DaemonSet a
    # paused deploy label took off the node (back, as new pods, when the label reads true again).
    k8s_annotations: dict[str, str] = field(default_factory=dict)
    k8s_parked: list[PodSpec] = field(default_factory=list)
    # The machine's own ids: /etc/machine-id (32 hex digits) and the DMI product UUID
    # (/sys/class/dmi/id/product_uuid, upper case as many boards print it); empty: made from the node's name
    # (sim/files.machine_files). A kubelet reports both, and the boot id, in its Node's status.nodeInfo.
    machine_id: str = ""
    product_uuid: str = ""
    # The Node object's resourceVersion: every write through the API moves it (a write conditioned on an older
    # one is refused with 409 Conflict, as the API server does).
    k8s_rv: int = 1
    # The events the cluster recorded about the Node (kubelet's Starting, Rebooted, NodeNotSchedulable ...), oldest
    # first, each {"at": epoch seconds, "type": Normal|Warning, "reason": ..., "message": ..., "source": ...}.
    k8s_events: list[dict[str, Any]] = field(default_factory=list)

    # ----- the node's clock ------------------------------------------------------------------
    def clock(self, t: float) -> float:
        """What the node's clock read at simulated time ``t`` (epoch seconds, its steps until then applied)."""
        return t + sum(seconds for when, seconds in self.clock_steps if t >= when)

    def local_time(self, t: float, utc: bool = False) -> dt.datetime:
        """The node's clock at simulated time ``t`` as a time in its zone (or in UTC)."""
        return dt.datetime.fromtimestamp(self.clock(t), dt.UTC if utc else ZoneInfo(self.tz))

    def step_clock(self, at: float, seconds: float) -> None:
        """Step the node's clock by ``seconds`` at simulated time ``at`` (NTP stepping it back: negative)."""
        self.clock_steps.append([at, seconds])

    # ----- lookups ---------------------------------------------------------------------------
    def unit(self, name: str) -> Unit | None:
        """The unit called ``name`` (``.service`` optional), or None when systemd would not know it."""
        if name in self.units:
            return self.units[name]
        return self.units.get(f"{name}.service")

    def unit_name(self, name: str) -> str:
        """``name`` completed with ``.service`` the way systemctl does."""
        return name if "." in name.rsplit("@", 1)[-1] else f"{name}.service"

    def alive(self, role: str | None = None) -> list[Proc]:
        """Live processes, optionally only those of one role, by PID."""
        return sorted((p for p in self.procs.values() if role is None or p.role == role), key=lambda p: p.pid)

    def alloc_pid(self) -> int:
        """A fresh PID: increasing, with deterministic gaps (other processes come and go too)."""
        step = 1 + int(digest(self.name, self.next_pid)[:2], 16) % 23
        self.next_pid += step
        return self.next_pid

    def spawn(self, **kw) -> Proc:
        """Create a process (``pid`` optional) and return it."""
        pid = kw.pop("pid", None) or self.alloc_pid()
        proc = Proc(pid=pid, **kw)
        self.procs[pid] = proc
        return proc

    def device_files(self) -> list[str]:
        """Every /dev/nvidia* file of the node, in the order a C-locale shell glob lists them."""
        files = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]
        files += [f"/dev/nvidia{g.index}" for g in self.gpus]
        if self.switches:
            files += ["/dev/nvidia-nvlink", "/dev/nvidia-nvswitchctl"]
            files += [f"/dev/nvidia-nvswitch{i}" for i in range(len(self.switches))]
        return sorted(f for f in files if f not in self.absent_devices)

    def holders(self) -> dict[str, list[Proc]]:
        """``{device file: [processes holding it]}`` for the files somebody holds."""
        out: dict[str, list[Proc]] = {}
        for proc in self.alive():
            for dev in proc.devices:
                out.setdefault(dev, []).append(proc)
        return out

    def log_command(self, ts: float, argv: list[str]) -> None:
        """Note a command run at ``ts``; past twice :attr:`cmdlog_keep` the oldest go (in one cut, not one
        by one: a cut copies the rest)."""
        self.cmdlog.append([ts, argv])
        if self.cmdlog_keep is not None and len(self.cmdlog) > 2 * self.cmdlog_keep:
            del self.cmdlog[:len(self.cmdlog) - self.cmdlog_keep]

    def log_kernel(self, ts: float, text: str) -> None:
        """Append a kernel line (kept in time order)."""
        self.journal_seq += 1
        bisect.insort(self.kernel, LogLine(ts=ts, ident="kernel", text=text, seq=self.journal_seq), key=_log_order)

    def log_unit(self, ts: float, unit: str, ident: str, text: str, pid: int | None = None) -> None:
        """Append a journal line of a unit (``systemd`` lines use pid 1)."""
        self.journal_seq += 1
        line = LogLine(ts=ts, ident=ident, text=text, pid=pid, unit=unit, seq=self.journal_seq)
        bisect.insort(self.journal, line, key=_log_order)

    # ----- persistence -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready form."""
        data = asdict(self)
        data["procs"] = [asdict(p) for p in self.procs.values()]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Node:
        """Inverse of :meth:`to_dict`."""
        data = dict(data)
        data["gpus"] = [Gpu(**g) for g in data.get("gpus", [])]
        data["units"] = {k: Unit(**u) for k, u in data.get("units", {}).items()}
        data["procs"] = {int(p["pid"]): Proc(**p) for p in data.get("procs", [])}
        data["pods"] = [PodSpec(**p) for p in data.get("pods", [])]
        data["k8s_parked"] = [PodSpec(**p) for p in data.get("k8s_parked", [])]
        data["kernel"] = [LogLine(**e) for e in data.get("kernel", [])]
        data["journal"] = [LogLine(**e) for e in data.get("journal", [])]
        return cls(**data)
