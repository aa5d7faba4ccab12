"""Fabric Manager inside the GPU Operator's driver pod (issue 26 item 3): no host unit, ``nv-fabricmanager``
in a kubepods cgroup. The poll places it (``fm_place``), the diagnosis says ``FM_IN_CONTAINER`` and never
``FM_NOT_RUNNING``, the grid's story, plain ``check`` and the node screen say to restart the pod, and the
repair (dry run and real) refuses the host-unit path with the pod's move. Where the place cannot be told the
node is not healthy and the repair refuses (fail closed)."""

from __future__ import annotations

import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.story import node_story
from nvls_tui.model import Holder, HolderKind, KernelEvent, Severity, Verdict
from nvls_tui.model.node import FM_CONTAINER, FM_HOST, FM_NOWHERE, FM_UNKNOWN, FmPlace, ServiceState
from nvls_tui.poll.assemble import fm_place
from nvls_tui.runbook import preflight
from nvls_tui.runbook.plan import plan_commands
from nvls_tui.sim.base_nodes import pod_uid
from nvls_tui.sim.faults import DRIVER_POD_ROLE
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.render_system import systemctl
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen

HOST = "gpu-ctr01"
UID = pod_uid(HOST, DRIVER_POD_ROLE)
MOVE = ("kubectl delete pod -n gpu-operator -l app=nvidia-driver-daemonset "
        f"--field-selector spec.nodeName={HOST}")
LINE = f"Fabric Manager runs in the GPU Operator's driver pod (uid {UID}): restart that pod, not a host unit"
FM_UNIT = "nvidia-fabricmanager.service"


async def _state(target: str = f"sim:fm-in-container/{HOST}"):
    (backend,) = sim_backends(load_fleet(target, speed=0))
    return await backend.snapshot()


def _fm_holder(pid: int = 4242, pod: str | None = None) -> Holder:
    return Holder(pid=pid, user="root", command="/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg",
                  kind=HolderKind.FABRIC_MANAGER, devices=("/dev/nvidia-nvswitch0",), pod=pod)


NOT_FOUND = (ServiceState(FM_UNIT, "inactive", "dead", "not-found"),)


# -- the poll places FM ---------------------------------------------------------------------------------------

async def test_the_poll_places_fm_in_the_driver_pod_by_its_cgroup():
    state = await _state()
    fm = next(h for h in state.holders if h.kind is HolderKind.FABRIC_MANAGER)
    assert state.service("nvidia-fabricmanager").load == "not-found"
    assert state.fm_place == FmPlace(FM_CONTAINER, pid=fm.pid, pod_uid=UID)


async def test_a_host_unit_is_the_hosts_fm():
    state = await _state("sim:healthy/hgx01")
    assert state.fm_place == FmPlace(FM_HOST)


def test_no_unit_and_no_fm_process_is_fm_nowhere():
    assert fm_place(NOT_FOUND, ()).location == FM_NOWHERE


def test_units_not_read_leave_the_place_unknown():
    assert fm_place(None, (_fm_holder(pod="pod1234"),)).location == FM_UNKNOWN


def test_holders_not_read_leave_the_place_unknown():
    place = fm_place(NOT_FOUND, None)
    assert (place.location, place.pid) == (FM_UNKNOWN, None)
    assert "holders" in (place.reason or "")


def test_an_fm_process_outside_any_pod_is_unknown_not_container():
    place = fm_place(NOT_FOUND, (_fm_holder(pid=77),))
    assert (place.location, place.pid) == (FM_UNKNOWN, 77)
    assert "outside any Kubernetes pod" in (place.reason or "")


def test_an_fm_process_whose_cgroup_was_not_read_is_unknown():
    place = fm_place(NOT_FOUND, (_fm_holder(pid=77),), cgroups_read=False)
    assert (place.location, place.pid) == (FM_UNKNOWN, 77)
    assert "cgroup" in (place.reason or "") and "could not be read" in (place.reason or "")


# -- the diagnosis --------------------------------------------------------------------------------------------

async def test_fm_in_container_is_information_never_fm_not_running():
    state = await _state()
    diagnosis = diagnose(state)
    codes = {f.code: f for f in diagnosis.findings}
    assert "FM_NOT_RUNNING" not in codes
    found = codes["FM_IN_CONTAINER"]
    assert found.severity is Severity.INFO
    assert found.message.startswith(LINE)
    assert f"`{MOVE}`" in found.message
    # The host has no nv-fabricmanager: its version stays unknown (a warning: never healthy), not an error.
    version = next(f for f in diagnosis.findings if f.code == "EVIDENCE_MISSING")
    assert (version.section, version.severity) == ("fm_version", Severity.WARNING)
    assert diagnosis.verdict is Verdict.DEGRADED


async def test_a_stray_fm_process_without_unit_or_pod_is_an_error_and_the_repair_refuses():
    state = await _state()
    stray = state.replace(fm_place=FmPlace(FM_UNKNOWN, pid=77, reason="nv-fabricmanager (pid 77) runs outside any "
                                                                       "Kubernetes pod"))
    diagnosis = diagnose(stray)
    found = [f for f in diagnosis.findings if f.section == "fm_place"]
    assert [(f.code, f.severity) for f in found] == [("EVIDENCE_MISSING", Severity.ERROR)]
    assert "FM_IN_CONTAINER" not in {f.code for f in diagnosis.findings}
    assert diagnosis.verdict is Verdict.BROKEN
    assert preflight.refusal(stray).startswith("where Fabric Manager runs could not be told")


async def test_no_unit_and_holders_unknown_claims_neither_fm_missing_nor_container():
    state = await _state()
    blind = state.replace(fm_place=fm_place(state.services, None), holders=())
    codes = {f.code for f in diagnose(blind).findings}
    assert not codes & {"FM_NOT_RUNNING", "FM_IN_CONTAINER"}


async def test_no_unit_and_no_fm_anywhere_is_still_fm_not_running():
    state = await _state()
    gone = state.replace(holders=tuple(h for h in state.holders if h.kind is not HolderKind.FABRIC_MANAGER),
                         fm_place=FmPlace(FM_NOWHERE))
    found = [f for f in diagnose(gone).findings if f.code == "FM_NOT_RUNNING"]
    assert [f.severity for f in found] == [Severity.ERROR]


# -- the story, plain check, JSON -----------------------------------------------------------------------------

async def test_the_grid_story_says_restart_the_pod():
    state = await _state()
    assert node_story(state, diagnose(state)).text == LINE


async def test_an_error_on_a_container_node_keeps_its_cause_and_the_pods_move():
    state = await _state()
    line = "NVRM: ... NV_ERR_FABRIC_STATE_OUT_OF_SYNC"
    broken = state.replace(kernel_events=(KernelEvent("NV_ERR_FABRIC_STATE_OUT_OF_SYNC", line),))
    story = node_story(broken, diagnose(broken))
    assert story.text == f"fabric out of sync; {LINE}"
    assert story.severity is Severity.ERROR


def test_check_json_has_the_fm_location_and_the_pod(capsys):
    rc = main(["check", f"sim:fm-in-container/{HOST}", "--json"])
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    fm = node["fabric_manager"]
    holder = next(h for h in node["holders"] if h["kind"] == "fabric-manager")
    assert (fm["unit"], fm["version"], fm["location"]) == ("not-found", None, "container")
    assert fm["pod"] == {"name": None, "uid": UID, "pid": holder["pid"]}
    assert [f["code"] for f in node["findings"] if f["code"].startswith("FM_")] == ["FM_IN_CONTAINER"]
    assert (node["verdict"], rc) == ("degraded", 0)


def test_check_json_says_a_host_unit_is_the_hosts(capsys):
    main(["check", "sim:healthy/hgx01", "--json"])
    fm = json.loads(capsys.readouterr().out)["nodes"][0]["fabric_manager"]
    assert (fm["location"], fm["pod"]) == ("host", None)


def test_plain_check_names_the_driver_pod(capsys):
    main(["check", f"sim:fm-in-container/{HOST}"])
    out = capsys.readouterr().out
    assert "driver pod" in out.split("\n")[4]  # the FM column of the node's row
    assert f"{HOST} FM_IN_CONTAINER: {LINE}" in out


async def test_the_node_screen_says_where_fm_runs():
    app = NvlsApp(sim_backends(load_fleet("sim:fm-in-container", speed=0)), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_node_screen(app, pilot, HOST)
        header = str(screen.query_one("#node-header").render())
        findings = str(screen.query_one("#findings").render())
        assert f"FM in the GPU Operator's driver pod (uid {UID})" in header
        assert "FM_IN_CONTAINER" in findings and "restart that pod, not a host unit" in findings


# -- the repair -----------------------------------------------------------------------------------------------

async def test_preflight_refuses_the_host_unit_path_with_the_pods_move():
    reason = preflight.refusal(await _state())
    assert reason.startswith(f"Fabric Manager runs in the GPU Operator's driver pod (uid {UID}), not in a host unit")
    assert f"`{MOVE}`" in reason


async def test_the_plan_runs_no_reset_and_no_host_fm_start():
    commands = plan_commands(await _state())
    assert commands["fabric-manager"] == [
        f"# not run: no host {FM_UNIT} unit to start; instead: {MOVE}   # with kubectl: FM restarts with the driver pod"]
    assert all(c.startswith("# not run") for c in commands["reset"])
    flat = [c for step in commands.values() for c in step]
    assert not any("nvidia-fabricmanager" in c and not c.startswith("#") for c in flat)
    assert not any(c.startswith("nvidia-smi -r") for c in flat)


def test_dry_run_json_is_refused_with_the_pods_move(capsys):
    rc = main(["repair", f"sim:fm-in-container/{HOST}", "--dry-run", "--json"])
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert (rc, node["result"]) == (1, "refused")
    assert MOVE in node["message"] and "not in a host unit" in node["message"]


def test_a_real_repair_is_refused_before_it_changes_anything(capsys):
    fleet = load_fleet(f"sim:fm-in-container/{HOST}", speed=0)
    rc = main(["repair", f"sim:fm-in-container/{HOST}", "--yes", "--json"], connect=lambda *_a, **_k: sim_backends(fleet))
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert (rc, node["result"]) == (1, "refused")
    assert MOVE in node["message"]
    # Only the poll's reads reached the node: no lock, no record, no unit stopped, no signal, no reset.
    ran = [argv for _at, argv in fleet.node(HOST).cmdlog]
    assert ran, "the repair read the node"
    changed = [a for a in ran if a[0] in ("mkdir", "tee", "mv", "kill", "rm", "rmdir")
               or (a[0] == "systemctl" and a[1:2] != ["show"]) or (a[0] == "nvidia-smi" and "-r" in a)]
    assert changed == []


# -- the simulator's systemctl for the missing unit -----------------------------------------------------------

def test_the_simulated_systemctl_answers_for_the_missing_unit_as_systemd_252_does():
    node = load_fleet(f"sim:fm-in-container/{HOST}", speed=0).node(HOST)
    code, out, err = systemctl(node, ["show", "--no-pager", "-p", "Id,LoadState,ActiveState,SubState,MainPID",
                                      FM_UNIT], 0.0)
    assert (code, out, err) == (0, f"MainPID=0\nId={FM_UNIT}\nLoadState=not-found\nActiveState=inactive\n"
                                   "SubState=dead\n", "")
    assert systemctl(node, ["status", FM_UNIT], 0.0) == (4, "", f"Unit {FM_UNIT} could not be found.\n")


def test_a_hybrid_cgroup_whose_v1_systemd_path_leaves_the_namespace_is_read_from_its_unified_path():
    """A container's view of a hybrid host (a lab node, seen through real ps): ``name=systemd`` says
    ``/../..`` (its root lies outside the cgroup namespace), the unified entry names the pod."""
    from nvls_tui.parsers.holders import unit_and_pod

    cgroup = ("9:name=systemd:/../..,0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
              f"{UID.replace('-', '_')}.slice/cri-containerd-6fbe639af0c9.scope")
    assert unit_and_pod(cgroup) == (None, f"pod{UID}")
    assert unit_and_pod("1:name=systemd:/system.slice/ssh.service,0::/") == ("ssh.service", None)


async def test_the_node_screens_fm_restart_and_reset_are_refused_with_the_pods_move(tmp_path):
    """The single actions (the node screen's FM restart and reset) would stop and start a host unit that does
    not exist, or reset under FM's open NVSwitches: refused before the lock, with the pod's move."""
    from nvls_tui.runbook.session import Session

    fleet = load_fleet(f"sim:fm-in-container/{HOST}", speed=0)
    (backend,) = sim_backends(fleet)
    session = Session({HOST: backend}, audit_dir=str(tmp_path))
    for kind in ("fm-restart", "reset"):
        outcome = await session.single(HOST, kind)
        assert not outcome.ok and MOVE in outcome.message, (kind, outcome.message)
    ran = [argv for _at, argv in fleet.node(HOST).cmdlog]
    assert not [a for a in ran if a[0] in ("mkdir", "tee", "mv", "kill", "rm", "rmdir")
                or (a[0] == "systemctl" and a[1:2] != ["show"]) or (a[0] == "nvidia-smi" and "-r" in a)]
