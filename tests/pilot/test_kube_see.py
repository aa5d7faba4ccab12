"""Seeing the cluster (issue 29): the real kubectl against the stand-in API server (nvls_tui/lab/kube_standin),
the cluster's view on each node and each pod holder, check's JSON and table, and every unread form unknown.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil

import pytest

from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.kube.client import Kubectl
from nvls_tui.kube.view import with_kube
from nvls_tui.lab.kube_standin.harness import running
from nvls_tui.model import Holder, NodeState, Verdict
from nvls_tui.model.enums import HolderKind
from nvls_tui.model.jsonout import node_json
from nvls_tui.parsers.kube import container_id_of, parse_nodes, parse_pods
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.kubectl import kubectl as sim_kubectl

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
STATE = json.loads((FIXTURES / "k8s" / "state-gpu-node.json").read_text())
OPERANDS_DS = {"nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter", "gpu-feature-discovery",
               "nvidia-operator-validator"}  # the MIG manager's label is an administrator's false: no pod


@pytest.fixture
def standin(tmp_path):
    with running(STATE, tmp_path) as server:
        yield server


def read(kubectl: Kubectl, hosts):
    return asyncio.run(kubectl.read(hosts))


def test_one_node_list_and_one_pods_list_per_node_through_the_real_kubectl(standin):
    kubectl = Kubectl(kubeconfig=standin.kubeconfig)
    view = read(kubectl, ["gpu01", "root@gpu02.dc1:22", "gpu09"])
    gpu01, gpu02, gpu09 = view["gpu01"], view["root@gpu02.dc1:22"], view["gpu09"]
    assert (gpu01.node, gpu01.ready, gpu01.cordoned, gpu01.error, gpu01.word) == ("gpu01", True, False, None, "Ready")
    assert gpu01.operand_labels["nvidia.com/gpu.deploy.mig-manager"] == "false"
    assert gpu01.operand_labels["nvidia.com/gpu.deploy.dcgm-exporter"] == "true"
    owners = {(p.namespace, p.owner_kind, p.owner_name) for p in gpu01.pods}
    assert {("gpu-operator", "DaemonSet", ds) for ds in OPERANDS_DS} <= owners
    assert not any(p.owner_name == "nvidia-mig-manager" for p in gpu01.pods)
    vllm = next(p for p in gpu01.pods if p.namespace == "inference")
    assert vllm.owner_kind == "ReplicaSet" and vllm.owner_name.startswith("vllm-")
    assert [c.name for c in vllm.containers] == ["vllm"] and vllm.containers[0].container_id
    assert (gpu02.node, gpu02.cordoned, gpu02.word) == ("gpu02", True, "cordoned")
    batch = next(p for p in gpu02.pods if p.name == "batch-job")
    assert (batch.namespace, batch.owner_kind, batch.owner_name) == ("default", None, None)  # a bare pod
    assert (gpu09.found, gpu09.word) == (False, "absent")
    # What went over the wire: one node list, one pods list per node the cluster has (not per host, not gpu09).
    gets = [path for method, path, _, _ in standin.requests() if method == "GET" and "/api/v1/" in path]
    assert sum(p.startswith("/api/v1/nodes") for p in gets) == 1
    pods = sorted(p for p in gets if p.startswith("/api/v1/pods"))
    assert len(pods) == 2 and all("spec.nodeName" in p for p in pods)


def test_a_pod_holder_is_named_by_its_uid_and_container_id(standin):
    view = read(Kubectl(kubeconfig=standin.kubeconfig), ["gpu01"])
    vllm = next(p for p in view["gpu01"].pods if p.namespace == "inference")
    dcgm = next(p for p in view["gpu01"].pods if p.owner_name == "nvidia-dcgm-exporter")
    cid = vllm.containers[0].container_id
    cgroup = (f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{vllm.uid.replace('-', '_')}"
              f".slice/cri-containerd-{cid}.scope")
    assert container_id_of(cgroup) == cid
    holders = (Holder(100, "root", "python3 -m vllm", HolderKind.CUDA_APP, pod=f"pod{vllm.uid}", container_id=cid),
               Holder(200, "root", "/usr/bin/dcgm-exporter", HolderKind.DCGM_EXPORTER, pod=f"pod{dcgm.uid}"),
               Holder(300, "root", "python3", HolderKind.CUDA_APP, pod="pod00000000-0000-0000-0000-000000000000"),
               Holder(400, "root", "nvidia-smi", HolderKind.OTHER, unit="nvidia-snapshot.service"))
    (state,) = with_kube([NodeState("gpu01", holders=holders, boot_id="b")], view)
    refs = {h.pid: h.pod_ref for h in state.holders}
    assert (refs[100].namespace, refs[100].name, refs[100].container, refs[100].owner_kind) == (
        "inference", vllm.name, "vllm", "ReplicaSet")
    assert (refs[200].owner_kind, refs[200].owner_name, refs[200].container) == (
        "DaemonSet", "nvidia-dcgm-exporter", "nvidia-dcgm-exporter")
    assert refs[300] is None and refs[400] is None  # a pod the cluster does not list; no pod at all
    out = node_json(state, diagnose(state))
    pods = {h["pid"]: h["pod"] for h in out["holders"]}
    assert pods[100] == {"uid": vllm.uid, "namespace": "inference", "name": vllm.name, "container": "vllm",
                         "owner_kind": "ReplicaSet", "owner_name": vllm.owner_name}
    assert pods[300] == {"uid": "00000000-0000-0000-0000-000000000000", "namespace": None, "name": None,
                         "container": None, "owner_kind": None, "owner_name": None}
    assert pods[400] is None
    assert out["k8s"]["node"] == "gpu01" and out["k8s"]["ready"] is True and out["k8s"]["cordoned"] is False
    assert out["k8s"]["labels"]["nvidia.com/gpu.deploy.mig-manager"] == "false"


def test_a_cluster_that_does_not_answer_is_unknown_never_not_cordoned(standin):
    standin.stop()  # the server is gone: kubectl's connection is refused
    view = read(Kubectl(kubeconfig=standin.kubeconfig, timeout=5), ["gpu01"])
    node = view["gpu01"]
    assert (node.ready, node.cordoned, node.word, node.reason) == (None, None, "?", "failed")
    assert "refused" in node.error and node.error.count("\n") == 0
    healthy = load_fleet("sim:healthy/hgx01", speed=0)
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.poll.once import poll_once

    state = asyncio.run(poll_once(sim_backends(healthy)[0], 30))
    assert diagnose(state).verdict is Verdict.HEALTHY
    (seen,) = with_kube([state], {"hgx01": node})
    diag = diagnose(seen)
    assert diag.verdict is not Verdict.HEALTHY
    assert [(f.code, f.section, f.reason, str(f.severity)) for f in diag.findings if f.code != "HOLDERS_PRESENT"] == [
        ("EVIDENCE_MISSING", "k8s", "failed", "warning")]
    assert node_json(seen, diag)["k8s"] == {"node": "gpu01", "found": True, "ready": None, "cordoned": None,
                                           "labels": {}, "taints": [], "error": node.error}
    (again,) = with_kube([seen], {"hgx01": node})  # folding the view again replaces the finding, never adds one
    assert [m.section for m in again.missing].count("k8s") == 1


def test_a_node_never_read_gets_no_k8s_section_that_would_make_it_look_read():
    from nvls_tui.model.kube import KubeNode

    (state,) = with_kube([NodeState("gpu05")], {"gpu05": KubeNode("gpu05", error="down", reason="failed")})
    assert state.missing == () and state.missing_section("gpus") is not None


@pytest.mark.parametrize(("out", "said"), [
    ("{", "not JSON"),
    ('{"kind": "Status", "items": []}', "no list of nodes"),
    ('{"kind": "List", "items": [{"metadata": {}}]}', "a node without a name"),
    ('{"kind": "List", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}]}', "twice"),
    ('{"kind": "List", "items": [{"metadata": {"name": "a", "labels": {"x": 1}}}]}', "not strings"),
])
def test_a_node_list_that_cannot_be_read_whole_reads_nothing(out, said):
    async def runner(argv, timeout, cap):
        return 0, out, ""

    node = read(Kubectl(runner=runner), ["a"])["a"]
    assert (node.ready, node.cordoned, node.reason) == (None, None, "unparseable") and said in node.error


def test_pods_that_cannot_be_read_keep_the_node_and_say_so():
    nodes = '{"kind": "List", "items": [{"metadata": {"name": "a"}, "spec": {"unschedulable": true}}]}'

    async def runner(argv, timeout, cap):
        if "pods" in argv:
            return 1, "", 'E1202 retry\nError from server (Forbidden): pods is forbidden: User "ops" cannot list\n'
        return 0, nodes, ""

    node = read(Kubectl(runner=runner), ["a"])["a"]
    assert (node.ready, node.cordoned, node.word) == (None, True, "?")  # no Ready condition: unknown
    assert node.reason == "failed" and "pods is forbidden" in node.error and "E1202" not in node.error


def test_a_kubectl_that_hangs_is_killed_at_its_deadline(tmp_path):
    fake = tmp_path / "kubectl"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    node = read(Kubectl(binary=str(fake), timeout=1), ["a"])["a"]
    assert node.reason == "timed out" and "did not answer within 1 s" in node.error


def test_hostile_names_from_the_api_are_data():
    pods = {"kind": "List", "items": [{"metadata": {"name": "p\x1b[31m", "namespace": "n", "uid": "u",
                                                     "ownerReferences": [{"kind": "DaemonSet", "name": "[b]x\u202e"}]},
                                        "spec": {"nodeName": "a", "containers": [{"name": "c"}]}}]}
    (pod,) = parse_pods(json.dumps(pods)).value
    assert (pod.name, pod.owner_name) == ("p", "[b]x")


def test_the_simulated_kubectl_prints_what_the_real_one_reads_from_the_api(tmp_path):
    """The simulator's objects served by the stand-in and read by the real kubectl read as the simulator's own."""
    fleet = load_fleet("sim:k8s-incident", speed=0)
    now = fleet.clock.now()
    nodes = [fleet.node(n) for n in fleet.names]
    listed = parse_nodes(sim_kubectl(nodes, ["kubectl", "get", "nodes", "-o", "json"], now)[1])
    argv = ["kubectl", "get", "pods", "--all-namespaces", "--field-selector", "spec.nodeName=gpu06", "-o", "json"]
    pods = parse_pods(sim_kubectl(nodes, argv, now)[1])
    assert not listed.warnings and not pods.warnings
    objects = json.loads(sim_kubectl(nodes, ["kubectl", "get", "nodes", "-o", "json"], now)[1])["items"]
    objects += json.loads(sim_kubectl(nodes, argv, now)[1])["items"]
    with running({"objects": objects}, tmp_path) as server:
        real = read(Kubectl(kubeconfig=server.kubeconfig), ["gpu05", "gpu06"])
    assert real["gpu06"].pods == tuple(pods.value)
    for name in ("gpu05", "gpu06"):
        assert real[name].labels == listed.value[name].labels
        assert (real[name].ready, real[name].cordoned) == (listed.value[name].ready, listed.value[name].cordoned)
    assert real["gpu05"].cordoned is True and real["gpu06"].cordoned is False


def test_check_on_the_k8s_incident(capsys):
    assert main(["check", "--json", "sim:k8s-incident"]) == 1
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert {h: (n["k8s"]["ready"], n["k8s"]["cordoned"]) for h, n in nodes.items()} == {
        "gpu05": (True, True), "gpu06": (True, False), "gpu07": (True, False)}
    assert nodes["gpu06"]["k8s"]["labels"]["nvidia.com/gpu.deploy.node-status-exporter"] == "false"
    pods = [h["pod"] for h in nodes["gpu06"]["holders"] if h["pod"]]
    vllm = [p for p in pods if p["namespace"] == "inference"]
    assert [(p["owner_kind"], p["owner_name"], p["container"]) for p in vllm] == [
        ("ReplicaSet", "vllm-llama-70b-6d5f8b9c7", "vllm")]
    operator = {(p["namespace"], p["owner_kind"]) for p in pods if p not in vllm}
    assert operator == {("gpu-operator", "DaemonSet")} and len(pods) == 5
    assert main(["check", "sim:k8s-incident"]) == 1
    table = capsys.readouterr().out
    header = next(line for line in table.splitlines() if "verdict" in line)
    assert header.split()[-2:] == ["k8s", "┃"]
    assert any("gpu05" in line and "cordoned" in line for line in table.splitlines())


async def test_the_console_shows_the_k8s_column_the_labels_and_the_pod_holders():
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.widgets.fleet_grid import FleetGrid
    from nvls_tui.settings import Settings
    from nvls_tui.targets import kube_from_settings
    from tests.waiting import first_poll, open_node_screen, wait_until

    backends = sim_backends(load_fleet("sim:k8s-incident", speed=0))
    app = NvlsApp(backends, poll_interval=None, kube=kube_from_settings(Settings(), backends))
    async with app.run_test(size=(200, 50)) as pilot:
        await first_poll(app)
        await wait_until(pilot, lambda: all(app.fleet.get(h).k8s is not None for h in ("gpu05", "gpu06", "gpu07")),
                         "the cluster's view folded in")
        grid = app.screen.query_one(FleetGrid)
        await wait_until(pilot, lambda: grid._shown.get("gpu05", {}).get("k8s") is not None, "the k8s column")
        assert "k8s" in grid.layout_now.keys
        assert {h: grid._shown[h]["k8s"].plain for h in ("gpu05", "gpu06", "gpu07")} == {
            "gpu05": "cordoned", "gpu06": "Ready", "gpu07": "Ready"}
        screen = await open_node_screen(app, pilot, "gpu06")
        from textual.widgets import DataTable

        units = screen.query_one("#units", DataTable)
        rows = {str(units.get_row(k)[0]): units.get_row(k)[1:] for k in units.rows}
        assert rows["deploy.node-status-exporter"][0].plain == "false"
        assert rows["deploy.dcgm-exporter"][0].plain == "true"
        assert (rows["k8s gpu06"][0].plain, str(rows["k8s gpu06"][1])) == ("Ready", "schedulable")
        holders = screen.query_one("#holders", DataTable)
        owners = [str(holders.get_row(k)[4]) for k in holders.rows]
        # ns/pod in the table (issue 38 item 3: the container and owner pushed the command off it); the rest is
        # the line under the table for the holder under the cursor (tests/pilot/test_holders_on_kubernetes.py).
        assert "inference/vllm-llama-70b-6d5f8b9c7-b25a6" in owners
        assert any(o.startswith("gpu-operator/") and o.endswith("-daemonset-a33d2") for o in owners), owners


async def test_the_console_without_a_cluster_has_no_k8s_column():
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.widgets.fleet_grid import FleetGrid
    from tests.waiting import first_poll

    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None)
    async with app.run_test(size=(200, 50)):
        await first_poll(app)
        assert "k8s" not in app.screen.query_one(FleetGrid).layout_now.keys
        assert all(s.k8s is None for s in app.fleet.nodes)
