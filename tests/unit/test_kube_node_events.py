"""Issue 38 item 8: a node's events, read from its cluster (``kubectl get events --all-namespaces --field-selector
involvedObject.kind=Node,involvedObject.name=NODE -o json``). The stand-in API server serves events as the real one
does (its field selectors, and the real refusal of any other field); the simulated cluster of sim:k8s-incident has a
few and refuses the same fields; the parser reads them whole or not at all (an event of another object is refused,
never shown as the node's); the describe view shows the last of them with age, type, reason and message, and says
where they could not be read (never "no events")."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import pytest

from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.lab.kube_standin import running
from nvls_tui.lab.kube_standin.controller import Timing
from nvls_tui.model import NodeState
from nvls_tui.model.kube import KubeEvent, KubeNode, NodeEvents
from nvls_tui.parsers.kube import parse_events
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.kubectl import kubectl as sim_kubectl
from nvls_tui.views.describe import describe_lines
from tests.unit.test_kube_standin import STATE

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (scripts/system-deps.sh)")
SELECTOR = "involvedObject.kind=Node,involvedObject.name={node}"


def event(name: str, kind: str, obj: str, reason: str, message: str, type_: str = "Normal",
          namespace: str = "default", last: str = "2026-12-06T20:00:00Z") -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": kind, "name": obj, "uid": obj}, "reason": reason, "message": message,
            "type": type_, "source": {"component": "kubelet", "host": "gpu01"}, "count": 1,
            "firstTimestamp": last, "lastTimestamp": last}


def with_events() -> dict:
    state = json.loads(json.dumps(STATE))
    state["objects"] = [*state.get("objects", []),
                        event("gpu01.1", "Node", "gpu01", "Rebooted", "Node gpu01 has been rebooted", "Warning"),
                        event("gpu01.2", "Node", "gpu01", "NodeReady", "Node gpu01 status is now: NodeReady"),
                        event("vllm.1", "Pod", "gpu01", "Pulled", "a pod named like the node", namespace="inference")]
    return state


@needs_kubectl
def test_the_standin_serves_a_nodes_events_and_refuses_a_field_it_does_not_select_by(tmp_path):
    timing = Timing(operand_grace=0.1, create_delay=0.1, termination_delay=0.0)
    with running(with_events(), tmp_path, timing=timing) as standin:
        base = [KUBECTL, "--kubeconfig", standin.kubeconfig, "--context", standin.context, "--cache-dir",
                str(tmp_path / "cache"), "get", "events", "--all-namespaces", "--field-selector"]
        out = subprocess.run([*base, SELECTOR.format(node="gpu01"), "-o", "json"], capture_output=True, text=True,
                             timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        assert sorted(e["reason"] for e in json.loads(out.stdout)["items"]) == ["NodeReady", "Rebooted"]
        bad = subprocess.run([*base, "involvedObject.color=red", "-o", "json"], capture_output=True, text=True,
                             timeout=60, check=False)
        assert bad.returncode == 1
        assert 'Unable to find "/v1, Resource=events"' in bad.stderr
        assert "field label not supported: involvedObject.color" in bad.stderr
        # the product's own read, through the real kubectl
        client = Kubectl(kubeconfig=standin.kubeconfig, context=standin.context)
        events = asyncio.run(client.events_of("gpu01"))
        assert [(e.type, e.reason) for e in events] == [("Warning", "Rebooted"), ("Normal", "NodeReady")]


def k8s_incident_nodes():
    fleet = load_fleet("sim:k8s-incident")
    return [fleet.node(n) for n in ("gpu05", "gpu06", "gpu07")], fleet.clock.now()


def test_the_simulated_cluster_has_a_few_events_for_its_nodes_and_refuses_what_the_real_one_refuses():
    nodes, now = k8s_incident_nodes()
    argv = ["kubectl", "get", "events", "--all-namespaces", "--field-selector", SELECTOR.format(node="gpu06"),
            "-o", "json"]
    status, out, err = sim_kubectl(nodes, argv, now)
    assert status == 0, err
    read = parse_events(out)
    assert not read.warnings
    assert ("Warning", "Rebooted") in [(e.type, e.reason) for e in read.value]
    assert {e.object_name for e in read.value} == {"gpu06"}
    status, out, err = sim_kubectl(nodes, [*argv[:5], "involvedObject.color=red", "-o", "json"], now)
    assert status == 1 and out == ""
    assert err == ('Error from server (BadRequest): Unable to find "/v1, Resource=events" that match label selector "", '
                   'field selector "involvedObject.color=red": field label not supported: involvedObject.color\n')
    # gpu05 was cordoned: kubelet said so in an event
    status, out, _ = sim_kubectl(nodes, [*argv[:5], SELECTOR.format(node="gpu05"), "-o", "json"], now)
    assert "NodeNotSchedulable" in [e.reason for e in parse_events(out).value]


def test_an_event_of_another_object_or_text_that_is_no_list_is_read_as_nothing():
    other = json.dumps({"kind": "List", "items": [event("x", "Pod", "gpu01", "Pulled", "m")]})
    runner_out = {"text": other}

    async def runner(argv, timeout, cap):
        return 0, runner_out["text"], ""

    client = Kubectl(runner=runner)
    with pytest.raises(KubeError, match="Pod"):
        asyncio.run(client.events_of("gpu01"))
    runner_out["text"] = "<html>proxy error</html>"
    with pytest.raises(KubeError, match="not JSON"):
        asyncio.run(client.events_of("gpu01"))
    assert parse_events("[]").warnings


def node_state() -> NodeState:
    return NodeState("gpu01", reachable=True, k8s=KubeNode("gpu01", ready=True, cordoned=False))


def test_describe_shows_the_last_events_with_age_type_reason_and_message_as_plain_text():
    events = tuple(KubeEvent("Normal", f"R{i}", f"message {i}", 1000.0 + i, "Node", "gpu01") for i in range(30))
    events += (KubeEvent("Warning", "Rebooted", "boot id \x1b[31mred[/b]", 1900.0, "Node", "gpu01"),)
    lines = [text for text, _ in describe_lines(node_state(), NodeEvents(events, read_at=2000.0))]
    start = lines.index("Events (last 10 of 31)")
    shown = lines[start + 1:start + 11]
    assert shown[-1].split() [:3] == ["1m40s", "Warning", "Rebooted"]
    assert "\x1b" not in shown[-1] and "boot id" in shown[-1]
    assert shown[0].split()[1:3] == ["Normal", "R21"]


def test_describe_says_events_that_could_not_be_read_were_not_read():
    lines = [text for text, _ in describe_lines(node_state(), NodeEvents(error="kubectl timed out"))]
    events = [line for line in lines if "vent" in line]
    assert events and all("none" not in line and "no events" not in line for line in events)
    assert any("not read" in line and "kubectl timed out" in line for line in events)
    # not asked yet (the screen reads them when it opens): reading, never none
    lines = [text for text, _ in describe_lines(node_state(), None)]
    assert any(line.startswith("Events") and "reading" in line for line in lines)
    assert not any(line.strip() in ("none", "no events") for line in lines[lines.index(next(
        l for l in lines if l.startswith("Events"))):][:2])
