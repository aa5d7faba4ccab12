"""A lab scenario is acted, not written: units are started and killed for real, in the order that
brought the write-up's nodes where they were.

- ``healthy``: FM starts on idle GPUs and registers them; then DCGM, kubelet (with its pods) and the
  snapshot timer.
- ``fm-killed`` (the seed incident's gpu05): a user's ``watch -n 1 nvidia-smi`` left in an SSH
  session; healthy, then FM's main process is sent SIGKILL, so real systemd reports ``failed
  (Result: signal)``; an NVLS job then fails (the kernel logs FABRIC_MANAGER_NOT_PRESENT).
- ``out-of-sync`` (gpu06 after its reboot): DCGM and the pods open the GPUs *before* FM starts, so FM
  registers them while they are held: Completed/Success, yet the driver's cached state is out of sync
  and an NVLS job fails with the kernel's out-of-sync line.

- ``fm-in-container`` (an operator-managed driver): the host has no ``nvidia-fabricmanager`` unit (its
  unit file is removed and systemd reloaded: real systemctl then says ``not-found``) and no
  ``nv-fabricmanager`` on its PATH (the binary moves into ``/run/nvidia/driver``, where the GPU Operator's
  driver container root shows on the host); FM is started as the driver pod's container is, in a
  transient ``cri-containerd-<id>.scope`` in the pod's real ``kubepods-besteffort-pod<uid>.slice``, on
  idle GPUs; then DCGM, kubelet (with its pods) and the snapshot timer.

- ``fm-restarters``: ``out-of-sync`` with FM set to restart on failure (a site's drop-in); then FM crashes
  three times (real systemd's NRestarts 3) and Debian's real needrestart and unattended-upgrades are
  installed into the node's own layer, needrestart set to restart on its own, apt's timers running
  (:mod:`nvls_tui.lab.restarters`).

- ``journal-rotated``: ``out-of-sync``, then the node's kernel journal file is archived (as journald
  rotates), a later kernel line starts a new one, the real ``journalctl --vacuum-files=1`` deletes the
  archived file, and the ring buffer drops its records from before FM's start (a wrapped buffer): the
  out-of-sync line is in the ring buffer only (:mod:`nvls_tui.lab.kernel_log`).

- ``k8s-out-of-sync`` (every node of ``k8s-incident``): ``out-of-sync`` on Kubernetes. The lab's stand-in API
  server (:mod:`nvls_tui.lab.cluster`, started by ``lifecycle`` before the act) runs the GPU Operator's operand
  pods and a vLLM pod as real processes in the node's kubepods slices; kubelet.service runs in API mode.

The scenario ``missing-device-files`` has every node act ``out-of-sync`` on HGX H200 hardware whose /dev
lacks nvidia-modeset, nvidia-nvlink and nvidia-nvswitchctl, as the real H200's does (its hardware is
written by ``lifecycle``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from nvls_tui.lab import restarters
from nvls_tui.lab.machine import LabError, LabNode, node_run, run

SERVICES = ("nvidia-dcgm.service", "kubelet.service")
TIMER = "nvidia-snapshot.timer"
FM = "nvidia-fabricmanager.service"
NVLS_JOB = ("all_reduce_perf", "-b", "8M", "-e", "8M", "-f", "2", "-g", "8")
SCENARIOS = ("seed-incident", "healthy", "missing-device-files", "fm-in-container", "fm-restarters",
             "journal-rotated", "k8s-incident")
"""The scenarios the lab can act (the in-process simulator knows more)."""


def act_of(scenario: str, host: str) -> str:
    """The act a node plays in ``scenario``."""
    if scenario == "seed-incident":
        return {"gpu05": "fm-killed", "gpu06": "out-of-sync"}.get(host, "healthy")
    if scenario == "missing-device-files":
        return "out-of-sync"  # gpu06's fault, as the simulator's sim:missing-device-files has it
    if scenario == "fm-in-container":
        return "fm-in-container"
    if scenario == "fm-restarters":
        return "fm-restarters"  # sim:fm-restarters: gpu06's fault where needrestart and apt restart FM
    if scenario == "journal-rotated":
        return "journal-rotated"  # sim:journal-rotated: gpu06's fault, then the journal vacuumed
    if scenario == "k8s-incident":
        return "k8s-out-of-sync"  # gpu06's fault on Kubernetes, on every node: the pods open the GPUs before FM
    return "healthy"


def uses_cluster(scenario: str) -> bool:
    """Whether ``scenario`` runs the lab's Kubernetes API server (:mod:`nvls_tui.lab.cluster`)."""
    return scenario == "k8s-incident"


def _wait(what: str, node: LabNode, ok: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.2)
    raise LabError(f"{node.name}: {what} did not happen within {timeout:.0f} s")


def _registered(node: LabNode) -> bool:
    """Every GPU Completed, as the node's nvidia-smi reads it (reading is what moves the model on)."""
    out = node_run(node, "nvidia-smi", "--query-gpu=fabric.state", "--format=csv,noheader", check=False).stdout
    states = out.split("\n")[:-1]
    return bool(states) and all(s.strip() == "Completed" for s in states)


def _holders(node: LabNode) -> int:
    out = node_run(node, "sh", "-c", "fuser /dev/nvidia0 2>/dev/null", check=False).stdout
    return len(out.split())


def start(node: LabNode, *units: str) -> None:
    """``systemctl start`` for real inside the node."""
    node_run(node, "systemctl", "start", *units)


def _fm_then_holders(node: LabNode) -> None:
    start(node, FM)
    _wait("the fabric registration", node, lambda: _registered(node))
    start(node, *SERVICES, TIMER)
    _wait("the GPU Operator pods", node, lambda: _holders(node) >= 5)


def _nvls_job(node: LabNode, code: str) -> None:
    """An NVLS all_reduce_perf that fails as the user's job did; wait until the kernel's line shows.

    The driver logs the failed bind a moment into the run (NCCL's init), which may be after the
    failed job has printed its last line: the scenario is acted once the line is there.
    """
    node_run(node, *NVLS_JOB, check=False, timeout=30)
    _wait(f"the kernel's {code} line", node,
          lambda: code in node_run(node, "journalctl", "-k", "--no-pager", check=False).stdout)


# Where the GPU Operator's driver container root shows on the host (its nv-fabricmanager lives there).
DRIVER_ROOT = "/run/nvidia/driver"


def _fm_in_driver_pod(node: LabNode) -> None:
    """No host FM unit and no host nv-fabricmanager; FM runs in the driver pod's cgroup, on idle GPUs."""
    from nvls_tui.lab.image import FM_CFG
    from nvls_tui.sim.base_nodes import pod_uid
    from nvls_tui.sim.faults import DRIVER_POD_ROLE
    from nvls_tui.sim.state import digest

    path = node_run(node, "systemctl", "show", "-p", "FragmentPath", "--value", FM).stdout.strip()
    node_run(node, "systemctl", "disable", "--quiet", FM, check=False)
    node_run(node, "sh", "-c", f"rm -f {path} && systemctl daemon-reload" if path else "systemctl daemon-reload")
    node_run(node, "sh", "-c", f"mkdir -p {DRIVER_ROOT}/usr/bin && mv /usr/bin/nv-fabricmanager {DRIVER_ROOT}/usr/bin/")
    uid = pod_uid(node.name, DRIVER_POD_ROLE).replace("-", "_")
    container = digest(node.name, DRIVER_POD_ROLE, 0)[:64]
    # Detached, all of its descriptors away from this exec: the scope's process outlives the command.
    node_run(node, "sh", "-c", f"setsid systemd-run --quiet --scope --slice=kubepods-besteffort-pod{uid}.slice "
                               f"--unit=cri-containerd-{container} -- {DRIVER_ROOT}/usr/bin/nv-fabricmanager -c {FM_CFG} "
                               "</dev/null >/dev/null 2>&1 &")
    _wait("the fabric registration", node, lambda: _registered(node))
    start(node, *SERVICES, TIMER)
    _wait("the GPU Operator pods", node, lambda: _holders(node) >= 5)


# A kernel line logged after the fault (the simulator's sim:journal-rotated logs the same one).
LATER_KERNEL_LINE = "NVRM: nvidia-nvswitch: link training retried on 0000:05:00.0 (FABRIC)"


def _journal_rotated(node: LabNode) -> None:
    """gpu06's out-of-sync fault, then the journal rotated and vacuumed after it with the real journalctl:
    the journal's kernel lines start after the fault, and only the ring buffer (which has wrapped too:
    it starts after the boot, at FM's start) still holds the out-of-sync line."""
    from nvls_tui.lab.kernel_log import TOOL

    fm_start = time.time()
    act(node, "out-of-sync")
    node_run(node, TOOL, "rotate")
    # check --json dates kernel lines to the second: the later line must fall in a later second than the
    # fault, or the journal's first entry and the ring buffer's out-of-sync line read as the same moment
    # (seen once in CI on a fast run).
    time.sleep(1.1)
    node_run(node, TOOL, "print", LATER_KERNEL_LINE)
    node_run(node, "journalctl", "--vacuum-files=1")
    node_run(node, TOOL, "wrap", f"{fm_start:.6f}")
    if "OUT_OF_SYNC" in node_run(node, "journalctl", "-k", "-b", "--no-pager", check=False).stdout:
        raise LabError(f"{node.name}: the vacuumed journal still holds the out-of-sync line")


def _k8s_out_of_sync(node: LabNode) -> None:
    """gpu06's fault on Kubernetes: the API server's pods (started when the lab's server started, before this
    act) hold the GPUs; then DCGM and kubelet (in API mode: it starts no pods of its own), FM (registered while
    held: out of sync) and the timer; an NVLS job fails with the out-of-sync line."""
    from nvls_tui.lab import cluster

    cluster.api_kubelet(node)
    _wait("the cluster's pods", node, lambda: _holders(node) >= cluster.HOLDING)
    start(node, *SERVICES)
    start(node, FM, TIMER)
    _wait("the fabric registration", node, lambda: _registered(node))
    _nvls_job(node, "NV_ERR_FABRIC_STATE_OUT_OF_SYNC")


WATCH_USER, WATCH_UID = "ubuntu", "1001"
WATCH = "watch -n 1 nvidia-smi"


def watch_loop(node: LabNode, ssh_config: Path) -> None:
    """An operator's forgotten ``watch -n 1 nvidia-smi``, left running in a real SSH login session.

    The user logs in through the node's sshd (so pam_systemd puts the session in
    ``user-UID.slice/session-N.scope``), starts the loop in a detached tmux (``watch`` needs a
    terminal) and logs out; logind leaves the processes running, as on the write-up's node.
    """
    if node_run(node, "id", "-u", WATCH_USER, check=False).returncode != 0:
        node_run(node, "useradd", "-m", "-u", WATCH_UID, "-s", "/bin/bash", WATCH_USER)
        home = f"/home/{WATCH_USER}"
        node_run(node, "sh", "-c", f"mkdir -p {home}/.ssh && cp /root/.ssh/authorized_keys {home}/.ssh/ && "
                                   f"chown -R {WATCH_USER}: {home}/.ssh && chmod 700 {home}/.ssh")
    run(["ssh", "-F", str(ssh_config), "-l", WATCH_USER, node.name,
         f"tmux new-session -d -s watch '{WATCH}'"], timeout=30)
    _wait("the watch loop", node,
          lambda: node_run(node, "pgrep", "-u", WATCH_USER, "-f", f"^{WATCH}$", check=False).returncode == 0)


def act(node: LabNode, name: str, ssh_config: Path | None = None) -> None:
    """Play act ``name`` on a booted node (``ssh_config`` reaches it: the watch loop logs in through it)."""
    if name == "fm-killed" and ssh_config is not None:
        watch_loop(node, ssh_config)
    if name == "healthy":
        _fm_then_holders(node)
    elif name == "fm-killed":
        _fm_then_holders(node)
        main_pid = node_run(node, "systemctl", "show", "-p", "MainPID", "--value", FM).stdout.strip()
        node_run(node, "kill", "-KILL", main_pid)
        _wait("FM's failure", node,
              lambda: node_run(node, "systemctl", "is-failed", FM, check=False).stdout.strip() == "failed")
        _nvls_job(node, "NV_ERR_FABRIC_MANAGER_NOT_PRESENT")
    elif name == "fm-in-container":
        _fm_in_driver_pod(node)
    elif name in ("out-of-sync", "fm-restarters"):
        if name == "fm-restarters":
            restarters.prepare(node)  # FM restarts on failure (the site's drop-in), before it first starts
        start(node, *SERVICES)
        _wait("the GPU Operator pods", node, lambda: _holders(node) >= 5)
        start(node, FM, TIMER)
        _wait("the fabric registration", node, lambda: _registered(node))
        _nvls_job(node, "NV_ERR_FABRIC_STATE_OUT_OF_SYNC")
        if name == "fm-restarters":
            # FM crashes 3 times, then the real needrestart and unattended-upgrades go in (nvls_tui/lab/restarters.py).
            restarters.add_restarters(node)
    elif name == "journal-rotated":
        _journal_rotated(node)
    elif name == "k8s-out-of-sync":
        _k8s_out_of_sync(node)
    else:
        raise LabError(f"unknown lab act {name!r}")
