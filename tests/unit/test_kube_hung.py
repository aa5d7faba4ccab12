"""A kubectl that hangs mid-repair (issue 34, item 9): one clear line, a normal failed outcome, the restore run.

The real kubectl talks to the stand-in through a PATH-less wrapper script (the rig's ``Kubectl.binary``) that
never answers the one call the test picks (``exec sleep``: the process the repair kills at its deadline is the
sleep itself). Every other call is the real kubectl's. Before the fix the repair ended "internal error during
quiesce: KubeError(...)" and the step's own words were a Python repr.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from nvls_tui.runbook.kube_repair import PAUSED as PAUSED_VALUE
from nvls_tui.runbook.kube_repair import STOPPED_AT
from tests.kube_rig import NODE, rigs

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

TIMEOUT = 3.0


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


def hanging_kubectl(tmp_path, pattern: str) -> str:
    """A kubectl that never answers a call whose words (``$*``: the temporary paths too, so a pattern names the verb
    with its spaces) match the shell ``case`` pattern; the real one otherwise."""
    script = tmp_path / "kubectl-hangs"
    script.write_text("#!/bin/sh\n"
                      f"case \"$*\" in {pattern}) exec sleep 120;; esac\n"
                      f"exec {shutil.which('kubectl')} \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def test_a_label_call_that_hangs_fails_the_repair_in_one_line_and_the_restore_runs(rig, tmp_path):
    r = rig()
    before = r.labels()
    r.kubectl = dataclasses.replace(r.kubectl, binary=hanging_kubectl(tmp_path, f"*\" patch node {NODE} \"*{PAUSED_VALUE}*"),
                                    timeout=TIMEOUT)
    outcome = r.repair()

    assert outcome.result == "failed", outcome.message
    assert "internal error" not in outcome.message and "KubeError" not in outcome.message
    first = outcome.message.split(";")[0]
    assert "\n" not in outcome.message
    # The timeout and the call, as the operator would type it (the global flags left out).
    assert f"did not answer within {TIMEOUT:.0f} s" in first, first
    assert f"kubectl patch node {NODE} " in first and PAUSED_VALUE in first, first
    quiesce = next(s for s in outcome.steps if s.name == "quiesce")
    assert quiesce.status == "failed" and "KubeError" not in quiesce.message
    # The restore ran: no label was changed (the call never reached the API), the cordon stays with the step.
    restore = next(s for s in outcome.steps if s.name == "restore")
    assert restore.status == "ok", restore.message
    assert r.labels() == before
    assert r.node()["spec"].get("unschedulable") is True
    assert r.node()["metadata"]["annotations"][STOPPED_AT] == "quiesce"
    assert r.fleet.node(NODE).files.get("/var/lib/nvls-tui/repair.json") is None


def test_a_cordon_that_hangs_fails_the_repair_and_the_restore_reads_whether_it_went_through(rig, tmp_path):
    r = rig()
    r.kubectl = dataclasses.replace(r.kubectl, binary=hanging_kubectl(tmp_path, f"*\" cordon {NODE}\""), timeout=TIMEOUT)
    outcome = r.repair()

    assert outcome.result == "failed", outcome.message
    assert "internal error" not in outcome.message
    assert f"did not answer within {TIMEOUT:.0f} s" in outcome.message
    assert f"kubectl cordon {NODE}" in outcome.message
    # The cordon never went out: nothing in the cluster changed, and the restore says nothing is kept cordoned.
    assert not r.node()["spec"].get("unschedulable")
    assert STOPPED_AT not in (r.node()["metadata"].get("annotations") or {})
    assert next(s for s in outcome.steps if s.name == "restore").status == "ok"
