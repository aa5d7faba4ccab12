"""The plan's "What this repair does" names what it does in the Kubernetes cluster.

On a node in a cluster the repair cordons it, pauses the GPU Operator's operands (their labels), evicts the
workload pods that hold its GPUs and, with FM in the driver pod, restarts that pod as its reset. The summary
above the plan is what an operator reads before typing the names: it must say so (before, it said only
"SIGTERMs the remaining management processes", and for FM in the driver pod named no reset at all).
"""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.kube.client import Kubectl
from nvls_tui.kube.fleet import KubeFleet
from nvls_tui.runbook.changes import ResetGpus
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import fill_steps
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.kubectl import SimKubectl
from nvls_tui.views.plan_summary import what_it_does
from tests.pilot.test_console_repair import SIZE
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until


async def planned(target: str, hosts: list[str], tmp_path) -> dict[str, NodeOutcome]:
    """The console's dry run (the plan screen's outcomes) of ``hosts`` of the simulated cluster ``target``:
    select them on the fleet (space), r, wait for every plan."""
    fleet = load_fleet(target, speed=0)
    cluster = KubeFleet(((Kubectl(runner=SimKubectl(fleet.node, hosts, fleet.clock.now)), tuple(hosts)),))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path), kube=cluster)
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        for host in hosts:
            grid.move_cursor(row=grid.visible_hosts.index(host))
            await pilot.press("space")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == len(hosts),
                         "the dry run of every selected node")
        return dict(app.screen.outcomes)


async def test_the_summary_names_the_cordon_the_paused_operands_and_the_evicted_workload(tmp_path):
    outcomes = await planned("sim:k8s-incident", ["gpu05", "gpu06"], tmp_path)
    gpu06 = what_it_does(outcomes["gpu06"])
    assert "cordons gpu06 in Kubernetes (no new pod lands on it); uncordons it only after a passing smoke test" \
        in gpu06
    assert ("pauses 6 GPU Operator operands on it (their nvidia.com/gpu.deploy.* labels); the restore puts them back"
            in gpu06)
    assert "evicts 1 workload pod: inference/vllm-llama-70b-6d5f8b9c7-b25a6" in gpu06
    # The cluster's part comes before the node's own stops, in the order the repair runs them.
    assert gpu06.index("evicts 1 workload pod: inference/vllm-llama-70b-6d5f8b9c7-b25a6") < next(
        i for i, line in enumerate(gpu06) if line.startswith("stops "))
    gpu05 = what_it_does(outcomes["gpu05"])
    assert "gpu05 is cordoned already: the repair leaves it cordoned" in gpu05
    assert not any(line.startswith("cordons ") or line.startswith("evicts ") for line in gpu05)


async def test_fm_in_the_driver_pod_the_summary_names_the_pod_restart_as_the_reset(tmp_path):
    outcomes = await planned("sim:k8s-fm-in-container", ["gpu-ctr02"], tmp_path)
    lines = what_it_does(outcomes["gpu-ctr02"])
    pod = next(line for line in lines if line.startswith("restarts the GPU Operator's driver pod"))
    assert pod.startswith("restarts the GPU Operator's driver pod gpu-operator/nvidia-driver-daemonset-")
    assert pod.endswith(" (Fabric Manager runs in it): the driver reloads, which resets every GPU and NVSwitch")
    assert not any(line.startswith("starts Fabric Manager") for line in lines)


def test_a_node_in_no_cluster_says_nothing_of_kubernetes():
    outcome = fill_steps(NodeOutcome("n1", dry_run=True, result="planned"), {"reset": [ResetGpus()]})
    assert not any("Kubernetes" in line or "pod" in line or "cordon" in line for line in what_it_does(outcome))
