"""The host's side of the lab: boot nodes as systemd-nspawn containers, run commands in them, tear down.

Each node is ``DIR/nodes/NAME``: ``upper`` and ``work`` (its overlay layers over the host's ``/``),
``root`` (the mounted overlay, the container's ``/``), ``hw`` (its simulated hardware, bound to
``/var/lib/nvls-lab`` inside) and ``console.log``. ``DIR/lab.json`` records every PID and mount the
lab made, so ``lab down`` (and the tests) undo exactly that and nothing else.

The containers share the host's network namespace (each sshd listens on its own loopback address)
and run with ``--register=no --keep-unit``: there is no host systemd to register with.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nvls_tui.lab.image import HOME_DIRS, SSH_PORT, TARGET

BOOT_TIMEOUT = 90.0


class LabError(RuntimeError):
    """The lab cannot run, or a node did not come up: one sentence for the operator."""


@dataclass
class LabNode:
    """One booted node: where it lives and the processes that make it."""

    name: str
    address: str
    folder: str
    nspawn_pid: int = 0
    leader_pid: int = 0
    cgroups: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """The mounted overlay: the container's ``/``."""
        return Path(self.folder, "root")

    @property
    def hw(self) -> Path:
        """The node's hardware store (host side)."""
        return Path(self.folder, "hw")


DEFAULT_SUBNET = 5


def address_of(index: int, subnet: int = DEFAULT_SUBNET) -> str:
    """The loopback address of the ``index``-th node (the host routes all of 127/8 to lo).

    ``subnet`` keeps two labs apart (an operator's and the test suite's): ``127.0.SUBNET.x``.
    """
    return f"127.0.{subnet}.{10 + index}"


def missing_requirements() -> str | None:
    """One sentence naming what the lab lacks on this host, or None when it can run."""
    if os.geteuid() != 0:
        return "lab up needs root: it mounts overlays and boots systemd-nspawn containers"
    for tool, package in (("systemd-nspawn", "systemd-container"), ("nsenter", "util-linux"),
                          ("ssh-keygen", "openssh-client")):
        if shutil.which(tool) is None:
            return f"{tool} is missing: install Debian's {package} package (apt-get install {package})"
    for path, package in (("/lib/systemd/systemd", "systemd"), ("/usr/sbin/sshd", "openssh-server"),
                          ("/usr/bin/fuser", "psmisc")):
        if not os.path.exists(path):
            return f"{path} is missing: install Debian's {package} package (apt-get install {package})"
    return None


def mount_overlay(node: LabNode) -> None:
    """Mount the node's root: the host's ``/`` read-only below, its own upper layer above."""
    folder = Path(node.folder)
    for sub in ("upper", "work", "root"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    options = f"lowerdir=/,upperdir={folder / 'upper'},workdir={folder / 'work'}"
    run(["mount", "-t", "overlay", "overlay", "-o", options, str(node.root)])


def _cgroup_roots(v1: Sequence[str] = ()) -> list[tuple[Path, str]]:
    """``(mount point, this process's path in it)`` of the unified and the name=systemd hierarchies, and
    of the v1 hierarchy of each controller in ``v1`` that the host mounts."""
    mine = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _id, controllers, path = line.split(":", 2)
        mine[controllers] = path
    roots = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        options = fields[3].split(",") if len(fields) > 3 else []
        if fields[2] == "cgroup2" and "" in mine:
            roots.append((Path(fields[1]), mine[""]))
        elif fields[2] == "cgroup" and "name=systemd" in options and "name=systemd" in mine:
            roots.append((Path(fields[1]), mine["name=systemd"]))
        elif fields[2] == "cgroup":
            # A hierarchy is named in /proc/self/cgroup by all its controllers ("cpu,cpuacct").
            key = next((k for k in mine if k and set(k.split(",")) <= set(options)), None)
            if key is not None and any(c in key.split(",") for c in v1):
                roots.append((Path(fields[1]), mine[key]))
    return roots


def v1_controllers() -> list[str]:
    """The cgroup v1 controllers this host mounts (each in a hierarchy of its own or shared), from
    ``/proc/self/cgroup``: empty on a host with the unified hierarchy only."""
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _id, controllers, _path = line.split(":", 2)
        found += [c for c in controllers.split(",") if c and not c.startswith("name=")]
    return found


def make_cgroups(name: str, v1: Sequence[str] = ()) -> list[str]:
    """A cgroup of the node's own in each hierarchy systemd uses, and in the v1 hierarchy of each
    controller in ``v1`` (``lab up --slurm``: Slurm's cgroup/v1 tracks jobs there, see
    :mod:`nvls_tui.lab.slurm`).

    Without ``--register`` and with ``--keep-unit``, nspawn keeps the container in the cgroup it was
    started from: two nodes started from one process would share it, and each node's systemd would
    remove the other's unit cgroups (seen: status 219/CGROUP on ``systemctl start``). ``name`` holds the
    node's address too: two labs (the suite's and ``--slurm``'s tests', both with a gpu05) started from
    one cgroup must not share one either, nor remove each other's at ``down``. The container's cgroup
    namespace is rooted at these cgroups, so a v1 hierarchy the node mounts shows only its own.
    """
    made = []
    for mount, path in _cgroup_roots(v1):
        parent = mount / path.lstrip("/")
        folder = parent / f"nvls-lab-{name}"
        folder.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            # A new v1 cpuset has no CPUs and no memory nodes, and takes no process until given some.
            if (folder / knob).exists() and not (folder / knob).read_text().strip():
                (folder / knob).write_text((parent / knob).read_text())
        made.append(str(folder))
    return made


def remove_cgroups(paths: list[str]) -> None:
    """Remove the node's cgroups, deepest first (its systemd's own sub-cgroups are empty by now)."""
    for path in paths:
        for sub in sorted((p for p in Path(path).rglob("*") if p.is_dir()), key=lambda p: len(p.parts),
                          reverse=True) + [Path(path)]:
            try:
                sub.rmdir()
            except OSError:
                pass


def boot(node: LabNode, binds: Sequence[str] = (), v1: Sequence[str] = ()) -> None:
    """Start the container (systemd as PID 1 into the lab's target); record its PIDs.

    ``binds``: more ``--bind``/``--bind-ro`` options (``--slurm``'s conf, key and munge folder).
    ``v1``: cgroup v1 controllers the node gets a hierarchy of its own in (``--slurm``'s job tracking).
    """
    log = open(Path(node.folder, "console.log"), "wb")  # noqa: SIM115 - nspawn owns it until down
    argv = nspawn_argv(node, [*_code_binds(), *binds])
    # cgroup v2 only, as on the write-up's Ubuntu 22.04 nodes; a hybrid v1 layout inside the container
    # loses unit cgroups ("Failed to attach to cgroup ...: No such file or directory", status 219).
    env = {**os.environ, "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY": "1"}
    node.cgroups = make_cgroups(f"{node.name}-{node.address}", v1)
    procs_files = [Path(c, "cgroup.procs") for c in node.cgroups]

    def enter_cgroups() -> None:  # in the child, before exec: nspawn starts inside the node's cgroups
        for procs in procs_files:
            procs.write_text(str(os.getpid()))

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env=env, preexec_fn=enter_cgroups)
    log.close()
    node.nspawn_pid = proc.pid
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not node.leader_pid:
        if proc.poll() is not None:
            raise LabError(f"{node.name}: systemd-nspawn exited with {proc.returncode}; "
                           f"see {node.folder}/console.log")
        node.leader_pid = _child_of(proc.pid)
        time.sleep(0.1)
    if not node.leader_pid:
        raise LabError(f"{node.name}: the container's systemd did not start within 60 s")


MACHINE_NAME_MAX = 64
"""The longest machine name systemd-nspawn takes (a host name's limit)."""


def machine_name(node: LabNode) -> str:
    """The node's machine name for systemd-nspawn: its name and its address (``gpu05-127-0-6-10``).

    nspawn keeps host-wide state under the machine name, not under the container's folder: with
    ``--register=no`` still ``/run/systemd/nspawn/propagate/NAME``, made at start and removed when that
    container exits. Two labs up at once may both have a gpu05 (the test suite's labs boot side by side),
    and the first to go down removed the other's folder. A node's address is its own while it runs (its
    sshd listens there: ``up`` refuses one in use), so a name that holds it is the node's alone. The
    node's host name stays its own name (``--hostname``): kubelet and Slurm inside know it by that.
    """
    suffix = "-" + node.address.replace(".", "-")
    return node.name[:MACHINE_NAME_MAX - len(suffix)] + suffix


def nspawn_argv(node: LabNode, binds: Sequence[str] = ()) -> list[str]:
    """The systemd-nspawn command that boots ``node`` (systemd as PID 1 into the lab's target), with
    ``binds`` (more ``--bind``/``--bind-ro`` options) after the node's hardware store."""
    return ["systemd-nspawn", "-q", "-D", str(node.root), "-M", machine_name(node), f"--hostname={node.name}",
            "--register=no", "--keep-unit", "--console=passive", f"--bind={node.hw}:/var/lib/nvls-lab", *binds,
            "--boot", "--", f"systemd.unit={TARGET}", "systemd.firstboot=off"]


def _code_binds() -> list[str]:
    """nvls-tui and its interpreter, bound read-only at their own paths: the stand-ins run them.

    The overlay of ``/`` shows them too, except under ``/tmp``, where nspawn mounts a fresh tmpfs (a
    clone in /tmp booted nodes whose stand-ins could not start), and under the host's homes, which the
    node does not show (``image.HOME_DIRS``): a venv made from a pyenv Python needs that Python's
    installation (``sys.base_prefix``, ``/root/.pyenv/versions/X``), bound alone, not the home around it.
    """
    import sys

    import nvls_tui

    paths = {Path(nvls_tui.__file__).resolve().parents[1], Path(sys.prefix).resolve()}
    base = Path(sys.base_prefix).resolve()
    if any(base.is_relative_to(home) for home in HOME_DIRS):
        paths.add(base)
    keep = [p for p in paths if not any(q != p and q in p.parents for q in paths)]
    return [f"--bind-ro={p}" for p in sorted(keep)]


def _child_of(pid: int) -> int:
    """The container's init among ``pid``'s children: PID 1 of its own PID namespace, or 0.

    nspawn first forks a helper that sets the container up and exits; taking the first child seen
    (as this did) picked that helper on a loaded machine, and every later ``nsenter`` failed.
    """
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0
    for child in children:
        try:
            status = Path(f"/proc/{child}/status").read_text()
        except OSError:
            continue
        nspid = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
        if len(nspid) > 1 and nspid[-1] == "1":
            return int(child)
    return 0


def exec_argv(node: LabNode, argv: Sequence[str]) -> list[str]:
    """``argv`` as run inside the node (every namespace of its systemd)."""
    return ["nsenter", "-t", str(node.leader_pid), "-a", "--", *argv]


def run(argv: Sequence[str], timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a host command; a failure is a :class:`LabError` naming it."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{argv[0]} failed: {exc}") from exc
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv[:6])} exited {done.returncode}: {(done.stderr or done.stdout).strip()[:300]}")
    return done


def node_run(node: LabNode, *argv: str, timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` inside ``node``."""
    return run(exec_argv(node, argv), timeout=timeout, check=check)


def wait_booted(node: LabNode, timeout: float = BOOT_TIMEOUT) -> None:
    """Wait until the node's systemd has finished starting up and its sshd answers."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = node_run(node, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.3)
    else:
        jobs = node_run(node, "systemctl", "list-jobs", "--no-pager", "--no-legend", check=False).stdout
        waiting = "; ".join(line.split()[1] for line in jobs.splitlines()[:4] if len(line.split()) > 1)
        raise LabError(f"{node.name}: systemd did not finish booting within {timeout:.0f} s (state {state or '?'}"
                       + (f"; waiting for {waiting}" if waiting else "") + ")")
    while time.monotonic() < deadline:
        if ssh_banner(node.address):
            return
        time.sleep(0.2)
    raise LabError(f"{node.name}: sshd did not answer on {node.address}:{SSH_PORT}")


def ssh_banner(address: str) -> bool:
    """True when an SSH server greets on ``address``."""
    try:
        with socket.create_connection((address, SSH_PORT), timeout=2) as sock:
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def stop(node: LabNode, timeout: float = 20.0) -> None:
    """Power the container off, then unmount its root.

    ``systemctl poweroff --force`` inside ends every process at once (a lab node has nothing to save).
    A process that ignores SIGTERM (a busy slurmstepd) keeps systemd-shutdown waiting for up to 90 s: after
    half the timeout the container's init gets SIGKILL, which ends every process of the container (killing
    nspawn first would leave them running, orphaned). SIGTERM to nspawn, then SIGKILL of its process
    group, follow if it still outlives them.
    """
    if node.nspawn_pid and _is(node.nspawn_pid, "systemd-nspawn"):
        if node.leader_pid:
            run(exec_argv(node, ["systemctl", "poweroff", "--force"]), timeout=10, check=False)
            deadline = time.monotonic() + timeout / 2
            while time.monotonic() < deadline and _is(node.nspawn_pid, "systemd-nspawn"):
                _reap(node.nspawn_pid)
                time.sleep(0.1)
            if _is(node.nspawn_pid, "systemd-nspawn") and _child_of(node.nspawn_pid) == node.leader_pid:
                try:
                    os.kill(node.leader_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for signo in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + timeout / 2
            while time.monotonic() < deadline and _is(node.nspawn_pid, "systemd-nspawn"):
                _reap(node.nspawn_pid)
                time.sleep(0.1)
            if not _is(node.nspawn_pid, "systemd-nspawn"):
                break
            try:
                os.killpg(node.nspawn_pid, signo) if signo == signal.SIGKILL else os.kill(node.nspawn_pid, signo)
            except ProcessLookupError:
                break
        _reap(node.nspawn_pid)
    remove_cgroups(node.cgroups)
    unmount(node.root)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


reap = _reap
"""Collect ``pid``'s exit status if it is this process's child (a daemon the lab started)."""


def stop_process(pid: int, still_it: Callable[[], bool], timeout: float) -> None:
    """SIGTERM ``pid`` while ``still_it()`` (it is the process we started, not a reused PID), then
    SIGKILL after ``timeout``; reap it if it is our child."""
    for signo in (signal.SIGTERM, signal.SIGKILL):
        if not still_it():
            break
        try:
            os.kill(pid, signo)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and still_it():
            _reap(pid)
            time.sleep(0.1)
    _reap(pid)


def _is(pid: int, comm: str) -> bool:
    """True when ``pid`` is alive (not a zombie) and is ``comm`` (a reused PID is not ours)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:][:1]
    return name == comm[:15] and state != "Z"


def is_process(pid: int, comm: str) -> bool:
    """True when ``pid`` is alive and is ``comm``: a PID the lab recorded is still the lab's."""
    return pid > 0 and _is(pid, comm)


def mounted_under(folder: Path) -> list[str]:
    """Mount points at or below ``folder`` (from /proc/self/mounts), deepest first."""
    prefix = str(folder.resolve())
    points = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(points, key=len, reverse=True)


def unmount(folder: Path) -> None:
    """Unmount everything at or below ``folder``."""
    for point in mounted_under(folder):
        if run(["umount", point], check=False).returncode != 0:
            run(["umount", "-l", point], check=False)


def save_state(folder: Path, scenario: str, nodes: list[LabNode], slurm: dict[str, int] | None = None,
               kube: dict[str, int] | None = None) -> None:
    """Write ``DIR/lab.json``: what ``lab down`` must undo (``slurm``: the host's Slurm daemons, if any;
    ``kube``: the lab's Kubernetes API server, ``{"pid": N}``, if any)."""
    # owner: the process that made the lab (a test run that was killed leaves a lab whose owner is gone), and
    # when it started: a PID alone may since name another process (another run's worker, whose labs are live).
    data: dict[str, object] = {"scenario": scenario, "owner": os.getpid(), "owner_start": process_start(os.getpid()),
                               "nodes": [asdict(n) for n in nodes]}
    if slurm is not None:
        data["slurm"] = slurm
    if kube is not None:
        data["kube"] = kube
    tmp = folder / ".lab.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, folder / "lab.json")


def load_state(folder: Path) -> tuple[str, list[LabNode]]:
    """Read ``DIR/lab.json``: (scenario, nodes); ``("", [])`` when there is no lab there."""
    try:
        data = json.loads((folder / "lab.json").read_text())
    except (OSError, ValueError):
        return "", []
    return data.get("scenario", ""), [LabNode(**n) for n in data.get("nodes", [])]


def load_slurm(folder: Path) -> dict[str, int] | None:
    """The ``slurm`` record of ``DIR/lab.json`` (``lab up --slurm``), or None."""
    try:
        data = json.loads((folder / "lab.json").read_text()).get("slurm")
    except (OSError, ValueError, AttributeError):
        return None
    return data if isinstance(data, dict) else None


def load_kube(folder: Path) -> dict[str, int] | None:
    """The ``kube`` record of ``DIR/lab.json`` (the ``k8s-incident`` scenario's API server), or None."""
    try:
        data = json.loads((folder / "lab.json").read_text()).get("kube")
    except (OSError, ValueError, AttributeError):
        return None
    return data if isinstance(data, dict) else None


def process_start(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat``'s 22nd field), or None if it is gone:
    with the PID, names one process for as long as the machine runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner_alive(folder: Path) -> bool:
    """True when the process that made the lab in ``folder`` still runs (its PID, and where ``lab.json`` says
    when it started, that start: a reused PID is not the owner).

    Labs boot side by side in the test suite, one xdist worker each: a worker's sweep of a killed run's labs
    (:func:`nvls_tui.lab.lifecycle.down_abandoned`) asks this of every other worker's lab, which must stay up.
    """
    try:
        data = json.loads((folder / "lab.json").read_text())
        owner, start = int(data.get("owner", 0)), data.get("owner_start")
    except (OSError, ValueError, TypeError, AttributeError):
        return False
    if owner <= 0:
        return False
    now = process_start(owner)
    return now is not None and (start is None or now == start)


def running(node: LabNode) -> bool:
    """True when the node's container still runs."""
    return bool(node.nspawn_pid) and _is(node.nspawn_pid, "systemd-nspawn")
