"""``lab up --scenario missing-device-files``: a lab node whose /dev lacks what the real H200's lacks.

The real H200 (tests/fixtures/real/nvidia-h200/ls-l-dev-nvidia.txt) has no nvidia-modeset, nvidia-nvlink
or nvidia-nvswitchctl; a fuser that names a file that does not exist answers only its complaint once
nothing holds a device, so the runbook names only the files the node has. Here one lab node (real
systemd, real psmisc fuser, real processes holding its device files) without those files is repaired
for real. The lab is this file's own (``h200lab*`` on 127.0.9.x: the suite's lab is on 127.0.6.x,
test_lab.py's one-node lab on 127.0.7.x, test_lab_slurm.py's on 127.0.8.x), booted once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvls_tui.lab.machine import node_run
from nvls_tui.sim.faults import H200_ABSENT_DEVICES
from tests.lab.own_lab import own_lab
from tests.lab.test_lab import check_json, cli  # the lab's own helpers: the real command line

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab-device-files")]

NODE = "gpu07"


@pytest.fixture(scope="module")
def h200_lab(tmp_path_factory):
    """One lab node acting ``missing-device-files``: ``(folder, LabNode)``."""
    with own_lab(tmp_path_factory, "h200lab", [NODE], "missing-device-files") as (folder, (node,)):
        yield folder, node


def dev_files(node) -> set[str]:
    """The /dev/nvidia* files of the container, as its own ls sees them."""
    return {f"/dev/{name}" for name in node_run(node, "ls", "/dev").stdout.split() if name.startswith("nvidia")}


def test_the_lab_h200_lacks_the_shared_files_the_real_one_lacks_and_reads_as_out_of_sync(h200_lab):
    folder, node = h200_lab
    files = dev_files(node)
    assert not files & set(H200_ABSENT_DEVICES), files
    assert {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia7", "/dev/nvidia-nvswitch0"} <= files
    state = check_json(folder, NODE)[NODE]
    assert state["platform"] == "hgx-h200" and state["verdict"] == "broken"
    assert "FABRIC_OUT_OF_SYNC" in {f["code"] for f in state["findings"]}
    assert state["missing"] == []  # fuser on the files that exist: the holders were read
    assert {h["kind"] for h in state["holders"]} >= {"nv-hostengine", "dcgm-exporter"}


def test_a_real_repair_passes_verify_no_holders_and_the_reset_on_the_node_without_them(h200_lab, tmp_path):
    folder, node = h200_lab
    done = cli("repair", "--yes", "--json", "--ssh-config", str(folder / "ssh_config"), "--audit-dir", str(tmp_path),
               NODE, timeout=300)
    (result,) = json.loads(done.stdout)["nodes"]
    steps = {s["name"]: s["status"] for s in result["steps"]}
    assert (steps["verify-no-holders"], steps["reset"]) == ("ok", "ok"), (result["message"], done.stderr[-2000:])
    assert result["result"] == "repaired" and done.returncode == 0, result["message"]
    # Every fuser the runbook ran named only files the node has, and the last one found them free.
    records = [json.loads(line) for line in Path(result["audit_log"]).read_text().splitlines()]
    fusers = [r for r in records if r["event"] == "command-finished" and (r.get("argv") or [""])[0] == "fuser"]
    assert fusers and all(set(r["argv"][2:]) <= dev_files(node) for r in fusers)
    last = next(r for r in reversed(fusers) if r["step"] == "verify-no-holders")
    assert last["exit_status"] == 1 and "does not exist" not in last["output"]  # psmisc's "nothing holds these"
    after = check_json(folder, NODE)[NODE]
    assert after["verdict"] == "healthy", after["findings"]
