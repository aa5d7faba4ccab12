"""What a lab node carries on top of the host's own root: unit files, stand-ins, sshd, its name.

:func:`node_files` is pure: ``{path inside the node: (text, mode)}``. The node's root is an overlay of
the host's ``/`` with these files in its upper layer, so everything else (systemd, journald, sshd,
procps, psmisc, the project and its venv) is the host's real program.

Except its homes (:data:`OWN_DIRS`): ``/root`` and ``/home`` are the node's own, opaque over the host's,
so nothing of the host's user environment (its ``~/.bashrc`` running ``pyenv init``, credentials, caches)
is the node's. Root's start-up files are the image's minimal ones (:data:`ROOT_PROFILE`, :data:`ROOT_BASHRC`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from nvls_tui.lab.hardware import HW_DIR
from nvls_tui.lab.kernel_log import RING_FILE
from nvls_tui.lab.kernel_log import TOOL as KERNEL_LOG_TOOL
from nvls_tui.lab.tools import script
from nvls_tui.poll.probe import SIMULATED_MARKER
from nvls_tui.sim.base_nodes import UNIT_DESCRIPTIONS
from nvls_tui.sim.state import digest

TARGET = "nvls-lab.target"
SSH_PORT = 2222
LAB_MARKER = "simulated by nvls-tui lab (LAB): real systemd, sshd and processes; simulated GPUs and NVSwitches\n"
DAEMONS = ("nv-hostengine", "nvidia-persistenced", "kubelet", "nvidia-device-plugin", "dcgm-exporter",
           "gpu-feature-discovery", "nvidia-mig-manager")
TOOLS = ("nvidia-smi", "nv-fabricmanager", "lspci", "all_reduce_perf")

# The kernel's lines are simulated hardware, handed to a real journal file and a ring buffer file
# (nvls_tui.lab.kernel_log); journalctl -k and dmesg hand on what is pending first, then the real tool
# answers, with its own output and exit status. A failed hand-on fails the read (never a silent gap).
JOURNALCTL_WRAPPER = f"""#!/bin/sh
# nvls-tui lab: the kernel's lines go to the journal first (kernel-log sync); then the real journalctl.
for a do
  case "$a" in
    -k|--dmesg) {KERNEL_LOG_TOOL} sync || exit 1; break;;
    --*) ;;
    -*k*) {KERNEL_LOG_TOOL} sync || exit 1; break;;
  esac
done
exec /usr/bin/journalctl "$@"
"""
DMESG_WRAPPER = f"""#!/bin/sh
# nvls-tui lab: this node's ring buffer is a file (kernel-log sync writes it); util-linux dmesg reads it.
{KERNEL_LOG_TOOL} sync || exit 1
exec /usr/bin/dmesg --file {RING_FILE} "$@"
"""

OWN_DIRS = {"/root": 0o700, "/home": 0o755}
"""Folders of the node's own, not the host's (opaque in its overlay), with their modes."""
HOME_DIRS = ("/root", "/home")
"""Where the host keeps its users' environments: the node shows none of it (its code binds excepted)."""
ROOT_PROFILE = """# ~/.profile: a lab node's own (nvls-tui lab), not the host's.
if [ -n "$BASH_VERSION" ] && [ -f "$HOME/.bashrc" ]; then
  . "$HOME/.bashrc"
fi
"""
ROOT_BASHRC = """# ~/.bashrc: a lab node's own (nvls-tui lab), not the host's: nothing to run at start-up.
"""

FM_CFG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
HOLD = "/usr/local/bin/nvls-lab-hold"
"""A job's stand-in CUDA program: holds the GPUs it is given until SIGTERM (``nvls_tui.lab.daemons``)."""
SLURM_ETC = "/etc/slurm"
CGROUP_MOUNT = "/run/nvls-lab-cgroup"
"""Where a node's slurmd mounts the cgroup v1 hierarchies it tracks jobs in (``CgroupAutomount``)."""
GRES_DEVICE = "/dev/nvls-lab-gpu"
"""``/dev/nvls-lab-gpuN``: GPU N as Slurm's gres.conf names it (a character device: slurmd takes no other)."""
GRES_DEVICES = "/usr/libexec/nvls-lab/slurm-gres-devices"
GRES_DEVICES_SCRIPT = f"""#!/bin/sh
# nvls-tui lab: slurmd's gres/gpu takes only character devices, and the stand-in /dev/nvidiaN are plain
# files (the daemons map them). Each GPU gets one for Slurm, the null device's numbers: never opened.
for f in /dev/nvidia[0-9]*; do
  n=${{f#/dev/nvidia}}
  [ -e {GRES_DEVICE}$n ] || mknod -m 0600 {GRES_DEVICE}$n c 1 3
done
"""


@dataclass(frozen=True)
class SlurmImage:
    """What a node of ``lab up --slurm`` runs: munged and slurmd as units, the lab's slurm.conf."""

    munged: tuple[str, ...]
    """munged's argv (forking: systemd waits until its socket is there)."""
    slurmd: tuple[str, ...]
    conf: str
    """``DIR/slurm.conf``, bound at its own path inside the node."""
    pid_file: str
    """The PID file munged writes (``Type=forking``)."""
    spool: str
    """slurmd's SlurmdSpoolDir, which slurmd does not make."""


def _unit(description: str, service: str, install: str = "WantedBy=multi-user.target") -> str:
    return (f"[Unit]\nDescription={description}\nAfter=nvls-lab-devices.service\n\n"
            f"[Service]\n{service}\nEnvironment=PYTHONUNBUFFERED=1\n\n[Install]\n{install}\n")


def slurm_units(slurm: SlurmImage) -> dict[str, str]:
    """``munge.service`` and ``slurmd.service`` of a ``--slurm`` node (they replace Debian's, by name)."""
    return {
        "munge.service": ("[Unit]\nDescription=MUNGE authentication service\nDocumentation=man:munged(8)\n\n"
                          "[Service]\nType=forking\n"
                          f"ExecStart={shlex.join(slurm.munged)}\nPIDFile={slurm.pid_file}\n"
                          "Restart=on-abort\n\n[Install]\nWantedBy=multi-user.target\n"),
        "slurmd.service": ("[Unit]\nDescription=Slurm node daemon\nDocumentation=man:slurmd(8)\n"
                           "After=munge.service nvls-lab-devices.service network-online.target\n"
                           "Requires=munge.service nvls-lab-devices.service\n\n"
                           f"[Service]\nType=simple\nEnvironment=SLURM_CONF={slurm.conf}\n"
                           f"ExecStartPre=/bin/mkdir -p {slurm.spool} {CGROUP_MOUNT}\nExecStartPre={GRES_DEVICES}\n"
                           f"ExecStart={shlex.join(slurm.slurmd)}\nExecReload=/bin/kill -HUP $MAINPID\n"
                           # Debian's: stopping slurmd leaves its jobs running, as on a real node.
                           "KillMode=process\nLimitNOFILE=131072\nLimitMEMLOCK=infinity\nLimitSTACK=infinity\n"
                           "Delegate=yes\nTasksMax=infinity\n\n[Install]\nWantedBy=multi-user.target\n"),
    }


def unit_files(device_files: list[str], slurm: SlurmImage | None = None) -> dict[str, str]:
    """The lab's unit files (``/etc/systemd/system``), with the simulator's descriptions.

    With ``slurm``, the node's target also starts munged and slurmd at boot (a real node enables them).
    """
    d = UNIT_DESCRIPTIONS
    touch = " ".join(device_files)
    wants = "ssh.service systemd-logind.service systemd-user-sessions.service nvls-lab-devices.service"
    if slurm is not None:
        wants += " munge.service slurmd.service"
    return {
        **(slurm_units(slurm) if slurm is not None else {}),
        TARGET: ("[Unit]\nDescription=nvls-tui lab node\nRequires=basic.target\nAfter=basic.target\n"
                 f"Wants={wants}\nAllowIsolate=yes\n"),
        "nvls-lab-devices.service": ("[Unit]\nDescription=nvls-tui lab: the stand-in /dev/nvidia* files\n"
                                     "DefaultDependencies=no\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
                                     # a page each: the daemons map their devices (fuser's m)
                                     f"ExecStart=/bin/sh -c 'truncate -s 4096 {touch} && chmod 0666 {touch}'\n"),
        "nvidia-fabricmanager.service": _unit(
            d["nvidia-fabricmanager.service"],
            # Type=forking as NVIDIA's own unit: `systemctl start` returns once FM has configured the fabric.
            f"Type=forking\nExecStart=/usr/bin/nv-fabricmanager -c {FM_CFG}\nSyslogIdentifier=nv-fabricmanager"),
        "nvidia-dcgm.service": _unit(d["nvidia-dcgm.service"],
                                     "Type=simple\nExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm"),
        "nvidia-persistenced.service": _unit(d["nvidia-persistenced.service"],
                                             "Type=simple\nExecStart=/usr/bin/nvidia-persistenced --verbose"),
        "kubelet.service": _unit(d["kubelet.service"],
                                 "Type=simple\nExecStart=/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml"),
        "nvidia-snapshot.service": ("[Unit]\nDescription=" + d["nvidia-snapshot.service"] + "\n\n[Service]\n"
                                    "Type=oneshot\nExecStart=/usr/bin/nvidia-smi -q -x\nStandardOutput=null\n"),
        "nvidia-snapshot.timer": ("[Unit]\nDescription=" + d["nvidia-snapshot.timer"] + "\n\n[Timer]\n"
                                  "OnActiveSec=20s\nOnUnitActiveSec=20s\nAccuracySec=1s\n\n"
                                  "[Install]\nWantedBy=timers.target\n"),
    }


ENABLED = {"nvidia-fabricmanager.service": "multi-user.target", "nvidia-dcgm.service": "multi-user.target",
           "kubelet.service": "multi-user.target", "nvidia-snapshot.timer": "timers.target"}
"""Units enabled as on the write-up's nodes (persistenced is disabled). The lab boots into its own
target, so enabled units do not start by themselves: the scenario starts them, in its order."""


def sshd_config(address: str) -> str:
    """The node's sshd: its own loopback address, root by key only, its own host key."""
    return (f"ListenAddress {address}:{SSH_PORT}\nHostKey /etc/ssh/ssh_host_ed25519_key\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UseDNS no\nMaxStartups 100:30:200\nMaxSessions 64\n")


def machine_id(name: str) -> str:
    """The lab node's own /etc/machine-id (what its kubelet reports as the Node's machineID)."""
    return digest("machine-id", name)[:32]


def node_files(name: str, address: str, python: str, authorized_key: str,
               device_files: list[str], slurm: SlurmImage | None = None) -> dict[str, tuple[str, int]]:
    """Every file a lab node adds to the host's root: ``{path: (text, mode)}``."""
    files: dict[str, tuple[str, int]] = {
        "/etc/hostname": (name + "\n", 0o644),
        # Its own machine id: journald and logind key on it (the host's would be shared by every node).
        "/etc/machine-id": (machine_id(name) + "\n", 0o444),
        "/etc/ssh/sshd_config.d/nvls-lab.conf": (sshd_config(address), 0o644),
        "/root/.ssh/authorized_keys": (authorized_key, 0o600),
        "/root/.profile": (ROOT_PROFILE, 0o644),
        "/root/.bashrc": (ROOT_BASHRC, 0o644),
        SIMULATED_MARKER: (LAB_MARKER, 0o644),
        "/usr/local/bin/journalctl": (JOURNALCTL_WRAPPER, 0o755),
        "/usr/local/bin/dmesg": (DMESG_WRAPPER, 0o755),
        KERNEL_LOG_TOOL: (script("kernel-log", python), 0o755),
        FM_CFG: ("# nvls-tui lab: the stand-in Fabric Manager reads nothing from here\n", 0o644),
        HW_DIR + "/.keep": ("", 0o644),
        HOLD: (script("nvls-lab-hold", python, module="nvls_tui.lab.daemons"), 0o755),
    }
    for tool in TOOLS:
        target = "nvls_tui.lab.daemons" if tool == "nv-fabricmanager" else "nvls_tui.lab.tools"
        files[f"/usr/bin/{tool}"] = (script(tool, python, module=target), 0o755)
    for daemon in DAEMONS:
        files[f"/usr/bin/{daemon}"] = (script(daemon, python, module="nvls_tui.lab.daemons"), 0o755)
    if slurm is not None:
        files[GRES_DEVICES] = (GRES_DEVICES_SCRIPT, 0o755)
    for unit, text in unit_files(device_files, slurm).items():
        files[f"/etc/systemd/system/{unit}"] = (text, 0o644)
    return files


def enabled_links(slurm: SlurmImage | None = None) -> dict[str, str]:
    """``{link path: target}``: the ``.wants`` symlinks ``systemctl enable`` would make.

    With ``slurm``, also ``/etc/slurm/slurm.conf`` (and the gres.conf and cgroup.conf Slurm reads beside
    it) to the lab's: Slurm's tools on the node find them as on a real node.
    """
    links = {f"/etc/systemd/system/{target}.wants/{unit}": f"/etc/systemd/system/{unit}"
             for unit, target in ENABLED.items()}
    if slurm is not None:
        folder = slurm.conf.rsplit("/", 1)[0]
        for name in ("slurm.conf", "gres.conf", "cgroup.conf"):
            links[f"{SLURM_ETC}/{name}"] = f"{folder}/{name}"
    return links


HOST_TIMERS = "/etc/systemd/system/timers.target.wants"
"""Where the host's packages enable their timers (Debian's ``systemctl enable``); a node's overlay shows them."""
KEPT_TIMERS = ("apt-daily.timer", "apt-daily-upgrade.timer")
"""The host's timers a lab node keeps: apt's, which the fm-restarters scenario runs (unattended-upgrades,
needrestart) and a repair's quiesce stops and starts again (nvls_tui.parsers.restarters)."""


def masked_links(host_timers: Iterable[str]) -> dict[str, str]:
    """``{unit path: /dev/null}``: the host's enabled timers a lab node masks (all but :data:`KEPT_TIMERS`).

    The node's target pulls in basic.target and with it timers.target, which started every timer the host
    enables, in every node: the Prometheus node exporter's collectors (``OnBootSec=0``, two of them every
    minute: apt_info.py, smartmon, ipmitool ...), man-db's, dpkg's backup. Nothing of the lab reads them; on this
    project's machines they were about 1.6 of a node's 2.9 cpu-s at boot. The lab's own units (``nvidia-snapshot.timer``) are never masked.
    """
    own = set(unit_files([]))
    return {f"/etc/systemd/system/{t}": "/dev/null" for t in sorted(host_timers)
            if t.endswith(".timer") and t not in KEPT_TIMERS and t not in own}

