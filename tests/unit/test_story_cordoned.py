"""The grid's story of a healthy node says it is cordoned, and whose cordon it is (X3 item 4).

A node left cordoned by someone else read "NVLS ok · smoke 291.9 GB/s": as if back in service. Who cordoned it
is unknown to nvls-tui unless its own annotation (``nvls-tui/repair-stopped-at=STEP``, kept after a failed
repair) says so.
"""

from __future__ import annotations

import asyncio
import dataclasses

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.story import STOPPED_AT_ANNOTATION, node_story
from nvls_tui.model import NodeState, SmokeResult
from nvls_tui.model.kube import KubeNode
from nvls_tui.runbook.kube_repair import STOPPED_AT
from nvls_tui.sim.fleet import load_fleet


def _healthy() -> NodeState:
    (backend,) = sim_backends(load_fleet("sim:healthy/hgx01", speed=0))
    return asyncio.run(backend.snapshot())


def _story(k8s: KubeNode | None) -> str:
    state = dataclasses.replace(_healthy(), k8s=k8s, smoke=SmokeResult(avg_busbw=291.9, passed=True))
    return node_story(state, diagnose(state)).text


def test_a_healthy_node_in_service_reads_as_before():
    assert _story(None).startswith("NVLS ok · smoke ")
    assert _story(KubeNode("hgx01", ready=True, cordoned=False)) == _story(None)


def test_someone_elses_cordon_is_said_and_not_claimed():
    story = _story(KubeNode("hgx01", ready=True, cordoned=True))
    assert story.startswith("NVLS ok · smoke ")
    assert story.endswith(" · cordoned (not by nvls-tui)")


def test_nvls_tuis_own_cordon_names_the_step_its_failed_repair_stopped_at():
    node = KubeNode("hgx01", ready=True, cordoned=True, annotations=((STOPPED_AT, "fabric-manager"),))
    assert _story(node).endswith(" · cordoned by nvls-tui after a failed repair at fabric-manager")
    assert STOPPED_AT_ANNOTATION == STOPPED_AT  # the runbook writes what the story reads


def test_a_cordon_that_could_not_be_read_is_no_claim_either_way():
    unread = KubeNode("hgx01", error="kubectl: timed out", reason="timed out")
    assert _story(unread) == _story(None)
    assert "cordon" not in _story(KubeNode("hgx01", found=False))


def test_a_node_with_no_smoke_test_yet_says_its_cordon_too():
    state = dataclasses.replace(_healthy(), smoke=None, k8s=KubeNode("hgx01", ready=True, cordoned=True))
    assert node_story(state, diagnose(state)).text == "fabric registered · cordoned (not by nvls-tui); no smoke test yet"
