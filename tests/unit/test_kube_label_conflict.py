"""An administrator's label change between the repair's read and its write is never overwritten (issue 34, item 9).

Each operand label write carries the resourceVersion of the node it was decided on (a read, or the API's answer to
the write before); the stand-in (as the real API server) answers a stale one with 409 Conflict, and the repair
reads the node again and decides again. The administrator here is the real kubectl too, run by a wrapper around
the repair's kubectl just before the one write the test picks, so the change lands exactly between the node that
write was decided on and the write itself.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from nvls_tui.runbook.kube_repair import PAUSED as PAUSED_VALUE
from tests.kube_rig import NODE, rigs

pytestmark = [pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
              pytest.mark.long]  # each test seconds: handed out first of its tier (tests/conftest.py)

DCGM_EXPORTER = "nvidia.com/gpu.deploy.dcgm-exporter"
DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"


@pytest.fixture
def rig(tmp_path):
    yield from rigs(tmp_path)


def admin_before(tmp_path, kubeconfig: str, write: str, change: str) -> str:
    """A kubectl that, the first time the repair sends a label write of ``write`` (``KEY=VALUE``), first has an
    administrator set ``change`` on the node (the real kubectl), then sends the repair's write."""
    real = shutil.which("kubectl")
    mark = tmp_path / "admin-changed"
    script = tmp_path / "kubectl-with-admin"
    key, _, value = write.partition("=")
    script.write_text("#!/bin/sh\n"
                      f"case \"$*\" in *\" patch node {NODE} \"*'\"{key}\":\"{value}\"'*)\n"
                      f"  if [ ! -e '{mark}' ]; then : > '{mark}'\n"
                      f"    '{real}' --kubeconfig '{kubeconfig}' label node {NODE} --overwrite '{change}' >/dev/null\n"
                      "  fi;;\nesac\n"
                      f"exec '{real}' \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def test_a_label_an_administrator_set_false_after_the_read_is_not_paused_over(rig, tmp_path):
    r = rig()
    assert r.labels()[DCGM_EXPORTER] == "true"
    binary = admin_before(tmp_path, r.standin.kubeconfig, f"{DCGM_EXPORTER}={PAUSED_VALUE}", f"{DCGM_EXPORTER}=false")
    r.kubectl = dataclasses.replace(r.kubectl, binary=binary)
    outcome = r.repair()

    assert (tmp_path / "admin-changed").exists()
    assert outcome.result == "repaired", outcome.message
    # The administrator's false stands: never paused over, never "put back" to the true read before it.
    assert r.labels()[DCGM_EXPORTER] == "false"
    assert DCGM_EXPORTER not in outcome.kube["paused"]
    labels = [(p, b) for m, p, b in r.writes() if m == "PATCH" and DCGM_EXPORTER in b]
    assert [b for _, b in labels if PAUSED_VALUE in b] != [], "the write that met the conflict was sent"
    assert all('"resourceVersion"' in b for _, b in labels if PAUSED_VALUE in b)
    # That write was decided on the API's answer to the write before it (no read in between), and the 409 it met
    # was read again before anything else was written.
    calls = [c for s in outcome.steps for c in s.commands if "kubectl" in c.split(" ", 1)[0]]
    at = next(i for i, c in enumerate(calls) if " patch " in c and f'"{DCGM_EXPORTER}":"{PAUSED_VALUE}"' in c)
    assert " patch " in calls[at - 1] and " get nodes " in calls[at + 1], calls[at - 1:at + 2]
    # The other labels were paused and put back as before.
    assert r.labels()[DEVICE_PLUGIN] == "true" and DEVICE_PLUGIN in outcome.kube["paused"]


def test_a_label_an_administrator_changed_while_the_restore_reads_is_left_as_they_set_it(rig, tmp_path):
    r = rig()
    binary = admin_before(tmp_path, r.standin.kubeconfig, f"{DEVICE_PLUGIN}=true", f"{DEVICE_PLUGIN}=false")
    r.kubectl = dataclasses.replace(r.kubectl, binary=binary)
    outcome = r.repair()

    assert (tmp_path / "admin-changed").exists()
    assert outcome.result == "repaired", outcome.message
    assert r.labels()[DEVICE_PLUGIN] == "false"
    assert not any(f"{DEVICE_PLUGIN}=true" in d for d in outcome.kube["restored"])
    assert r.labels()[DCGM_EXPORTER] == "true"  # the others back as they were
