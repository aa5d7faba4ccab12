"""``lab up --scenario k8s-incident``: the lab's Kubernetes (issue 29, real parts): the stand-in API server on the
host, whose pods are real processes in the lab node, started and ended by its kubelet hooks.

The first tests need no lab: the hooks' container ids become the pods' status, and the cluster's state. The lab
tests (their own lab, ``k8slab*`` on 127.0.21.x, one node acting gpu06's out-of-sync fault on Kubernetes) repair
over real SSH with the real kubectl against the stand-in: operand pods and the vLLM pod hold the GPUs as real
processes in their kubepods slices, and the repair's verify-no-holders, reset and restore meet their real effect.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nvls_tui.lab import cluster
from nvls_tui.lab.kube_standin import load_state, running
from nvls_tui.lab.kube_standin.controller import Timing
from nvls_tui.lab.machine import LabNode, load_kube, node_run
from tests.lab.own_lab import own_lab

NODE = "gpu-k8s01"
PAUSED = "paused-for-nvls-repair"
STOPPED_AT = "nvls-tui/repair-stopped-at"


# ---- without a lab --------------------------------------------------------------------------------------------

def test_the_cluster_state_gives_every_node_the_operands_and_a_vllm_pod():
    store = load_state(cluster.cluster_state(["gpu-a", "gpu-b"]))
    pods, _ = store.query("pods")
    for name in ("gpu-a", "gpu-b"):
        here = sorted(p["spec"]["containers"][0]["name"] for p in pods if p["spec"]["nodeName"] == name)
        # The MIG manager's label is an administrator's false: no pod of it.
        assert here == ["gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-device-plugin",
                        "nvidia-operator-validator", "vllm"], here
    assert all(p["spec"]["containers"][0]["name"] in cluster.PROGRAMS for p in pods)
    holding = [p for p in pods if p["spec"]["nodeName"] == "gpu-a"
               and cluster.PROGRAMS[p["spec"]["containers"][0]["name"]][0] != "/bin/sleep"]
    assert len(holding) == cluster.HOLDING


def test_on_creates_container_ids_are_the_new_pods_status(tmp_path):
    """A hook that returns ``{container: containerd://ID}`` (the lab's: the scopes it started) has the pod's status
    report those ids, as a kubelet reports the runtime's; a hook that returns nothing leaves a made-up id."""
    given: dict[str, str] = {}

    def start(pod: dict[str, Any]) -> dict[str, str] | None:
        name = pod["spec"]["containers"][0]["name"]
        if name != "nvidia-device-plugin":
            return None
        given[pod["metadata"]["name"]] = "containerd://" + "ab" * 32
        return {name: given[pod["metadata"]["name"]]}

    state = cluster.cluster_state(["gpu-a"])
    with running(state, tmp_path, on_create=start, timing=Timing(operand_grace=0.05, create_delay=0.05)) as standin:
        def plugin_pods(store):
            return [p for p in store.query("pods")[0] if p["spec"]["containers"][0]["name"] == "nvidia-device-plugin"
                    and not p["metadata"].get("deletionTimestamp")]
        (old,) = plugin_pods(standin.store)
        key = "nvidia.com/gpu.deploy.device-plugin"
        standin.store.update("nodes", "", "gpu-a", lambda n: n["metadata"]["labels"].__setitem__(key, PAUSED))
        standin.wait_for(lambda s: not plugin_pods(s))
        standin.store.update("nodes", "", "gpu-a", lambda n: n["metadata"]["labels"].__setitem__(key, "true"))
        new = standin.wait_for(lambda s: [p for p in plugin_pods(s) if p["status"].get("phase") == "Running"])[0]
        assert new["metadata"]["name"] != old["metadata"]["name"]
        assert new["status"]["containerStatuses"][0]["containerID"] == given[new["metadata"]["name"]]
        other = next(p for p in standin.store.query("pods")[0] if p["spec"]["containers"][0]["name"] == "vllm")
        assert other["status"]["containerStatuses"][0]["containerID"].startswith("containerd://")


def test_the_pod_runner_runs_nothing_for_a_node_outside_the_lab():
    runner = cluster.PodRunner([])
    pod = {"metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": {"nodeName": "elsewhere",
                                                                               "containers": [{"name": "vllm"}]}}
    assert runner.start(pod) is None
    runner.stop(pod)  # nothing to end, nothing raised


def test_a_server_whose_pods_cannot_start_is_one_sentence_and_leaves_no_process(tmp_path):
    """The node named in lab.json is not running: the first pod's start fails, the server exits, and start_server
    says so in one sentence (the log's last line) with no server left behind and no kubeconfig written."""
    from nvls_tui.lab.machine import LabError, save_state

    save_state(tmp_path, "k8s-incident", [LabNode(name="gpu-gone", address="127.0.21.99", folder=str(tmp_path / "n"),
                                                  leader_pid=2 ** 22 + 1)])
    with pytest.raises(LabError, match=r"^the lab's Kubernetes API server did not start: nvls-lab cluster: ") as err:
        cluster.start_server(tmp_path, timeout=60)
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)
    assert not (tmp_path / cluster.KUBECONFIG).exists()


# ---- the lab ---------------------------------------------------------------------------------------------------

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None,
                                   reason="kubectl is missing (scripts/system-deps.sh installs one)")


@pytest.fixture(scope="module")
def k8s_lab(tmp_path_factory):
    """One lab node acting ``k8s-incident`` with the lab's API server: ``(folder, LabNode)``."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is missing (scripts/system-deps.sh installs one)")
    with own_lab(tmp_path_factory, "k8slab", [NODE], "k8s-incident") as (folder, (node,)):
        yield folder, node
        pid = int((load_kube(folder) or {}).get("pid", 0))
    assert pid and not cluster.is_server(pid, folder)  # lab down stopped the server too
    assert not (folder / cluster.KUBECONFIG).exists()


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nvls_tui.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def kubectl(folder: Path, *args: str) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(folder / cluster.KUBECONFIG), *args], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def k8s_node(folder: Path) -> dict:
    return json.loads(kubectl(folder, "get", "node", NODE, "-o", "json"))


def pods(folder: Path) -> list[dict]:
    """The node's pods that are not being deleted."""
    items = json.loads(kubectl(folder, "get", "pods", "-A", "--field-selector", f"spec.nodeName={NODE}",
                               "-o", "json"))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def container(pod: dict) -> str:
    return pod["spec"]["containers"][0]["name"]


def holders(node: LabNode) -> dict[int, str]:
    """``{pid: its cgroup}`` of every process holding /dev/nvidia0, as psmisc's fuser and /proc say."""
    out = node_run(node, "sh", "-c", "fuser /dev/nvidia0 2>/dev/null", check=False).stdout
    found = {}
    for pid in (int(p) for p in out.split()):
        cgroup = node_run(node, "cat", f"/proc/{pid}/cgroup", check=False).stdout.strip()
        if cgroup:
            found[pid] = cgroup
    return found


def pod_processes(node: LabNode, pod: dict) -> list[int]:
    """The PIDs in the pod's own slice in the node (its real processes), from the node's cgroup files."""
    slice_ = cluster.pod_slice(pod["metadata"]["uid"])
    out = node_run(node, "sh", "-c", f"p=$(systemctl show -p ControlGroup --value {slice_}); "
                                     '[ -n "$p" ] && cat /sys/fs/cgroup$p/*/cgroup.procs', check=False).stdout
    return [int(word) for word in out.split() if word.isdigit()]


def alive(node: LabNode, pid: int) -> bool:
    return node_run(node, "kill", "-0", str(pid), check=False).returncode == 0


def wait(what: str, ok, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ok()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def repair_args(folder: Path, audit: Path, *more: str) -> list[str]:
    return ["repair", NODE, "--ssh-config", str(folder / "ssh_config"), "--kubeconfig",
            str(folder / cluster.KUBECONFIG), "--json", "--audit-dir", str(audit), *more]


OPERAND_CONTAINERS = ("nvidia-device-plugin", "nvidia-dcgm-exporter", "gpu-feature-discovery",
                      "nvidia-operator-validator")


def all_four(operands: list[dict]) -> list[dict] | None:
    """The operand pods once every one of the four runs (None before: the wait goes on)."""
    return operands if len({container(p) for p in operands}) == len(OPERAND_CONTAINERS) else None


def operand_labels(node: dict) -> dict[str, str]:
    return {k: v for k, v in node["metadata"]["labels"].items() if k.startswith("nvidia.com/gpu.deploy.")}




@pytest.mark.lab
@pytest.mark.xdist_group("lab-kube")
def test_the_pods_are_real_processes_in_their_kubepods_slices(k8s_lab):
    folder, node = k8s_lab
    running_pods = pods(folder)
    assert sorted(container(p) for p in running_pods) == ["gpu-feature-discovery", "nvidia-dcgm-exporter",
                                                          "nvidia-device-plugin", "nvidia-operator-validator", "vllm"]
    held = holders(node)
    for pod in running_pods:
        (pid,) = pod_processes(node, pod)
        cid = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")
        cgroup = node_run(node, "cat", f"/proc/{pid}/cgroup").stdout
        # As on a real node: the pod's uid in its slice, the runtime's container id in its scope.
        assert f"{cluster.pod_slice(pod['metadata']['uid'])}/cri-containerd-{cid}.scope" in cgroup, cgroup
        assert (pid in held) == (container(pod) != "nvidia-operator-validator"), (container(pod), held)
    # The probe's reading names each holder's pod as for real pods (namespace, pod, owner).
    done = cli("check", "--json", "--ssh-config", str(folder / "ssh_config"), "--kubeconfig",
               str(folder / cluster.KUBECONFIG), NODE)
    state = json.loads(done.stdout)["nodes"][0]
    named = {(h["pod"]["namespace"], h["pod"]["owner_kind"], h["pod"]["container"])
             for h in state["holders"] if h.get("pod")}
    assert ("inference", "ReplicaSet", "vllm") in named, state["holders"]
    assert ("gpu-operator", "DaemonSet", "nvidia-device-plugin") in named
    assert state["k8s"]["cordoned"] is False and state["k8s"]["ready"] is True
    assert "FABRIC_OUT_OF_SYNC" in {f["code"] for f in state["findings"]}


@pytest.mark.lab
@pytest.mark.xdist_group("lab-kube")
def test_killed_mid_quiesce_then_restore_puts_the_labels_back_and_keeps_the_cordon(k8s_lab, tmp_path):
    folder, node = k8s_lab
    before = operand_labels(k8s_node(folder))
    crashed = tmp_path / "crashed"
    repair = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", *repair_args(folder, crashed, "--yes")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait("a paused operand label", lambda: PAUSED in operand_labels(k8s_node(folder)).values(), timeout=240)
    finally:
        repair.send_signal(signal.SIGKILL)
        repair.wait(timeout=30)
    assert k8s_node(folder)["spec"].get("unschedulable") is True  # the cordon went out before the first pause

    # The killed run's lock is stale (its process is gone): --restore alone refuses, --force takes it over.
    done = cli(*repair_args(folder, tmp_path / "r0", "--restore"))
    assert done.returncode == 1 and "stale" in json.loads(done.stdout)["nodes"][0]["message"], done.stdout
    done = cli(*repair_args(folder, tmp_path / "r1", "--restore", "--force"))
    assert done.returncode == 0, done.stdout + done.stderr
    after = k8s_node(folder)
    assert operand_labels(after) == before  # the administrator's false kept, the unset ones unset again
    assert after["spec"].get("unschedulable") is True
    assert after["metadata"]["annotations"].get(STOPPED_AT) == "quiesce"
    # The operands the pause ended run again, as real processes (the controller starts them one at a time: the
    # wait is for all four, not the first).
    operands = wait("the four operands running again", lambda: all_four([
        p for p in pods(folder) if container(p) in OPERAND_CONTAINERS
        and p["status"].get("phase") == "Running" and pod_processes(node, p)]))
    assert sorted(container(p) for p in operands) == sorted(OPERAND_CONTAINERS)


@pytest.mark.lab
@pytest.mark.xdist_group("lab-kube")
def test_repair_pauses_evicts_meets_the_real_effect_and_restores(k8s_lab, tmp_path):
    folder, node = k8s_lab
    # As the lab came up: the previous test's kept cordon is lifted, as its report says to.
    kubectl(folder, "uncordon", NODE)
    kubectl(folder, "annotate", "node", NODE, f"{STOPPED_AT}-")
    labels = operand_labels(k8s_node(folder))
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "false"
    assert "nvidia.com/gpu.deploy.dcgm" not in labels
    running_pods = pods(folder)
    vllm = next(p for p in running_pods if container(p) == "vllm")
    old = {p["metadata"]["name"]: pod_processes(node, p) for p in running_pods}
    assert all(len(pids) == 1 for pids in old.values()), old
    kubelet_pid = node_run(node, "systemctl", "show", "-p", "MainPID", "--value", "kubelet").stdout.strip()

    done = cli(*repair_args(folder, tmp_path / "audit", "--yes"))
    result = json.loads(done.stdout)["nodes"][0]
    assert done.returncode == 0 and result["result"] == "repaired", done.stdout + done.stderr
    steps = {s["name"]: s["status"] for s in result["steps"]}
    assert steps["verify-no-holders"] == steps["reset"] == steps["restore"] == "ok", steps
    # The pause and the eviction ended the pods' real processes (the reset, refused while any holds a GPU, ran).
    assert not any(alive(node, pid) for pids in old.values() for pid in pids)
    # kubelet was never stopped on this path.
    assert node_run(node, "systemctl", "show", "-p", "MainPID", "--value", "kubelet").stdout.strip() == kubelet_pid
    after = k8s_node(folder)
    assert operand_labels(after) == labels
    assert not after["spec"].get("unschedulable") and STOPPED_AT not in after["metadata"].get("annotations", {})
    assert vllm["metadata"]["name"] not in {p["metadata"]["name"] for p in pods(folder)}  # evicted
    operands = wait("the four operands running again", lambda: all_four([
        p for p in pods(folder) if container(p) != "vllm" and p["status"].get("phase") == "Running"
        and pod_processes(node, p)]))
    assert sorted(container(p) for p in operands) == ["gpu-feature-discovery", "nvidia-dcgm-exporter",
                                                      "nvidia-device-plugin", "nvidia-operator-validator"]
    assert not {p["metadata"]["name"] for p in operands} & set(old)  # new pods, new processes
    # The audit log keeps each argv as a JSON list: the kubectl calls it announced, joined for reading.
    records = [json.loads(line) for p in (tmp_path / "audit").glob("repair-*.jsonl")
               for line in p.read_text().splitlines() if line.strip()]
    audited = "\n".join(" ".join(r["argv"]) for r in records
                        if r.get("event") == "command-started" and (r.get("argv") or [""])[0] == "kubectl")
    for call in (f" cordon {NODE}", "paused-for-nvls-repair", "/eviction", f" uncordon {NODE}"):
        assert call in audited, (call, audited)
