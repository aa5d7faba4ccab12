"""The repair around Kubernetes (issue 29 part two), against the stand-in API server with the real kubectl.

The node is simulated (out of sync, as the incident's gpu06) and its containers are the stand-in's pods
(tests/kube_rig.py): pausing an operand's label makes the stand-in's DaemonSet delete its pod, which ends the
simulated node's process for it, and so does an eviction. A repair cordons, pauses only the labels that were
true (or unset), leaves the administrator's false alone, evicts the workload (a budget's refusal is waited on,
then refused), resets, puts the labels back and uncordons; kubelet is never stopped on this path.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import threading
import time

import pytest

from nvls_tui.kube.client import Kubectl
from nvls_tui.runbook import RepairOptions
from nvls_tui.runbook.changes import READ_AT_RUN_TIME
from nvls_tui.runbook.kube_repair import PAUSED as PAUSED_VALUE
from nvls_tui.runbook.kube_repair import STOPPED_AT, pause_plan, workload_pods
from nvls_tui.sim.fleet import load_fleet
from tests.kube_rig import FAST, NODE, PAUSED, TIMING, Skipping, rigs

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


def _kubectl_lines(commands: list[str]) -> list[str]:
    return [c for c in commands if c.startswith("kubectl ")]


def test_a_repair_cordons_pauses_only_true_labels_evicts_resets_and_puts_everything_back(rig):
    r = rig()
    before = r.labels()
    operands = {p["metadata"]["name"] for p in r.pods() if p["metadata"]["namespace"] == "gpu-operator"}
    vllm = next(p["metadata"]["name"] for p in r.pods() if p["metadata"]["namespace"] == "inference")
    assert operands and r.holders_of_pods() >= operands | {vllm}  # their processes hold the GPUs

    outcome = r.repair()

    assert outcome.result == "repaired", outcome.message
    assert outcome.kube["paused"] == list(PAUSED) and outcome.kube["cordoned"] is True
    assert outcome.kube["evicted"] == [f"inference/{vllm}"]
    # The cluster as it was: every label, the administrator's false untouched, the cordon off, no annotation.
    r.standin.wait_for(lambda s: len([p for p in r.pods() if p["metadata"]["namespace"] == "gpu-operator"])
                       == len(operands))
    assert r.labels() == before
    assert not r.node()["spec"].get("unschedulable")
    assert STOPPED_AT not in (r.node()["metadata"].get("annotations") or {})
    # The operands came back as new pods; the evicted workload's replacement waits for a scheduler (Pending).
    assert not operands & {p["metadata"]["name"] for p in r.pods()}
    assert not any(p["metadata"]["namespace"] == "inference" for p in r.pods())
    # What went to the API, in order: cordon, the pauses (never the MIG manager's false), the eviction, the
    # labels back, uncordon.
    writes = r.writes()
    kinds = [("cordon" if '"unschedulable":true' in b else "uncordon" if '"unschedulable":null' in b
              else "evict" if p.endswith("/eviction") else "label") for m, p, b in writes]
    assert kinds[0] == "cordon" and kinds[-1] == "uncordon"
    assert kinds.index("evict") > max(i for i, k in enumerate(kinds[:kinds.index("evict")]) if k == "label")
    assert not any("mig-manager" in b for _, _, b in writes)
    paused = [json.loads(b)["metadata"]["labels"] for m, p, b in writes if p.endswith(f"/nodes/{NODE}")
              and PAUSED_VALUE in b]
    assert [next(iter(d)) for d in paused] == list(PAUSED)
    # kubelet kept running: never stopped, never started.
    commands = [c for s in outcome.steps for c in s.commands]
    assert not any("kubelet" in c for c in commands if c.startswith("systemctl"))
    # The operands' and the workload's processes ended through the cluster, never by a signal of the repair.
    assert set(r.kubelet.ended) >= operands | {vllm}
    assert not any(c.startswith("kill") and any(o in c for o in operands) for c in commands)
    # The node is read once before the label writes of each of quiesce and restore (and once by the survey):
    # each later write is decided on the node the write before answered with, and none met a 409.
    calls = _kubectl_lines(commands)
    assert len([c for c in calls if " get nodes " in c]) == 3, calls
    assert len(calls) == 21, calls
    assert not any(" label " in c for c in calls)  # a conditioned write is a merge patch that prints its answer
    assert len([m for m, _, _ in writes if m == "PATCH"]) == 2 + 2 * len(PAUSED)  # cordon, uncordon, the labels


def test_every_kubectl_call_is_in_the_audit_log_and_the_dry_run_lists_them_in_order(rig, tmp_path):
    r = rig()
    plan = r.repair(dry_run=True)
    assert plan.result == "planned", plan.message
    planned = [line.split("  # ")[0] for s in plan.steps for line in _kubectl_lines(s.commands)]
    assert r.writes() == []  # the dry run changed nothing in the cluster

    outcome = r.repair()
    assert outcome.result == "repaired", outcome.message
    ran = [c for s in outcome.steps for c in _kubectl_lines(s.commands)]

    def normal(line: str) -> str:
        words = shlex.split(line)
        words = [w if not w.endswith(".json") or w.startswith("/api") else "EVICTION.json" for w in words]
        # The dry run cannot know the resourceVersion each label write is conditioned on: it says so.
        words = [re.sub(r"^--resource-version=\d+$", f"--resource-version={READ_AT_RUN_TIME}", w) for w in words]
        words = [re.sub(r'"resourceVersion":"\d+"', f'"resourceVersion":"{READ_AT_RUN_TIME}"', w) for w in words]
        # The request timeout stays: a wait's is its own (its --timeout and the slack), in the plan as in the run.
        return " ".join(words)

    # The restore reads the node before putting anything back; the plan's alternative (the annotation kept
    # after a failure) is not run after a pass.
    expected = [normal(line) for line in planned if f"{STOPPED_AT}=STEP" not in line]
    assert [normal(c) for c in ran] == expected
    records = []
    for path in (tmp_path / "audit").glob("repair-*.jsonl"):
        records += [json.loads(line) for line in path.read_text().splitlines()]
    audited = [" ".join(r["argv"]) for r in records if r.get("event") == "command-started" and r["argv"][0] == "kubectl"]
    assert [a for a in audited] == [" ".join(shlex.split(c)) for c in ran]


def test_a_budget_that_refuses_the_eviction_is_waited_on_then_the_repair_is_refused_and_the_node_stays_cordoned(rig):
    r = rig(budget=True)
    before = r.labels()
    vllm = next(p["metadata"]["name"] for p in r.pods() if p["metadata"]["namespace"] == "inference")
    skip = Skipping()
    options = RepairOptions(**{**FAST.__dict__, "wait_pods": 12.0, "sleep": skip.sleep, "clock": skip.clock})
    outcome = r.repair(options)

    assert outcome.result == "refused", outcome.message
    assert "disruption budget" in outcome.message and "never force-deletes" in outcome.message
    assert f"kubectl uncordon {NODE}" in outcome.message  # how to lift the cordon it kept
    evictions = [p for m, p, _ in r.writes() if p.endswith("/eviction")]
    assert len(evictions) >= 3  # retried every 5 s for 12 s
    assert not any(m == "DELETE" for m, _, _ in r.writes())  # never a forced delete
    assert vllm in {p["metadata"]["name"] for p in r.pods()}
    r.standin.wait_for(lambda s: r.labels() == before)
    assert r.node()["spec"].get("unschedulable") is True
    assert r.node()["metadata"]["annotations"][STOPPED_AT] == "quiesce"
    assert outcome.kube["evicted"] == []


def test_a_budget_that_allows_the_eviction_while_the_repair_waits_lets_it_go_on(rig):
    r = rig(budget=True)
    lifted = threading.Event()

    async def sleep_then_lift(seconds: float) -> None:
        if not lifted.is_set():  # the first refusal: someone scales the workload elsewhere meanwhile
            lifted.set()
            r.standin.store.delete("poddisruptionbudgets", "inference", "vllm-pdb")
        await asyncio.sleep(0)

    options = RepairOptions(**{**FAST.__dict__, "wait_pods": 60.0, "sleep": sleep_then_lift})
    outcome = r.repair(options)
    assert outcome.result == "repaired", outcome.message
    evictions = [p for m, p, _ in r.writes() if p.endswith("/eviction")]
    assert len(evictions) == 2 and lifted.is_set()


def test_a_node_cordoned_by_someone_else_stays_cordoned_after_a_passing_repair(rig):
    r = rig(cordoned=True)
    outcome = r.repair()
    assert outcome.result == "repaired", outcome.message
    assert r.node()["spec"].get("unschedulable") is True
    assert not any('"unschedulable"' in b for _, _, b in r.writes())  # neither cordoned nor uncordoned
    assert STOPPED_AT not in (r.node()["metadata"].get("annotations") or {})


def test_a_cluster_that_cannot_be_read_refuses_the_repair_before_anything_changes(rig):
    r = rig()
    broken = Kubectl(kubeconfig=r.standin.kubeconfig, context="no-such-context", timeout=10.0)
    r.kubectl = broken
    outcome = r.repair()
    assert outcome.result == "refused"
    assert "could not be read" in outcome.message and "cluster" in outcome.message
    assert r.writes() == []
    assert outcome.step("quiesce").status != "ok"


def test_what_is_paused_and_evicted_is_decided_from_the_labels_and_the_holders():
    from nvls_tui.model import Holder, NodeState
    from nvls_tui.model.enums import HolderKind
    from nvls_tui.model.kube import KubeNode, KubePod

    node = KubeNode("gpu06", ready=True, cordoned=False, labels=(
        ("nvidia.com/gpu.deploy.device-plugin", "true"), ("nvidia.com/gpu.deploy.mig-manager", "false"),
        ("nvidia.com/gpu.deploy.dcgm-exporter", "paused-for-mig-change"), ("nvidia.com/gpu.deploy.driver", "true")))
    plan = pause_plan(node)
    assert plan["nvidia.com/gpu.deploy.device-plugin"] == "true"
    assert plan["nvidia.com/gpu.deploy.dcgm"] is None  # unset: the operator deploys it, so it is paused too
    assert "nvidia.com/gpu.deploy.mig-manager" not in plan  # an administrator's false
    assert "nvidia.com/gpu.deploy.dcgm-exporter" not in plan  # another manager's pause: not ours to take
    assert "nvidia.com/gpu.deploy.driver" not in plan  # pausing the driver would unload it
    pods = (KubePod("inference", "vllm-1", "u1", owner_kind="ReplicaSet", owner_name="vllm"),
            KubePod("batch", "idle-1", "u2", owner_kind="ReplicaSet", owner_name="idle"),
            KubePod("gpu-operator", "dp-1", "u3", owner_kind="DaemonSet", owner_name="nvidia-device-plugin-daemonset"))
    state = NodeState("gpu06", holders=(Holder(10, "root", "python3", HolderKind.CUDA_APP, pod="podu1"),
                                        Holder(11, "root", "nvidia-device-plugin", HolderKind.OTHER, pod="podu3")))
    assert [p.name for p in workload_pods(pods, state)] == ["vllm-1"]  # a pod with no GPU process stays


def _sim_and_real(tmp_path):
    """The same calls to the simulated kubectl (sim:k8s-incident's gpu06) and to the real kubectl against the
    stand-in (its gpu06, the same labels, a vLLM pod with a budget that allows none)."""
    import subprocess

    from nvls_tui.lab.kube_standin.harness import running
    from nvls_tui.sim.kubectl import kubectl as sim_kubectl

    fleet = load_fleet("sim:k8s-incident/gpu06", speed=0)
    node = fleet.node("gpu06")
    vllm = next(p for p in node.pods if p.k8s_namespace == "inference")
    return fleet, node, vllm, sim_kubectl, subprocess, running


def test_the_simulated_kubectl_writes_answer_as_the_real_kubectl_against_the_stand_in(tmp_path):
    fleet, node, vllm, sim_kubectl, subprocess, running = _sim_and_real(tmp_path)
    from tests.kube_rig import cluster_state

    state = cluster_state(budget=True)
    with running(state, tmp_path, timing=TIMING) as standin:
        pods, _ = standin.store.query("pods")
        real_vllm = next(p["metadata"]["name"] for p in pods if p["metadata"]["namespace"] == "inference")
        real_dp = next(p["metadata"]["name"] for p in pods if "device-plugin" in p["metadata"]["name"])
        sim_dp = next(p.name for p in node.pods if "device-plugin" in p.name)
        body = tmp_path / "eviction.json"

        def both(*args: str, real_pod: str = "", sim_pod: str = "") -> None:
            real_args = [a.replace("POD", real_pod) for a in args]
            sim_args = [a.replace("POD", sim_pod) for a in args]
            body.write_text(json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                                        "metadata": {"name": real_pod, "namespace": "inference"}}))
            real = subprocess.run(["kubectl", "--kubeconfig", standin.kubeconfig, "--request-timeout=9s", *real_args],
                                  capture_output=True, text=True, timeout=60)
            sim = sim_kubectl([node], ["kubectl", "--request-timeout=9s", *sim_args], fleet.clock.now())
            said = (real.returncode, real.stdout.replace(real_pod, "POD"), real.stderr.replace(real_pod, "POD"))
            assert (sim[0], sim[1].replace(sim_pod, "POD"), sim[2].replace(sim_pod, "POD")) == said, args

        both("cordon", "gpu06")
        both("cordon", "gpu06")
        both("uncordon", "gpu06")
        both("uncordon", "gpu06")
        both("cordon", "gpu09")
        both("label", "node", "gpu06", "--overwrite", "nvidia.com/gpu.deploy.dcgm=paused-for-nvls-repair")
        both("label", "node", "gpu06", "nvidia.com/gpu.deploy.dcgm=true")
        both("label", "node", "gpu06", "nvidia.com/gpu.deploy.dcgm-")
        both("label", "node", "gpu06", "nvidia.com/gpu.deploy.dcgm-")
        # A write conditioned on a resourceVersion the node no longer has (1: both have moved past it).
        both("label", "node", "gpu06", "--overwrite", "--resource-version=1", "nvidia.com/gpu.deploy.dcgm=x")
        both("annotate", "node", "gpu06", "--resource-version=1", "nvls-tui/repair-stopped-at=reset")
        stale = '{"metadata":{"labels":{"nvidia.com/gpu.deploy.dcgm":"x"},"resourceVersion":"1"}}'
        both("patch", "node", "gpu06", "--type=merge", "-o", "json", "-p", stale)
        both("patch", "node", "gpu09", "--type=merge", "-o", "json", "-p", stale)

        def patched(key: str, value: str | None) -> None:
            """The conditioned label write on each side's node as it is now: the same exit status and stderr, and
            each prints its node after the write (its own ids: the label and the stored resourceVersion)."""
            rvs = (standin.store.find("nodes", "", "gpu06")["metadata"]["resourceVersion"], str(node.k8s_rv))
            bodies = [json.dumps({"metadata": {"labels": {key: value}, "resourceVersion": rv}}) for rv in rvs]
            argv = ["patch", "node", "gpu06", "--type=merge", "-o", "json", "-p"]
            real = subprocess.run(["kubectl", "--kubeconfig", standin.kubeconfig, "--request-timeout=9s", *argv,
                                   bodies[0]], capture_output=True, text=True, timeout=60)
            sim = sim_kubectl([node], ["kubectl", "--request-timeout=9s", *argv, bodies[1]], fleet.clock.now())
            assert (sim[0], sim[2]) == (real.returncode, real.stderr) == (0, "")
            stored = (standin.store.find("nodes", "", "gpu06")["metadata"]["resourceVersion"], str(node.k8s_rv))
            for printed, rv, before in zip((json.loads(real.stdout), json.loads(sim[1])), stored, rvs, strict=True):
                assert printed["kind"] == "Node" and printed["metadata"]["labels"].get(key) == value
                assert printed["metadata"]["resourceVersion"] == rv != before  # the server's answer, after the write

        patched("nvidia.com/gpu.deploy.dcgm", "paused-for-nvls-repair")
        patched("nvidia.com/gpu.deploy.dcgm", None)
        both("annotate", "node", "gpu06", "nvls-tui/repair-stopped-at=reset", "--overwrite")
        both("annotate", "node", "gpu06", "nvls-tui/repair-stopped-at-")
        both("wait", "--for=delete", "pod/POD", "-n", "gpu-operator", "--timeout=1s", real_pod=real_dp, sim_pod=sim_dp)
        vllm.k8s_budget = "vllm-pdb"
        both("create", "--raw", "/api/v1/namespaces/inference/pods/POD/eviction", "-f", str(body),
             real_pod=real_vllm, sim_pod=vllm.name)
        vllm.k8s_budget = None
        standin.store.delete("poddisruptionbudgets", "inference", "vllm-pdb")
        both("create", "--raw", "/api/v1/namespaces/inference/pods/POD/eviction", "-f", str(body),
             real_pod=real_vllm, sim_pod=vllm.name)
        standin.wait_for(lambda s: real_vllm not in {p["metadata"]["name"] for p in s.query("pods")[0]})
        both("wait", "--for=delete", "pod/POD", "-n", "inference", "--timeout=5s", real_pod=real_vllm,
             sim_pod=vllm.name)
        both("create", "--raw", "/api/v1/namespaces/inference/pods/POD/eviction", "-f", str(body),
             real_pod=real_vllm, sim_pod=vllm.name)
        both("get", "nodes", "--field-selector", "metadata.name=gpu09", "-o", "json")
        # A paused label ends the operand's pod; true brings a new one (each side by its own controller).
        both("label", "node", "gpu06", "--overwrite", "nvidia.com/gpu.deploy.device-plugin=paused-for-nvls-repair")
        standin.wait_for(lambda s: real_dp not in {p["metadata"]["name"] for p in s.query("pods")[0]})
        assert sim_dp not in {p.name for p in node.pods}
        assert not any(p.pod == sim_dp for p in node.procs.values())
        both("label", "node", "gpu06", "--overwrite", "nvidia.com/gpu.deploy.device-plugin=true")
        back = standin.wait_for(lambda s: [p for p in s.query("pods")[0] if "device-plugin" in p["metadata"]["name"]])
        assert back and back[0]["metadata"]["name"] != real_dp
        again = [p for p in node.pods if "device-plugin" in p.name]
        assert again and again[0].name != sim_dp and any(p.pod == again[0].name for p in node.procs.values())


def test_sim_k8s_incident_repairs_headless_through_the_simulated_cluster(capsys, tmp_path, monkeypatch):
    from nvls_tui.cli import main

    # A frozen simulated clock: FM's start and the smoke test move it on instead of sleeping 11 s of real time.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    code = main(["repair", "sim:k8s-incident/gpu06", "--yes", "--json"])
    out = json.loads(capsys.readouterr().out)
    (node,) = out["nodes"]
    assert code == 0 and node["result"] == "repaired", node["message"]
    kube = node["kube"]
    assert kube["node"] == "gpu06" and kube["cordoned"] is True
    assert "nvidia.com/gpu.deploy.node-status-exporter" not in kube["paused"]  # the administrator's false
    assert "nvidia.com/gpu.deploy.device-plugin" in kube["paused"]
    assert kube["evicted"] and kube["evicted"][0].startswith("inference/vllm-")
    assert "gpu06 uncordoned" in kube["restored"] and kube["failed"] == []
    commands = [c for s in node["steps"] for c in s["commands"]]
    assert "kubectl --request-timeout=14s cordon gpu06" in commands
    assert not any(c.startswith("systemctl") and "kubelet" in c for c in commands)


def test_the_report_says_what_changed_in_the_cluster(capsys, tmp_path, monkeypatch):
    from nvls_tui.cli import main
    from nvls_tui.report.markdown import report_from_file

    # A frozen simulated clock: FM's start and the smoke test move it on instead of sleeping 11 s of real time.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["repair", "sim:k8s-incident/gpu06", "--yes", "--json"]) == 0
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    report = report_from_file(node["audit_log"])
    done = next(line for line in report.splitlines() if line.startswith("- Done:"))
    assert "`gpu06` cordoned in Kubernetes" in done
    assert "6 operand labels paused" in done and "put back by the restore" in done
    assert "`nvidia.com/gpu.deploy.node-status-exporter`" not in done
    assert "1 pod evicted (`inference/vllm-llama-70b-6d5f8b9c7-" in done
    assert "`gpu06` uncordoned after the smoke test passed" in done


def test_the_report_of_a_refused_eviction_says_the_node_stays_cordoned_and_how_to_lift_it(rig, tmp_path):
    from nvls_tui.report.markdown import report_from_file

    r = rig(budget=True)
    skip = Skipping()
    outcome = r.repair(RepairOptions(**{**FAST.__dict__, "sleep": skip.sleep, "clock": skip.clock}))
    assert outcome.result == "refused"
    report = report_from_file(outcome.audit_log)
    left = next(line for line in report.splitlines() if line.startswith("- Left:"))
    assert f"`{NODE}` stays cordoned in Kubernetes (`{STOPPED_AT}=quiesce`)" in left
    assert f"`kubectl uncordon {NODE}`" in left


async def test_the_console_repairs_sim_k8s_incident_through_the_simulated_cluster(tmp_path):
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.kube.fleet import KubeFleet
    from nvls_tui.sim.kubectl import SimKubectl, node_labels
    from tests.pilot.test_console_repair import SIZE, start_repair
    from tests.test_console_fakes import fixed_clock
    from tests.waiting import wait_until

    fleet = load_fleet("sim:k8s-incident/gpu06", speed=0)
    cluster = KubeFleet(((Kubectl(runner=SimKubectl(fleet.node, ["gpu06"], fleet.clock.now)), ("gpu06",)),))
    labels = node_labels(fleet.node("gpu06"))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path), kube=cluster)
    plans = []
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu06"], select=False)
        plans.append(app.session.repairs[-1])
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end", timeout=60)
        await pilot.pause()
        run = next(iter(screen.columns.values())).run
        assert run.result == "repaired", run.message
    outcome = plans[0].outcomes[0]
    commands = [c for s in outcome.steps for c in s.commands]
    assert commands.index("kubectl --request-timeout=14s cordon gpu06") < next(
        i for i, c in enumerate(commands) if "paused-for-nvls-repair" in c)
    assert not any(c.startswith("systemctl") and "kubelet" in c for c in commands)
    node = fleet.node("gpu06")
    assert not node.k8s_cordoned and node_labels(node) == labels
    assert outcome.kube is not None and outcome.kube["evicted"]


def test_fm_in_the_driver_pod_is_restarted_through_the_api_on_a_configured_cluster(rig):
    r = rig(driver=True)
    driver = next(p["metadata"]["name"] for p in r.pods() if p["metadata"]["name"].startswith("nvidia-driver-"))
    before = r.labels()
    state = asyncio.run(r.backend.snapshot())
    assert state.fm_place is not None and state.fm_place.in_container  # FM_IN_CONTAINER, as the poll reads it

    plan = r.repair(dry_run=True)
    assert plan.result == "planned", plan.message
    reset = plan.step("reset").commands
    assert reset[0].startswith("kubectl ") and f"delete pod -n gpu-operator {driver} --wait=false" in reset[0]
    assert not any("nvidia-smi -r" in c for c in reset)
    assert "no host unit" in plan.step("fabric-manager").commands[0]

    outcome = r.repair()
    assert outcome.result == "repaired", outcome.message
    commands = [c for s in outcome.steps for c in s.commands]
    assert not any(c in ("nvidia-smi -r", "systemctl start nvidia-fabricmanager.service") for c in commands)
    assert "driver pod" in outcome.step("reset").message and "in the driver pod" in outcome.step("fabric-manager").message
    assert r.kubelet.reloads == 1 and driver in r.kubelet.ended
    new = [p["metadata"]["name"] for p in r.pods() if p["metadata"]["name"].startswith("nvidia-driver-")]
    assert new and driver not in new
    # The driver's label was never touched; the others are back and the node uncordoned.
    assert not any("gpu.deploy.driver" in b for _, _, b in r.writes())
    r.standin.wait_for(lambda s: r.labels() == before)
    assert not r.node()["spec"].get("unschedulable")


def test_fm_in_a_driver_pod_the_cluster_does_not_list_keeps_the_refusal():
    from nvls_tui.model import NodeState
    from nvls_tui.model.kube import KubePod
    from nvls_tui.model.node import FmPlace
    from nvls_tui.runbook.kube_repair import KubeHold, driver_pod

    state = NodeState("gpu06", fm_place=FmPlace("container", pid=7, pod_uid="u-1"))
    listed = KubePod("gpu-operator", "nvidia-driver-daemonset-x", "u-1", owner_kind="DaemonSet",
                     owner_name="nvidia-driver-daemonset")
    assert driver_pod(KubeHold("gpu06", False, pods=(listed,)), state) == listed
    assert driver_pod(KubeHold("gpu06", False, pods=()), state) is None
    other = KubePod("gpu-operator", "nvidia-driver-daemonset-y", "u-2", owner_kind="DaemonSet",
                    owner_name="nvidia-driver-daemonset")
    assert driver_pod(KubeHold("gpu06", False, pods=(other,)), state) is None
    unknown = NodeState("gpu06", fm_place=FmPlace("container", pid=7))  # uid unread: never a guess
    assert driver_pod(KubeHold("gpu06", False, pods=(listed,)), unknown) is None


def _failing(kubectl: Kubectl, when) -> Kubectl:
    """The real kubectl, except the calls ``when(argv, calls)`` picks, which fail as a refused request does."""
    import dataclasses

    from nvls_tui.kube.client import run_kubectl

    calls: list[list[str]] = []

    async def runner(argv, timeout, max_output):
        calls.append(list(argv))
        if when(list(argv), calls):
            return 1, "", "Error from server (Forbidden): nodes is forbidden: User \"x\" cannot get resource\n"
        return await run_kubectl(argv, timeout, max_output)

    return dataclasses.replace(kubectl, runner=runner)


def test_pods_that_cannot_be_read_refuse_the_repair_before_anything_changes(rig):
    r = rig()
    r.kubectl = _failing(r.kubectl, lambda argv, calls: "pods" in argv)
    outcome = r.repair()
    assert outcome.result == "refused" and "could not be read" in outcome.message
    assert r.writes() == [] and r.fleet.node(NODE).files.get("/var/lib/nvls-tui/repair.json") is None


def test_a_node_whose_cordon_cannot_be_read_refuses(rig):
    import dataclasses

    r = rig()

    async def runner(argv, timeout, max_output):
        from nvls_tui.kube.client import run_kubectl

        status, out, err = await run_kubectl(argv, timeout, max_output)
        if "metadata.name=gpu06" in argv:  # spec.unschedulable as a string: not a cordon anyone can read
            data = json.loads(out)
            data["items"][0]["spec"]["unschedulable"] = "maybe"
            out = json.dumps(data)
        return status, out, err

    r.kubectl = dataclasses.replace(r.kubectl, runner=runner)
    outcome = r.repair()
    assert outcome.result == "refused" and "cordoned could not be read" in outcome.message
    assert r.writes() == []


def test_a_restore_that_cannot_read_the_node_puts_back_the_labels_it_set_blindly_and_keeps_the_cordon(rig):
    r = rig()
    before = r.labels()
    # Every read of the node after the workload's eviction (the restore's) is refused.
    r.kubectl = _failing(r.kubectl, lambda argv, calls: "metadata.name=gpu06" in argv
                         and any(any(w.endswith("/eviction") for w in c) for c in calls))
    node = r.fleet.node(NODE)  # a user's CUDA process outside any pod: verify-no-holders waits, then fails
    node.spawn(ppid=1, user="alice", start=r.fleet.clock.now(), argv=["python3", "train.py"],
               cgroup="0::/user.slice/user-1000.slice/session-3.scope", devices=["/dev/nvidia0"], role="cuda")
    skip = Skipping()
    outcome = r.repair(RepairOptions(**{**FAST.__dict__, "sleep": skip.sleep, "clock": skip.clock}))
    assert outcome.result == "failed" and "alice" in outcome.message
    r.standin.wait_for(lambda s: r.labels() == before)
    assert r.node()["spec"].get("unschedulable") is True  # no pass: the cordon stays, named
    assert r.node()["metadata"]["annotations"][STOPPED_AT] == "verify-no-holders"


def test_kubectl_1_20s_words_for_a_pod_already_gone_count_as_deleted():
    """Debian's kubectl 1.20 answers `wait --for=delete` on a pod already gone with exit 1 and 'no matching
    resources found' (docs/kubernetes.md; 1.32: exit 0): the wait is over, not failed. Any other failure stays one."""
    from nvls_tui.model.kube import KubePod
    from nvls_tui.runbook.context import NodeContext, StepFailed
    from nvls_tui.runbook.kube_waits import wait_deleted
    from nvls_tui.runbook.outcome import NodeOutcome

    said: list[tuple[int, str, str]] = []

    async def runner(argv, timeout, max_output):
        return said.pop(0)

    class Host:
        host = "gpu06"

    kube = Kubectl(runner=runner)
    ctx = NodeContext(Host(), FAST, None, NodeOutcome(host="gpu06"))  # type: ignore[arg-type]
    pod = KubePod("gpu-operator", "nvidia-dcgm-exporter-abcde", "u1")
    said.append((1, "", "error: no matching resources found\n"))
    asyncio.run(wait_deleted(ctx, kube, [pod], 5.0, "the GPU Operator's"))
    said.append((1, "", "error: timed out waiting for the condition on pods/nvidia-dcgm-exporter-abcde\n"))
    with pytest.raises(StepFailed, match="were not deleted within 5 s"):
        asyncio.run(wait_deleted(ctx, kube, [pod], 5.0, "the GPU Operator's"))


def test_a_kubectl_call_cancelled_mid_wait_is_ended_not_left_running(tmp_path):
    """An interrupted repair cancels the step in flight: a `kubectl wait` of up to 300 s must not outlive it."""
    import os

    from nvls_tui.kube.client import run_kubectl

    marker = tmp_path / "pid"
    script = tmp_path / "slow-kubectl"
    script.write_text(f"#!/bin/sh\necho $$ > {marker}\nexec sleep 30\n")
    script.chmod(0o755)

    async def go() -> None:
        task = asyncio.ensure_future(run_kubectl([str(script)], 60.0, 1024))
        while not marker.exists() or not marker.read_text().strip():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    pid = int(marker.read_text())
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            return  # ended, not yet reaped by its parent
        time.sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError("the cancelled kubectl kept running")


def test_the_simulated_kubectls_pod_delete_answers_as_the_real_one(tmp_path):
    import subprocess

    from nvls_tui.lab.kube_standin.harness import running
    from nvls_tui.sim.kubectl import kubectl as sim_kubectl
    from tests.kube_rig import cluster_state

    fleet = load_fleet("sim:k8s-fm-in-container", speed=0)
    node = fleet.node("gpu-ctr02")
    sim_driver = next(p.name for p in node.pods if p.name.startswith("nvidia-driver-"))
    with running(cluster_state(driver=True), tmp_path, timing=TIMING) as standin:
        real_driver = next(p["metadata"]["name"] for p in standin.store.query("pods")[0]
                           if p["metadata"]["name"].startswith("nvidia-driver-"))
        for real_pod, sim_pod in ((real_driver, sim_driver), ("nope", "nope")):
            args = ["delete", "pod", "-n", "gpu-operator", "POD", "--wait=false"]
            real = subprocess.run(["kubectl", "--kubeconfig", standin.kubeconfig,
                                   *[a.replace("POD", real_pod) for a in args]], capture_output=True, text=True,
                                  timeout=60)
            sim = sim_kubectl([node], ["kubectl", *[a.replace("POD", sim_pod) for a in args]], fleet.clock.now())
            assert (sim[0], sim[1].replace(sim_pod, "POD"), sim[2].replace(sim_pod, "POD")) == (
                real.returncode, real.stdout.replace(real_pod, "POD"), real.stderr.replace(real_pod, "POD"))
    # The simulated DaemonSet made a new driver pod at once, and FM runs in it.
    new = [p for p in node.pods if p.name.startswith("nvidia-driver-")]
    assert len(new) == 1 and new[0].name != sim_driver
    assert any(p.pod == new[0].name for p in node.procs.values())


def test_sim_k8s_fm_in_container_repairs_headless_by_restarting_the_driver_pod(capsys, tmp_path, monkeypatch):
    from nvls_tui.cli import main

    # A frozen simulated clock: FM's start and the smoke test move it on instead of sleeping 11 s of real time.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    code = main(["repair", "sim:k8s-fm-in-container", "--yes", "--json"])
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert code == 0 and node["result"] == "repaired", node["message"]
    reset = next(s for s in node["steps"] if s["name"] == "reset")
    assert any(" delete pod -n gpu-operator nvidia-driver-daemonset-" in c for c in reset["commands"])
    assert not any(c == "nvidia-smi -r" for s in node["steps"] for c in s["commands"])
    assert "in the driver pod" in next(s for s in node["steps"] if s["name"] == "fabric-manager")["message"]
    # Without a cluster (sim:fm-in-container) the same node's repair is still refused, naming the pod's move.
    assert main(["repair", "sim:fm-in-container", "--yes", "--json"]) == 1
    (plain,) = json.loads(capsys.readouterr().out)["nodes"]
    assert plain["result"] == "refused" and "kubectl delete pod" in plain["message"]
