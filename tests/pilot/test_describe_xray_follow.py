"""Issue 38 item 8, the rest of it: a describe view (`d`) of a node's Kubernetes side (readiness, taints, labels,
every pod on it, not only the holders) and of its Slurm side; an x-ray (`x`) node → GPU → holder → pod, job or
unit; a follow mode for the logs (`f`) so FM's journal can be watched while a repair waits. Before, none existed.
"""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Tree

from nvls_tui.cli import build_parser
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.describe import DescribeScreen, XrayScreen
from nvls_tui.console.screens.logs import LogsScreen
from nvls_tui.settings import settings_from
from nvls_tui.views.describe import describe_lines, xray
from tests.waiting import open_node_screen, wait_until


def k8s_app() -> NvlsApp:
    settings = settings_from(build_parser().parse_args(["console", "sim:k8s-incident"]))
    return NvlsApp.from_settings(replace(settings, poll_interval=None, sim_speed=0.0), poll_process=False)


async def gpu06_then(app, pilot, key: str, screen_type, what: str):
    """gpu06's node screen, then ``key``, once the screen it opens is up."""
    await open_node_screen(app, pilot, "gpu06")
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, screen_type), what)
    return app.screen


def tree_labels(node) -> list[str]:
    out = [str(node.label)]
    for child in node.children:
        out += tree_labels(child)
    return out


async def test_d_describes_the_nodes_kubernetes_side_with_every_pod_and_says_slurm_is_not_configured():
    app = k8s_app()
    async with app.run_test(size=(160, 48)) as pilot:
        lines = (await gpu06_then(app, pilot, "d", DescribeScreen, "the describe view")).lines
        assert lines[0] == "Kubernetes: gpu06"
        assert any(line.startswith("  node gpu06: Ready True, schedulable") for line in lines), lines[:4]
        pods = [line for line in lines if line.startswith("  inference/") or line.startswith("  gpu-operator/")]
        assert any("inference/vllm-llama-70b-" in p and "ReplicaSet vllm-llama-70b-6d5f8b9c7" in p for p in pods)
        # every pod the cluster binds to it, holder or not (the holders table names only holders)
        assert {p.split()[0] for p in pods} == {f"{p.namespace}/{p.name}" for p in app.fleet.get("gpu06").k8s.pods}
        assert any(line.startswith("Labels (") for line in lines) and any("nvidia.com/gpu.deploy." in line
                                                                       for line in lines)
        assert "  no Slurm cluster is configured for this node (--slurm-conf, [slurm] in the config file)" in lines
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DescribeScreen), "back to the node")


async def test_x_shows_which_process_holds_which_gpu_for_which_pod():
    app = k8s_app()
    async with app.run_test(size=(160, 48)) as pilot:
        labels = tree_labels((await gpu06_then(app, pilot, "x", XrayScreen, "the x-ray")).query_one(Tree).root)
        gpu0 = next(i for i, label in enumerate(labels) if label.startswith("GPU 0 "))
        vllm = next(i for i, label in enumerate(labels) if "vllm.entrypoints" in label)
        assert gpu0 < vllm
        assert labels[vllm + 1].startswith("pod inference/vllm-llama-70b-") and "ReplicaSet" in labels[vllm + 1]
        assert any(label.startswith("unit nvidia-dcgm.service") for label in labels)


def test_the_pure_views_fail_closed_where_nothing_was_read():
    from nvls_tui.model import MissingEvidence, NodeState

    state = NodeState("gpu09", reachable=True, missing=(MissingEvidence("holders", "failed", "fuser failed"),))
    assert ("  no cluster is configured for this node (--kubeconfig, [kubernetes] in the config file)", "note") in \
        describe_lines(state)
    assert [c.label for c in xray(state).children] == ["holders: not read (unknown, never none)"]


async def test_f_follows_the_fm_journal_until_f_again():
    app = k8s_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await gpu06_then(app, pilot, "l", LogsScreen, "the logs")
        reads: list[str] = []
        real = screen._run

        async def counted(argv):
            reads.append(" ".join(argv))
            return await real(argv)

        screen._run = counted

        def header() -> str:
            return str(screen.query_one("#logs-header").content)

        assert "f follows" in header()  # the key is said where the operator reads the screen's keys
        await pilot.press("f")
        assert screen.following
        await wait_until(pilot, lambda: sum("fabricmanager" in r for r in reads) >= 2, "two reads of FM's journal")
        # said for as long as it lasts (the toast that said it is gone after 3 s)
        assert "following the FM journal every 3 s (f stops)" in header(), header()
        await pilot.press("f")
        assert not screen.following
        assert "following" not in header() and "f follows" in header()


def test_describe_lists_every_condition_the_node_reports():
    """The describe view read only Ready; a node's MemoryPressure, DiskPressure, PIDPressure and Ready (with the
    kubelet's reason) are each a line now."""
    import json

    from nvls_tui.model import NodeState
    from nvls_tui.parsers.kube import parse_nodes

    node = {"metadata": {"name": "gpu06"}, "spec": {}, "status": {"conditions": [
        {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
        {"type": "DiskPressure", "status": "True", "reason": "KubeletHasDiskPressure"},
        {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
    kube = parse_nodes(json.dumps({"kind": "NodeList", "items": [node]})).value["gpu06"]
    assert kube.conditions == (("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                               ("DiskPressure", "True", "KubeletHasDiskPressure"), ("Ready", "True", "KubeletReady"))
    lines = [text for text, _ in describe_lines(NodeState("gpu06", reachable=True, k8s=kube))]
    assert "Conditions (3)" in lines and "  DiskPressure=True (KubeletHasDiskPressure)" in lines


async def test_d_reads_the_nodes_events_from_the_cluster_newest_last():
    """The describe view said events were not read by nvls-tui; it reads them from the cluster when it opens
    (sim:k8s-incident's gpu06 was rebooted: kubelet's Rebooted warning with its boot id)."""
    app = k8s_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await gpu06_then(app, pilot, "d", DescribeScreen, "the describe view")
        await wait_until(pilot, lambda: any(line.startswith("Events (") for line in screen.lines), "the events read")
        start = next(i for i, line in enumerate(screen.lines) if line.startswith("Events ("))
        events = screen.lines[start + 1:start + 4]
        assert [line.split()[1:3] for line in events] == [["Normal", "Starting"], ["Warning", "Rebooted"],
                                                           ["Normal", "NodeReady"]]
        assert "has been rebooted, boot id: " in events[1]
        assert events[1].split()[0].endswith("m")  # its age (the node booted hours ago), not a time stamp


async def test_d_says_the_events_were_not_read_where_the_cluster_did_not_answer():
    app = k8s_app()
    kubectl = app.kube.for_host("gpu06")

    async def refused(argv, timeout, cap):
        if "events" in argv:
            return 1, "", 'Error from server (Forbidden): events is forbidden: User "oncall" cannot list resource\n'
        return await real(argv, timeout, cap)

    real = kubectl.runner
    object.__setattr__(kubectl, "runner", refused)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await gpu06_then(app, pilot, "d", DescribeScreen, "the describe view")
        await wait_until(pilot, lambda: any(line.startswith("Events: not read") for line in screen.lines),
                         "the events' refusal")
        line = next(line for line in screen.lines if line.startswith("Events: not read"))
        assert "Forbidden" in line
        assert not any(line.startswith("Events (") for line in screen.lines)
