"""The benchmark's nodes: one loopback sshd rig serving N simulated nodes with ``--static`` shims.

Each node answers the probe from pre-rendered files printed by /bin/sh (no Python start-up per
command), so the sshd side costs what a real node's would. The simulator's outputs are small
(a healthy node's probe is ~5 KB); a real H100 node that has been up for days fills the probe's
300-line kernel-log tail with driver lines, so every node's ``journalctl -k`` output is padded with
benign boot-time NVRM / nvidia-nvswitch lines until one probe is about ``PROBE_BYTES`` (48 KB, the
size issue 8 measured on real nodes). The padding matches no finding, so verdicts do not change.

The rig writes what the OpenSSH-based tools need: an ``ssh_config`` with one ``Host`` alias per node
(port, user, key, the rig's known_hosts, strict host-key checking, no ControlMaster), host lists
for pdsh and clush, and an ansible inventory.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ClusterShell.NodeSet import NodeSet

from nvls_tui.poll.kernel_tail import starts_boot
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import LOOPBACK, SshdRig

PROBE_BYTES = 48 * 1024
KERNEL_TAIL = 300  # the probe keeps the last 300 matching kernel lines (probe.KERNEL tail)
SCENARIO = "fleet-256"


def alias(i: int) -> str:
    """Node alias used by every tool (``gpu001``..``gpu256``, like sim:fleet-256)."""
    return f"gpu{i:03d}"


def _padding_lines(first_line: str, count: int, width: int) -> list[str]:
    """``count`` benign driver lines stamped like ``first_line`` (its timestamp and host).

    They match the probe's kernel filter (so they travel) but no finding (no Xid, no NV_ERR_).
    """
    words = first_line.split(" ", 3)
    stamp = " ".join(words[:3]) if len(words) >= 3 else "2026-01-01T00:00:00+00:00 node kernel:"
    buses = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
    lines = []
    for k in range(count):
        bus = buses[k % 8]
        kind = k % 4
        if kind == 0:
            text = (f"NVRM: GPU at PCI:0000:{bus}:00: GPU-{k:08x}-5a1c-4c1e-9b7d-{k * 7919 % 10**12:012d}")
        elif kind == 1:
            text = f"NVRM: GPU Board Serial Number: 165492{k:07d} (PCI:0000:{bus}:00.0)"
        elif kind == 2:
            text = (f"nvidia-nvswitch: Probing device 0000:0{k % 4 + 5}:00.0, Vendor Id = 0x10de, "
                    f"Device Id = 0x22a3, Class = 0x68000")
        else:
            text = f"nvidia-nvswitch{k % 4}: using MSI; link {k % 18:02d} trained, state ACTIVE, remote {bus}:00.0"
        line = f"{stamp} {text}"
        lines.append(line.ljust(width)[: max(width, len(line))])
    return lines


def pad_node(node_dir: Path, env: dict[str, str], target_bytes: int = PROBE_BYTES) -> int:
    """Pad one static node's kernel log so its probe output is about ``target_bytes``.

    Returns:
        The probe's size in bytes after padding (measured by running it with the node's shims).
    """
    journal = next((node_dir / "static").glob("journalctl.*.out"))
    original = journal.read_text()
    base = probe_bytes(node_dir, env)
    kept = [ln for ln in original.splitlines() if ln]
    room = max(0, KERNEL_TAIL - len(kept))
    missing = max(0, target_bytes - base)
    if room and missing:
        width = max(80, missing // room)
        pad = _padding_lines(kept[0] if kept else "", room, width)
        # After the boot's first line (``Linux version``), as a node's driver lines come: a journal that
        # reaches back to its boot, so a re-poll reads from its cursor (padding before that line would make
        # every node's journal look rotated, and every poll read the whole boot and the ring buffer).
        head = 1 if kept and starts_boot(kept[0]) else 0
        journal.write_text("\n".join([*kept[:head], *pad, *kept[head:]]) + "\n")
    return probe_bytes(node_dir, env)


def probe_bytes(node_dir: Path, env: dict[str, str]) -> int:
    """Bytes one probe prints on this node: run locally through /bin/sh with the node's shims, in the environment
    its sshd gives every command (``env``; without the node's journal folders the probe starts no journalctl, and
    the size measured left the kernel log out: 13 KB where the node sends 48)."""
    out = subprocess.run(["sh", "-c", probe_script()], env={**env, "LC_ALL": "C"}, capture_output=True, timeout=30,
                         check=False)
    return len(out.stdout)


class BenchRig:
    """A started rig of ``n`` static simulated nodes plus the files each tool needs.

    Args:
        n: number of nodes (the fleet-256 scenario names them; beyond 256 they repeat healthy nodes).
        root: directory for everything (a temporary one by default).
        probe_target: bytes to pad each node's probe to (0: no padding).
    """

    def __init__(self, n: int, root: Path | None = None, probe_target: int = PROBE_BYTES) -> None:
        self.n = n
        self._own_root = root is None
        self.root = Path(root or tempfile.mkdtemp(prefix="nvls-bench-"))
        self.probe_target = probe_target
        self.sizes: dict[str, int] = {}
        self.rig = SshdRig(self.root / "sshd", [alias(i) for i in range(1, n + 1)], self._populate)

    def _populate(self, name: str, node_dir: Path) -> None:
        scenario_node = name if int(name[3:]) <= 256 else "gpu001"
        write_shims(node_dir, SCENARIO, scenario_node, static=True)
        env = self.rig.session_env(name, node_dir)
        self.sizes[name] = pad_node(node_dir, env, self.probe_target) if self.probe_target else probe_bytes(node_dir, env)

    # ----- life cycle -------------------------------------------------------------------------
    def start(self) -> BenchRig:
        """Write shims, keys and configs, then start sshd (every port answering)."""
        self.rig.start(wait=60.0)
        self._write_client_files()
        return self

    def stop(self) -> None:
        """Kill every sshd and session (by PID), then remove a temporary root."""
        self.rig.stop()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> BenchRig:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ----- what the tools read ----------------------------------------------------------------
    @property
    def ssh_config(self) -> Path:
        """OpenSSH client config: one Host alias per node, host keys verified, no multiplexing."""
        return self.root / "ssh_config"

    def names(self, n: int) -> list[str]:
        """The first ``n`` node aliases."""
        return [alias(i) for i in range(1, n + 1)]

    def port(self, name: str) -> int:
        """The loopback port serving node ``name``."""
        return self.rig.nodes[name].port

    def targets(self, n: int) -> list[str]:
        """nvls-tui TARGET words (``user@127.0.0.1:PORT``) for the first ``n`` nodes."""
        return [self.rig.target(name) for name in self.names(n)]

    def nodeset(self, n: int) -> str:
        """The first ``n`` nodes in ClusterShell / pdsh range syntax (``gpu[001-999],gpu[1000-1024]``)."""
        return str(NodeSet.fromlist(self.names(n)))

    def hosts_file(self, n: int) -> Path:
        """``alias`` per line (pdsh ``-w ^FILE``)."""
        path = self.root / f"hosts.{n}"
        path.write_text("".join(f"{name}\n" for name in self.names(n)))
        return path

    def port_list(self, n: int) -> Path:
        """``127.0.0.1 PORT`` per line, for the Python clients (bare asyncssh, parallel-ssh)."""
        path = self.root / f"ports.{n}"
        path.write_text("".join(f"{LOOPBACK} {self.port(name)}\n" for name in self.names(n)))
        return path

    def inventory(self, n: int) -> Path:
        """An ansible INI inventory of the first ``n`` nodes (addresses and ports in it)."""
        path = self.root / f"inventory.{n}.ini"
        lines = ["[nodes]"]
        lines += [f"{name} ansible_host={LOOPBACK} ansible_port={self.port(name)}" for name in self.names(n)]
        lines += ["", "[nodes:vars]", f"ansible_user={self.rig.user}",
                  f"ansible_ssh_private_key_file={self.rig.client_key}"]
        path.write_text("\n".join(lines) + "\n")
        return path

    def probe_file(self) -> Path:
        """The probe as one shell command line (``sh -c '<probe_script()>'``), the same for every tool."""
        path = self.root / "probe.cmd"
        path.write_text(probe_command())
        return path

    def _write_client_files(self) -> None:
        head = [
            "Host gpu*",
            f"    User {self.rig.user}",
            f"    IdentityFile {self.rig.client_key}",
            "    IdentitiesOnly yes",
            f"    UserKnownHostsFile {self.rig.known_hosts}",
            "    GlobalKnownHostsFile /dev/null",
            "    StrictHostKeyChecking yes",
            "    BatchMode yes",
            "    ControlMaster no",
            "    ControlPath none",
            "    LogLevel ERROR",
            "    KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org",
            "",
        ]
        hosts = [f"Host {name}\n    HostName {LOOPBACK}\n    Port {self.port(name)}\n" for name in self.rig.nodes]
        # Host blocks first: the first value ssh reads for an option wins.
        self.ssh_config.write_text("".join(hosts) + "\n".join(head))
        self.probe_file()


def probe_command() -> str:
    """The remote command line every tool runs: the nvls-tui probe under ``sh -c``."""
    return shlex.join(["sh", "-c", probe_script()])


if __name__ == "__main__":  # quick look: python -m bench.rig N
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    with BenchRig(count) as bench_rig:
        sizes = sorted(bench_rig.sizes.values())
        print(f"{count} nodes on {bench_rig.root}; probe bytes min {sizes[0]} median {sizes[len(sizes) // 2]} "
              f"max {sizes[-1]}")
        print("ssh -F", bench_rig.ssh_config, "gpu001", "true")
        os.system(f"ssh -F {bench_rig.ssh_config} gpu001 {shlex.quote(probe_command())} | wc -c")
