"""The long-lived stand-ins of a lab node, each run by a real systemd unit as a real process.

- ``nv-fabricmanager -c CFG``: Fabric Manager. It registers the fabric in the node's hardware (the
  simulator's rules decide whether NVLS will be in sync), logs FM's own messages to the journal
  (stdout), then daemonizes as the real one does (its unit is ``Type=forking``): the daemon's PID is
  recorded before the starting process exits, and the daemon holds the NVSwitch control files until SIGTERM.
- ``nv-hostengine``, ``nvidia-persistenced`` and the GPU Operator pods' programs: hold their device
  files until SIGTERM (persistenced also turns persistence mode on while it runs).
- ``nvls-lab-hold [--daemonize] [GPU ...]``: a job's CUDA program (``sbatch --wrap 'exec nvls-lab-hold 0 1'``):
  holds the given GPUs (else those of ``CUDA_VISIBLE_DEVICES``, else all) read-write and mapped until
  SIGTERM; ``--daemonize`` first leaves the job's process tree (double fork, own session).
- ``kubelet`` (without API mode): keeps the pods running as real processes, each in its own transient scope in a real
  ``kubepods`` slice, and recreates a pod (new PID, new container id) a few seconds after it dies,
  as kubelet does. Stopping kubelet leaves the pods running, as stopping the real one does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nvls_tui.lab.devices import gpu_files, holding

# The simulator (the node's hardware model, the pods' table) is imported where it is used, not here: every start of
# a holder (a DCGM or pod restart, a job) is a Python process of its own that needs none of it, and importing it was
# most of such a start's CPU.

FM_CONFIGURED = ("Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink "
                 "Peer-to-Peer support will be enabled once the GPUs are successfully registered with the "
                 "NVLink fabric.")
POD_RESTART = 3.0
"""Seconds kubelet waits before it recreates a pod that died (real kubelet: a back-off from 10 s)."""
RUN_DIR = "/run/nvls-lab"


@dataclass(frozen=True)
class Pod:
    """One GPU Operator pod of the lab: its role, its program (which decides the devices it holds), its uid."""

    role: str
    program: str
    uid: str


def node_pods(host: str) -> tuple[Pod, ...]:
    """The GPU Operator pods of ``host``: the simulator's pods (roles, programs, uids), as real processes."""
    from nvls_tui.sim.base_nodes import PODS, pod_uid

    return tuple(Pod(role, argv[0].rsplit("/", 1)[-1], pod_uid(host, role))
                 for role, argv, _pid in PODS)


def _say(text: str) -> None:
    print(text, flush=True)


def _until_term(on_term=None) -> None:
    """Sleep until SIGTERM/SIGINT; then run ``on_term`` and exit 0."""
    def stop(*_):
        if on_term is not None:
            on_term()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


def fabric_manager(args: list[str]) -> int:
    """``nv-fabricmanager``: ``--version``, or the daemon (``-c CFG``)."""
    if args[:1] in (["--version"], ["-v"]):
        from nvls_tui.lab.tools import main as tool

        return tool("nv-fabricmanager", args)
    from nvls_tui.lab.hardware import FM_PID_FILE, hardware, hw_dir
    from nvls_tui.sim import fabric
    from nvls_tui.sim.processes import fm_went_away

    folder = hw_dir()
    with hardware() as (node, clock):
        if node.fm_mismatch:
            print(f"fabric manager NVIDIA GPU driver interface version {node.fm_version} don't match with "
                  f"driver version {node.driver}. Please update with matching NVIDIA driver package.", flush=True)
            return 1
        fabric.fm_started(node, clock.now())
    _say("Connected to 1 node.")
    _say(FM_CONFIGURED)
    # The real unit is Type=forking: FM daemonizes once the fabric is configured, so `systemctl start` returns only
    # then. A stand-in that ran in the foreground (Type=simple) let the start return at its exec, and the repair's
    # first registration read (an nvidia-smi holding the GPUs) could land while FM was still starting: the fabric
    # came up out of sync and the smoke test failed with 802 (a lab flake, never a real node's behaviour).
    daemon = os.fork()
    if daemon:
        (folder / FM_PID_FILE).write_text(f"{daemon}\n")  # before the parent exits: then systemd calls it started
        os._exit(0)
    os.setsid()

    def went_away() -> None:
        with hardware() as (node, _clock):
            fm_went_away(node)
        (folder / FM_PID_FILE).unlink(missing_ok=True)

    files = ["/dev/nvidiactl", "/dev/nvidia-nvswitchctl"]
    files += sorted(f"/dev/{n}" for n in os.listdir("/dev") if n.startswith("nvidia-nvswitch") and n[15:].isdecimal())
    with holding(files):
        _until_term(went_away)
    return 0


def holder(program: str, args: list[str]) -> int:
    """A management daemon or pod program: hold the devices its real counterpart holds."""
    files = gpu_files()
    if program in ("nv-hostengine", "dcgm-exporter"):
        files.append("/dev/nvidia-uvm")

    def persistence(on: bool) -> None:
        from nvls_tui.lab.hardware import hardware

        with hardware() as (node, _clock):
            for gpu in node.gpus:
                gpu.persistence = on

    if program == "nvidia-persistenced":
        persistence(True)
    with holding(files, mapped=program != "nvidia-persistenced"):
        _until_term((lambda: persistence(False)) if program == "nvidia-persistenced" else None)
    return 0


HOLD_USAGE = ("usage: nvls-lab-hold [--daemonize] [GPU ...]  (default: $CUDA_VISIBLE_DEVICES, else every GPU;\n"
              "  --daemonize: fork twice and start a session of its own first, leaving its parent's process tree)")


def _daemonize() -> None:
    """Leave the caller's process tree as a daemon does: fork, new session, fork again; the first two
    processes exit, so the holder's parent is the node's init and it shares no session with the job's
    script. Slurm's cgroup tracking still counts it as the job's; tracking by parents does not."""
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)


def job_holder(args: list[str]) -> int:
    """``nvls-lab-hold [GPU ...]``: hold GPUs as a job's CUDA process does, until SIGTERM (scancel).

    Opens ``/dev/nvidiactl``, ``/dev/nvidia-uvm`` and each chosen ``/dev/nvidiaN`` read-write and maps
    them (fuser's ``F...m``, as CUDA's), so a reset meets it as it meets a real workload.
    """
    if args[:1] in (["-h"], ["--help"]):
        _say(HOLD_USAGE)
        return 0
    detach = args[:1] == ["--daemonize"]
    args = args[1:] if detach else args
    chosen = args or [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
    if not all(g.isdecimal() for g in chosen):
        print(f"nvls-lab-hold: not a GPU index: {' '.join(chosen)}\n{HOLD_USAGE}", file=sys.stderr, flush=True)
        return 2
    gpus = [f"/dev/nvidia{int(g)}" for g in chosen] if chosen else gpu_files()[1:]
    absent = [f for f in gpus if not os.path.exists(f)]
    if absent or not gpus:
        print(f"nvls-lab-hold: no such GPU: {' '.join(absent) or '/dev/nvidia0'}", file=sys.stderr, flush=True)
        return 1
    files = ["/dev/nvidiactl", "/dev/nvidia-uvm", *gpus]
    if detach:
        _daemonize()
    _say(f"nvls-lab-hold: pid {os.getpid()} holds {' '.join(files)} until SIGTERM")
    with holding(files, mapped=True):
        _until_term()
    return 0


def _pod_argv(pod: Pod, salt: int) -> list[str]:
    """``systemd-run --scope`` into the pod's slice: the process lands in a real kubepods cgroup."""
    from nvls_tui.sim.state import digest

    container = digest(os.uname().nodename, pod.role, salt)[:64]
    slice_ = f"kubepods-besteffort-pod{pod.uid.replace('-', '_')}.slice"
    return ["systemd-run", "--quiet", "--scope", f"--slice={slice_}", f"--unit=cri-containerd-{container}",
            "--", f"/usr/bin/{pod.program}"]


def _pod_pid(pod: Pod) -> int | None:
    path = Path(RUN_DIR, f"pod-{pod.role}.pid")
    try:
        pid = int(path.read_text())
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if pod.program.encode() in cmd else None


def kubelet(args: list[str]) -> int:
    """``kubelet``: keep every pod alive; adopt the pods that outlived a previous kubelet.

    In API mode (``NVLS_LAB_KUBELET=api``, the ``k8s-incident`` scenario's drop-in) it starts no pods: the lab's
    stand-in API server owns them and starts and ends their processes in this node (:mod:`nvls_tui.lab.cluster`).
    """
    if os.environ.get("NVLS_LAB_KUBELET") == "api":
        _say("Started kubelet (API mode: the lab's API server runs this node's pods)")
        _until_term()
        return 0
    Path(RUN_DIR).mkdir(parents=True, exist_ok=True)
    pods = node_pods(os.uname().nodename)
    children: dict[str, subprocess.Popen] = {}
    died: dict[str, float] = {}
    started: set[str] = set()  # pods this kubelet saw running: a later death waits POD_RESTART
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _say("Started kubelet")
    while True:
        now = time.monotonic()
        for pod in pods:
            child = children.get(pod.role)
            running = child.poll() is None if child is not None else _pod_pid(pod) is not None
            if running:
                started.add(pod.role)
                died.pop(pod.role, None)
                continue
            children.pop(pod.role, None)
            died.setdefault(pod.role, now)
            if pod.role in started and now - died[pod.role] < POD_RESTART:
                continue
            proc = subprocess.Popen(_pod_argv(pod, time.time_ns()), stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            Path(RUN_DIR, f"pod-{pod.role}.pid").write_text(str(proc.pid))
            children[pod.role] = proc
            started.add(pod.role)
            died.pop(pod.role, None)
            _say(f"Started container {pod.program} of pod {pod.role} (pid {proc.pid})")
        time.sleep(0.5)


def main(program: str, args: list[str]) -> int:
    """Entry point of a daemon stand-in (see :func:`nvls_tui.lab.tools.script`)."""
    if program == "nv-fabricmanager":
        return fabric_manager(args)
    if program == "kubelet":
        return kubelet(args)
    if program == "nvls-lab-hold":
        return job_holder(args)
    return holder(program, args)
