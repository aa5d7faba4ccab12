"""A real OpenSSH sshd on 127.0.0.1 serving simulated nodes, started as a child of the test run.

Each simulated node gets a port of its own (one sshd per 16 ports: OpenSSH's MAX_LISTEN_SOCKS). A ``Match LocalPort`` block per port puts that
node's shim directory first on PATH (``SetEnv``; ``NVLS_TUI_PROC`` names its simulated /proc files where
the shims keep them, ``NVLS_TUI_JOURNAL_ROOT`` the folder its journal folders are under), so any command run over SSH on port N behaves as node N. Keys, known_hosts and the config live in a temporary directory; nothing outside it is
touched except ``/run/sshd`` (the privilege-separation directory sshd insists on when run as root).
Only loopback, ever.

A node's ``/dev`` is its own, never this machine's (issue 37): run as root, each sshd starts in a private
mount namespace whose ``/dev`` is a tmpfs with the few devices a shell needs (null, zero, random, a
pseudo-terminal instance of its own, ...) and the node's ``/dev/nvidia*`` files, as its shim directory
lists them (``DIR/devices``, written by ``write_shims``; none without it). The poll's ``fuser -v
/dev/nvidia*`` is expanded by the node's shell, so on a machine with an NVIDIA driver the host's
``/dev/nvidiactl`` would otherwise be the node's. Nodes with the same files share an sshd. Not root, the
rig has no namespace to give: it refuses to start where this machine has ``/dev/nvidia*`` files.
"""

from __future__ import annotations

import contextlib
import getpass
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import psutil

from nvls_tui.backends.base import BackendOptions
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.poll.probe import JOURNAL_ROOT_ENV
from nvls_tui.sim.shim_server import SOCKET_NAME as SHIM_SOCKET

LOOPBACK = "127.0.0.1"
PORTS_PER_SSHD = 16  # OpenSSH's MAX_LISTEN_SOCKS: sshd refuses to start with more listeners
PORT_ATTEMPTS = 5  # fresh ports tried when one was taken before sshd could bind it
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")
DEVICES_FILE = "devices"  # nvls_tui.sim.shims.DEVICES_FILE: a node's /dev/nvidia* files, one a line

# sh -c OWN_DEV sh DEVICE... -- SSHD ARGV: in a private mount namespace (unshare -m), a /dev of the node's
# own, then exec sshd (the same PID: the rig's stop and port checks see sshd). Nothing of the host's /dev
# but the devices every shell needs, bound one by one; a pseudo-terminal instance of its own.
OWN_DEV = r"""set -e
h=$(mktemp -d "${TMPDIR:-/tmp}/nvls-rig-dev.XXXXXX")
mount --rbind /dev "$h"  # recursive: where /dev is itself made of binds (scripts/with-host-gpu-devices.sh)
mount -t tmpfs -o mode=755 nvls-rig-dev /dev
for d in null zero full random urandom tty; do touch "/dev/$d"; mount --bind "$h/$d" "/dev/$d"; done
umount -l "$h"; rmdir "$h"
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
ln -s pts/ptmx /dev/ptmx; ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin; ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
while [ "$1" != -- ]; do : > "$1"; chmod 666 "$1"; shift; done  # crw-rw-rw- on real nodes too
shift
exec "$@"
"""


def host_device_files() -> list[str]:
    """This machine's own /dev/nvidia* entries (a node must never see them)."""
    return sorted(glob.glob("/dev/nvidia*"))


def own_dev_possible() -> bool:
    """True when the rig can give each node a /dev of its own (root, with util-linux unshare)."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def find_sshd() -> str | None:
    """The sshd binary, or None when openssh-server is not installed."""
    for path in SSHD_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("sshd")


def node_names(n: int) -> list[str]:
    """``gpu01`` .. ``gpuNN`` (two digits at least, like the built-in scenarios)."""
    width = max(2, len(str(n)))
    return [f"gpu{i:0{width}d}" for i in range(1, n + 1)]


def _free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out on loopback (held together so they are distinct)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _banner(port: int, timeout: float = 0.5) -> bool:
    """True when an SSH server answers on ``port`` with its version banner."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


@dataclass(frozen=True)
class RigNode:
    """One simulated node behind the rig: its name, its port and its shim directory."""

    name: str
    port: int
    dir: Path

    @property
    def bin(self) -> Path:
        """The directory sshd puts first on PATH for this node's port."""
        return self.dir / "bin"

    def devices(self) -> tuple[str, ...]:
        """The node's /dev/nvidia* files (``DIR/devices``; none when its directory has no list)."""
        try:
            text = (self.dir / DEVICES_FILE).read_text()
        except FileNotFoundError:
            return ()
        return tuple(line for line in text.splitlines() if line.startswith("/dev/nvidia") and "/" not in line[5:])


class SshdRig:
    """One sshd child process serving ``nodes`` on loopback ports.

    Args:
        root: an empty temporary directory that will hold keys, config and node directories.
        nodes: node names, one port each.
        populate: called as ``populate(name, node_dir)`` to write each node's shims.
    """

    def __init__(self, root: Path, nodes: list[str], populate: Callable[[str, Path], None] | None = None,
                 path_tails: dict[str, str] | None = None, homes: dict[str, Path] | None = None):
        self.root = Path(root)
        # A node whose login has a HOME of its own: bash reads that ~/.bashrc, as over ssh to a real node
        # (the other nodes' shells read none: SHLVL=1 below).
        self.homes = dict(homes or {})
        # What follows a node's own bin directory on its PATH (a node "without fuser" gets none).
        self.path_tails = dict(path_tails or {})
        self.sshd = find_sshd()
        self.user = getpass.getuser()
        self.host_key = self.root / "ssh_host_ed25519_key"
        self.client_key = self.root / "client_ed25519"
        self.known_hosts = self.root / "known_hosts"
        self.authorized_keys = self.root / "authorized_keys"
        self.ssh_config = self.root / "ssh_config"  # empty: keeps ~/.ssh/config out of the tests
        self.log_file = self.root / "sshd.log"
        self.configs: list[Path] = []
        self.config_devices: list[tuple[str, ...]] = []  # the /dev/nvidia* files of each config's nodes
        self.procs: list[subprocess.Popen] = []
        self._names = list(nodes)
        self._populate = populate
        self.nodes: dict[str, RigNode] = {}

    # ----- set-up -----------------------------------------------------------------------------
    def _write_keys(self) -> None:
        host = asyncssh.generate_private_key("ssh-ed25519")
        host.write_private_key(str(self.host_key))
        host.write_public_key(str(self.host_key) + ".pub")
        client = asyncssh.generate_private_key("ssh-ed25519", comment="nvls-tui-tests")
        client.write_private_key(str(self.client_key))
        client.write_public_key(str(self.client_key) + ".pub")
        self.authorized_keys.write_bytes(client.export_public_key())
        for path in (self.host_key, self.client_key):
            path.chmod(0o600)
        self.host_public = host.export_public_key().decode().strip()
        self.ssh_config.write_text("")

    def _write_known_hosts(self) -> None:
        self.known_hosts.write_text(
            "".join(f"[{LOOPBACK}]:{n.port} {self.host_public}\n" for n in self.nodes.values())
        )

    def session_env(self, name: str, node_dir: Path) -> dict[str, str]:
        """What node ``name``'s sshd sets in the environment of every command it runs (``SetEnv``)."""
        # SHLVL=1 makes bash skip ~/.bashrc for sshd commands (it only reads it at level 1),
        # so a root .bashrc that prepends pyenv/cargo to PATH cannot shadow the node's shims.
        # A node with a home of its own gets SHLVL=0: its shells read that home's ~/.bashrc.
        home = self.homes.get(name)
        env = {"PATH": f"{node_dir / 'bin'}{self.path_tails.get(name, ':/usr/bin:/bin')}"}
        env.update({"SHLVL": "1"} if home is None else {"SHLVL": "0", "HOME": str(home)})
        env.update({"NVLS_TUI_SIMULATED": "1", "NVLS_TUI_SIM_NODE": name})
        if (node_dir / "proc").is_dir():
            env["NVLS_TUI_PROC"] = str(node_dir / "proc")
        if (node_dir / "var" / "log").is_dir():
            # The node's journal folders are under DIR (the shims' placeholder), never this machine's.
            env[JOURNAL_ROOT_ENV] = str(node_dir)
        return env

    def _write_config(self, index: int, nodes: list[RigNode]) -> Path:
        lines = [f"Port {n.port}" for n in nodes]
        lines += [
            f"ListenAddress {LOOPBACK}",
            f"HostKey {self.host_key}",
            f"PidFile {self.root / f'sshd.{index}.pid'}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "AllowTcpForwarding yes",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "LogLevel ERROR",
            # 256 nodes connect at once in the fleet tests; the defaults (10:30:100) drop them.
            "MaxStartups 1024",
            "MaxSessions 64",
            "ClientAliveInterval 0",
        ]
        for n in nodes:
            env = self.session_env(n.name, n.dir)
            lines += [f"Match LocalPort {n.port}", "    SetEnv " + " ".join(f"{k}={v}" for k, v in env.items())]
        path = self.root / f"sshd_config.{index}"
        path.write_text("\n".join(lines) + "\n")
        return path

    def prepare(self) -> None:
        """Write keys, node directories (and their shims), config and known_hosts."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_keys()
        for name in self._names:
            node = RigNode(name, 0, self.root / "nodes" / name)
            node.bin.mkdir(parents=True, exist_ok=True)
            if self._populate is not None:
                self._populate(name, node.dir)
            self.nodes[name] = node
        self.assign_ports()

    def assign_ports(self) -> None:
        """Give every node a port the kernel just handed out; rewrite the configs and known_hosts."""
        ports = _free_ports(len(self.nodes))
        self.nodes = {name: RigNode(name, port, node.dir)
                      for (name, node), port in zip(self.nodes.items(), ports, strict=True)}
        groups: dict[tuple[str, ...], list[RigNode]] = {}  # nodes that see the same /dev share an sshd
        for node in self.nodes.values():
            groups.setdefault(node.devices(), []).append(node)
        self.configs, self.config_devices = [], []
        for devices, members in groups.items():
            for i in range(0, len(members), PORTS_PER_SSHD):
                self.configs.append(self._write_config(len(self.configs), members[i : i + PORTS_PER_SSHD]))
                self.config_devices.append(devices)
        self._write_known_hosts()

    # ----- life cycle -------------------------------------------------------------------------
    def start(self, wait: float = 15.0, repick: bool = True) -> SshdRig:
        """Start sshd (after ``prepare`` if needed) and wait until every port answers as this rig.

        A port handed out by ``prepare`` can be taken (by a parallel test worker's sshd, or as a
        connection's local port) before sshd binds it; sshd then serves its other ports and the
        stranger answers on that one. With ``repick`` the rig then starts again on fresh ports.

        Raises:
            RuntimeError: sshd exited, a port did not answer within ``wait`` seconds, or a port is
                held by another process (and ``repick`` is false or fresh ports kept failing).
        """
        if self.sshd is None:
            raise RuntimeError("sshd is not installed (apt-get install openssh-server)")
        if not self.nodes:
            self.prepare()
        if os.geteuid() == 0:
            # sshd refuses to start as root without its privilege-separation directory.
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        if not own_dev_possible() and host_device_files():
            raise RuntimeError(f"this machine has {' '.join(host_device_files())}: a node's shell would see them as "
                               "its own; run as root (the rig gives each node a private /dev) or where there are none")
        for attempt in range(PORT_ATTEMPTS):
            taken = self._launch(wait)
            if not taken:
                return self
            self.stop()
            if not repick or attempt == PORT_ATTEMPTS - 1:
                break
            self.assign_ports()
        ports = ", ".join(str(p) for p in sorted(taken))
        raise RuntimeError(f"port {ports} is held by another process, not this rig's sshd")

    def _launch(self, wait: float) -> set[int]:
        """Start one sshd per config and wait for its ports.

        Returns:
            The ports another process holds (empty when every port is this rig's and answers).
        """
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        log = self.log_file.open("ab")
        self.procs = [
            subprocess.Popen(self._sshd_argv(config, devices),
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            for config, devices in zip(self.configs, self.config_devices, strict=True)
        ]
        log.close()
        deadline = time.monotonic() + wait
        ports = {n.port for n in self.nodes.values()}
        while True:
            owned = self.owned_ports()
            if self._bind_failed(log_start):
                # sshd serves the ports it could bind, or exits when it could bind none.
                return ports - owned
            for proc in self.procs:
                if proc.poll() is not None:
                    status = proc.returncode
                    self.stop()
                    raise RuntimeError(f"sshd exited with status {status}: {self.log_tail()}")
            if owned >= ports and all(_banner(p) for p in ports):
                return set()
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"sshd did not answer on ports {sorted(ports - owned)} within {wait:g}s")
            time.sleep(0.05)  # polling a child process's sockets: bounded by the deadline above

    def _sshd_argv(self, config: Path, devices: tuple[str, ...]) -> list[str]:
        """sshd for ``config``, in a mount namespace whose /dev is its nodes' own where the rig can make one."""
        argv = [str(self.sshd), "-D", "-e", "-f", str(config)]
        if not own_dev_possible():
            return argv
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", OWN_DEV, "sh", *devices, "--", *argv]

    def owned_ports(self) -> set[int]:
        """Loopback ports on which one of this rig's sshd processes (by its config) listens."""
        configs = {str(c) for c in self.configs}
        owned = set()
        for conn in psutil.net_connections("tcp4"):
            if conn.status != psutil.CONN_LISTEN or not conn.pid or conn.laddr.ip != LOOPBACK:
                continue
            try:
                if configs & set(psutil.Process(conn.pid).cmdline()):
                    owned.add(conn.laddr.port)
            except psutil.Error:
                continue
        return owned

    def _bind_failed(self, log_start: int) -> bool:
        """True when sshd logged, since ``log_start``, that it could not bind one of its ports."""
        try:
            with self.log_file.open("rb") as f:
                f.seek(log_start)
                return b"Bind to port" in f.read()
        except OSError:
            return False

    def stop(self) -> None:
        """Stop every sshd and every session they started (by PID), waiting a bounded time, and the nodes'
        fork servers (their socket removed: each exits within a second, not after its idle minute)."""
        self.kill_connections()
        for node in self.nodes.values():
            with contextlib.suppress(OSError):
                (node.dir / SHIM_SOCKET).unlink()
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        self.procs = []

    def restart(self) -> None:
        """Stop sshd and start it again on the same ports with the same keys."""
        self.stop()
        self.start(repick=False)

    def kill_connections(self) -> int:
        """SIGKILL every per-connection sshd and session process (a node dropping off the network).

        Also kills processes of those sessions that were already orphaned (reparented to init): sshd makes
        each session its own session id, which survives reparenting; and any process whose PATH starts in a
        node of this rig (a session that outlived its connection, or left its session id with setsid).

        Returns:
            How many processes were killed.
        """
        children = self.session_processes()
        sids = set()
        for child in children:
            try:
                sids.add(os.getsid(child.pid))
            except OSError:
                pass
        sids.discard(os.getsid(0))
        listeners = {p.pid for p in self.procs}
        here = f"{self.root}/nodes/"
        for proc in psutil.process_iter():
            try:
                if proc in children or proc.pid in listeners or proc.pid == os.getpid():
                    continue
                # A process of one of those sessions; or one that outlived its connection and left its session
                # (a ~/.bashrc still sleeping, a command detached with setsid): every command sshd runs here has
                # a node's bin directory, under this rig's root, first on its PATH (SetEnv).
                if os.getsid(proc.pid) in sids or here in proc.environ().get("PATH", ""):
                    children.append(proc)
            except (OSError, psutil.Error):
                pass
        for child in children:
            try:
                child.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(children, timeout=5)
        return len(children)

    def session_processes(self) -> list[psutil.Process]:
        """Every process below the sshd listeners (connections and the commands they run)."""
        found = []
        for proc in self.procs:
            try:
                found += psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        return found

    def simulated_commands(self) -> list[psutil.Process]:
        """The simulated commands running on this rig's nodes: the children of their fork servers
        (``nvls_tui.sim.shim_server``), which are no session's descendants; each is named (``name()``)
        after its tool. The servers themselves are not commands."""
        return [child for server in fork_servers([n.dir for n in self.nodes.values()]) for child in live_children(server)]

    def log_tail(self, lines: int = 5) -> str:
        """The last lines sshd wrote (for failure messages)."""
        try:
            return " | ".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # ----- what tests use ---------------------------------------------------------------------
    def target(self, name: str) -> str:
        """``user@127.0.0.1:PORT`` for one node."""
        return f"{self.user}@{LOOPBACK}:{self.nodes[name].port}"

    def targets(self) -> list[str]:
        """One ``user@127.0.0.1:PORT`` per node, in node order."""
        return [self.target(name) for name in self.nodes]

    def cli_args(self) -> list[str]:
        """The reach options that make nvls-tui trust this rig (and only this rig)."""
        return ["--known-hosts", str(self.known_hosts), "-i", str(self.client_key),
                "--ssh-config", str(self.ssh_config)]




def processes_running(argv: list[str]) -> list[psutil.Process]:
    """Live processes on this machine whose command line is exactly ``argv`` (the rig is loopback)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["cmdline"] == argv and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def fork_servers(dirs: list[Path]) -> list[psutil.Process]:
    """The live fork servers of these node directories (not their forked children: same command line)."""
    wanted = {str(Path(d).resolve()) for d in dirs}
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if cmd[1:3] == ["-m", "nvls_tui.sim.shim_server"] and cmd[3:] and cmd[3] in wanted \
                and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    pids = {p.pid for p in found}
    return [p for p in found if p.ppid() not in pids]


def live_children(proc: psutil.Process) -> list[psutil.Process]:
    """A process's children that are not zombies (none once it is gone)."""
    try:
        return [c for c in proc.children() if c.status() != psutil.STATUS_ZOMBIE]
    except psutil.Error:
        return []


def options_for(rig: SshdRig, **overrides) -> BackendOptions:
    """BackendOptions that trust exactly this rig (its known_hosts, client key, empty ssh config)."""
    values = {"timeout": 5.0, "identity": str(rig.client_key), "known_hosts": str(rig.known_hosts),
              "ssh_config": str(rig.ssh_config)}
    values.update(overrides)
    return BackendOptions(**values)


def backend_for(rig: SshdRig, name: str = "gpu01", limiter=None, **overrides) -> SshBackend:
    """An SshBackend for one rig node."""
    (target,) = parse_target(rig.target(name))
    return SshBackend(target, options_for(rig, **overrides), limiter)


LIBFAKETIME = next((p for p in (Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
                                Path("/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"),
                                Path("/usr/lib/faketime/libfaketime.so.1")) if p.exists()), None)


def skewed_bastion(offset: str) -> dict[str, str] | None:
    """The environment of a second bastion whose clock is ``offset`` off (libfaketime: ``+6m``, ``-90s``), for an
    nvls-tui subprocess; its monotonic clock is left alone (asyncio's timers stay sane). None: no libfaketime."""
    if LIBFAKETIME is None:
        return None
    return {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
