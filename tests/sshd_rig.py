"""A real OpenSSH sshd on 127.0.0.1 serving simulated nodes, started as a child of the test run.

One sshd listens on one port per simulated node. A ``Match LocalPort`` block per port puts that
node's shim directory first on PATH (``SetEnv``), so any command run over SSH on port N behaves as
node N. Keys, known_hosts and the config live in a temporary directory; nothing outside it is
touched except ``/run/sshd`` (the privilege-separation directory sshd insists on when run as root).
Only loopback, ever.
"""

from __future__ import annotations

import getpass
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

LOOPBACK = "127.0.0.1"
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")


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


class SshdRig:
    """One sshd child process serving ``nodes`` on loopback ports.

    Args:
        root: an empty temporary directory that will hold keys, config and node directories.
        nodes: node names, one port each.
        populate: called as ``populate(name, node_dir)`` to write each node's shims.
    """

    def __init__(self, root: Path, nodes: list[str], populate: Callable[[str, Path], None] | None = None):
        self.root = Path(root)
        self.sshd = find_sshd()
        self.user = getpass.getuser()
        self.host_key = self.root / "ssh_host_ed25519_key"
        self.client_key = self.root / "client_ed25519"
        self.known_hosts = self.root / "known_hosts"
        self.authorized_keys = self.root / "authorized_keys"
        self.ssh_config = self.root / "ssh_config"  # empty: keeps ~/.ssh/config out of the tests
        self.config = self.root / "sshd_config"
        self.pid_file = self.root / "sshd.pid"
        self.log_file = self.root / "sshd.log"
        self.proc: subprocess.Popen | None = None
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

    def _write_config(self) -> None:
        lines = [f"Port {n.port}" for n in self.nodes.values()]
        lines += [
            f"ListenAddress {LOOPBACK}",
            f"HostKey {self.host_key}",
            f"PidFile {self.pid_file}",
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
        for n in self.nodes.values():
            # SHLVL=1 makes bash skip ~/.bashrc for sshd commands (it only reads it at level 1),
            # so a root .bashrc that prepends pyenv/cargo to PATH cannot shadow the node's shims.
            lines += [
                f"Match LocalPort {n.port}",
                f"    SetEnv PATH={n.bin}:/usr/bin:/bin SHLVL=1 NVLS_TUI_SIMULATED=1 NVLS_TUI_SIM_NODE={n.name}",
            ]
        self.config.write_text("\n".join(lines) + "\n")

    def prepare(self) -> None:
        """Write keys, node directories (and their shims), config and known_hosts."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_keys()
        ports = _free_ports(len(self._names))
        for name, port in zip(self._names, ports, strict=True):
            node = RigNode(name, port, self.root / "nodes" / name)
            node.bin.mkdir(parents=True, exist_ok=True)
            if self._populate is not None:
                self._populate(name, node.dir)
            self.nodes[name] = node
        self._write_config()
        self._write_known_hosts()

    # ----- life cycle -------------------------------------------------------------------------
    def start(self, wait: float = 15.0) -> SshdRig:
        """Start sshd (after ``prepare`` if needed) and wait until every port answers.

        Raises:
            RuntimeError: sshd exited or a port did not answer within ``wait`` seconds.
        """
        if self.sshd is None:
            raise RuntimeError("sshd is not installed (apt-get install openssh-server)")
        if not self.nodes:
            self.prepare()
        if os.geteuid() == 0:
            # sshd refuses to start as root without its privilege-separation directory.
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            [self.sshd, "-D", "-e", "-f", str(self.config)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + wait
        pending = {n.port for n in self.nodes.values()}
        while pending:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited with status {self.proc.returncode}: {self.log_tail()}")
            pending = {p for p in pending if not _banner(p)}
            if pending and time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"sshd did not answer on ports {sorted(pending)} within {wait:g}s")
            if pending:
                time.sleep(0.05)  # polling a child process's sockets: bounded by the deadline above
        return self

    def stop(self) -> None:
        """Stop sshd and every session it started (by PID), waiting a bounded time."""
        if self.proc is None:
            return
        self.kill_connections()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def restart(self) -> None:
        """Stop sshd and start it again on the same ports with the same keys."""
        self.stop()
        self.start()

    def kill_connections(self) -> int:
        """SIGKILL every per-connection sshd and session process (a node dropping off the network).

        Returns:
            How many processes were killed.
        """
        if self.proc is None:
            return 0
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return 0
        for child in children:
            try:
                child.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(children, timeout=5)
        return len(children)

    def session_processes(self) -> list[psutil.Process]:
        """Every process below the sshd listener (connections and the commands they run)."""
        if self.proc is None:
            return []
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

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
