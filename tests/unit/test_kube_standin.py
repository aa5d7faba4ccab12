"""The stand-in Kubernetes API server (nvls_tui/lab/kube_standin) driven by the REAL kubectl (issue 29).

No kube-apiserver can be installed here, so the product's client, the real ``kubectl`` binary, talks
to the stand-in; these tests pin that every request the product makes gets the real API's answer:
the status code, the Status body and kubectl's own words and exit status.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from nvls_tui.lab.kube_standin import FixtureError, Store, load_state, running
from nvls_tui.lab.kube_standin.controller import Timing
from nvls_tui.lab.kube_standin.errors import ApiError
from nvls_tui.lab.kube_standin.patch import STRATEGIC, apply
from nvls_tui.lab.kube_standin.selectors import field_selector, label_selector

FIXTURES = Path(__file__).parents[1] / "fixtures" / "k8s"
STATE = json.loads((FIXTURES / "state-gpu-node.json").read_text())
KUBECTL = shutil.which("kubectl")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (scripts/system-deps.sh)")

GPU01_OPERANDS = {"nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter", "gpu-feature-discovery",
                  "nvidia-operator-validator"}  # nvidia-mig-manager: the administrator's false


class Hooks:
    """What the controller told the 'lab': pods whose processes started and ended."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.refuse: set[str] = set()
        self.lock = threading.Lock()

    def on_create(self, pod: dict[str, Any]) -> None:
        with self.lock:
            self.created.append(pod["metadata"]["name"])

    def on_delete(self, pod: dict[str, Any]) -> None:
        if pod["metadata"]["name"] in self.refuse:
            raise RuntimeError("the process would not end")
        with self.lock:
            self.deleted.append(pod["metadata"]["name"])


@pytest.fixture
def cluster(tmp_path):
    hooks = Hooks()
    timing = Timing(operand_grace=0.1, create_delay=0.1, termination_delay=0.0)
    with running(STATE, tmp_path, on_create=hooks.on_create, on_delete=hooks.on_delete, timing=timing) as standin:
        standin.hooks = hooks
        standin.cache = tmp_path / "kube-cache"
        yield standin


def kubectl(standin, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real kubectl against the stand-in, with its own discovery cache."""
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, "--kubeconfig", standin.kubeconfig, "--context", standin.context,
                           "--cache-dir", str(standin.cache), *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def http(standin, method: str, path: str, body: Any = None, content_type: str = "application/json",
         accept: str = "application/json") -> tuple[int, dict[str, str], Any]:
    """One raw request: (code, headers, decoded JSON body)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(standin.url + path, data=data, method=method,
                                 headers={"Content-Type": content_type, "Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def pods_on(standin, node: str) -> dict[str, dict[str, Any]]:
    items, _ = standin.store.query("pods", None, field_selector("pods", f"spec.nodeName={node}"))
    return {p["metadata"]["name"]: p for p in items}


def owner(pod: dict[str, Any]) -> str:
    """The name of the pod's controller ("" for a bare pod)."""
    refs = pod["metadata"].get("ownerReferences") or [{"name": ""}]
    return str(refs[0]["name"])


def requests_matching(standin, method: str, fragment: str) -> list[tuple[str, str, str, bytes]]:
    return [r for r in standin.requests() if r[0] == method and fragment in r[1]]


# -- kubectl's reads --------------------------------------------------------------------------------


@needs_kubectl
def test_get_node_json(cluster):
    out = kubectl(cluster, "get", "node", "gpu01", "-o", "json")
    assert out.returncode == 0, out.stderr
    node = json.loads(out.stdout)
    assert (node["kind"], node["apiVersion"], node["metadata"]["name"]) == ("Node", "v1", "gpu01")
    assert node["metadata"]["labels"]["nvidia.com/gpu.deploy.mig-manager"] == "false"
    assert node["spec"] == {}
    assert [c["type"] for c in node["status"]["conditions"]] == ["Ready"]
    assert node["status"]["conditions"][0]["status"] == "True"
    assert requests_matching(cluster, "GET", "/api/v1/nodes/gpu01")
    # kubectl 1.32 asked for the aggregated discovery first and was answered in it
    assert any(r[1].startswith("/api?") for r in cluster.requests())


@needs_kubectl
def test_get_pods_all_namespaces_by_node(cluster):
    out = kubectl(cluster, "get", "pods", "-A", "--field-selector", "spec.nodeName=gpu01", "-o", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["kind"] == "List"
    owners = sorted(owner(p) for p in doc["items"])
    assert owners == sorted([*GPU01_OPERANDS, next(o for o in owners if o.startswith("vllm-"))])
    assert {p["spec"]["nodeName"] for p in doc["items"]} == {"gpu01"}
    vllm = next(p for p in doc["items"] if p["metadata"]["namespace"] == "inference")
    assert vllm["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert vllm["spec"]["containers"][0]["name"] == "vllm"
    assert vllm["status"]["phase"] == "Running"
    assert requests_matching(cluster, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu01")


@needs_kubectl
def test_get_pods_by_label_selector(cluster):
    out = kubectl(cluster, "get", "pods", "-A", "-l", "app in (vllm,nvidia-dcgm-exporter)", "-o", "json")
    assert out.returncode == 0, out.stderr
    names = sorted(owner(p).split("-")[0] for p in json.loads(out.stdout)["items"])
    assert names == ["nvidia", "nvidia", "vllm"]  # dcgm on gpu01 and gpu02, vllm on gpu01


@needs_kubectl
def test_unknown_resource_and_not_found(cluster):
    out = kubectl(cluster, "get", "gpuwidgets")
    assert (out.returncode, out.stderr.strip()) == (1, 'error: the server doesn\'t have a resource type "gpuwidgets"')
    out = kubectl(cluster, "get", "node", "gpu99", "-o", "json")
    assert (out.returncode, out.stderr.strip()) == (1, 'Error from server (NotFound): nodes "gpu99" not found')
    code, _, body = http(cluster, "GET", "/api/v1/namespaces/inference/pods/nope")
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'pods "nope" not found')
    assert body["details"] == {"name": "nope", "kind": "pods"}


# -- kubectl's writes to the node -------------------------------------------------------------------


@needs_kubectl
def test_cordon_and_uncordon(cluster):
    before = cluster.store.get("nodes", "", "gpu01")["metadata"]["resourceVersion"]
    out = kubectl(cluster, "cordon", "gpu01")
    assert (out.returncode, out.stdout.strip()) == (0, "node/gpu01 cordoned")
    node = cluster.store.get("nodes", "", "gpu01")
    assert node["spec"]["unschedulable"] is True
    assert int(node["metadata"]["resourceVersion"]) > int(before)
    patches = requests_matching(cluster, "PATCH", "/api/v1/nodes/gpu01")
    assert [(p[2], json.loads(p[3])) for p in patches] == [(STRATEGIC, {"spec": {"unschedulable": True}})]
    again = kubectl(cluster, "cordon", "gpu01")
    assert (again.returncode, again.stdout.strip()) == (0, "node/gpu01 already cordoned")
    assert len(requests_matching(cluster, "PATCH", "/api/v1/nodes/gpu01")) == 1
    out = kubectl(cluster, "uncordon", "gpu01")
    assert (out.returncode, out.stdout.strip()) == (0, "node/gpu01 uncordoned")
    assert "unschedulable" not in cluster.store.get("nodes", "", "gpu01")["spec"]
    # gpu02 was cordoned in the fixture: the field kubectl's --field-selector reads
    out = kubectl(cluster, "get", "nodes", "--field-selector", "spec.unschedulable=true", "-o", "name")
    assert out.stdout.split() == ["node/gpu02"]


@needs_kubectl
def test_label_set_overwrite_remove(cluster):
    key = "nvls-tui.test/step"
    out = kubectl(cluster, "label", "node", "gpu01", f"{key}=one")
    assert (out.returncode, out.stdout.strip()) == (0, "node/gpu01 labeled")
    rv1 = cluster.store.get("nodes", "", "gpu01")["metadata"]["resourceVersion"]
    refused = kubectl(cluster, "label", "node", "gpu01", f"{key}=two")
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"error: '{key}' already has a value (one), and --overwrite is false"
    out = kubectl(cluster, "label", "node", "gpu01", f"{key}=two", "--overwrite")
    assert out.returncode == 0, out.stderr
    node = cluster.store.get("nodes", "", "gpu01")
    assert node["metadata"]["labels"][key] == "two"
    assert int(node["metadata"]["resourceVersion"]) > int(rv1)
    out = kubectl(cluster, "label", "node", "gpu01", f"{key}-")
    assert (out.returncode, out.stdout.strip()) == (0, "node/gpu01 unlabeled")
    assert key not in cluster.store.get("nodes", "", "gpu01")["metadata"]["labels"]
    bodies = [json.loads(p[3]) for p in requests_matching(cluster, "PATCH", "/api/v1/nodes/gpu01")]
    assert bodies == [{"metadata": {"labels": {key: "one"}}}, {"metadata": {"labels": {key: "two"}}},
                      {"metadata": {"labels": {key: None}}}]
    assert {p[2] for p in requests_matching(cluster, "PATCH", "/api/v1/nodes/gpu01")} == {
        "application/merge-patch+json"}


@needs_kubectl
def test_label_with_a_stale_resource_version_is_a_conflict(cluster):
    stale = cluster.store.get("nodes", "", "gpu01")["metadata"]["resourceVersion"]
    assert kubectl(cluster, "annotate", "node", "gpu01", "x=1").returncode == 0
    out = kubectl(cluster, "label", "node", "gpu01", "nvls-tui.test/x=1", f"--resource-version={stale}")
    assert out.returncode == 1
    assert out.stderr.strip() == ('Error from server (Conflict): Operation cannot be fulfilled on nodes "gpu01": '
                                  "the object has been modified; please apply your changes to the latest version "
                                  "and try again")
    assert "nvls-tui.test/x" not in cluster.store.get("nodes", "", "gpu01")["metadata"]["labels"]


@needs_kubectl
def test_annotate(cluster):
    out = kubectl(cluster, "annotate", "node", "gpu01", "nvls-tui/repair-step=reset", "--overwrite")
    assert (out.returncode, out.stdout.strip()) == (0, "node/gpu01 annotated")
    assert cluster.store.get("nodes", "", "gpu01")["metadata"]["annotations"] == {"nvls-tui/repair-step": "reset"}
    out = kubectl(cluster, "annotate", "node", "gpu01", "nvls-tui/repair-step-")
    assert out.returncode == 0, out.stderr
    assert cluster.store.get("nodes", "", "gpu01")["metadata"]["annotations"] == {}


@needs_kubectl
def test_human_readable_get_is_the_servers_table(cluster):
    out = kubectl(cluster, "get", "nodes")
    lines = [line.split() for line in out.stdout.splitlines()]
    assert lines[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [(row[0], row[1], row[2], row[4]) for row in lines[1:]] == [
        ("gpu01", "Ready", "<none>", "v1.32.0"), ("gpu02", "Ready,SchedulingDisabled", "<none>", "v1.32.0")]
    out = kubectl(cluster, "get", "pods", "-n", "inference", "-o", "wide")
    header, row = (line.split() for line in out.stdout.splitlines())
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and header[5:8] == ["IP", "NODE", "NOMINATED"]
    assert row[1:4] == ["1/1", "Running", "0"] and row[5:7] == ["10.0.0.1", "gpu01"]
    out = kubectl(cluster, "get", "pdb", "-A")
    assert out.stdout.split("\n")[1].split() == ["inference", "vllm-pdb", "1", "N/A", "0",
                                                  out.stdout.split("\n")[1].split()[-1]]


def test_human_age_as_kubectl_shows_it():
    from nvls_tui.lab.kube_standin.tables import human_age

    t0 = "2025-01-01T00:00:00Z"
    base = 1735689600.0
    assert [human_age(t0, base + s) for s in (5, 119, 200, 600, 3 * 3600 + 5, 5 * 3600 + 600, 30 * 3600,
                                                  3 * 86400 + 7200, 30 * 86400)] == [
        "5s", "119s", "3m20s", "10m", "3h", "5h10m", "30h", "3d2h", "30d"]
    assert human_age(None) == "<unknown>" and human_age("yesterday") == "<invalid>"


# -- the GPU Operator's DaemonSets ------------------------------------------------------------------


@needs_kubectl
def test_paused_operand_label_deletes_its_pod_and_true_brings_a_new_one(cluster):
    hooks = cluster.hooks
    old = next(n for n, p in pods_on(cluster, "gpu01").items() if owner(p) == "nvidia-device-plugin-daemonset")
    assert old in hooks.created  # the loaded pods' processes were started
    label = "nvidia.com/gpu.deploy.device-plugin"
    assert kubectl(cluster, "label", "node", "gpu01", f"{label}=paused-for-nvls-repair", "--overwrite").returncode == 0
    cluster.wait_for(lambda s: old not in pods_on(cluster, "gpu01"))
    assert old in hooks.deleted
    left = {owner(p) for p in pods_on(cluster, "gpu01").values()}
    assert "nvidia-device-plugin-daemonset" not in left
    assert GPU01_OPERANDS - {"nvidia-device-plugin-daemonset"} <= left
    # gpu02's device plugin (its label unset) is untouched
    assert any(owner(p) == "nvidia-device-plugin-daemonset" for p in pods_on(cluster, "gpu02").values())
    assert kubectl(cluster, "label", "node", "gpu01", f"{label}=true", "--overwrite").returncode == 0
    new = cluster.wait_for(lambda s: next((n for n, p in pods_on(cluster, "gpu01").items()
                                           if owner(p) == "nvidia-device-plugin-daemonset"
                                           and p["status"]["phase"] == "Running"), None))
    assert new != old and new.startswith("nvidia-device-plugin-daemonset-")
    assert new in hooks.created
    # unset counts as true (as the operator labels a GPU node)
    assert kubectl(cluster, "label", "node", "gpu01", f"{label}-").returncode == 0
    time.sleep(0.5)
    assert new in pods_on(cluster, "gpu01")


@needs_kubectl
def test_administrators_false_keeps_the_operand_away(cluster):
    assert not any(owner(p) == "nvidia-mig-manager" for p in pods_on(cluster, "gpu01").values())
    assert any(owner(p) == "nvidia-mig-manager" for p in pods_on(cluster, "gpu02").values())
    ds = json.loads(kubectl(cluster, "get", "ds", "-n", "gpu-operator", "nvidia-mig-manager", "-o", "json").stdout)
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.deploy.mig-manager": "true"}
    assert (ds["status"]["desiredNumberScheduled"], ds["status"]["numberReady"]) == (1, 1)


# -- eviction ---------------------------------------------------------------------------------------


def _eviction(tmp_path: Path, name: str, namespace: str) -> str:
    path = tmp_path / f"eviction-{name}.json"
    path.write_text(json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                                "metadata": {"name": name, "namespace": namespace}}))
    return str(path)


@needs_kubectl
@pytest.mark.long  # seconds: handed out first of its tier (tests/conftest.py)
def test_eviction_refused_by_the_disruption_budget(cluster, tmp_path):
    vllm = next(n for n, p in pods_on(cluster, "gpu01").items() if p["metadata"]["namespace"] == "inference")
    url = f"/api/v1/namespaces/inference/pods/{vllm}/eviction"
    out = kubectl(cluster, "create", "--raw", url, "-f", _eviction(tmp_path, vllm, "inference"))
    assert out.returncode == 1
    assert out.stderr.strip() == ("Error from server (TooManyRequests): Cannot evict pod as it would violate the "
                                  "pod's disruption budget.")
    code, _, body = http(cluster, "POST", url, {"apiVersion": "policy/v1", "kind": "Eviction",
                                                "metadata": {"name": vllm, "namespace": "inference"}})
    assert code == 429
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                    "reason": "TooManyRequests",
                    "details": {"causes": [{"reason": "DisruptionBudget",
                                            "message": "The disruption budget vllm-pdb needs 1 healthy pods and "
                                                       "has 1 currently"}]},
                    "code": 429}
    assert vllm in pods_on(cluster, "gpu01") and vllm not in cluster.hooks.deleted
    pdb = json.loads(kubectl(cluster, "get", "pdb", "-n", "inference", "vllm-pdb", "-o", "json").stdout)
    assert (pdb["status"]["disruptionsAllowed"], pdb["status"]["currentHealthy"],
            pdb["status"]["desiredHealthy"], pdb["status"]["expectedPods"]) == (0, 1, 1, 1)
    # kubectl drain retries the 429 until its timeout, never deletes
    out = kubectl(cluster, "drain", "gpu01", "--pod-selector", "app=vllm", "--timeout=3s")
    assert out.returncode == 1
    assert "global timeout reached: 3s" in out.stderr
    assert vllm in pods_on(cluster, "gpu01")


@needs_kubectl
def test_eviction_allowed(cluster, tmp_path):
    url = "/api/v1/namespaces/default/pods/batch-job/eviction"
    out = kubectl(cluster, "create", "--raw", url, "-f", _eviction(tmp_path, "batch-job", "default"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "code": 201}
    cluster.wait_for(lambda s: "batch-job" not in pods_on(cluster, "gpu02"))
    assert "batch-job" in cluster.hooks.deleted
    # with the budget lowered to none, the vLLM pod goes too, and its ReplicaSet's replacement stays Pending
    assert kubectl(cluster, "patch", "pdb", "-n", "inference", "vllm-pdb", "--type=merge",
                   "-p", '{"spec":{"minAvailable":0}}').returncode == 0
    vllm = next(n for n, p in pods_on(cluster, "gpu01").items() if p["metadata"]["namespace"] == "inference")
    out = kubectl(cluster, "create", "--raw", f"/api/v1/namespaces/inference/pods/{vllm}/eviction",
                  "-f", _eviction(tmp_path, vllm, "inference"))
    assert out.returncode == 0, out.stderr
    cluster.wait_for(lambda s: vllm not in pods_on(cluster, "gpu01"))
    replacement = cluster.wait_for(lambda s: [p for p in s.query("pods", "inference")[0]
                                              if p["metadata"]["name"] != vllm])
    assert [p["status"]["phase"] for p in replacement] == ["Pending"]
    assert "nodeName" not in replacement[0]["spec"]


def test_eviction_of_a_missing_pod_and_a_wrong_body(cluster):
    code, _, body = http(cluster, "POST", "/api/v1/namespaces/default/pods/ghost/eviction",
                         {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ghost"}})
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'pods "ghost" not found')
    code, _, body = http(cluster, "POST", "/api/v1/namespaces/default/pods/batch-job/eviction",
                         {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}})
    assert (code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == "name in URL does not match name in Eviction object"


def test_eviction_of_a_pod_two_budgets_select_is_a_500(cluster):
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "second", "namespace": "inference"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "vllm"}}}}
    code, _, created = http(cluster, "POST", "/apis/policy/v1/namespaces/inference/poddisruptionbudgets", budget)
    assert (code, created["kind"], created["metadata"]["name"]) == (201, "PodDisruptionBudget", "second")
    vllm = next(n for n, p in pods_on(cluster, "gpu01").items() if p["metadata"]["namespace"] == "inference")
    code, _, body = http(cluster, "POST", f"/api/v1/namespaces/inference/pods/{vllm}/eviction",
                         {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": vllm}})
    assert (code, body["reason"]) == (500, "InternalError")
    assert body["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction subresource does "
                               "not support.")
    assert vllm in pods_on(cluster, "gpu01")


@needs_kubectl
def test_namespaces_of_the_state(cluster):
    out = kubectl(cluster, "get", "namespaces", "-o", "name")
    assert out.stdout.split() == ["namespace/default", "namespace/gpu-operator", "namespace/inference"]


# -- delete and wait --------------------------------------------------------------------------------


@pytest.fixture
def slow_cluster(tmp_path):
    """Pods take a second to end (the kubelet's SIGTERM wait), so deletion is watched, not just read."""
    hooks = Hooks()
    timing = Timing(operand_grace=0.1, create_delay=0.1, termination_delay=1.0)
    with running(STATE, tmp_path, on_create=hooks.on_create, on_delete=hooks.on_delete, timing=timing) as standin:
        standin.hooks = hooks
        standin.cache = tmp_path / "kube-cache"
        yield standin


@needs_kubectl
def test_delete_pod_waits_for_it_to_go(slow_cluster):
    out = kubectl(slow_cluster, "delete", "pod", "-n", "default", "batch-job")
    assert (out.returncode, out.stdout.strip()) == (0, 'pod "batch-job" deleted')
    assert "batch-job" not in pods_on(slow_cluster, "gpu02")
    assert "batch-job" in slow_cluster.hooks.deleted
    assert any("watch=true" in r[1] for r in requests_matching(slow_cluster, "GET", "/namespaces/default/pods"))


@needs_kubectl
def test_wait_for_delete(slow_cluster):
    out = kubectl(slow_cluster, "delete", "pod", "-n", "default", "batch-job", "--wait=false")
    assert out.returncode == 0, out.stderr
    marked = slow_cluster.store.get("pods", "default", "batch-job")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    out = kubectl(slow_cluster, "wait", "--for=delete", "pod/batch-job", "-n", "default", "--timeout=20s")
    assert (out.returncode, out.stdout.strip()) == (0, "pod/batch-job condition met")
    assert slow_cluster.store.find("pods", "default", "batch-job") is None


@needs_kubectl
def test_wait_for_delete_times_out_on_a_pod_that_will_not_end(slow_cluster):
    slow_cluster.hooks.refuse.add("batch-job")
    assert kubectl(slow_cluster, "delete", "pod", "-n", "default", "batch-job", "--wait=false").returncode == 0
    # 2 s (was 3): past the fixture's 1 s termination delay, after which the kubelet's refusal is recorded.
    out = kubectl(slow_cluster, "wait", "--for=delete", "pod/batch-job", "-n", "default", "--timeout=2s")
    assert out.returncode == 1
    # kubectl's last word; client-go may log its informer's own "context deadline exceeded" before it (a race in
    # the client at the deadline, as against a real server)
    assert out.stderr.strip().splitlines()[-1] == "error: timed out waiting for the condition on pods/batch-job"
    assert slow_cluster.store.get("pods", "default", "batch-job")["metadata"]["deletionTimestamp"]
    assert slow_cluster.controller.errors and "would not end" in slow_cluster.controller.errors[-1]


# -- the pieces, without kubectl --------------------------------------------------------------------


def test_label_selector_forms():
    pod = {"metadata": {"labels": {"app": "vllm", "tier": "gpu"}}}
    assert label_selector("app=vllm,tier==gpu")(pod)
    assert not label_selector("app!=vllm")(pod)
    assert label_selector("app in (vllm, x),!missing,tier")(pod)
    assert not label_selector("app notin (vllm)")(pod)
    with pytest.raises(ApiError) as err:
        label_selector("app=(")
    assert err.value.code == 400


def test_field_selector_refuses_an_unsupported_field():
    with pytest.raises(ApiError) as err:
        field_selector("pods", "spec.hostname=x")
    assert (err.value.code, err.value.body["message"]) == (400, "field label not supported: spec.hostname")


def test_strategic_merge_merges_conditions_by_type():
    node = {"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": "True"},
                                                                 {"type": "MemoryPressure", "status": "False"}]}}
    patched = apply(STRATEGIC, node, json.dumps({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
                    .encode())
    assert patched["status"]["conditions"] == [{"type": "Ready", "status": "False"},
                                               {"type": "MemoryPressure", "status": "False"}]


def test_a_patch_of_the_main_resource_leaves_status_alone(cluster):
    before = cluster.store.get("nodes", "", "gpu01")
    code, _, node = http(cluster, "PATCH", "/api/v1/nodes/gpu01",
                         {"metadata": {"labels": {"x": "y"}}, "status": {"conditions": [{"type": "Ready",
                                                                                         "status": "False"}]}},
                         "application/merge-patch+json")
    assert code == 200
    assert node["status"] == before["status"]
    assert node["metadata"]["labels"]["x"] == "y"


def test_json_patch_test_failure_changes_nothing(cluster):
    before = cluster.store.get("nodes", "", "gpu01")
    ops = [{"op": "test", "path": "/metadata/labels/nvidia.com~1gpu.deploy.mig-manager", "value": "true"},
           {"op": "replace", "path": "/metadata/labels/nvidia.com~1gpu.deploy.mig-manager", "value": "x"}]
    code, _, body = http(cluster, "PATCH", "/api/v1/nodes/gpu01", ops, "application/json-patch+json")
    assert (code, body["reason"]) == (422, "Invalid")
    assert cluster.store.get("nodes", "", "gpu01") == before
    code, _, body = http(cluster, "PATCH", "/api/v1/nodes/gpu01", {"a": 1}, "application/apply-patch+yaml")
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")


def test_watch_from_a_resource_version_streams_the_deletion(cluster):
    rv = cluster.store.resource_version
    cluster.store.delete("pods", "default", "batch-job", grace=0)
    req = urllib.request.Request(cluster.url + f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}"
                                 "&fieldSelector=metadata.name%3Dbatch-job&timeoutSeconds=1")
    with urllib.request.urlopen(req, timeout=10) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["kind"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "Pod", "batch-job")]
    code, _, body = http(cluster, "GET", "/api/v1/pods?watch=1&resourceVersion=abc")
    assert (code, body["reason"]) == (400, "BadRequest")


def test_watch_from_a_compacted_resource_version_is_410(tmp_path):
    store = load_state(STATE, Store(event_window=5))
    for i in range(10):
        store.update("nodes", "", "gpu01", lambda n, i=i: n["metadata"]["annotations"].__setitem__("n", str(i)))
    with running(store, tmp_path) as standin:
        code, _, body = http(standin, "GET", "/api/v1/nodes?watch=true&resourceVersion=1001")
    assert (code, body["reason"]) == (410, "Expired")
    assert body["message"].startswith("too old resource version: 1001 (")


def test_hooks_end_and_start_real_processes(tmp_path):
    """The lab's use: each pod is a real process; pausing the operand's label ends the device plugin's."""
    processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(pod: dict[str, Any]) -> None:
        processes[pod["metadata"]["name"]] = subprocess.Popen(["sleep", "300"])

    def end(pod: dict[str, Any]) -> None:
        proc = processes[pod["metadata"]["name"]]
        proc.terminate()
        proc.wait(timeout=10)

    timing = Timing(operand_grace=0.1, create_delay=0.1)
    try:
        with running(STATE, tmp_path, on_create=start, on_delete=end, timing=timing) as standin:
            plugin = next(n for n, p in pods_on(standin, "gpu01").items()
                          if owner(p) == "nvidia-device-plugin-daemonset")
            assert processes[plugin].poll() is None
            standin.store.update("nodes", "", "gpu01", lambda n: n["metadata"]["labels"].__setitem__(
                "nvidia.com/gpu.deploy.device-plugin", "paused-for-nvls-repair"))
            standin.wait_for(lambda s: plugin not in pods_on(standin, "gpu01"))
            assert processes[plugin].returncode == -15  # SIGTERM, as the kubelet sends
            others = [n for n in pods_on(standin, "gpu01") if n != plugin]
            assert others and all(processes[n].poll() is None for n in others)
    finally:
        for proc in processes.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_legacy_discovery_for_older_kubectl(cluster):
    code, _, body = http(cluster, "GET", "/api")
    assert (code, body["kind"], body["versions"]) == (200, "APIVersions", ["v1"])
    code, _, body = http(cluster, "GET", "/api/v1")
    eviction = next(r for r in body["resources"] if r["name"] == "pods/eviction")
    assert (eviction["group"], eviction["version"], eviction["kind"], eviction["verbs"]) == (
        "policy", "v1", "Eviction", ["create"])
    code, headers, body = http(cluster, "GET", "/apis", accept="application/json;g=apidiscovery.k8s.io;v=v2;"
                               "as=APIGroupDiscoveryList,application/json")
    assert headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert [i["metadata"]["name"] for i in body["items"]] == ["apps", "policy"]


def test_fixture_errors_are_one_line():
    with pytest.raises(FixtureError, match=r"^pods\[0\]: no node 'gpu99'$"):
        load_state({"nodes": [], "pods": [{"name": "p", "node": "gpu99"}]})
    with pytest.raises(FixtureError, match=r"^unknown top-level key\(s\): nodez$"):
        load_state({"nodez": []})
    with pytest.raises(FixtureError, match=r"^gpuOperator.operands: unknown operand 'x'"):
        load_state({"gpuOperator": {"operands": ["x"]}})


@needs_kubectl
def test_command_line_serves_until_sigterm(tmp_path):
    import signal
    import sys

    kubeconfig = tmp_path / "kc"
    state = str(FIXTURES / "state-gpu-node.json")
    proc = subprocess.Popen([sys.executable, "-m", "nvls_tui.lab.kube_standin", "--state", state,
                             "--kubeconfig", str(kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("serving http://127.0.0.1:")
        assert f"kubeconfig {kubeconfig} (context nvls-standin)" in first
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        out = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "c"),
                              "get", "nodes", "-o", "name"], capture_output=True, text=True, timeout=60, check=False)
        assert out.stdout.split() == ["node/gpu01", "node/gpu02"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_command_line_bad_state_is_one_line(tmp_path):
    import sys

    bad = tmp_path / "state.json"
    bad.write_text("{not json")
    out = subprocess.run([sys.executable, "-m", "nvls_tui.lab.kube_standin", "--state", str(bad)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith(f"kube_standin: {bad}: not JSON:")
    assert "Traceback" not in out.stderr


# -- the answers against the API reference (OpenAPI v3 excerpt with provenance) -----------------------

SPEC = json.loads((FIXTURES / "openapi-excerpt.json").read_text())
_TYPES = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}
_DATE_TIME = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$"


def conforms(schema: str, value: Any, where: str = "$") -> list[str]:
    """What in ``value`` breaks the excerpt's ``schema``: required fields missing, a property of the wrong type."""
    import re

    spec = SPEC["schemas"][schema]
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    problems = [f"{where}.{name}: required, missing" for name in spec.get("required", []) if name not in value]

    def prop(rule: dict[str, Any], item: Any, at: str) -> None:
        if item is None:
            return  # the server writes null for an unset optional pointer (lastProbeTime: null)
        if "$ref" in rule:
            problems.extend(conforms(rule["$ref"], item, at))
            return
        wanted = _TYPES[rule["type"]]
        if not isinstance(item, wanted) or (wanted is int and isinstance(item, bool)):
            problems.append(f"{at}: {type(item).__name__}, not {rule['type']}")
            return
        if rule.get("format") == "date-time" and not re.match(_DATE_TIME, str(item)):
            problems.append(f"{at}: {item!r} is not an RFC 3339 date-time")
        if isinstance(item, list) and "items" in rule:
            for i, element in enumerate(item):
                prop(rule["items"], element, f"{at}[{i}]")

    for name, rule in spec.get("properties", {}).items():
        if name in value:
            prop(rule, value[name], f"{where}.{name}")
    return problems


def operation(operation_id: str) -> dict[str, Any]:
    return next(op for op in SPEC["operations"] if op["operationId"] == operation_id)


CORE, META, POLICY = "io.k8s.api.core.v1.", "io.k8s.apimachinery.pkg.apis.meta.v1.", "io.k8s.api.policy.v1."


def test_spec_validator_catches_what_it_should():
    """The checker itself: a missing required field and a wrong type are both reported."""
    assert conforms(CORE + "PodList", {"kind": "PodList"}) == ["$.items: required, missing"]
    assert conforms(META + "Status", {"code": "404"}) == ["$.code: str, not integer"]
    assert conforms(CORE + "Pod", {"metadata": {"creationTimestamp": "yesterday"}}) == [
        "$.metadata.creationTimestamp: 'yesterday' is not an RFC 3339 date-time"]


def test_spec_node_get_list_and_patch(cluster):
    code, _, node = http(cluster, "GET", "/api/v1/nodes/gpu01")
    assert code == 200 and conforms(CORE + "Node", node) == []
    for condition in node["status"]["conditions"]:
        assert conforms(CORE + "NodeCondition", condition) == []
    code, _, nodes = http(cluster, "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dgpu02")
    assert code == 200 and conforms(CORE + "NodeList", nodes) == []
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["gpu02"]
    consumed = operation("patchCoreV1NamespacedPod")["requestBody"]
    bodies = {"application/strategic-merge-patch+json": {"spec": {"unschedulable": True}},
              "application/merge-patch+json": {"metadata": {"labels": {"a": "b"}}},
              "application/json-patch+json": [{"op": "add", "path": "/metadata/annotations/x", "value": "1"}]}
    for content_type, body in bodies.items():
        assert content_type in consumed
        code, _, patched = http(cluster, "PATCH", "/api/v1/nodes/gpu01", body, content_type)
        assert str(code) in operation("patchCoreV1NamespacedPod")["responses"], content_type
        assert conforms(CORE + "Node", patched) == [], content_type
    code, _, body = http(cluster, "PATCH", "/api/v1/nodes/gpu01", {}, "text/plain")
    assert code == 415 and conforms(META + "Status", body) == []


def test_spec_pods_get_list_delete(cluster):
    code, _, pods = http(cluster, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu01&limit=500")
    assert code == 200 and conforms(CORE + "PodList", pods) == []
    for pod in pods["items"]:
        for condition in pod["status"]["conditions"]:
            assert conforms(CORE + "PodCondition", condition) == []
    assert str(code) in operation("listCoreV1NamespacedLimitRange")["responses"]
    code, _, pod = http(cluster, "GET", "/api/v1/namespaces/default/pods/batch-job")
    assert str(code) in operation("readCoreV1NamespacedPod")["responses"]
    assert conforms(CORE + "Pod", pod) == []
    code, _, deleted = http(cluster, "DELETE", "/api/v1/namespaces/default/pods/batch-job",
                            {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
    assert str(code) in operation("deleteCoreV1NamespacedPod")["responses"]
    assert conforms(CORE + "Pod", deleted) == [] and deleted["kind"] == "Pod"
    assert conforms(META + "DeleteOptions", {"gracePeriodSeconds": 0, "preconditions": {"uid": "u"}}) == []
    # a DELETE of another kind (the budget) answers a Status, as the spec's other deletes do
    code, _, status = http(cluster, "DELETE", "/apis/policy/v1/namespaces/inference/poddisruptionbudgets/vllm-pdb")
    assert str(code) in operation("deleteCoreV1NamespacedLimitRange")["responses"]
    assert conforms(META + "Status", status) == [] and status["status"] == "Success"


def test_spec_eviction_answers(cluster):
    vllm = next(n for n, p in pods_on(cluster, "gpu01").items() if p["metadata"]["namespace"] == "inference")
    request = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": vllm, "namespace": "inference"},
               "deleteOptions": {"gracePeriodSeconds": 30}}
    assert conforms(POLICY + "Eviction", request) == []
    code, _, refusal = http(cluster, "POST", f"/api/v1/namespaces/inference/pods/{vllm}/eviction", request)
    assert code == 429 and conforms(META + "Status", refusal) == []
    code, _, budgets = http(cluster, "GET", "/apis/policy/v1/namespaces/inference/poddisruptionbudgets")
    assert code == 200 and conforms(POLICY + "PodDisruptionBudgetList", budgets) == []
    for condition in budgets["items"][0]["status"]["conditions"]:
        assert conforms(META + "Condition", condition) == []
    request = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "batch-job", "namespace": "default"}}
    code, _, answer = http(cluster, "POST", "/api/v1/namespaces/default/pods/batch-job/eviction", request)
    assert str(code) in operation("createCoreV1NamespacedPodEviction")["responses"]
    # the real server answers a Status where the spec names an Eviction: it fits both
    assert conforms(META + "Status", answer) == [] and conforms(POLICY + "Eviction", answer) == []


def test_spec_watch_events_and_discovery(cluster):
    rv = cluster.store.resource_version
    cluster.store.delete("pods", "default", "batch-job")
    req = urllib.request.Request(cluster.url + f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=2")
    with urllib.request.urlopen(req, timeout=10) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]  # marked, then gone after the kubelet
    for event in events:
        assert conforms(META + "WatchEvent", event) == [] and conforms(CORE + "Pod", event["object"]) == []
    code, _, resources = http(cluster, "GET", "/api/v1")
    assert str(code) in operation("getCoreV1APIResources")["responses"]
    assert conforms(META + "APIResourceList", resources) == []
    code, _, missing = http(cluster, "GET", "/api/v1/nodes/gpu99")
    assert code == 404 and conforms(META + "Status", missing) == []


@needs_kubectl
def test_quiesce_and_restore_through_kubectl(slow_cluster):
    """The repair's calls: pause an operand by label, wait for its pod to go, restore, wait for the new one Ready."""
    label = "nvidia.com/gpu.deploy.device-plugin"
    select = ["-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset",
              "--field-selector", "spec.nodeName=gpu01"]
    old = kubectl(slow_cluster, "get", "pods", *select, "-o", "name").stdout.split()
    assert len(old) == 1
    assert kubectl(slow_cluster, "label", "node", "gpu01", f"{label}=paused-for-nvls-repair",
                   "--overwrite").returncode == 0
    out = kubectl(slow_cluster, "wait", "--for=delete", "pod", *select, "--timeout=30s")
    assert (out.returncode, out.stdout.strip()) == (0, f"{old[0]} condition met")
    assert kubectl(slow_cluster, "get", "pods", *select, "-o", "name").stdout.split() == []
    assert len(kubectl(slow_cluster, "get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset",
                       "--field-selector", "spec.nodeName=gpu02", "-o", "name").stdout.split()) == 1
    assert kubectl(slow_cluster, "label", "node", "gpu01", f"{label}=true", "--overwrite").returncode == 0
    deadline = time.monotonic() + 30
    while not (new := kubectl(slow_cluster, "get", "pods", *select, "-o", "name").stdout.split()):
        assert time.monotonic() < deadline, "the DaemonSet never brought its pod back"
        time.sleep(0.2)
    assert new != old
    out = kubectl(slow_cluster, "wait", "--for=condition=Ready", "pod", *select, "--timeout=30s")
    assert (out.returncode, out.stdout.strip()) == (0, f"{new[0]} condition met")
