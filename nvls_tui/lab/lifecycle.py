"""``lab up``, ``lab status`` and ``lab down``: the whole life of a lab folder.

``up`` writes each node's layer, mounts its root, boots it, waits for systemd and sshd, acts the
scenario, then writes ``DIR/ssh_config`` and ``DIR/known_hosts`` (each node's own host key). Whatever
fails part way, what was already made is recorded in ``DIR/lab.json`` first and torn down again.

With ``slurm``, a real Slurm cluster runs over the nodes (:mod:`nvls_tui.lab.slurm`): the host's
munged and slurmctld start before the nodes boot, each node's munged and slurmd start with it, and
``up`` returns once ``sinfo`` shows every node idle.

A scenario on Kubernetes (``k8s-incident``) also runs the lab's stand-in API server (:mod:`nvls_tui.lab.cluster`):
started once the nodes have booted and before the act (its pods are real processes in the nodes), stopped
first by ``down``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nvls_tui.lab import acts
from nvls_tui.lab import bastion as bastion_
from nvls_tui.lab import cluster as kube_
from nvls_tui.lab import slurm as slurm_
from nvls_tui.lab.hardware import new_hardware
from nvls_tui.lab.image import HOST_TIMERS, OWN_DIRS, SSH_PORT, SlurmImage, enabled_links, masked_links, node_files
from nvls_tui.lab.machine import (
    DEFAULT_SUBNET,
    LabError,
    LabNode,
    address_of,
    boot,
    is_process,
    load_kube,
    load_slurm,
    load_state,
    missing_requirements,
    mount_overlay,
    mounted_under,
    running,
    save_state,
    ssh_banner,
    stop,
    wait_booted,
)
from nvls_tui.localfiles import make_private_dirs
from nvls_tui.sim.base_nodes import base_node
from nvls_tui.sim.clock import SimClock
from nvls_tui.sim.faults import without_h200_shared_files

Say = Callable[[str], None]


def _keygen(path: Path, comment: str) -> str:
    if not path.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, capture_output=True)
    return path.with_suffix(".pub").read_text()


def _hardware(node: LabNode, scenario: str) -> list[str]:
    """Write the node's fresh hardware (GPUs not yet registered: FM has not run); its device files.

    In ``missing-device-files`` the node is an HGX H200 whose /dev lacks nvidia-modeset, nvidia-nvlink and
    nvidia-nvswitchctl, as the real H200's does: the devices unit creates only the files returned here.
    """
    now = time.time()
    hw = base_node(node.name, now, boot_age=10.0)
    if scenario == "missing-device-files":
        without_h200_shared_files(hw)
    for gpu in hw.gpus:
        gpu.fabric_state, gpu.fabric_status = "Not Started", "N/A"
    hw.scenario = "lab"
    hw.needs_reset = hw.out_of_sync = False
    hw.reg_in_progress_at = hw.reg_complete_at = None
    devices = hw.device_files()
    new_hardware(node.hw, hw, SimClock(speed=1.0, start=now, real_start=now))
    return devices


def _own_homes(node: LabNode) -> Path:
    """The machine's upper layer with homes of its own (:data:`OWN_DIRS`); returns the layer."""
    upper = Path(node.folder, "upper")
    for own, mode in OWN_DIRS.items():
        # Opaque: the overlay shows none of the host's folder below it (its ~/.bashrc, its pyenv, ...).
        folder = upper / own.lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        try:
            os.setxattr(folder, "trusted.overlay.opaque", b"y")
        except OSError as exc:
            raise LabError(f"{node.name}: cannot give it a {own} of its own: {node.folder} is on a file system "
                           f"without trusted extended attributes ({exc.strerror}); give a --dir elsewhere") from exc
        os.chmod(folder, mode)
    return upper


def _write_files(upper: Path, files: dict[str, tuple[str, int]], links: dict[str, str]) -> None:
    for path, (text, mode) in files.items():
        target = upper / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        os.chmod(target, mode)
    for link, dest in links.items():
        target = upper / link.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_symlink():
            target.symlink_to(dest)


def _masked_timers() -> dict[str, str]:
    """The host's timers a machine of the lab masks (:func:`nvls_tui.lab.image.masked_links`)."""
    try:
        return masked_links(os.listdir(HOST_TIMERS))
    except OSError:  # a host that enables no timer
        return {}


def _host_key(upper: Path, name: str) -> None:
    host_key = upper / "etc" / "ssh" / "ssh_host_ed25519_key"
    host_key.unlink(missing_ok=True)
    host_key.with_suffix(".pub").unlink(missing_ok=True)
    _keygen(host_key, f"root@{name}")


def _write_layer(node: LabNode, lab_key: str, scenario: str, slurm: SlurmImage | None = None) -> list[str]:
    """Write the node's upper layer for ``scenario``; returns its device files."""
    devices = _hardware(node, scenario)
    upper = _own_homes(node)
    _write_files(upper, node_files(node.name, node.address, sys.executable, lab_key, devices, slurm),
                 {**enabled_links(slurm), **_masked_timers()})
    os.chmod(upper / "root" / ".ssh", 0o700)
    _host_key(upper, node.name)
    return devices


def _write_bastion(folder: Path, bastion: LabNode, nodes: list[LabNode], lab_key: str, slurm: bool) -> None:
    """Write the bastion's upper layer (:mod:`nvls_tui.lab.bastion`): nvls-tui, its unit, the nodes' SSH."""
    upper = _own_homes(bastion)
    bastion.hw.mkdir(parents=True, exist_ok=True)  # boot() binds every machine's; the bastion's stays empty
    files = bastion_.files(bastion, nodes, sys.executable, lab_key, (folder / "id_ed25519").read_text(),
                           _known_hosts(nodes), bastion_.unit_source().read_text())
    _write_files(upper, {**files, **(bastion_.slurm_files(folder) if slurm else {})}, _masked_timers())
    os.chmod(upper / "root" / ".ssh", 0o700)
    _host_key(upper, bastion.name)


def _known_hosts(nodes: list[LabNode]) -> str:
    """The machines' host keys, as ``known_hosts`` lines (each its own, written with its layer)."""
    known = []
    for node in nodes:
        pub = Path(node.folder, "upper/etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
        known.append(f"[{node.address}]:{SSH_PORT} {pub[0]} {pub[1]}")
    return "\n".join(known) + "\n"


def _client_files(folder: Path, nodes: list[LabNode]) -> None:
    config = []
    for node in nodes:
        config.append(f"Host {node.name}\n  HostName {node.address}\n  Port {SSH_PORT}\n  User root\n"
                      f"  IdentityFile {folder / 'id_ed25519'}\n  IdentitiesOnly yes\n"
                      f"  UserKnownHostsFile {folder / 'known_hosts'}\n  StrictHostKeyChecking yes\n")
    (folder / "known_hosts").write_text(_known_hosts(nodes))
    (folder / "ssh_config").write_text("\n".join(config))


def up(folder: Path, names: list[str], scenario: str, say: Say = print, subnet: int = DEFAULT_SUBNET,
       slurm: bool = False, bastion: bool = False) -> list[LabNode]:
    """Boot ``names`` as lab nodes acting ``scenario``; returns the nodes (``DIR/ssh_config`` reaches them).

    With ``slurm``, also a Slurm cluster over them (``SLURM_CONF=DIR/slurm.conf``), every node idle.
    With ``bastion``, also the lab's bastion (:mod:`nvls_tui.lab.bastion`), booted last and returned last: a
    machine of its own with nvls-tui's autopilot unit installed, never a Slurm or Kubernetes node.

    Raises:
        LabError: the lab cannot run here, or a node did not come up (what was made is undone).
    """
    problem = missing_requirements() or (slurm_.missing() if slurm else None)
    if problem:
        raise LabError(problem)
    if scenario not in acts.SCENARIOS:
        raise LabError(f"the lab acts the scenarios {', '.join(acts.SCENARIOS)}, not {scenario!r}")
    _, old = load_state(folder)
    if any(running(n) for n in old):
        raise LabError(f"a lab is already up in {folder}: run `nvls-tui lab down --dir {folder}` first")
    if old:
        down(folder, say=lambda _t: None)
    if folder.exists() and not (folder / "lab.json").exists() and any(folder.iterdir()):
        # The lab writes (and `lab down` removes) id_ed25519, known_hosts, ssh_config: never in a folder
        # that holds something else (`--dir ~/.ssh` would cost the operator their own key).
        raise LabError(f"{folder} is not empty and is not a lab folder: give an empty or new --dir")
    if bastion and bastion_.NAME in names:
        raise LabError(f"{bastion_.NAME} is the lab's bastion's name: give the nodes other names")
    nodes = [LabNode(name, address_of(i, subnet), str(folder / "nodes" / name)) for i, name in enumerate(names)]
    if slurm:
        slurm_.check_ready(folder, nodes, subnet)
    make_private_dirs(folder)  # the state directory above the default lab/ too, when it is new
    os.chmod(folder, 0o700)
    lab_key = _keygen(folder / "id_ed25519", "nvls-tui-lab")
    taken = [n.address for n in nodes if ssh_banner(n.address)]
    if taken:
        raise LabError(f"{taken[0]}:{SSH_PORT} is already in use (another lab?): bring it down first")
    cluster = slurm_.SlurmLab(subnet) if slurm else None
    tracking = slurm_.host_tracking() if slurm else "linuxproc"
    controllers = slurm_.JOB_CONTROLLERS if tracking == "cgroup" else ()
    kube: dict[str, int] = {}  # the k8s-incident scenario's API server, once started

    def record() -> None:
        save_state(folder, scenario, nodes, cluster.to_json() if cluster is not None else None, kube or None)

    try:
        devices: list[str] = []
        for node in nodes:
            say(f"{node.name}: preparing its root")
            devices = _write_layer(node, lab_key, scenario, slurm_.node_image(folder, node) if slurm else None)
        if cluster is not None:
            record()
            gpus = sum(1 for d in devices if d[len("/dev/nvidia"):].isdecimal())
            slurm_.write_files(folder, nodes, subnet, gpus, tracking)
            say(f"slurm: starting munged and slurmctld ({slurm_.ctld_address(subnet)}:{slurm_.ctld_port(subnet)})")
            slurm_.start_munged(folder, cluster, record)
            slurm_.start_slurmctld(folder, cluster, record)
        for node in nodes:
            mount_overlay(node)
            record()
            boot(node, slurm_.node_binds(folder, node) if slurm else (), controllers)
            record()
        say("booting " + ", ".join(n.name for n in nodes))
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            list(pool.map(wait_booted, nodes))
            _client_files(folder, nodes)
            if acts.uses_cluster(scenario):
                say("kubernetes: starting the lab's API server (its pods run in the nodes)")
                kube["pid"] = kube_.start_server(folder)
                record()
            say(f"acting the {scenario} scenario")
            list(pool.map(lambda n: acts.act(n, acts.act_of(scenario, n.name), folder / "ssh_config"), nodes))
        if cluster is not None:
            say("slurm: waiting for every node to be idle")
            slurm_.wait_idle(folder, names)
        if bastion:
            say(f"{bastion_.NAME}: booting it ({bastion_.UNIT} installed; the nodes in {bastion_.SSH_CONFIG})")
            machine = LabNode(bastion_.NAME, bastion_.address(subnet), str(folder / "nodes" / bastion_.NAME))
            _write_bastion(folder, machine, list(nodes), lab_key, slurm)
            nodes.append(machine)  # recorded with the nodes: `lab down` stops it as it stops them
            mount_overlay(machine)
            record()
            boot(machine, bastion_.slurm_binds(folder) if slurm else ())
            record()
            wait_booted(machine)
            _client_files(folder, nodes)  # ssh -F DIR/ssh_config bastion
    except BaseException:
        record()
        down(folder, say=lambda _t: None)
        raise
    say(f"lab up: {len(nodes)} node(s); ssh -F {folder / 'ssh_config'} {nodes[0].name}")
    if kube:
        say(f"lab up: Kubernetes (the lab's stand-in API server): KUBECONFIG={folder / kube_.KUBECONFIG} "
            "kubectl get pods -A -o wide")
    if cluster is not None:
        say(f"lab up: Slurm cluster {slurm_.CLUSTER}, partition {slurm_.PARTITION} ({', '.join(names)} idle); "
            f"SLURM_CONF={slurm_.conf_path(folder)} sinfo")
    return nodes


def status(folder: Path) -> list[tuple[LabNode, bool]]:
    """Each recorded node and whether its container runs."""
    _, nodes = load_state(folder)
    return [(n, running(n)) for n in nodes]


def slurm_status(folder: Path) -> slurm_.SlurmStatus | None:
    """The lab's Slurm (slurmctld, munged, each node's Slurm state), or None without ``--slurm``."""
    record = load_slurm(folder)
    return slurm_.status(folder, slurm_.SlurmLab.from_json(record)) if record is not None else None


def down(folder: Path, say: Say = print) -> None:
    """Stop every container, unmount every root and remove every file the lab made in ``folder``.

    Only in a lab folder (one with ``lab.json``): elsewhere nothing is touched.
    """
    if not (folder / "lab.json").exists():
        say(f"lab down: no lab in {folder}")
        return
    _, nodes = load_state(folder)
    record = load_slurm(folder)
    cluster = slurm_.SlurmLab.from_json(record) if record is not None else None
    kube = load_kube(folder)
    if kube is not None:  # first: its hooks reach into the nodes
        kube_.stop_server(int(kube.get("pid", 0)), folder)
    if cluster is not None and is_process(cluster.slurmctld_pid, "slurmctld"):
        slurm_.cancel_jobs(folder)  # the jobs end as scancel ends them; the containers' poweroff ends the rest
    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        list(pool.map(stop, nodes))
    if cluster is not None:
        slurm_.stop(folder, cluster)
    left = mounted_under(folder)
    if left:
        raise LabError(f"could not unmount {left[0]}; see `findmnt {left[0]}`")
    if cluster is not None:
        slurm_.remove_files(folder)
    for name in ("nodes", "lab.json", "ssh_config", "known_hosts", "id_ed25519", "id_ed25519.pub", kube_.KUBECONFIG,
                 kube_.LOG_DIR):
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    say(f"lab down: {len(nodes)} node(s) stopped" if nodes else f"lab down: no lab in {folder}")


def down_abandoned(root: Path, prefix: str) -> list[Path]:
    """Bring down every lab folder ``prefix*`` of a pytest run under ``root`` whose owner is gone (a test run
    that was killed could not tear its lab down; a running run's lab is left alone). Returns those it took down."""
    from nvls_tui.lab.machine import owner_alive

    taken = []
    for stale in [*root.glob(f"pytest-of-*/pytest-*/{prefix}*/lab.json"),
                  *root.glob(f"pytest-of-*/pytest-*/*/{prefix}*/lab.json")]:
        if not owner_alive(stale.parent):
            down(stale.parent, say=lambda _t: None)
            taken.append(stale.parent)
    return taken
