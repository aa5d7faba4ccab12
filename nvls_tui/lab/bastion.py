"""The lab's bastion: a machine of its own, as the nodes are, where nvls-tui runs as an operator's service.

A real site runs ``nvls-tui autopilot`` on a bastion under systemd, from
``contrib/systemd/nvls-tui-autopilot.service`` (docs/autopilot.md). The lab's bastion is that machine: a
systemd-nspawn container booted like a node (the host's systemd as PID 1, its own ``/root`` and ``/home``,
its own sshd on ``127.0.SUBNET.2``), with what an operator installs on a bastion and nothing of a GPU node's:

- ``/usr/local/bin/nvls-tui``: nvls-tui, as the unit's ``ExecStart`` names it (the project and its
  interpreter are bound read-only at their own paths, as the nodes' stand-ins have them);
- ``/etc/nvls-tui/ssh_config``, ``known_hosts`` and ``id_ed25519``: the lab's gpu nodes, each host key checked;
- the unit file itself, unchanged, in ``/etc/systemd/system``; an operator's drop-in
  (:func:`configure_autopilot`) sets the targets and options, as a site sets its own;
- with ``--slurm``: the Slurm client's configuration (``/etc/slurm``: the lab's, naming the socket of the
  host's munged, which is bound in), so ``scontrol`` on the bastion reaches the lab's slurmctld.

The bastion acts no scenario, holds no simulated hardware, and is never a Slurm or Kubernetes node.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from nvls_tui.lab.image import ROOT_BASHRC, ROOT_PROFILE, SSH_PORT, TARGET, machine_id, sshd_config
from nvls_tui.lab.machine import LabError, LabNode, node_run

NAME = "bastion"
UNIT = "nvls-tui-autopilot.service"
DROP_IN = f"/etc/systemd/system/{UNIT}.d/lab.conf"
ETC = "/etc/nvls-tui"
SSH_CONFIG = f"{ETC}/ssh_config"
KNOWN_HOSTS = f"{ETC}/known_hosts"
KEY = f"{ETC}/id_ed25519"
NVLS_TUI = "/usr/local/bin/nvls-tui"
STATE_DIR = "/var/lib/nvls-tui-autopilot"
"""The unit's ``StateDirectory=``."""
SLURM_ETC = "/etc/slurm"
CONF_FILES = ("slurm.conf", "gres.conf", "cgroup.conf")


def unit_source() -> Path:
    """The project's unit file (``contrib/systemd``), which the bastion installs as it is.

    Raises:
        LabError: nvls-tui runs from an installation without the project's ``contrib/`` (the lab runs
            from a checkout).
    """
    import nvls_tui

    path = Path(nvls_tui.__file__).resolve().parents[1] / "contrib" / "systemd" / UNIT
    if not path.is_file():
        raise LabError(f"the bastion installs {path.name} from the project's contrib/systemd, not found at {path}")
    return path


def address(subnet: int) -> str:
    """The bastion's loopback address: the lab's ``.2`` (slurmctld is ``.1``, the nodes ``.10`` on)."""
    return f"127.0.{subnet}.2"


def ssh_config(nodes: Sequence[LabNode]) -> str:
    """The bastion's SSH configuration for the gpu nodes: root by the lab's key, each host key checked."""
    return "\n".join(f"Host {n.name}\n  HostName {n.address}\n  Port {SSH_PORT}\n  User root\n  IdentityFile {KEY}\n"
                     f"  IdentitiesOnly yes\n  UserKnownHostsFile {KNOWN_HOSTS}\n  StrictHostKeyChecking yes\n"
                     for n in nodes)


def target_unit() -> str:
    """The bastion's boot target: a login and sshd, nothing of a node's (no FM, DCGM, kubelet)."""
    return ("[Unit]\nDescription=nvls-tui lab bastion\nRequires=basic.target\nAfter=basic.target\n"
            "Wants=ssh.service systemd-logind.service systemd-user-sessions.service\nAllowIsolate=yes\n")


def files(bastion: LabNode, nodes: Sequence[LabNode], python: str, lab_key: str, lab_private_key: str,
          known_hosts: str, unit: str) -> dict[str, tuple[str, int]]:
    """Every file the bastion adds to the host's root (pure): ``{path: (text, mode)}``.

    Args:
        bastion: the bastion itself (its name and address).
        nodes: the gpu nodes it reaches.
        python: the interpreter nvls-tui runs with (the host's venv, bound in).
        lab_key: the lab's public key (the host's ``ssh -F DIR/ssh_config bastion``).
        lab_private_key: the lab's private key (the bastion's way into the nodes).
        known_hosts: the nodes' host keys.
        unit: the unit file's text, installed as it is.
    """
    return {
        "/etc/hostname": (bastion.name + "\n", 0o644),
        "/etc/machine-id": (machine_id(bastion.name) + "\n", 0o444),
        "/etc/ssh/sshd_config.d/nvls-lab.conf": (sshd_config(bastion.address), 0o644),
        "/root/.ssh/authorized_keys": (lab_key, 0o600),
        "/root/.profile": (ROOT_PROFILE, 0o644),
        "/root/.bashrc": (ROOT_BASHRC, 0o644),
        NVLS_TUI: (f"#!/bin/sh\n# nvls-tui lab bastion: nvls-tui as installed (the project bound in read-only)\n"
                   f"exec {shlex.quote(python)} -m nvls_tui.cli \"$@\"\n", 0o755),
        SSH_CONFIG: (ssh_config(nodes), 0o644),
        KNOWN_HOSTS: (known_hosts, 0o644),
        KEY: (lab_private_key, 0o600),
        f"/etc/systemd/system/{UNIT}": (unit, 0o644),
        f"/etc/systemd/system/{TARGET}": (target_unit(), 0o644),
    }


MUNGE_RUN = "/run/nvls-lab-munge"
"""Where the bastion sees the host's munged's folder (its socket)."""


def slurm_files(folder: Path) -> dict[str, tuple[str, int]]:
    """The bastion's own ``/etc/slurm``: copies of the lab's configuration whose ``AuthInfo`` names the munge
    socket where the bastion has it (:data:`MUNGE_RUN`).

    Not links to the lab's folder, as the nodes have: that folder lies under ``/tmp`` when a test makes it, and
    the unit's ``PrivateTmp=yes`` gives the service a ``/tmp`` of its own, where neither the configuration nor
    the socket is (seen: "the Slurm configuration /etc/slurm/slurm.conf does not exist", restarted every 30 s).
    """
    socket = f"AuthInfo=socket={folder / 'munge' / 'munge.socket'}"
    out = {}
    for name in CONF_FILES:
        text = (folder / name).read_text()
        if name == "slurm.conf":
            if socket not in text:
                raise LabError(f"{folder / name} does not name the lab's munge socket ({socket})")
            text = text.replace(socket, f"AuthInfo=socket={MUNGE_RUN}/munge.socket")
        out[f"{SLURM_ETC}/{name}"] = (text, 0o644)
    return out


def slurm_binds(folder: Path) -> list[str]:
    """The host's munged's folder (its socket): the bastion's credentials are the host munged's, as a
    bastion's are its own munged's on a real site."""
    return [f"--bind={folder / 'munge'}:{MUNGE_RUN}"]


def drop_in(argv: Sequence[str], *, user: str | None = None, binds: Sequence[str] = ()) -> str:
    """An operator's drop-in for the unit: its ``ExecStart`` (the autopilot's targets and options) and, where
    given, the ``User=`` it runs as.

    ``ExecStart=`` is emptied first, as systemd asks of a drop-in that replaces a simple service's command.
    ``binds``: folders the service reads that its private ``/tmp`` would hide (:func:`hidden_by_private_tmp`).
    """
    lines = ["# nvls-tui lab: the operator's settings for this bastion (the unit file itself is the project's)",
             "[Service]"]
    if user is not None:
        lines.append(f"User={user}")
    lines += [f"BindReadOnlyPaths={_systemd_word(b)}" for b in binds]
    lines += ["ExecStart=", "ExecStart=" + " ".join(_systemd_word(w) for w in [NVLS_TUI, "autopilot", *argv])]
    return "\n".join(lines) + "\n"


def _systemd_word(word: str) -> str:
    """One word of an ``ExecStart=`` line: quoted where systemd would split it, ``%`` and ``$`` escaped."""
    escaped = word.replace("%", "%%").replace("$", "$$")
    if escaped and not any(c.isspace() or c in "\"'\\;" for c in escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def hidden_by_private_tmp(paths: Sequence[str]) -> list[str]:
    """Those of ``paths`` under ``/tmp``: the lab's nvls-tui is the host's tree and venv bound in, and a fresh
    clone under /tmp (as CI makes one) is hidden from the service by the unit's ``PrivateTmp=yes`` (it exited
    127: its interpreter not found). The drop-in binds them back in, read-only, as systemd allows beside a
    private /tmp; the unit's own hardening stays."""
    out: list[str] = []
    for path in paths:
        resolved = str(Path(path).resolve())
        if (resolved == "/tmp" or resolved.startswith("/tmp/")) and resolved not in out:
            out.append(resolved)
    return out


def configure_autopilot(bastion: LabNode, argv: Sequence[str], *, user: str | None = None) -> None:
    """Write the operator's drop-in and reload systemd (the unit is not started: ``systemctl start`` is the
    caller's, as an operator's)."""
    import sys

    import nvls_tui

    path = Path(bastion.root, DROP_IN.lstrip("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    project = str(Path(nvls_tui.__file__).resolve().parents[1])
    path.write_text(drop_in(argv, user=user, binds=hidden_by_private_tmp([project, sys.prefix])))
    node_run(bastion, "systemctl", "daemon-reload")


__all__ = ["DROP_IN", "KEY", "KNOWN_HOSTS", "NAME", "NVLS_TUI", "SSH_CONFIG", "STATE_DIR", "UNIT", "address",
           "configure_autopilot", "drop_in", "files", "hidden_by_private_tmp", "slurm_binds", "slurm_files", "ssh_config", "target_unit",
           "unit_source"]
