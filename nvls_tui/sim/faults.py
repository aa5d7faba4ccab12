"""Each fault a simulated node can have, as a builder of that node (``name``, simulated time ``now``): the seed
incident's two (Fabric Manager killed, out of sync after a reboot) and every other case the project met or read
of (a version mismatch, a wedged nvidia-smi, a GB200 tray, markup in node text, a clock stepped by NTP, Fabric
Manager in a pod, a GPU fallen off the bus, FM's restarters, ...), each built on :func:`~nvls_tui.sim.base_nodes.base_node`.

The named fleets that use them are :mod:`nvls_tui.sim.scenarios`.
"""

from __future__ import annotations

from nvls_tui.sim import fabric
from nvls_tui.sim.base_nodes import (
    DAY,
    add_vllm_pod,
    base_node,
    incident_holders,
    pod_uid,
    start_at,
)
from nvls_tui.sim.files import identity
from nvls_tui.sim.kubectl import record_event
from nvls_tui.sim.processes import spawn_pod
from nvls_tui.sim.state import (
    FM_ARGV,
    Node,
    PodSpec,
    Unit,
    digest,
)

FM_KILLED_AT = 1786376734.0  # Mon 2026-08-10 15:45:34 UTC: the incident's SIGKILL of FM (pid 9946)


def seed_fm_killed(name: str, now: float) -> Node:
    """gpu05: FM SIGKILLed days ago and still failed; NVLS attempts hit FABRIC_MANAGER_NOT_PRESENT."""
    node = base_node(name, now, boot_age=34 * DAY)
    fm = node.units["nvidia-fabricmanager.service"]
    fm_proc = node.procs.pop(fm.main_pid)
    node.log_unit(FM_KILLED_AT, fm.name, "systemd",
                  f"{fm.name}: Main process exited, code=killed, status=9/KILL", 1)
    node.log_unit(FM_KILLED_AT, fm.name, "systemd", f"{fm.name}: Failed with result 'signal'.", 1)
    fm.active, fm.sub, fm.result, fm.since, fm.main_pid = "failed", "failed", "signal", FM_KILLED_AT, 0
    fm.last_pid, fm.exec_code, fm.exec_status, fm.cpu, fm.needs_reset_failed = 9946, "killed", "KILL", "27.747s", True
    del fm_proc
    node.needs_reset = True
    incident_holders(node, now, incident_pids=True)
    for ago in (7200.0, 6900.0, 1500.0):
        node.log_kernel(now - ago, fabric.NOT_PRESENT_LINE)
    return node


def seed_out_of_sync(name: str, now: float) -> Node:
    """gpu06 after its reboot: FM active, every GPU Completed/Success, NVLS out of sync."""
    node = base_node(name, now, boot_age=3 * 3600)
    node.out_of_sync = True
    incident_holders(node, now, incident_pids=False)
    node.log_kernel(now - 1800, fabric.OUT_OF_SYNC_LINE)
    return node


# The shared device files the real H200 lacks (tests/fixtures/real/nvidia-h200/ls-l-dev-nvidia.txt).
H200_ABSENT_DEVICES = ("/dev/nvidia-modeset", "/dev/nvidia-nvlink", "/dev/nvidia-nvswitchctl")
H200_NAME = "NVIDIA H200"


def missing_device_files(name: str, now: float) -> Node:
    """gpu06's fault on an HGX H200 whose /dev lacks the shared files the real H200 lacks."""
    return without_h200_shared_files(seed_out_of_sync(name, now))


def without_h200_shared_files(node: Node) -> Node:
    """``node`` as an HGX H200 whose /dev lacks what the real H200's lacks (the lab's node of the
    ``missing-device-files`` scenario too); no process holds a file the node does not have."""
    node.absent_devices = list(H200_ABSENT_DEVICES)
    for gpu in node.gpus:
        gpu.name, gpu.mem_total = H200_NAME, 143771
    present = set(node.device_files())
    for proc in node.procs.values():  # no process holds a file the node does not have
        proc.devices = [d for d in proc.devices if d in present]
    for pod in node.pods:
        pod.devices = [d for d in pod.devices if d in present]
    return node


def healthy(name: str, now: float) -> Node:
    """A healthy HGX H100 node (DCGM and the pods holding devices is normal)."""
    return base_node(name, now)


def persistence_blocks_reset(name: str, now: float) -> Node:
    """Out of sync, and persistence mode on every GPU: the reset is refused until ``nvidia-smi -pm 0``."""
    node = seed_out_of_sync(name, now)
    for proc in node.alive("watch") + node.alive("shell") + node.alive("watch-child"):
        node.procs.pop(proc.pid, None)
    for gpu in node.gpus:
        gpu.persistence = True
    return node


def version_mismatch(name: str, now: float) -> Node:
    """FM 570 next to driver 580 after an apt upgrade: FM refuses to start."""
    node = base_node(name, now, boot_age=2 * 3600, start_fm=False)
    from nvls_tui.sim import systemd

    node.fm_version, node.fm_mismatch = "570.172.08", True
    for gpu in node.gpus:
        gpu.fabric_state, gpu.fabric_status = "Not Started", "N/A"
    node.needs_reset = False
    systemd.start(node, "nvidia-fabricmanager.service", node.boot + 21)
    return node


def insufficient_resources(name: str, now: float) -> Node:
    """Completed with ``Insufficient Resources``: a fault no reset fixes (escalate)."""
    node = base_node(name, now)
    node.fabric_fault = "Insufficient Resources"
    for gpu in node.gpus:
        gpu.fabric_status = "Insufficient Resources"
    return node


def stuck_in_progress(name: str, now: float) -> Node:
    """Registration never leaves ``In Progress``."""
    node = base_node(name, now, boot_age=2 * 3600)
    node.stuck_in_progress = True
    for gpu in node.gpus:
        gpu.fabric_state, gpu.fabric_status = "In Progress", "N/A"
    return node


def wedged(name: str, now: float) -> Node:
    """nvidia-smi hangs forever (a GPU fell off the bus); everything else answers."""
    node = seed_fm_killed(name, now)
    node.wedged = True
    return node


def no_answer(name: str, now: float) -> Node:
    """A node that does not answer at all (issue 25): every command hangs; behind sshd its shell never
    starts the poll. Nothing of it can be read, so it is unreachable, never healthy."""
    node = seed_fm_killed(name, now)  # what it would say, were it asked: never read
    node.silent = True
    return node


def transient_802(name: str, now: float) -> Node:
    """A healthy node whose first NVLS smoke test fails with 802 (an FM stall) and later ones pass."""
    node = base_node(name, now)
    node.transient_802 = 1
    return node


def gb200(name: str, now: float) -> Node:
    """A GB200 NVL72 compute tray: no host FM, no NVSwitch PCI devices, fabric state from the rack."""
    return base_node(name, now, platform="gb200")


# What any user of a node can put in front of the operator: process names and arguments, the kernel's
# Xid lines (which quote the process name), and the record file's operator field.
HOSTILE_TEXT = ("x [/x] [@click=app.quit]click me[/] [bold red]PWNED[/] "
                "\x1b]0;pwned-title\x07\x1b[2J\x1b[31m<img src=x onerror=alert(1)>\x1b[0m "
                "\u202eevil\u202c `tick` | pipe *star* _under_")


def hostile(name: str, now: float) -> Node:
    """A node whose users are hostile: every text it prints carries markup, escapes and HTML."""
    from nvls_tui.poll.probe import RECORD_FILE

    node = seed_out_of_sync(name, now)
    cgroup = "0::/user.slice/user-1000.slice/session-7.scope"
    node.spawn(ppid=1, user="mallory", start=now - 600, argv=["python3", "-c", "train()", HOSTILE_TEXT],
               cgroup=cgroup, devices=["/dev/nvidia0", "/dev/nvidiactl"], role="user", access="F...m")
    node.spawn(ppid=1, user="mallory", start=now - 500, argv=["[/x]\x1b[2J", "--job", HOSTILE_TEXT],
               cgroup=cgroup, devices=["/dev/nvidia1"], role="user")
    # A management process the repair stops on its own: its hostile command line reaches the report.
    node.spawn(ppid=1, user="root", start=now - 400, argv=["/usr/bin/dcgm-exporter", "--label", HOSTILE_TEXT],
               cgroup="0::/system.slice/dcgm-exporter-evil.service", devices=["/dev/nvidia2"], role="user")
    # An NVLink Xid that quotes the user's process name. Not Xid 79: a GPU fallen off the bus is GPU_LOST,
    # whose repair is refused before any holder or report text is shown, and this node exists to carry
    # hostile text through every screen and the report.
    node.log_kernel(now - 300, "NVRM: Xid (PCI:0000:34:00): 74, pid=4242, name=" + HOSTILE_TEXT
                    + ", NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    node.files[RECORD_FILE] = ('{"run_id": "x", "operator": "' + HOSTILE_TEXT.replace("\\", "\\\\")
                               .replace('"', '\\"').replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
                               + '", "started": "2026-12-01T00:00:00+00:00"}\n')
    return node


def _smoke_record(node: Node, at: float) -> str:
    """The passing smoke record the runbook leaves on ``node`` when a test ends at simulated time ``at``
    (nvls_tui.runbook.smoke.smoke_json: the node's clock in UTC with its offset, its boot, its uptime)."""
    import json

    from nvls_tui.sim.files import proc_files

    proc = proc_files(node, at)
    return json.dumps({"avg_busbw": 292.1, "passed": True, "out_of_bounds": 0, "nvls_used": True, "completed": True,
                       "errors": [], "threshold": 250.0,
                       "at": node.local_time(at, utc=True).strftime("%Y-%m-%dT%H:%M:%S+00:00"),
                       "boot_id": proc["/proc/sys/kernel/random/boot_id"].strip(),
                       "uptime": float(proc["/proc/uptime"].split()[0])}, indent=2) + "\n"


def clock_stepped(name: str, now: float) -> Node:
    """A repaired out-of-sync node (New York time) whose clock ran an hour fast at the smoke test and
    was stepped back by NTP since; the fault came back after the step, so its line reads older than the
    smoke record. ``gpu-ntp01``: polled when the clock is past the record again (the step shows in the
    clock's offset from the boot); ``gpu-ahead01``: polled before it (a record dated in the future)."""
    from nvls_tui.poll.probe import SMOKE_FILE

    node = base_node(name, now, boot_age=2 * DAY)
    node.tz = "America/New_York"
    smoked, stepped, came_back = ((now - 7200, now - 6600, now - 6000) if name == "gpu-ntp01"
                                  else (now - 1200, now - 900, now - 600))
    node.step_clock(node.boot, 3600.0)
    node.log_kernel(smoked - 1800, fabric.OUT_OF_SYNC_LINE)  # the fault the smoke test proved repaired
    node.files[SMOKE_FILE] = _smoke_record(node, smoked)
    node.step_clock(stepped, -3600.0)
    node.out_of_sync = True
    node.log_kernel(came_back, fabric.OUT_OF_SYNC_LINE)
    return node


# The GPU Operator's driver pod: its container runs nv-fabricmanager (the driver container's own FM).
DRIVER_POD_ROLE = "nvidia-driver"


def driver_pod_name(host: str) -> str:
    """The driver daemonset's pod on ``host`` (``nvidia-driver-daemonset-xxxxx``, stable per host)."""
    return f"nvidia-driver-daemonset-{digest(host, DRIVER_POD_ROLE)[:5]}"


def fm_in_container(name: str, now: float) -> Node:
    """An operator-managed driver: no host nvidia-fabricmanager unit, no nv-fabricmanager on the host's PATH;
    FM runs in the GPU Operator's driver pod (a containerd-shim's child in a kubepods cgroup), started before
    the other pods, so the fabric is registered and healthy. systemctl answers for the missing unit as real
    systemctl does (LoadState=not-found; ``status``: "could not be found", exit 4)."""
    from nvls_tui.sim.systemd import FM_DEVICES

    node = base_node(name, now, start_fm=False)
    del node.units["nvidia-fabricmanager.service"]
    node.fm_version = None  # the binary lives in the driver container's root, not on the host's PATH
    start = node.boot + 18  # after containerd, before kubelet's other pods open the GPUs
    shim = node.spawn(ppid=1, user="root", start=start, cgroup="0::/system.slice/containerd.service",
                      role="containerd-shim",
                      argv=["/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id",
                            digest(name, DRIVER_POD_ROLE, "sandbox")[:64], "-address", "/run/containerd/containerd.sock"])
    pod = PodSpec(name=driver_pod_name(name), role=DRIVER_POD_ROLE, argv=list(FM_ARGV),
                  devices=[d for d in FM_DEVICES if d in node.device_files()], uid=pod_uid(name, DRIVER_POD_ROLE),
                  container=digest(name, DRIVER_POD_ROLE, 0)[:64], shim_pid=shim.pid)
    node.pods.append(pod)
    spawn_pod(node, pod, start + 1)
    node.last_advance = now
    return node


def gpu_missing(name: str, now: float) -> Node:
    """An HGX H100 whose GPU at D8 is on the PCI bus but lost to the driver (it failed to initialise at
    boot): lspci lists eight GPUs, nvidia-smi seven; nothing can open its device file."""
    node = base_node(name, now, boot_age=2 * 3600)
    lost = node.gpus[-1]
    lost.lost = True
    pci = lost.bus_id[4:].lower()
    node.log_kernel(node.boot + 8.2, f"NVRM: GPU {pci}: RmInitAdapter failed! (0x22:0x56:667)")
    node.log_kernel(node.boot + 8.3, f"NVRM: GPU {pci}: rm_init_adapter failed, device minor number {lost.index}")
    dead = f"/dev/nvidia{lost.index}"
    for proc in node.procs.values():
        proc.devices = [d for d in proc.devices if d != dead]
    for pod in node.pods:
        pod.devices = [d for d in pod.devices if d != dead]
    return node


def mig_pending(name: str, now: float) -> Node:
    """gpu06's out-of-sync fault on a node where GPU 3's MIG mode was set to Enabled and waits for a reset
    (``nvidia-smi -i 3 -mig 1`` refused the reset while the GPU was in use): the repair's reset commits it."""
    node = seed_out_of_sync(name, now)
    node.gpus[3].mig_pending = "Enabled"
    return node


# The real one-GPU H200 VM's bus address (tests/fixtures/real/h200-1gpu-vm).
VM_GPU_BUS = "00000000:00:06.0"


def vm_host_side(name: str, now: float) -> Node:
    """A one-GPU H200 VM whose NVSwitches and Fabric Manager are the host's: no NVSwitch on its PCI bus, its
    own FM unit failed with nothing to do (NV_WARN_NOTHING_TO_DO), the GPU's fabric In Progress for good.
    Nothing inside can finish the fabric: the host or provider must."""
    node = base_node(name, now, boot_age=2 * 3600, start_fm=False)
    node.platform = "vm"
    node.gpus = node.gpus[:1]
    gpu = node.gpus[0]
    gpu.bus_id, gpu.name, gpu.mem_total = VM_GPU_BUS, H200_NAME, 143771
    gpu.fabric_state, gpu.fabric_status = "In Progress", "N/A"
    node.switches = []
    node.stuck_in_progress = True
    node.absent_devices = list(H200_ABSENT_DEVICES)
    present = set(node.device_files())
    for proc in node.procs.values():
        proc.devices = [d for d in proc.devices if d in present]
    for pod in node.pods:
        pod.devices = [d for d in pod.devices if d in present]
    # FM's start as on a board without NVSwitch (gpu-operator issue 610's journal, the words kept).
    fm = node.units["nvidia-fabricmanager.service"]
    at, pid = node.boot + 21, node.alloc_pid()
    node.log_unit(at, fm.name, "systemd", "Starting NVIDIA fabric manager service...", 1)
    node.log_unit(at, fm.name, "nv-fabricmanager", "request to query NVSwitch device information from NVSwitch "
                  "driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]", pid)
    node.log_unit(at, fm.name, "systemd", f"{fm.name}: Control process exited, code=exited, status=1/FAILURE", 1)
    node.log_unit(at, fm.name, "systemd", f"{fm.name}: Failed with result 'exit-code'.", 1)
    fm.active, fm.sub, fm.result, fm.since, fm.main_pid = "failed", "failed", "exit-code", at, 0
    fm.last_pid, fm.exec_code, fm.exec_status = pid, "exited", "1/FAILURE"
    return node


# Debian bookworm's units of apt and unattended-upgrades, with their own descriptions.
APT_UNITS = {
    "apt-daily.timer": "Daily apt download activities",
    "apt-daily-upgrade.timer": "Daily apt upgrade and clean activities",
    "apt-daily.service": "Daily apt download activities",
    "apt-daily-upgrade.service": "Daily apt upgrade and clean activities",
    "unattended-upgrades.service": "Unattended Upgrades Shutdown",
}
# needrestart's own file (Debian's, its comments cut) and a site's snippet that makes it restart on its own.
NEEDRESTART_CONF = """# needrestart - Restart daemons after library updates.
#
# This is the configuration file of needrestart. This is perl syntax.

# Restart mode: (l)ist only, (i)nteractive or (a)utomatically.
#$nrconf{restart} = 'i';

# Override service default selection (hash of regex).
$nrconf{override_rc} = {
    # DBus
    qr(^dbus) => 0,
    # networking stuff
    qr(^network) => 0,
    qr(^NetworkManager) => 0,
    # systemd --user
    qr(^user@\\d+\\.service) => 0,
    # do not restart oneshot services, see also #862840
    qr(^apt-daily\\.service$) => 0,
    qr(^apt-daily-upgrade\\.service$) => 0,
    qr(^unattended-upgrades\\.service$) => 0,
    # don't restart systemd-logind, see #798097
    qr(^systemd-logind) => 0,
};

# Read additional config snippets.
if(-d q(/etc/needrestart/conf.d)) {
      foreach my $fn (sort </etc/needrestart/conf.d/*.conf>) {
	      print STDERR "$LOGPREF eval $fn\\n" if($nrconf{verbosity} > 1);
	      eval do { local(@ARGV, $/) = $fn; <>};
	      die "Error parsing $fn: $@" if($@);
      }
}
"""
NEEDRESTART_AUTO = "# restart outdated services without asking (unattended upgrades included)\n$nrconf{restart} = 'a';\n"
AUTO_UPGRADES = 'APT::Periodic::Update-Package-Lists "1";\nAPT::Periodic::Unattended-Upgrade "1";\n'
UU_ARGV = ["/usr/bin/python3", "/usr/share/unattended-upgrades/unattended-upgrade-shutdown", "--wait-for-signal"]


def with_restarters(node: Node, now: float, fm_restarts: int = 3) -> Node:
    """``node`` with what restarts nvidia-* units behind the operator: needrestart set to restart on its own,
    unattended-upgrades on with apt's timers running, and FM restarted ``fm_restarts`` times by systemd
    (a site's ``Restart=on-failure``; the count is NRestarts), the last one half an hour ago."""
    for unit, desc in APT_UNITS.items():
        node.units[unit] = Unit(name=unit, description=desc)
    up = node.boot + 30
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer"):
        start_at(node, unit, up)
    start_at(node, "unattended-upgrades.service", up)
    uu = node.units["unattended-upgrades.service"]
    uu.main_pid = node.spawn(ppid=1, user="root", start=up, argv=list(UU_ARGV), cgroup=f"0::/system.slice/{uu.name}",
                             unit=uu.name).pid
    node.dirs += ["/etc", "/etc/needrestart", "/etc/needrestart/conf.d", "/etc/apt", "/etc/apt/apt.conf.d"]
    node.files["/etc/needrestart/needrestart.conf"] = NEEDRESTART_CONF
    node.files["/etc/needrestart/conf.d/50-autorestart.conf"] = NEEDRESTART_AUTO
    node.files["/etc/needrestart/conf.d/README.needrestart"] = "Files ending with .conf ... are parsed.\n"
    node.files["/etc/apt/apt.conf.d/20auto-upgrades"] = AUTO_UPGRADES
    fm = node.units["nvidia-fabricmanager.service"]
    fm.restart_policy = "on-failure"
    at = now - 1900.0
    for n in range(1, fm_restarts + 1):
        pid = node.alloc_pid()
        node.log_unit(at, fm.name, "systemd", f"{fm.name}: Main process exited, code=exited, status=1/FAILURE", 1)
        node.log_unit(at, fm.name, "systemd", f"{fm.name}: Failed with result 'exit-code'.", 1)
        node.log_unit(at + 0.1, fm.name, "systemd", f"{fm.name}: Scheduled restart job, restart counter is at {n}.", 1)
        node.log_unit(at + 0.1, fm.name, "systemd", f"Starting {fm.name} - {fm.description}...", 1)
        node.log_unit(at + 1.6, fm.name, "systemd", f"Started {fm.name} - {fm.description}.", 1)
        del pid
        at += 30.0
    fm.restarts, fm.since, fm.active_enter = fm_restarts, at - 30.0 + 1.6, at - 30.0 + 1.6
    for proc in node.procs.values():
        if proc.role == "fm":
            proc.start = fm.since
    return node


# FM's words when NVLS asks it for multicast teams it cannot serve: nccl#1043's fabricmanager.log on an H100
# whose nccl-tests hung (tests/fixtures/fm/log-multicast-team-errors-nccl-1043.txt), here reaching the journal
# with FM's own prefix as its syslog lines carry it (tests/fixtures/fm/journal-inner-log-prefix-bottlerocket-142.txt).
# (seconds before now, level, FM's thread, message); a message of several lines as FM logged it.
FM_TEAM_LINES = (
    (1500.0, "INFO", 527113, "Received an inband message:  Message header details: magic Id:adbc request "
                             "Id:37f37b2d0f6aa49b status:0 type:4 length:14\nMessage payload details:Team release "
                             "request: Team Handle:ed8c03d28a369634 Flags:0"),
    (1500.0, "ERROR", 527118, "failed to release multicast team with handle 17117060486525261364, cannot find the team"),
    (1182.0, "INFO", 527113, "Received an inband message:  Message header details: magic Id:adbc request "
                             "Id:ba9c9cdd87cbe5f status:0 type:2 length:46\nMessage payload details:Team setup "
                             "request: Allocation Size:60000000 Flags:0 Number of GPUs:6 GPU Handles:b12d2e84230d90a9 "
                             "699cdb27be093689 8fe31ad077adb013 41692f9f9d6aa4c6 c52da87fccd138d6 5ee309238856a86b"),
    (1182.0, "ERROR", 527118, "failed to find the GPU handle 12766911663723876521 in the multicast team"),
)


def fm_log_errors(name: str, now: float) -> Node:
    """A node whose FM configured the fabric at its start and later failed NVLS's multicast team requests
    (nccl#1043's ERROR lines, in FM's unit journal): the GPUs still say Completed/Success."""
    node = base_node(name, now)
    fm = node.units["nvidia-fabricmanager.service"]
    for ago, level, tid, text in FM_TEAM_LINES:
        at = now - ago
        stamp = node.local_time(at).strftime("%b %d %Y %H:%M:%S")
        node.log_unit(at, fm.name, "nv-fabricmanager", f"[{stamp}] [{level}] [tid {tid}] {text}", fm.main_pid)
    return node


FM_FLAP_EVERY = 600.0


def fm_flapping(name: str, now: float) -> Node:
    """gpu06's out-of-sync fault on a node where something restarts FM by hand every ten minutes (stop, start:
    systemd's NRestarts stays 0), three times in the last half hour so far and on as the clock moves."""
    from nvls_tui.sim import systemd

    node = seed_out_of_sync(name, now - 3 * FM_FLAP_EVERY)
    node.fm_flap_every = FM_FLAP_EVERY
    fm = node.units["nvidia-fabricmanager.service"]
    for at in (now - 2 * FM_FLAP_EVERY - 2, now - FM_FLAP_EVERY - 2, now - 2):  # each Started 1.5 s on: all past
        systemd.restart_by_hand(node, fm.name, at)
    node.last_advance = now
    return node


def fm_restarters(name: str, now: float) -> Node:
    """gpu06's out-of-sync fault on a node where FM is restarted behind the operator: needrestart restarts
    nvidia-* units on its own, unattended-upgrades and apt's timers run, FM's NRestarts is 3."""
    return with_restarters(seed_out_of_sync(name, now), now)


# The driver's words for a GPU that no longer answers on PCIe: one record of three lines, no Xid (open
# kernel module 570: tests/fixtures/kernel/fallen-off-bus-no-xid-570.txt).
def fell_off_text(bus: str) -> str:
    """The driver's multi-line "fallen off the bus" message for the GPU at ``bus`` (``0000:5a:00.0``)."""
    return (f"NVRM: The NVIDIA GPU {bus}\nNVRM: (PCI ID: 10de:2330) installed in this system has\n"
            "NVRM: fallen off the bus and is not responding to commands.")


def journal_rotated(name: str, now: float) -> Node:
    """gpu06's out-of-sync fault on a node whose journal was vacuumed after it: the journal's kernel lines
    start 15 min ago, the out-of-sync line (30 min ago) is only in the ring buffer, which has wrapped too
    (it starts 2 h ago, not at the boot)."""
    node = seed_out_of_sync(name, now)
    node.journal_since = now - 900
    node.ring_since = now - 7200
    node.log_kernel(now - 600, "NVRM: nvidia-nvswitch: link training retried on 0000:05:00.0 (FABRIC)")
    return node


def no_journal(name: str, now: float) -> Node:
    """gpu06's out-of-sync fault on a node with no journalctl at all (the real H200 VM has dmesg only): the
    ring buffer holds the whole boot."""
    node = seed_out_of_sync(name, now)
    node.missing_tools.append("journalctl")
    return node


def gpu_fell_off(name: str, now: float) -> Node:
    """A node whose GPU 3 fell off the bus 20 min ago: the driver said so over three lines, without an Xid."""
    node = base_node(name, now, boot_age=DAY)
    node.log_kernel(now - 1200, fell_off_text("0000:5a:00.0"))
    return node



def k8s_incident(name: str, now: float) -> Node:
    """The seed incident on Kubernetes: gpu05 FM killed (someone cordoned it), gpu06 out of sync with a vLLM
    workload pod holding its GPUs beside the GPU Operator's operands; an administrator turned the node status
    exporter off on every node (``nvidia.com/gpu.deploy.node-status-exporter=false``)."""
    node = {"gpu05": seed_fm_killed, "gpu06": seed_out_of_sync}.get(name, healthy)(name, now)
    node.k8s_labels = {"nvidia.com/gpu.deploy.node-status-exporter": "false"}
    # What kubelet reported about the Node (describe's events): its start, and after a reboot the new boot id.
    record_event(node, node.boot + 20, "Normal", "Starting", "Starting kubelet.")
    if name == "gpu06":
        record_event(node, node.boot + 21, "Warning", "Rebooted",
                     f"Node {name} has been rebooted, boot id: {identity(node)['bootID']}")
    record_event(node, node.boot + 30, "Normal", "NodeReady", f"Node {name} status is now: NodeReady")
    if name == "gpu05":
        node.k8s_cordoned = True
        record_event(node, now - 2 * 3600, "Normal", "NodeNotSchedulable", f"Node {name} status is now: "
                     "NodeNotSchedulable")
    if name == "gpu06":
        add_vllm_pod(node, now - 2 * 3600)
    return node


def k8s_fm_in_container(name: str, now: float) -> Node:
    """sim:fm-in-container's node on Kubernetes and out of sync after a reboot (as gpu06): FM runs in the GPU
    Operator's driver pod, so a repair through the simulated cluster restarts that pod (the driver reloads)."""
    node = fm_in_container(name, now)
    node.out_of_sync = True
    node.log_kernel(now - 1800, fabric.OUT_OF_SYNC_LINE)
    return node

