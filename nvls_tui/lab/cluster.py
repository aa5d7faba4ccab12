"""The lab's Kubernetes (``lab up --scenario k8s-incident``): a stand-in API server on the host whose pods are
real processes in the lab nodes.

No kube-apiserver can be installed here, so the cluster is :mod:`nvls_tui.lab.kube_standin`, served on 127.0.0.1
by a background process of the lab's (``python -m nvls_tui.lab.cluster --dir DIR``; its PID in
``DIR/lab.json``, its log in ``DIR/kube/server.log``, its kubeconfig ``DIR/kubeconfig``). Every lab node is a
Kubernetes node with the GPU Operator's operand DaemonSets and a vLLM-like Deployment's pod.

The stand-in's kubelet hooks are this module's :class:`PodRunner`. A pod the cluster runs on a lab node is
started in that node as a real pod's container is: ``systemd-run --scope`` into the pod's own
``kubepods-besteffort-pod<uid>.slice`` with the unit ``cri-containerd-<id>.scope``, so ``/proc/PID/cgroup``
names the pod's uid and container id exactly as on a real node, and the pod's status reports that id. The
program holds what its real counterpart holds (the operands and the vLLM stand-in every GPU, read-write and
mapped; the validator nothing). A pod the cluster deletes (a paused operand label, an eviction) has its slice
stopped in the node: systemd sends SIGTERM and waits until the process is gone, and only then does the pod
object go, so a repair's ``fuser`` sees the real effect. The node's own ``kubelet.service`` runs in API mode
(starting no pods of its own): the pods are the API server's.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nvls_tui.lab.image import HOLD, machine_id
from nvls_tui.lab.machine import LabError, LabNode, load_state, node_run

KUBECONFIG = "kubeconfig"
"""``DIR/kubeconfig``: names the lab's stand-in API server (context ``nvls-lab``)."""
CONTEXT = "nvls-lab"
LOG_DIR = "kube"
"""``DIR/kube/``: the server's log."""
NAMESPACE = "gpu-operator"
WORKLOAD = ("vllm", "inference")
"""The vLLM-like Deployment (name, namespace): one pod on every lab node."""
# The operand labels as an administrator left them: the MIG manager off (false), DCGM and the node status exporter
# unset (the operator counts unset as true), the rest true. The driver is the host's (FM is a host unit here).
LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
          "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.dcgm-exporter": "true",
          "nvidia.com/gpu.deploy.gpu-feature-discovery": "true", "nvidia.com/gpu.deploy.mig-manager": "false",
          "nvidia.com/gpu.deploy.operator-validator": "true"}
OPERANDS = ("nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter", "gpu-feature-discovery", "nvidia-mig-manager",
            "nvidia-operator-validator")
# What each container runs in the node (the stand-in's container names). The validator's long-running container
# only sleeps once it has validated (it holds no device); the others hold every GPU as their real programs do.
PROGRAMS = {
    "nvidia-device-plugin": ("/usr/bin/nvidia-device-plugin",),
    "nvidia-dcgm-exporter": ("/usr/bin/dcgm-exporter",),
    "gpu-feature-discovery": ("/usr/bin/gpu-feature-discovery",),
    "nvidia-mig-manager": ("/usr/bin/nvidia-mig-manager",),
    "nvidia-operator-validator": ("/bin/sleep", "infinity"),
    WORKLOAD[0]: (HOLD,),
}
HOLDING = 4
"""Pods holding a lab node's GPUs once the cluster runs: device plugin, DCGM exporter, GFD and the vLLM pod."""
STOP_TIMEOUT = 60.0
START_TIMEOUT = 20.0
API_KUBELET_DROPIN = "/etc/systemd/system/kubelet.service.d/nvls-lab-api.conf"
API_KUBELET_ENV = "NVLS_LAB_KUBELET=api"


#: What a kubelet reports in its Node's status.nodeInfo, and the node's file it reads it from.
NODE_INFO_FILES = (("bootID", "/proc/sys/kernel/random/boot_id"), ("machineID", "/etc/machine-id"),
                   ("systemUUID", "/sys/class/dmi/id/product_uuid"))


def node_info(node: LabNode) -> dict[str, str]:
    """The ids a kubelet in ``node`` reports, read inside the node as a repair reads them there (nspawn gives a
    container a boot id of its own; the DMI UUID is the host's sysfs, where this machine has one)."""
    info = {}
    for key, path in NODE_INFO_FILES:
        found = node_run(node, "cat", path, check=False)
        if found.returncode == 0 and found.stdout.strip():
            info[key] = found.stdout.strip()
    return info


def cluster_state(names: list[str], info: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """The stand-in's starting state: each lab node with the operator's operands and a vLLM pod, its Node
    carrying the node's ids (``info``: :func:`node_info` of each; else only its machine id, image.py's)."""
    return {"nodes": [{"name": name, "labels": dict(LABELS), "address": f"10.0.0.{i + 1}",
                       "nodeInfo": dict((info or {}).get(name) or {"machineID": machine_id(name)})}
                      for i, name in enumerate(names)],
            "gpuOperator": {"namespace": NAMESPACE, "operands": list(OPERANDS)},
            "workloads": [{"name": WORKLOAD[0], "namespace": WORKLOAD[1], "nodes": list(names),
                           "containers": [{"name": WORKLOAD[0], "image": "vllm/vllm-openai:v0.8.5",
                                           "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}]}


def pod_slice(uid: str) -> str:
    """The pod's cgroup as the kubelet's systemd driver names it (the uid's dashes escaped as underscores)."""
    return f"kubepods-besteffort-pod{uid.replace('-', '_')}.slice"


def _container_id(pod: Mapping[str, Any], name: str) -> str:
    """The id the pod's status gives ``name`` (a pod loaded Running), else a new one (a new pod)."""
    for status in pod.get("status", {}).get("containerStatuses") or []:
        if status.get("name") == name and str(status.get("containerID", "")).startswith("containerd://"):
            return str(status["containerID"]).removeprefix("containerd://")
    return secrets.token_hex(32)


class PodRunner:
    """The stand-in's kubelet hooks for the lab's nodes: each pod a real process in its node."""

    def __init__(self, nodes: list[LabNode]) -> None:
        self.nodes = {n.name: n for n in nodes}

    def _node(self, pod: Mapping[str, Any]) -> LabNode | None:
        return self.nodes.get(pod.get("spec", {}).get("nodeName") or "")

    def start(self, pod: Mapping[str, Any]) -> dict[str, str] | None:
        """``on_create``: start each container in the pod's slice; ``{container: containerd://ID}``.

        Raises:
            LabError: the node did not run it (the pod stays Pending).
        """
        node = self._node(pod)
        if node is None:
            return None  # not a lab node: nothing runs behind the pod
        meta = pod["metadata"]
        ids: dict[str, str] = {}
        for container in pod["spec"].get("containers") or []:
            name = container["name"]
            program = PROGRAMS.get(name)
            if program is None:
                raise LabError(f"{meta['namespace']}/{meta['name']}: the lab has no program for container {name!r}")
            cid = _container_id(pod, name)
            # Detached, every descriptor away from this exec: the scope's process outlives the command.
            node_run(node, "sh", "-c", f"setsid systemd-run --quiet --scope --slice={pod_slice(meta['uid'])} "
                                       f"--unit=cri-containerd-{cid} -- {shlex.join(program)} "
                                       "</dev/null >/dev/null 2>&1 &")
            scope = f"cri-containerd-{cid}.scope"
            deadline = time.monotonic() + START_TIMEOUT
            while node_run(node, "systemctl", "is-active", scope, check=False).stdout.strip() != "active":
                if time.monotonic() > deadline:
                    raise LabError(f"{node.name}: {scope} of {meta['namespace']}/{meta['name']} did not start")
                time.sleep(0.1)
            ids[name] = f"containerd://{cid}"
        return ids

    def stop(self, pod: Mapping[str, Any]) -> None:
        """``on_delete``: stop the pod's slice (SIGTERM to its processes; systemd waits until they are gone).

        Raises:
            LabError: a process of the pod outlived the stop (the pod stays Terminating, tried again).
        """
        node = self._node(pod)
        if node is None:
            return
        slice_ = pod_slice(pod["metadata"]["uid"])
        done = node_run(node, "systemctl", "stop", slice_, timeout=STOP_TIMEOUT, check=False)
        if done.returncode not in (0, 5):  # 5: not loaded (never started, or stopped already)
            raise LabError(f"{node.name}: systemctl stop {slice_} exited {done.returncode}: {done.stderr.strip()}")
        left = node_run(node, "systemctl", "show", "-p", "ActiveState", "--value", slice_, check=False).stdout.strip()
        if left not in ("inactive", "failed", ""):
            raise LabError(f"{node.name}: {slice_} is still {left}")


def api_kubelet(node: LabNode) -> None:
    """The node's kubelet.service in API mode: it starts no pods of its own (the API server's are the pods)."""
    node_run(node, "sh", "-c", f"mkdir -p {os.path.dirname(API_KUBELET_DROPIN)} && "
                               f"printf '[Service]\\nEnvironment={API_KUBELET_ENV}\\n' > {API_KUBELET_DROPIN} && "
                               "systemctl daemon-reload")


# ---- the server process and its life in the lab folder ------------------------------------------------------

def _module_argv(folder: Path) -> list[str]:
    return [sys.executable, "-m", "nvls_tui.lab.cluster", "--dir", str(folder)]


def start_server(folder: Path, timeout: float = 60.0) -> int:
    """Start the lab's API server in the background; returns its PID once ``DIR/kubeconfig`` names it (every
    pod of the starting state then runs in its node).

    Raises:
        LabError: it exited, or did not serve within ``timeout`` (its log's last line is said).
    """
    import subprocess

    logs = folder / LOG_DIR
    logs.mkdir(mode=0o700, exist_ok=True)
    (folder / KUBECONFIG).unlink(missing_ok=True)
    with open(logs / "server.log", "ab") as log:
        proc = subprocess.Popen(_module_argv(folder), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    while not (folder / KUBECONFIG).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            lines = (logs / "server.log").read_text(errors="replace").strip().splitlines()
            raise LabError("the lab's Kubernetes API server did not start"
                           + (f": {lines[-1][:300]}" if lines else ""))
        time.sleep(0.1)
    return proc.pid


def is_server(pid: int, folder: Path) -> bool:
    """True when ``pid`` is alive and is this lab's API server (a reused PID is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    alive = stat[stat.rindex(")") + 2:][:1] != "Z"
    return pid > 0 and alive and b"nvls_tui.lab.cluster" in argv and str(folder).encode() in argv


def stop_server(pid: int, folder: Path, timeout: float = 15.0) -> None:
    """SIGTERM the lab's API server (SIGKILL after ``timeout``); nothing if ``pid`` is not it."""
    from nvls_tui.lab.machine import stop_process

    stop_process(pid, lambda: is_server(pid, folder), timeout)


def serve(folder: Path) -> int:
    """The server process: serve the lab's cluster until SIGTERM (exit 0)."""
    from nvls_tui.lab.kube_standin import StandIn
    from nvls_tui.lab.kube_standin import load_state as load_cluster
    from nvls_tui.lab.kube_standin.controller import Timing

    _scenario, nodes = load_state(folder)
    if not nodes:
        print(f"no lab in {folder}", flush=True)
        return 2
    runner = PodRunner(nodes)
    # The operator's DaemonSet controller reacts to a label within a second or so; pods are not kept waiting.
    timing = Timing(operand_grace=1.0, create_delay=1.0, retry=1.0)
    info = {n.name: node_info(n) for n in nodes}
    standin = StandIn(load_cluster(cluster_state([n.name for n in nodes], info)), str(folder / KUBECONFIG),
                      context=CONTEXT, on_create=runner.start, on_delete=runner.stop, timing=timing)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    standin.start()
    print(f"serving {standin.url} for {', '.join(runner.nodes)}; kubeconfig {standin.kubeconfig}", flush=True)
    said = 0
    try:
        while not done.wait(0.5):
            errors = standin.controller.errors
            for line in errors[said:]:
                print(f"controller: {line}", flush=True)
            said = len(errors)
    finally:
        standin.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m nvls_tui.lab.cluster --dir DIR``."""
    parser = argparse.ArgumentParser(prog="python -m nvls_tui.lab.cluster",
                                     description="The lab's stand-in Kubernetes API server (lab up starts it).")
    parser.add_argument("--dir", required=True, help="the lab folder")
    args = parser.parse_args(argv)
    try:
        return serve(Path(args.dir))
    except (LabError, OSError, ValueError) as exc:
        print(f"nvls-lab cluster: {exc}", flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
