"""What time and signals do to a simulated node: loops that spawn holders, kubelet, process deaths.

State advances lazily: :func:`advance` brings a node from its last command to ``now`` in one go,
materialising only what is alive at ``now`` (a snapshot run that came and went unobserved leaves
nothing behind, just as on a real node between two polls).
"""

from __future__ import annotations

import math
import signal as _signal

from nvls_tui.sim.state import Node, PodSpec, Proc, digest

SNAPSHOT_PERIOD = 60.0  # nvidia-snapshot.timer: OnCalendar=minutely
SNAPSHOT_RUN = 3.0  # how long each snapshot's nvidia-smi keeps the devices open
WATCH_CYCLE = 2.0  # `watch -n 1 nvidia-smi`: ~1 s of nvidia-smi on 8 GPUs plus the 1 s interval
POD_RESTART = 5.0  # kubelet notices a dead container and starts a new one

# Signals whose exit systemd counts as clean (SuccessExitStatus defaults): the unit ends inactive.
CLEAN_SIGNALS = {_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGPIPE}
SIGNAL_NAMES = {int(s): s.name.removeprefix("SIG") for s in _signal.Signals}

GPU_NVSMI_DEVICES = "gpus+ctl"


def gpu_devices(node: Node, extra: tuple[str, ...] = ("/dev/nvidiactl",)) -> list[str]:
    """The device files a process that opens every GPU holds."""
    return [f"/dev/nvidia{g.index}" for g in node.gpus] + list(extra)


def nvidia_smi_proc(node: Node, *, start: float, ppid: int, user: str, cgroup: str, role: str,
                    argv: list[str], unit: str | None = None, expires: float | None = None) -> Proc:
    """Spawn an nvidia-smi that holds every GPU while it runs."""
    return node.spawn(ppid=ppid, user=user, start=start, argv=argv, cgroup=cgroup,
                      devices=gpu_devices(node), role=role, unit=unit, expires=expires)


def spawn_pod(node: Node, pod: PodSpec, start: float) -> Proc:
    """Start (or restart) a GPU Operator container with a new PID."""
    if pod.gone_at is not None:
        pod.restarts += 1
        pod.container = digest(node.name, pod.name, pod.restarts)[:64]
    pod.gone_at = None
    return node.spawn(ppid=pod.shim_pid, user=pod.user, start=start, argv=list(pod.argv), cgroup=pod.cgroup,
                      devices=list(pod.devices), role=f"pod:{pod.role}", pod=pod.name, access="F...m")


def advance(node: Node, now: float) -> None:
    """Bring ``node`` to simulated time ``now`` (idempotent; never moves backwards)."""
    if now < node.last_advance:
        now = node.last_advance
    for proc in sorted(node.procs.values(), key=lambda p: p.expires or 0):
        if proc.expires is not None and proc.expires <= now and proc.pid in node.procs:
            exit_process(node, proc, proc.expires, signo=None)
    _advance_watch(node, now)
    _advance_timer(node, now)
    _advance_pods(node, now)
    _advance_registration(node, now)
    if node.fm_flap_every > 0:
        from nvls_tui.sim.systemd import advance_fm_flaps  # systemd builds on this module

        advance_fm_flaps(node, now)
    node.last_advance = now


def _advance_watch(node: Node, now: float) -> None:
    for watch in node.alive("watch"):
        cycle = int((now - watch.start) // WATCH_CYCLE)
        if cycle == node.watch_cycle:
            continue
        node.watch_cycle = cycle
        start = watch.start + cycle * WATCH_CYCLE
        nvidia_smi_proc(node, start=start, ppid=watch.pid, user=watch.user, cgroup=watch.cgroup,
                        role="watch-child", argv=["nvidia-smi"], expires=start + WATCH_CYCLE)


def _advance_timer(node: Node, now: float) -> None:
    timer = node.units.get("nvidia-snapshot.timer")
    service = node.units.get("nvidia-snapshot.service")
    if timer is None or service is None or timer.active != "active":
        return
    tick = math.floor(now / SNAPSHOT_PERIOD) * SNAPSHOT_PERIOD
    if tick < (timer.since or 0) or tick <= node.snapshot_last_run or now >= tick + SNAPSHOT_RUN:
        return
    node.snapshot_last_run = tick
    run_snapshot(node, tick)


def run_snapshot(node: Node, start: float) -> Proc:
    """One run of nvidia-snapshot.service: a oneshot nvidia-smi that holds the GPUs for a few seconds."""
    service = node.units["nvidia-snapshot.service"]
    proc = nvidia_smi_proc(node, start=start, ppid=1, user="root", role="snapshot",
                           cgroup="0::/system.slice/nvidia-snapshot.service",
                           argv=["/usr/bin/nvidia-smi", "-q", "-x"], unit=service.name,
                           expires=start + SNAPSHOT_RUN)
    service.active, service.sub, service.main_pid, service.since = "activating", "start", proc.pid, start
    node.log_unit(start, service.name, "systemd", f"Starting {service.name} - {service.description}...", 1)
    return proc


def _advance_pods(node: Node, now: float) -> None:
    kubelet = node.units.get("kubelet.service")
    if kubelet is None or kubelet.active != "active":
        return
    running = {p.pod for p in node.procs.values() if p.pod}
    for pod in node.pods:
        if pod.name in running:
            continue
        due = max(pod.gone_at or 0.0, kubelet.since or 0.0) + POD_RESTART
        if now >= due:
            spawn_pod(node, pod, due)


def _advance_registration(node: Node, now: float) -> None:
    if node.reg_in_progress_at is not None and now >= node.reg_in_progress_at:
        node.reg_in_progress_at = None
        for gpu in node.gpus:
            gpu.fabric_state, gpu.fabric_status = "In Progress", "N/A"
    if node.reg_complete_at is not None and now >= node.reg_complete_at:
        node.reg_complete_at = None
        for gpu in node.gpus:
            gpu.fabric_state, gpu.fabric_status = "Completed", node.fabric_fault or "Success"


def exit_process(node: Node, proc: Proc, when: float, signo: int | None) -> None:
    """Remove ``proc`` (it exited by itself, or died of ``signo``) and apply what its death implies."""
    node.procs.pop(proc.pid, None)
    for child in node.procs.values():
        if child.ppid == proc.pid:
            child.ppid = 1  # orphans are re-parented to init
    if proc.pod:
        pod = next((p for p in node.pods if p.name == proc.pod), None)
        if pod is not None:
            pod.gone_at = when
    if proc.role == "fm":
        fm_went_away(node)
    unit = node.units.get(proc.unit or "")
    if unit is None or unit.main_pid != proc.pid:
        return
    for other in [p for p in node.procs.values() if p.unit == unit.name]:
        node.procs.pop(other.pid, None)  # KillMode=control-group: the rest of the cgroup goes too
        if other.role == "fm":
            fm_went_away(node)
    unit.main_pid, unit.last_pid, unit.since = 0, proc.pid, when
    name = SIGNAL_NAMES.get(signo or 0, str(signo))
    if signo is None:
        unit.active, unit.sub, unit.result = "inactive", "dead", "success"
        unit.exec_code, unit.exec_status = "exited", "0/SUCCESS"
        node.log_unit(when, unit.name, "systemd", f"{unit.name}: Deactivated successfully.", 1)
        if unit.name == "nvidia-snapshot.service":
            node.log_unit(when, unit.name, "systemd", f"Finished {unit.name} - {unit.description}.", 1)
        return
    unit.exec_code, unit.exec_status = "killed", name
    node.log_unit(when, unit.name, "systemd",
                  f"{unit.name}: Main process exited, code=killed, status={signo}/{name}", 1)
    if signo in CLEAN_SIGNALS:
        unit.active, unit.sub, unit.result = "inactive", "dead", "success"
        node.log_unit(when, unit.name, "systemd", f"{unit.name}: Deactivated successfully.", 1)
    else:
        unit.active, unit.sub, unit.result = "failed", "failed", "signal"
        unit.needs_reset_failed = unit.name == "nvidia-fabricmanager.service"
        node.log_unit(when, unit.name, "systemd", f"{unit.name}: Failed with result 'signal'.", 1)


def fm_went_away(node: Node) -> None:
    """FM is gone: the driver keeps the fabric state it had, now stale until a GPU reset."""
    node.needs_reset = True
    node.reg_in_progress_at = node.reg_complete_at = None


def send_signal(node: Node, pid: int, signo: int, now: float) -> bool:
    """Deliver ``signo`` to ``pid``. False when there is no such process."""
    proc = node.procs.get(pid)
    if proc is None:
        return False
    if signo in (0, _signal.SIGSTOP, _signal.SIGCONT, _signal.SIGUSR1, _signal.SIGUSR2, _signal.SIGWINCH):
        return True
    exit_process(node, proc, now, signo)
    return True
