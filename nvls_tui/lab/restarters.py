"""The lab act ``fm-restarters``: a node with the real needrestart and unattended-upgrades, and an FM that flaps.

The packages are Debian's own (bookworm): downloaded on the host with apt's ordinary client into the
lab's package cache (``apt-get install --download-only``, which fetches exactly what the host lacks),
then installed with ``dpkg -i`` inside the one node, so they land in that node's overlay layer and never
on the host. Their units and timers run in the node under its real systemd: unattended-upgrades'
unit, apt's ``apt-daily.timer`` and ``apt-daily-upgrade.timer`` (the host's apt package's), and
needrestart's apt hook. The site's choice that makes needrestart dangerous is written as a site writes
it (``conf.d``: restart mode ``a``); FM gets ``Restart=on-failure`` and crashes three times, so real
systemd's ``NRestarts`` is 3. As the simulator's ``sim:fm-restarters`` has it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from nvls_tui.lab.machine import LabError, LabNode, node_run, run
from nvls_tui.parsers.restarters import APT_TIMERS
from nvls_tui.sim.faults import AUTO_UPGRADES, NEEDRESTART_AUTO

PACKAGES = ("needrestart", "unattended-upgrades")
FM = "nvidia-fabricmanager.service"
FM_DROP_IN = "/etc/systemd/system/nvidia-fabricmanager.service.d/restart.conf"
FM_RESTART = "[Service]\nRestart=on-failure\nRestartSec=1\n"
FM_CRASHES = 3
IN_NODE = "/var/cache/nvls-lab-debs"


def cache_dir() -> Path:
    """Where the downloaded packages are kept between labs (``$XDG_CACHE_HOME/nvls-tui/lab-debs``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nvls-tui" / "lab-debs"


def download(cache: Path | None = None) -> list[Path]:
    """needrestart, unattended-upgrades and what the host lacks of their dependencies, as .deb files.

    Raises:
        LabError: apt could not fetch them (no network, no apt): one sentence saying so.
    """
    folder = cache or cache_dir()
    (folder / "partial").mkdir(parents=True, exist_ok=True)
    try:
        run(["apt-get", "install", "--download-only", "--yes", "-q", "-o", f"Dir::Cache::archives={folder}",
             *PACKAGES], timeout=600)
    except LabError as exc:
        raise LabError(f"the fm-restarters act needs Debian's {' and '.join(PACKAGES)} packages and apt could not "
                       f"download them: {exc}") from None
    debs = sorted(folder.glob("*.deb"))
    if not any(d.name.startswith("needrestart_") for d in debs):
        raise LabError(f"apt downloaded no needrestart package into {folder}")
    return debs


def install(node: LabNode, debs: list[Path]) -> None:
    """``dpkg -i`` of ``debs`` inside ``node`` (its own layer), copied in through its root."""
    inside = Path(f"/proc/{node.leader_pid}/root{IN_NODE}")
    inside.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        (inside / deb.name).write_bytes(deb.read_bytes())
    # Triggers (man-db's index) are left pending: they cost minutes on a loaded machine and change nothing here.
    node_run(node, "env", "DEBIAN_FRONTEND=noninteractive", "dpkg", "--no-triggers", "-i",
             *(f"{IN_NODE}/{d.name}" for d in debs), timeout=600)


def _write(node: LabNode, path: str, text: str) -> None:
    target = Path(f"/proc/{node.leader_pid}/root{path}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def _show(node: LabNode, prop: str, unit: str) -> str:
    return node_run(node, "systemctl", "show", "-p", prop, "--value", unit).stdout.strip()


def flap_fm(node: LabNode, crashes: int = FM_CRASHES) -> None:
    """Crash FM's main process ``crashes`` times (SIGABRT: a crash, which Restart=on-failure restarts)."""
    for n in range(1, crashes + 1):
        pid = _show(node, "MainPID", FM)
        node_run(node, "kill", "-ABRT", pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _show(node, "NRestarts", FM) == str(n) and _show(node, "ActiveState", FM) == "active" \
                    and _show(node, "MainPID", FM) not in ("0", pid):
                break
            time.sleep(0.3)
        else:
            raise LabError(f"{node.name}: systemd did not restart FM after crash {n}")


def prepare(node: LabNode) -> None:
    """Before the fault is acted: FM restarts on failure, as the site's drop-in says."""
    _write(node, FM_DROP_IN, FM_RESTART)
    node_run(node, "systemctl", "daemon-reload")


def add_restarters(node: LabNode, debs: list[Path] | None = None) -> None:
    """After the fault: FM flaps, the real packages are installed, set as the site set them, and run."""
    flap_fm(node)
    install(node, debs if debs is not None else download())
    _write(node, "/etc/needrestart/conf.d/50-autorestart.conf", NEEDRESTART_AUTO)
    # What `dpkg-reconfigure unattended-upgrades` answering yes writes (its postinst asks debconf).
    _write(node, "/etc/apt/apt.conf.d/20auto-upgrades", AUTO_UPGRADES)
    node_run(node, "systemctl", "start", *APT_TIMERS, "unattended-upgrades.service")


__all__ = ["FM_CRASHES", "PACKAGES", "add_restarters", "cache_dir", "download", "flap_fm", "install", "prepare"]
