"""``lab up --slurm``: a real Slurm cluster (Debian's slurm-wlm 22.05 and MUNGE) over the lab's nodes.

Where each daemon runs (the containers share the host's network namespace):

- ``munged`` on the host, a background process of the lab's (socket ``DIR/munge/munge.socket``), and
  one in every node, ``munge.service`` (its own socket, seed and PID file: ``DIR/nodes/NAME/munge``
  bound at ``DIR/munge`` inside). All read one key, ``DIR/munge.key`` (0400).
- ``slurmctld`` on the host, a background process of the lab's, on ``127.0.SUBNET.1`` port
  :func:`ctld_port` (its state, log and PID file under ``DIR/slurm``).
- ``slurmd -N NAME`` in every node, ``slurmd.service``, on its own port (:func:`node_port`): two
  slurmd in one network namespace cannot share one.

Jobs are tracked by cgroups, as on a real cluster (proctrack/cgroup and task/cgroup, in cgroup v1
hierarchies of each node's own: see the comment above :func:`host_tracking` for why and how).

``DIR/slurm.conf`` (and ``DIR/gres.conf``, ``DIR/cgroup.conf``) are bound read-only at the same paths
inside the nodes, so one file configures all of them; ``/etc/slurm/slurm.conf`` in a node links to it,
as on a real node.
From the host, ``SLURM_CONF=DIR/slurm.conf`` is all a client needs (the conf names the munge socket).
Both host daemons' PIDs are in ``DIR/lab.json``; ``lab down`` cancels the jobs, stops the nodes
(their munged and slurmd with them), then slurmctld and munged, and removes every file here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from nvls_tui.lab.image import CGROUP_MOUNT, GRES_DEVICE, HOLD, SlurmImage
from nvls_tui.lab.machine import LabError, LabNode, is_process, node_run, reap, stop_process, v1_controllers

CLUSTER = "nvlslab"
PARTITION = "gpu"
START_TIMEOUT = 30.0
IDLE_TIMEOUT = 120.0
FILES = ("slurm.conf", "gres.conf", "cgroup.conf", "munge.key", "munge", "slurm")
"""What ``--slurm`` adds to the lab folder (``lab down`` removes it)."""

# (program, Debian package): what --slurm runs on the host (the nodes run the same binaries).
PROGRAMS = (("slurmctld", "slurm-wlm"), ("slurmd", "slurm-wlm"), ("munged", "munge"), ("munge", "munge"),
            ("unmunge", "munge"), ("scontrol", "slurm-client"), ("sinfo", "slurm-client"),
            ("squeue", "slurm-client"), ("sbatch", "slurm-client"), ("scancel", "slurm-client"),
            ("srun", "slurm-client"))
_SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def program(name: str) -> str | None:
    """The path of ``name`` (PATH first, then the sbin folders a non-login root shell may lack)."""
    found = shutil.which(name)
    if found:
        return found
    return next((f"{d}/{name}" for d in _SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def missing() -> str | None:
    """One sentence naming what ``--slurm`` lacks on this host, or None."""
    lacking = [name for name, _pkg in PROGRAMS if program(name) is None]
    if not lacking:
        return None
    packages = " ".join(dict.fromkeys(pkg for name, pkg in PROGRAMS if name in lacking))
    return (f"lab up --slurm needs Slurm and MUNGE ({', '.join(lacking)} missing): install Debian's "
            f"{packages} (apt-get install slurm-wlm slurm-client munge)")


def ctld_address(subnet: int) -> str:
    """slurmctld's address: the lab's ``.1`` (the nodes are ``.10`` on)."""
    return f"127.0.{subnet}.1"


def ctld_port(subnet: int) -> int:
    """slurmctld's port: one block of 80 ports per lab subnet, below the kernel's ephemeral range."""
    return 10000 + 80 * subnet


def node_port(subnet: int, index: int) -> int:
    """The ``index``-th node's slurmd port (every slurmd listens on all addresses: one port each)."""
    return ctld_port(subnet) + 1 + index


SPOOL = "/var/spool/nvls-lab-slurmd"
"""slurmd's spool inside a node (its overlay root: the node's upper layer on the host)."""
CONF_FILES = ("slurm.conf", "gres.conf", "cgroup.conf")
"""Slurm reads gres.conf and cgroup.conf from slurm.conf's folder."""


def conf_path(folder: Path) -> Path:
    return folder / "slurm.conf"


def munge_socket(folder: Path) -> Path:
    return folder / "munge" / "munge.socket"


def munged_argv(folder: Path, foreground: bool = True, origin: str | None = None) -> list[str]:
    """munged as the lab runs it: on the host (in the foreground, the lab's child) and in a node
    (forking, as Debian's unit runs it, with ``DIR/munge`` bound to the node's own folder).

    ``--force``: munged refuses a socket whose parent folders are not searchable by all; the lab's
    folder is 0700 (root only, as are the lab's clients), which ``--force`` lets pass with a warning.
    """
    state = folder / "munge"
    return [program("munged") or "/usr/sbin/munged", *(["--foreground"] if foreground else []), "--force",
            f"--key-file={folder / 'munge.key'}", f"--socket={state / 'munge.socket'}",
            f"--pid-file={state / 'munged.pid'}", f"--seed-file={state / 'munged.seed'}",
            f"--log-file={state / 'munged.log'}", *([f"--origin={origin}"] if origin else [])]


def node_image(folder: Path, node: LabNode) -> SlurmImage:
    """What ``node`` carries for the lab's Slurm (its units, see :func:`nvls_tui.lab.image.slurm_units`).

    ``--origin``: the node's name is in no hosts file; its address is what its credentials say.
    """
    return SlurmImage(munged=tuple(munged_argv(folder, foreground=False, origin=node.address)),
                      slurmd=tuple(slurmd_argv(folder, node.name)),
                      conf=str(conf_path(folder)), pid_file=str(folder / "munge" / "munged.pid"), spool=SPOOL)


def slurmd_argv(folder: Path, name: str) -> list[str]:
    return [program("slurmd") or "/usr/sbin/slurmd", "-D", "-N", name, "-f", str(conf_path(folder))]


def node_binds(folder: Path, node: LabNode) -> list[str]:
    """systemd-nspawn options that give a node the lab's conf and key and its own munge folder."""
    return [f"--bind-ro={folder / 'munge.key'}", *(f"--bind-ro={folder / n}" for n in CONF_FILES),
            f"--bind={Path(node.folder, 'munge')}:{folder / 'munge'}"]


def slurm_conf(folder: Path, nodes: list[LabNode], subnet: int, gpus: int, tracking: str) -> str:
    """``DIR/slurm.conf`` (pure): the lab's cluster, one partition of every node, no accounting;
    jobs tracked as ``tracking`` says (:data:`TRACKING_LINES`)."""
    state = folder / "slurm"
    cpus = os.cpu_count() or 1
    lines = [
        "# nvls-tui lab: a real Slurm cluster over the lab's nodes (nvls-tui lab down removes it).",
        "# From the host: SLURM_CONF=" + str(conf_path(folder)) + " sinfo",
        f"ClusterName={CLUSTER}",
        f"SlurmctldHost={socket.gethostname().split('.')[0]}({ctld_address(subnet)})",
        f"SlurmctldPort={ctld_port(subnet)}",
        f"SlurmdPort={node_port(subnet, 0)}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket(folder)}",
        f"StateSaveLocation={state / 'state'}",
        f"SlurmctldPidFile={state / 'slurmctld.pid'}",
        f"SlurmctldLogFile={state / 'slurmctld.log'}",
        # Inside each node (its own /run and its own overlay root); slurmd logs to its journal.
        "SlurmdPidFile=/run/slurmd.pid",
        f"SlurmdSpoolDir={SPOOL}",
        *TRACKING_LINES[tracking],
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "SwitchType=switch/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        # The nodes are containers of one host: take each node's resources from here, not its hardware.
        "SlurmdParameters=config_overrides",
        "KillWait=10",
        "InactiveLimit=0",
        "MinJobAge=60",
        "SlurmctldTimeout=60",
        "SlurmdTimeout=60",
        "GresTypes=gpu",
    ]
    for i, node in enumerate(nodes):
        lines.append(f"NodeName={node.name} NodeAddr={node.address} NodeHostname={node.name} "
                     f"Port={node_port(subnet, i)} CPUs={cpus} Gres=gpu:{gpus} State=UNKNOWN")
    lines.append(f"PartitionName={PARTITION} Nodes={','.join(n.name for n in nodes)} Default=YES "
                 "MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


JOB_CONTROLLERS = ("freezer", "cpuset")
"""The v1 controllers a ``--slurm`` node gets a cgroup of its own in (:func:`nvls_tui.lab.machine.make_cgroups`):
proctrack/cgroup's freezer and task/cgroup's cpuset (ConstrainCores)."""
TRACKING = ("cgroup", "linuxproc")
TRACKING_LINES = {
    "cgroup": ("ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup"),
    "linuxproc": ("ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none"),
}
"""slurm.conf's job tracking: by cgroup, as a real cluster does (``lab up --slurm`` where the host has
v1 freezer and cpuset hierarchies), or by parent PIDs (elsewhere, and :func:`set_tracking`'s other way:
what the lab ran before, under which a process that leaves the job's tree outlives ``scancel``)."""

# Why cgroup/v1, and how (findings on a hybrid host, kernel 6.18, systemd 252, slurm-wlm 22.05.8):
# - cgroup/v2 refuses the node: the container's own /sys/fs/cgroup is pure v2 (nspawn's unified mode),
#   but /proc/self/cgroup lists every hierarchy of the kernel, and slurmd says
#   "fatal: Hybrid mode is not supported. Mounted cgroups are: 9:name=systemd:/ ... 0::/system.slice/
#   slurmd.service". It would also find no controller to enable: the host's v2 has only hugetlb.
# - cgroup/v1 with proctrack/cgroup at the default /sys/fs/cgroup: "error: cgroup namespace 'freezer' not
#   mounted. aborting" (that path is the node's cgroup2 mount, with no freezer folder to mount on).
# - What works: each node starts in a freezer and a cpuset cgroup of its own on the host (the container's
#   cgroup namespace is rooted there, so it sees only its own), and slurmd mounts those hierarchies itself
#   under CGROUP_MOUNT (CgroupAutomount). A job's processes are then in .../slurm_NODE/uid_U/job_J/step_S
#   whatever their parent: a double fork or setsid does not leave the job, and scancel ends them.
# On a host with the unified hierarchy only there is no v1 freezer to give the nodes: the lab falls back
# to linuxproc there (untried: slurmd's cgroup/v2 in a container of such a host).


def host_tracking() -> str:
    """The job tracking this host allows the lab: ``cgroup`` where it mounts v1 freezer and cpuset."""
    have = v1_controllers()
    return "cgroup" if all(c in have for c in JOB_CONTROLLERS) else "linuxproc"


def cgroup_conf(tracking: str) -> str:
    """``DIR/cgroup.conf``. slurmd 22.05 loads a cgroup plugin whatever tracks its jobs; v1 (see above)."""
    if tracking == "cgroup":
        return ("# nvls-tui lab: jobs are tracked in cgroup v1 hierarchies of each node's own, which slurmd\n"
                "# mounts here (see nvls_tui/lab/slurm.py). Cores are confined; memory and devices are not\n"
                "# (the lab's GPUs share one device number, and its nodes share the host's memory).\n"
                f"CgroupPlugin=cgroup/v1\nCgroupMountpoint={CGROUP_MOUNT}\nCgroupAutomount=yes\n"
                "ConstrainCores=yes\nConstrainRAMSpace=no\nConstrainDevices=no\n")
    return ("# nvls-tui lab: jobs are tracked by parent PIDs (proctrack/linuxproc); the v1 plugin loads, unused.\n"
            "CgroupPlugin=cgroup/v1\n")


def tracking_of(folder: Path) -> str | None:
    """The job tracking ``DIR/slurm.conf`` names (``cgroup`` or ``linuxproc``), or None."""
    try:
        text = conf_path(folder).read_text()
    except OSError:
        return None
    return next((t for t, lines in TRACKING_LINES.items() if lines[0] in text.splitlines()), None)


def gres_conf(gpus: int) -> str:
    """``DIR/gres.conf``: each node's GPUs, so ``--gres=gpu:N`` allocates them and sets CUDA_VISIBLE_DEVICES.

    slurmd drops a GPU without ``File=`` and wants a character device there; the lab's ``/dev/nvidiaN``
    are plain files (so that the stand-ins can map them), so each GPU's ``File=`` is a character device of
    its own, ``/dev/nvls-lab-gpuN`` (:data:`nvls_tui.lab.image.GRES_DEVICE`), made when slurmd starts.
    """
    files = f"{GRES_DEVICE}[0-{gpus - 1}]" if gpus > 1 else f"{GRES_DEVICE}0"
    return ("# nvls-tui lab: every node's GPUs (see nvls_tui/lab/slurm.py); a job holds /dev/nvidiaN with\n"
            "# nvls-lab-hold, which takes CUDA_VISIBLE_DEVICES\n"
            f"AutoDetect=off\nName=gpu File={files}\n")


def check_ready(folder: Path, nodes: list[LabNode], subnet: int) -> None:
    """Refuse, before anything is made, what would make the cluster fail later.

    Raises:
        LabError: Slurm or MUNGE is missing, the folder's paths cannot be used, or a port is taken.
    """
    problem = missing()
    if problem:
        raise LabError(problem)
    if any(c.isspace() for c in str(folder)):
        raise LabError(f"lab up --slurm needs a --dir without spaces (slurm.conf paths): {folder}")
    if len(str(munge_socket(folder)).encode()) > 100:
        raise LabError(f"lab up --slurm needs a shorter --dir: {munge_socket(folder)} is too long for a socket")
    for port in [ctld_port(subnet), *(node_port(subnet, i) for i in range(len(nodes)))]:
        if not _port_free(port):
            raise LabError(f"port {port} is already in use (another lab's Slurm?): bring it down first")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def write_files(folder: Path, nodes: list[LabNode], subnet: int, gpus: int, tracking: str) -> None:
    """The key, the conf files and each daemon's folder (before any daemon starts or node boots)."""
    key = folder / "munge.key"
    key.unlink(missing_ok=True)
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as out:
        out.write(os.urandom(1024))
    for path in (folder / "munge", *(Path(n.folder, "munge") for n in nodes)):
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o755)
    (folder / "slurm" / "state").mkdir(parents=True, exist_ok=True)
    conf_path(folder).write_text(slurm_conf(folder, nodes, subnet, gpus, tracking))
    (folder / "gres.conf").write_text(gres_conf(gpus))
    (folder / "cgroup.conf").write_text(cgroup_conf(tracking))


def set_tracking(folder: Path, nodes: list[LabNode], tracking: str) -> None:
    """Switch a running lab's job tracking (no job may run): rewrite slurm.conf and cgroup.conf in place
    (the nodes bind these very files), have slurmctld re-read them, and restart every slurmd (a
    ProctrackType change needs a restart); returns once every node is idle again.

    Raises:
        LabError: ``tracking`` is not one this host allows, or a node did not come back.
    """
    if tracking not in TRACKING or (tracking == "cgroup" and host_tracking() != "cgroup"):
        raise LabError(f"job tracking {tracking!r} is not available here (this host allows {host_tracking()})")
    text = conf_path(folder).read_text()
    for old, new in zip(TRACKING_LINES[tracking_of(folder) or "linuxproc"], TRACKING_LINES[tracking], strict=True):
        text = text.replace(old + "\n", new + "\n")
    for path, body in ((conf_path(folder), text), (folder / "cgroup.conf", cgroup_conf(tracking))):
        with open(path, "r+") as out:  # in place: a bind mount follows the inode, not the name
            out.write(body)
            out.truncate()
    client(folder, "scontrol", "reconfigure")
    for node in nodes:
        node_run(node, "systemctl", "restart", "slurmd.service", timeout=60)
    wait_idle(folder, [n.name for n in nodes])


@dataclass
class SlurmLab:
    """The host's side of the lab's Slurm, as ``DIR/lab.json`` records it."""

    subnet: int
    munged_pid: int = 0
    slurmctld_pid: int = 0

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, int]) -> SlurmLab:
        return cls(**{k: int(v) for k, v in data.items() if k in ("subnet", "munged_pid", "slurmctld_pid")})


def client_env(folder: Path) -> dict[str, str]:
    """The environment a Slurm client on the host needs for the lab's cluster."""
    return {**os.environ, "SLURM_CONF": str(conf_path(folder))}


def client(folder: Path, *argv: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client (``sinfo``, ``scontrol`` ...) on the host against the lab's cluster."""
    path = program(argv[0]) or argv[0]
    try:
        return subprocess.run([path, *argv[1:]], capture_output=True, text=True, timeout=timeout, check=False,
                              env=client_env(folder), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess([path, *argv[1:]], 124, "", str(exc))


def _daemon(argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
    return proc.pid


def _tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return ""


def _wait(what: str, ok: Callable[[], bool], pid: int, comm: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        if not is_process(pid, comm):
            reap(pid)
            raise LabError(f"{comm} exited before {what}: {_tail(log) or 'no output'} (see {log})")
        time.sleep(0.2)
    raise LabError(f"{what} did not happen within {timeout:.0f} s (see {log})")


def munge_works(sock: Path) -> bool:
    """True when a credential encoded through ``sock`` decodes through it (the daemon answers)."""
    try:
        cred = subprocess.run([program("munge") or "munge", "-n", "-S", str(sock)], capture_output=True,
                              timeout=10, check=False)
        if cred.returncode != 0:
            return False
        done = subprocess.run([program("unmunge") or "unmunge", "-S", str(sock)], input=cred.stdout,
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def start_munged(folder: Path, lab: SlurmLab, record: Callable[[], None]) -> None:
    """The host's munged (``record`` saves its PID in lab.json at once); returns once it answers."""
    log = folder / "munge" / "munged.out"
    lab.munged_pid = _daemon(munged_argv(folder), log)
    record()
    _wait("munged answered", lambda: munge_works(munge_socket(folder)), lab.munged_pid, "munged", log,
          START_TIMEOUT)


def start_slurmctld(folder: Path, lab: SlurmLab, record: Callable[[], None]) -> None:
    """The lab's slurmctld on the host; returns once ``scontrol ping`` says it is up."""
    log = folder / "slurm" / "slurmctld.out"
    argv = [program("slurmctld") or "/usr/sbin/slurmctld", "-D", "-f", str(conf_path(folder))]
    lab.slurmctld_pid = _daemon(argv, log, env=client_env(folder))
    record()
    _wait("slurmctld answered", lambda: "is UP" in client(folder, "scontrol", "ping").stdout,
          lab.slurmctld_pid, "slurmctld", folder / "slurm" / "slurmctld.log", START_TIMEOUT)


def node_states(folder: Path) -> dict[str, str] | None:
    """``{node: Slurm state}`` as ``sinfo`` on the host says (``idle``, ``down*`` ...), or None."""
    done = client(folder, "sinfo", "-h", "-N", "-p", PARTITION, "-o", "%N %T", timeout=15)
    if done.returncode != 0:
        return None
    states = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) == 2:
            states[words[0]] = words[1]
    return states


def wait_idle(folder: Path, names: list[str], timeout: float = IDLE_TIMEOUT) -> None:
    """Wait until ``sinfo`` shows every node idle (each slurmd has registered with slurmctld)."""
    deadline = time.monotonic() + timeout
    states: dict[str, str] | None = None
    while time.monotonic() < deadline:
        states = node_states(folder)
        if states is not None and all(states.get(n) == "idle" for n in names):
            return
        time.sleep(0.5)
    shown = ", ".join(f"{n} {(states or {}).get(n, '?')}" for n in names)
    raise LabError(f"the lab's Slurm nodes did not all become idle within {timeout:.0f} s ({shown}); "
                   f"see {folder / 'slurm' / 'slurmctld.log'} and `journalctl -u slurmd` on the nodes")


def _jobs(folder: Path) -> list[str] | None:
    done = client(folder, "squeue", "-h", "-o", "%A", timeout=10)
    return done.stdout.split() if done.returncode == 0 else None


def cancel_jobs(folder: Path, timeout: float = 30.0) -> None:
    """Cancel every job of the lab's cluster and wait (up to ``timeout``) until they are gone.

    Before the nodes go down: a slurmstepd whose job still runs ignores the SIGTERM of a poweroff.
    """
    jobs = _jobs(folder)
    if not jobs:
        return
    client(folder, "scancel", *jobs, timeout=10)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _jobs(folder):
        time.sleep(0.3)


def stop_daemon(pid: int, comm: str, timeout: float = 10.0) -> None:
    """SIGTERM ``pid`` if it still is ``comm``, then SIGKILL after ``timeout``; reap it if it is ours."""
    stop_process(pid, lambda: is_process(pid, comm), timeout)


def stop(folder: Path, lab: SlurmLab) -> None:
    """Stop the host's slurmctld, then munged (the nodes' daemons stop with their containers)."""
    if lab.slurmctld_pid:
        stop_daemon(lab.slurmctld_pid, "slurmctld")
    if lab.munged_pid:
        stop_daemon(lab.munged_pid, "munged")


def remove_files(folder: Path) -> None:
    for name in FILES:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


@dataclass(frozen=True)
class SlurmStatus:
    """What ``lab status`` says of the lab's Slurm."""

    conf: Path
    controller: str
    slurmctld_pid: int
    slurmctld_running: bool
    munged_running: bool
    nodes: dict[str, str] | None


def status(folder: Path, lab: SlurmLab) -> SlurmStatus:
    running = is_process(lab.slurmctld_pid, "slurmctld")
    return SlurmStatus(conf_path(folder), f"{ctld_address(lab.subnet)}:{ctld_port(lab.subnet)}", lab.slurmctld_pid,
                       running, is_process(lab.munged_pid, "munged"), node_states(folder) if running else None)


__all__ = ["CLUSTER", "FILES", "HOLD", "PARTITION", "SlurmLab", "SlurmStatus", "cancel_jobs", "check_ready",
           "client", "client_env", "conf_path", "ctld_address", "ctld_port", "missing", "munge_socket",
           "munged_argv", "node_binds", "node_image", "node_port", "node_states", "set_tracking", "slurm_conf",
           "slurmd_argv", "start_munged", "start_slurmctld", "status", "stop", "tracking_of", "wait_idle",
           "write_files"]
