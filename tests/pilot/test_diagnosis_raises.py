"""Issue 36: a node whose diagnosis raises is reported as that node, in every entry point.

The console marks such a node ``DIAGNOSIS_FAILED`` (broken, the exception named) and goes on; ``check``
ended the whole run with "internal error", exit 2, losing every other node's reading. Now both go through
one guard (``diagnosis.diagnose_guarded``).
"""

from __future__ import annotations

import json

from nvls_tui.cli import main
from nvls_tui.diagnosis import node as diagnosis_node


def _raise_for(host: str, monkeypatch) -> None:
    real = diagnosis_node.fabric_findings

    def fabric_findings(state, *args, **kwargs):
        if state.host == host:
            raise RuntimeError("a reading no rule foresaw")
        return real(state, *args, **kwargs)

    monkeypatch.setattr(diagnosis_node, "fabric_findings", fabric_findings)


def test_check_reports_the_node_whose_diagnosis_raised_and_the_others_as_they_are(monkeypatch, capsys):
    _raise_for("hgx02", monkeypatch)
    code = main(["check", "sim:healthy", "--json"])
    doc = json.loads(capsys.readouterr().out)
    nodes = {n["host"]: n for n in doc["nodes"]}
    assert nodes["hgx02"]["verdict"] == "broken"
    assert [(f["code"], f["severity"]) for f in nodes["hgx02"]["findings"]] == [("DIAGNOSIS_FAILED", "error")]
    assert "a reading no rule foresaw" in nodes["hgx02"]["findings"][0]["message"]
    assert all(n["verdict"] == "healthy" for h, n in nodes.items() if h != "hgx02") and len(nodes) > 1
    assert code == 1  # an error finding, as for any broken node; not 2 ("internal error")


def test_check_without_json_names_the_node_too(monkeypatch, capsys):
    _raise_for("hgx01", monkeypatch)
    code = main(["check", "sim:healthy"])
    out = capsys.readouterr().out
    assert "DIAGNOSIS_FAILED" in out and "hgx01" in out and code == 1


async def test_the_console_marks_that_node_and_polls_the_others(monkeypatch):
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.model import Verdict
    from nvls_tui.sim.fleet import load_fleet
    from tests.waiting import first_poll

    _raise_for("hgx03", monkeypatch)
    app = NvlsApp(sim_backends(load_fleet("sim:healthy", speed=0)), poll_interval=None)
    async with app.run_test(size=(120, 40)):
        await first_poll(app, timeout=30)
        assert [f.code for f in app.diagnoses["hgx03"].findings] == ["DIAGNOSIS_FAILED"]
        assert app.diagnoses["hgx03"].verdict is Verdict.BROKEN
        assert {h: d.verdict for h, d in app.diagnoses.items() if h != "hgx03"} == {
            h: Verdict.HEALTHY for h in app.diagnoses if h != "hgx03"}


def test_the_console_fold_of_a_cluster_view_marks_the_node_whose_diagnosis_raises(monkeypatch):
    """The cluster's and the scheduler's watchers fold their view into the node and diagnose it again; that
    diagnosis went unguarded, so one raising node ended the watcher (no more cluster views for any node)."""
    import asyncio

    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.model import Verdict
    from nvls_tui.model.kube import KubeNode
    from nvls_tui.sim.fleet import load_fleet

    _raise_for("hgx02", monkeypatch)
    backends = sim_backends(load_fleet("sim:healthy", speed=0))
    app = NvlsApp(backends, poll_interval=None)
    states = [asyncio.run(b.snapshot()) for b in backends[:3]]
    for state in states:  # polled (the poller's own diagnosis is not what this test is about)
        app._fold(state.replace(polled_at=1.0), None)
    app.take_kube_view({s.host: KubeNode(node=s.host, ready=True, cordoned=False) for s in states})
    assert [f.code for f in app.diagnoses["hgx02"].findings] == ["DIAGNOSIS_FAILED"]
    assert app.diagnoses["hgx02"].verdict is Verdict.BROKEN
    assert app.diagnoses["hgx03"].verdict is Verdict.HEALTHY and app.fleet.get("hgx03").k8s is not None
