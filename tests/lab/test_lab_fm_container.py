"""``lab up --scenario fm-in-container``: a lab node whose Fabric Manager runs as the GPU Operator's driver pod
runs it (issue 26 item 3), with real systemd and real processes.

The node's real systemd has no ``nvidia-fabricmanager`` unit (its file removed, systemd reloaded) and the host
has no ``nv-fabricmanager`` on its PATH; FM runs in a transient ``cri-containerd-<id>.scope`` inside the pod's
real ``kubepods-besteffort-pod<uid>.slice``, so its /proc/PID/cgroup says kubepods. ``check`` over real SSH
reads ``FM_IN_CONTAINER`` (never ``FM_NOT_RUNNING``) and ``repair --dry-run`` refuses with the pod's move; the
simulator's systemctl answers for the missing unit exactly as this node's real systemctl does. The lab is
this file's own (``ctrlab*`` on 127.0.13.x), booted once.
"""

from __future__ import annotations

import json

import pytest

from nvls_tui.lab.machine import node_run
from nvls_tui.poll.probe import SECTIONS
from nvls_tui.sim.base_nodes import pod_uid
from nvls_tui.sim.faults import DRIVER_POD_ROLE
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.render_system import systemctl
from tests.lab.own_lab import own_lab
from tests.lab.test_lab import check_json, cli  # the lab's own helpers: the real command line

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab-fm-container")]

NODE = "gpu-ctr01"
FM = "nvidia-fabricmanager.service"
MOVE = ("kubectl delete pod -n gpu-operator -l app=nvidia-driver-daemonset "
        f"--field-selector spec.nodeName={NODE}")


@pytest.fixture(scope="module")
def ctr_lab(tmp_path_factory):
    """One lab node acting ``fm-in-container``: ``(folder, LabNode)``."""
    with own_lab(tmp_path_factory, "ctrlab", [NODE], "fm-in-container") as (folder, (node,)):
        yield folder, node


def _sim_node():
    return load_fleet(f"sim:fm-in-container/{NODE}", speed=0).node(NODE)


def test_the_simulated_systemctl_answers_for_the_missing_unit_as_the_real_one(ctr_lab):
    _folder, node = ctr_lab
    probe = next(s.argv for s in SECTIONS if s.name == "units")
    asks = [("show", "--no-pager", *probe[3:5], FM), ("status", FM), ("status", "--no-pager", FM),
            ("is-active", FM), ("start", FM)]
    for args in asks:
        real = node_run(node, "systemctl", *args, check=False)
        assert systemctl(_sim_node(), list(args), 0.0) == (real.returncode, real.stdout, real.stderr), args


def test_fm_runs_in_the_pods_cgroup_and_check_reads_fm_in_container(ctr_lab):
    folder, node = ctr_lab
    state = check_json(folder, NODE)[NODE]
    fm = state["fabric_manager"]
    uid = pod_uid(NODE, DRIVER_POD_ROLE)
    assert (fm["unit"], fm["location"], fm["pod"]["uid"]) == ("not-found", "container", uid), fm
    holder = next(h for h in state["holders"] if h["kind"] == "fabric-manager")
    assert fm["pod"]["pid"] == holder["pid"]
    # The real kernel says where the process is: the pod's kubepods slice, a containerd-named scope.
    cgroup = node_run(node, "cat", f"/proc/{holder['pid']}/cgroup").stdout
    assert f"kubepods-besteffort-pod{uid.replace('-', '_')}.slice/cri-containerd-" in cgroup, cgroup
    codes = {f["code"]: f for f in state["findings"]}
    assert "FM_NOT_RUNNING" not in codes
    assert codes["FM_IN_CONTAINER"]["severity"] == "info"
    assert f"`{MOVE}`" in codes["FM_IN_CONTAINER"]["message"]
    # The host's nv-fabricmanager is gone (it lives in the driver root): its version is unknown, a warning.
    assert [(f["section"], f["severity"], f["reason"]) for f in state["findings"] if f["code"] == "EVIDENCE_MISSING"] \
        == [("fm_version", "warning", "tool missing")]
    assert state["verdict"] == "degraded"
    assert all(g["fabric"]["state"] == "Completed" for g in state["gpus"])


def test_a_dry_run_is_refused_with_the_pods_move_and_changes_nothing(ctr_lab, tmp_path):
    folder, node = ctr_lab
    done = cli("repair", "--dry-run", "--json", "--ssh-config", str(folder / "ssh_config"), "--audit-dir",
               str(tmp_path), NODE, timeout=300)
    (result,) = json.loads(done.stdout)["nodes"]
    assert (done.returncode, result["result"]) == (1, "refused"), done.stderr[-2000:]
    assert MOVE in result["message"] and "not in a host unit" in result["message"]
    steps = {s["name"]: s["commands"] for s in result["steps"]}
    assert not any("nvidia-smi -r" in c or "systemctl start nvidia-fabricmanager" in c
                   for c in steps["reset"] + steps["fabric-manager"])
    assert node_run(node, "test", "-e", "/var/lib/nvls-tui/lock", check=False).returncode == 1


def test_a_real_repair_is_refused_and_leaves_the_pods_and_fm_running(ctr_lab, tmp_path):
    folder, node = ctr_lab
    before = check_json(folder, NODE)[NODE]
    done = cli("repair", "--yes", "--json", "--ssh-config", str(folder / "ssh_config"), "--audit-dir", str(tmp_path),
               NODE, timeout=300)
    (result,) = json.loads(done.stdout)["nodes"]
    assert (done.returncode, result["result"]) == (1, "refused"), done.stderr[-2000:]
    assert MOVE in result["message"]
    after = check_json(folder, NODE)[NODE]
    assert {h["pid"] for h in after["holders"] if h["kind"] == "fabric-manager"} == \
        {h["pid"] for h in before["holders"] if h["kind"] == "fabric-manager"}
    assert after["services"]["kubelet"] == "active"
