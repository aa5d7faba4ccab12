"""systemd's side of a simulated node: what start, stop, restart and reset-failed do to each unit."""

from __future__ import annotations

from nvls_tui.sim import fabric
from nvls_tui.sim.processes import exit_process, fm_went_away, gpu_devices, run_snapshot
from nvls_tui.sim.state import FM_ARGV, Node, Unit

HOSTENGINE_ARGV = ["/snap/dcgm/62/usr/bin/nv-hostengine", "-n"]
KUBELET_ARGV = ["/usr/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml",
                "--container-runtime-endpoint=unix:///run/containerd/containerd.sock"]
PERSISTENCED_ARGV = ["/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced", "--no-persistence-mode",
                     "--verbose"]
FM_DEVICES = ["/dev/nvidiactl", "/dev/nvidia-nvswitchctl", "/dev/nvidia-nvswitch0", "/dev/nvidia-nvswitch1",
              "/dev/nvidia-nvswitch2", "/dev/nvidia-nvswitch3"]


def _job_failed(name: str, control: bool) -> str:
    why = " because the control process exited with error code" if control else ""
    return (f"Job for {name} failed{why}.\n"
            f"See \"systemctl status {name}\" and \"journalctl -xeu {name}\" for details.\n")


def spawn_unit_process(node: Node, unit: Unit, now: float) -> None:
    """Start the main process of ``unit`` (what ExecStart runs)."""
    cgroup = f"0::/system.slice/{unit.name}"
    name = unit.name
    if name == "nvidia-fabricmanager.service":
        proc = node.spawn(ppid=1, user="root", start=now, argv=list(FM_ARGV), cgroup=cgroup,
                          devices=[d for d in FM_DEVICES if d in node.device_files()],
                          role="fm", unit=name)
    elif name == "nvidia-dcgm.service":
        proc = node.spawn(ppid=1, user="root", start=now, argv=list(HOSTENGINE_ARGV), cgroup=cgroup,
                          devices=gpu_devices(node, ("/dev/nvidiactl", "/dev/nvidia-uvm")), role="hostengine",
                          unit=name, access="F...m")
    elif name == "kubelet.service":
        proc = node.spawn(ppid=1, user="root", start=now, argv=list(KUBELET_ARGV), cgroup=cgroup,
                          role="kubelet", unit=name)
    elif name == "nvidia-persistenced.service":
        proc = node.spawn(ppid=1, user="nvidia-persistenced", start=now, argv=list(PERSISTENCED_ARGV),
                          cgroup=cgroup, devices=gpu_devices(node), role="persistenced", unit=name)
        for gpu in node.gpus:
            gpu.persistence = True
    elif name == "nvidia-snapshot.service":
        run_snapshot(node, now)
        return
    else:
        unit.active, unit.sub = "active", "waiting" if name.endswith(".timer") else "running"
        return
    unit.main_pid = proc.pid


def start(node: Node, name: str, now: float) -> tuple[int, str]:
    """``systemctl start NAME``: (exit status, stderr)."""
    unit = node.unit(name)
    full = node.unit_name(name)
    if unit is None or unit.load == "not-found":
        return 5, f"Failed to start {full}: Unit {full} not found.\n"
    if unit.load == "masked":
        return 1, f"Failed to start {full}: Unit {full} is masked.\n"
    if unit.active in ("active", "activating"):
        return 0, ""
    if unit.name == "nvidia-fabricmanager.service":
        if unit.needs_reset_failed and unit.result == "start-limit-hit":
            unit.result = "start-limit-hit"
            node.log_unit(now, unit.name, "systemd", f"{unit.name}: Start request repeated too quickly.", 1)
            node.log_unit(now, unit.name, "systemd", f"{unit.name}: Failed with result 'start-limit-hit'.", 1)
            node.log_unit(now, unit.name, "systemd", f"Failed to start {unit.name} - {unit.description}.", 1)
            return 1, _job_failed(unit.name, control=False)
        if node.fm_mismatch:
            return _fm_version_mismatch(node, unit, now)
    node.log_unit(now, unit.name, "systemd", f"Starting {unit.name} - {unit.description}...", 1)
    unit.active, unit.sub, unit.result, unit.since = "active", "running", "success", now
    unit.restarts = 0  # a start by hand zeroes NRestarts (only Restart= restarts count)
    unit.active_enter = now
    unit.exec_code = unit.exec_status = ""
    spawn_unit_process(node, unit, now)
    if unit.name == "nvidia-fabricmanager.service":
        _fm_started_journal(node, unit, now)
        fabric.fm_started(node, now)
    elif unit.name != "nvidia-snapshot.service":
        node.log_unit(now, unit.name, "systemd", f"Started {unit.name} - {unit.description}.", 1)
    return 0, ""


def _fm_started_journal(node: Node, unit: Unit, now: float) -> None:
    script = node.alloc_pid()
    node.log_unit(now, unit.name, "nvidia-fabricmanager-start.sh", "Detected Pre-NVL5 system", script)
    node.log_unit(now + 0.5, unit.name, "nv-fabricmanager", "Connected to 1 node.", unit.main_pid)
    node.log_unit(now + 1.5, unit.name, "nv-fabricmanager",
                  "Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink "
                  "Peer-to-Peer support will be enabled once the GPUs are successfully registered with the "
                  "NVLink fabric.", unit.main_pid)
    node.log_unit(now + 1.5, unit.name, "nvidia-fabricmanager-start.sh", 'Started "Nvidia Fabric Manager"', script)
    node.log_unit(now + 1.5, unit.name, "systemd", f"Started {unit.name} - {unit.description}.", 1)


def _fm_version_mismatch(node: Node, unit: Unit, now: float) -> tuple[int, str]:
    pid = node.alloc_pid()
    node.log_unit(now, unit.name, "systemd", f"Starting {unit.name} - {unit.description}...", 1)
    node.log_unit(now, unit.name, "nv-fabricmanager",
                  f"fabric manager NVIDIA GPU driver interface version {node.fm_version} don't match with "
                  f"driver version {node.driver}. Please update with matching NVIDIA driver package.", pid)
    node.log_unit(now, unit.name, "systemd", f"{unit.name}: Control process exited, code=exited, status=1/FAILURE", 1)
    node.log_unit(now, unit.name, "systemd", f"{unit.name}: Failed with result 'exit-code'.", 1)
    node.log_unit(now, unit.name, "systemd", f"Failed to start {unit.name} - {unit.description}.", 1)
    unit.active, unit.sub, unit.result, unit.since = "failed", "failed", "exit-code", now
    unit.exec_code, unit.exec_status, unit.last_pid, unit.main_pid = "exited", "1/FAILURE", pid, 0
    return 1, _job_failed(unit.name, control=True)


def stop(node: Node, name: str, now: float) -> tuple[int, str]:
    """``systemctl stop NAME``: (exit status, stderr). A failed unit stays failed."""
    unit = node.unit(name)
    full = node.unit_name(name)
    if unit is None or unit.load == "not-found":
        return 5, f"Failed to stop {full}: Unit {full} not loaded.\n"
    was_running = unit.active in ("active", "activating", "reloading")
    if was_running:
        node.log_unit(now, unit.name, "systemd", f"Stopping {unit.name} - {unit.description}...", 1)
    for proc in [p for p in node.procs.values() if p.unit == unit.name]:
        node.procs.pop(proc.pid, None)
        if proc.role == "fm":
            fm_went_away(node)
        if proc.role == "persistenced":
            for gpu in node.gpus:
                gpu.persistence = False
        for child in node.procs.values():
            if child.ppid == proc.pid:
                child.ppid = 1
    if unit.main_pid:
        unit.last_pid = unit.main_pid
        unit.exec_code, unit.exec_status = "killed", "TERM"
    unit.main_pid = 0
    if was_running:
        unit.active, unit.sub, unit.result, unit.since = "inactive", "dead", "success", now
        if unit.name == "nvidia-fabricmanager.service":
            node.log_unit(now, unit.name, "nvidia-fabricmanager-start.sh", 'Stopped "Nvidia Fabric Manager"',
                          node.alloc_pid())
        node.log_unit(now, unit.name, "systemd", f"{unit.name}: Deactivated successfully.", 1)
        node.log_unit(now, unit.name, "systemd", f"Stopped {unit.name} - {unit.description}.", 1)
    if unit.name == "nvidia-fabricmanager.service":
        fm_went_away(node)
    return 0, ""


def restart_by_hand(node: Node, name: str, now: float) -> None:
    """``systemctl restart NAME`` as a person or a tool runs it: a stop and a start, no ``Restart=`` restart (so
    ``NRestarts`` stays as it was: a start by hand sets it to 0)."""
    stop(node, name, now)
    start(node, name, now)


def advance_fm_flaps(node: Node, now: float) -> None:
    """The restarts of FM that ``node.fm_flap_every`` schedules, up to ``now`` (sim:fm-flapping)."""
    fm = node.units.get("nvidia-fabricmanager.service")
    if node.fm_flap_every <= 0 or fm is None or fm.active != "active" or fm.active_enter is None:
        return
    while fm.active_enter is not None and fm.active_enter + node.fm_flap_every <= now:
        restart_by_hand(node, fm.name, fm.active_enter + node.fm_flap_every)


def reset_failed(node: Node, name: str) -> tuple[int, str]:
    """``systemctl reset-failed NAME``: a failed unit becomes inactive and may start again."""
    unit = node.unit(name)
    full = node.unit_name(name)
    if unit is None or unit.load == "not-found":
        return 1, f"Failed to reset failed state of unit {full}: Unit {full} not loaded.\n"
    if unit.active == "failed":
        unit.active, unit.sub, unit.result = "inactive", "dead", "success"
    unit.needs_reset_failed = False
    unit.restarts = 0  # reset-failed zeroes NRestarts too
    return 0, ""


def kill_unit_processes(node: Node, name: str, signo: int, now: float) -> None:
    """Helper for ``systemctl kill``: signal every process of the unit's cgroup."""
    for proc in [p for p in node.procs.values() if p.unit == name]:
        if proc.pid in node.procs:
            exit_process(node, proc, now, signo)
