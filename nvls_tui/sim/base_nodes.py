"""The simulator's healthy node and the parts a scenario's faults add to it: a node as the incident's nodes were
before anything went wrong (its units, its GPU Operator pods, its boot's kernel lines), an operator's forgotten
``watch`` loop, the incident's holders, a vLLM workload pod.

Every fact of a node (UUIDs, serials, PIDs) derives from the node's name, so a node is the same on every run and
in every process. The faults are :mod:`nvls_tui.sim.faults`; the named fleets, :mod:`nvls_tui.sim.scenarios`.
"""

from __future__ import annotations

from nvls_tui.sim.processes import spawn_pod
from nvls_tui.sim.state import (
    GB200_BUSES,
    GB200_NAME,
    HGX_BUSES,
    NVSWITCH_BUSES,
    Gpu,
    Node,
    PodSpec,
    Unit,
    digest,
)

DAY = 86400.0

UNIT_DESCRIPTIONS = {
    "nvidia-fabricmanager.service": "NVIDIA fabric manager service",
    "kubelet.service": "kubelet: The Kubernetes Node Agent",
    "nvidia-snapshot.timer": "Periodic nvidia-smi snapshot",
    "nvidia-snapshot.service": "nvidia-smi snapshot",
    "nvidia-dcgm.service": "NVIDIA DCGM service",
    "nvidia-persistenced.service": "NVIDIA Persistence Daemon",
}
# (role, container argv) of the GPU Operator pods, with the incident's PIDs on gpu05.
PODS = (
    ("nvidia-mig-manager", ["nvidia-mig-manager"], 37464),
    ("dcgm-exporter", ["/usr/bin/dcgm-exporter"], 37538),
    ("gpu-feature-discovery", ["gpu-feature-discovery"], 38665),
    ("nvidia-device-plugin", ["nvidia-device-plugin"], 38668),
)



def gpu_uuid(node: str, index: int) -> str:
    """``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``, stable per node and index."""
    h = digest("uuid", node, index)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def base_node(name: str, now: float, *, boot_age: float = 12 * DAY, platform: str = "hgx-h100",
              start_fm: bool = True) -> Node:
    """A healthy node: FM, DCGM, kubelet and its GPU Operator pods, the snapshot timer."""
    node = Node(name=name, platform=platform, boot=now - boot_age, last_advance=now - boot_age)
    node.next_pid = 2000
    if platform == "gb200":
        node.fm_version = None
        node.gpus = [Gpu(index=i, bus_id=f"000000{bus}:01:00.0",
                         uuid=gpu_uuid(name, i), name=GB200_NAME, serial=str(int(digest("sn", name, i)[:10], 16))[:13],
                         clique_id="32766", cluster_uuid=_uuid(digest("cluster", name[:-2])), health_summary="Healthy",
                         mem_total=189471)
                     for i, bus in enumerate(GB200_BUSES)]
    else:
        node.gpus = [Gpu(index=i, bus_id=f"00000000:{bus}:00.0", uuid=gpu_uuid(name, i),
                         serial=str(int(digest("sn", name, i)[:10], 16))[:13], temp=31 + (i * 3) % 7,
                         power=112 + (i * 5) % 13)
                     for i, bus in enumerate(HGX_BUSES)]
        node.switches = list(NVSWITCH_BUSES)
    for unit, desc in UNIT_DESCRIPTIONS.items():
        if unit == "nvidia-fabricmanager.service" and platform == "gb200":
            continue
        node.units[unit] = Unit(name=unit, description=desc)
    node.units["nvidia-persistenced.service"].enabled = "disabled"
    _boot_kernel(node)
    up = node.boot + 20
    for unit in ("nvidia-fabricmanager.service", "nvidia-dcgm.service", "kubelet.service", "nvidia-snapshot.timer"):
        if unit in node.units and (start_fm or unit != "nvidia-fabricmanager.service"):
            start_at(node, unit, up)
            up += 7
    containerd = node.spawn(ppid=1, user="root", start=node.boot + 15, argv=["/usr/bin/containerd"],
                            cgroup="0::/system.slice/containerd.service", role="containerd")
    for role, argv, _pid in PODS:
        shim = node.spawn(ppid=1, user="root", start=up, cgroup="0::/system.slice/containerd.service",
                          role="containerd-shim",
                          argv=["/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id",
                                digest(name, role, "sandbox")[:64], "-address", "/run/containerd/containerd.sock"])
        suffix = digest(name, role)[:5]
        devices = [f"/dev/nvidia{g.index}" for g in node.gpus] + ["/dev/nvidiactl"]
        if role == "dcgm-exporter":
            devices.append("/dev/nvidia-uvm")
        pod = PodSpec(name=f"{role}-daemonset-{suffix}", role=role, argv=argv, devices=devices,
                      uid=pod_uid(name, role), container=digest(name, role, 0)[:64], shim_pid=shim.pid)
        node.pods.append(pod)
        spawn_pod(node, pod, up + 2)
    del containerd
    node.last_advance = now
    return node


def _uuid(h: str) -> str:
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def pod_uid(host: str, role: str) -> str:
    """The uid of ``host``'s GPU Operator pod ``role`` (stable per host; the lab's kubelet uses it too)."""
    return _uuid(digest(host, role, "uid"))


def start_at(node: Node, name: str, ts: float) -> None:
    from nvls_tui.sim import systemd

    systemd.start(node, name, ts)


def _boot_kernel(node: Node) -> None:
    t = node.boot
    # The kernel's first line of every boot: a log that holds it reaches back to the boot.
    node.log_kernel(t, "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) "
                       "12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1")
    node.log_kernel(t + 4.1, "nvidia: module license 'NVIDIA' taints kernel.")
    node.log_kernel(t + 4.3, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {node.driver}  "
                             "Sat Aug  1 00:00:00 UTC 2026")
    for i, bus in enumerate(node.switches):
        node.log_kernel(t + 5 + i, f"nvidia-nvswitch: Probing device 0000:{bus.lower()}:00.0, Vendor Id = 0x10de, "
                                   "Device Id = 0x22a3, Class = 0x68000")
        node.log_kernel(t + 5.2 + i, f"nvidia-nvswitch{i}: using MSI")
    node.log_kernel(t + 9.5, f"nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  "
                             f"{node.driver}  Sat Aug  1 00:00:00 UTC 2026")


def add_watch_loop(node: Node, start: float, bash_pid: int | None = None, watch_pid: int | None = None) -> None:
    """An operator's forgotten ``watch -n 1 nvidia-smi`` in an SSH session (user ubuntu)."""
    cgroup = "0::/user.slice/user-1000.slice/session-3.scope"
    bash_pid = bash_pid or (watch_pid - 17 if watch_pid else None)
    bash = node.spawn(pid=bash_pid, ppid=1, user="ubuntu", start=start - 40, argv=["-bash"], cgroup=cgroup,
                      role="shell")
    node.spawn(pid=watch_pid, ppid=bash.pid, user="ubuntu", start=start, argv=["watch", "-n", "1", "nvidia-smi"],
               cgroup=cgroup, role="watch")


def incident_holders(node: Node, now: float, incident_pids: bool) -> None:
    """Replace the pods' and DCGM's PIDs with the incident's ones and add the watch loop."""
    if incident_pids:
        wanted = {f"pod:{role}": pid for role, _argv, pid in PODS}
        for proc in list(node.procs.values()):
            if proc.role in wanted:
                node.procs.pop(proc.pid)
                proc.pid = wanted[proc.role]
                node.procs[proc.pid] = proc
        dcgm = node.units["nvidia-dcgm.service"]
        proc = node.procs.pop(dcgm.main_pid)
        proc.pid = dcgm.main_pid = 924303
        node.procs[proc.pid] = proc
        node.next_pid = 950000
    add_watch_loop(node, now - 3 * 3600, watch_pid=node.next_pid - 80000 if incident_pids else None)



VLLM_ARGV = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "meta-llama/Llama-3.1-70B-Instruct",
             "--tensor-parallel-size", "8"]
VLLM_OWNER = ("inference", "ReplicaSet", "vllm-llama-70b-6d5f8b9c7")


def add_vllm_pod(node: Node, start: float) -> PodSpec:
    """A vLLM workload pod (a Deployment's ReplicaSet in ``inference``) holding every GPU, as in the incident."""
    shim = node.spawn(ppid=1, user="root", start=start - 1, cgroup="0::/system.slice/containerd.service",
                      role="containerd-shim",
                      argv=["/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id",
                            digest(node.name, "vllm", "sandbox")[:64], "-address", "/run/containerd/containerd.sock"])
    namespace, kind, owner = VLLM_OWNER
    pod = PodSpec(name=f"{owner}-{digest(node.name, 'vllm')[:5]}", role="vllm", argv=list(VLLM_ARGV),
                  devices=[f"/dev/nvidia{g.index}" for g in node.gpus] + ["/dev/nvidiactl", "/dev/nvidia-uvm"],
                  uid=pod_uid(node.name, "vllm"), container=digest(node.name, "vllm", 0)[:64], shim_pid=shim.pid,
                  k8s_namespace=namespace, k8s_owner_kind=kind, k8s_owner_name=owner, k8s_container="vllm")
    node.pods.append(pod)
    spawn_pod(node, pod, start)
    return pod

