"""``lab up --scenario fm-restarters``: the real needrestart and unattended-upgrades on a lab node (issue 26 item 2).

Debian bookworm's packages, downloaded with apt on the host and installed with dpkg into the one node's own
layer; their units and apt's timers run under the node's real systemd 252, and FM's NRestarts is real
systemd's. ``check`` over real SSH reads FM_RESTARTER as ``sim:fm-restarters`` does; a repair stops apt's
timers around the reset and starts them again, and neither timer's service ran meanwhile (the real units'
timestamps and journal say so). The lab is this file's own (``nrlab*`` on 127.0.15.x), booted once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.lab.machine import node_run, run
from nvls_tui.model.jsonout import node_json
from nvls_tui.poll.probe import SECTIONS
from nvls_tui.sim.commands import execute
from nvls_tui.sim.fleet import load_fleet
from tests.lab.own_lab import own_lab
from tests.lab.test_lab import check_json, cli  # the lab's own helpers: the real command line

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab-restarters")]

NODE = "gpu-nr01"
FM = "nvidia-fabricmanager.service"
TIMERS = ("apt-daily.timer", "apt-daily-upgrade.timer")
RUNS = ("apt-daily.service", "apt-daily-upgrade.service")
STAMPS = "ActiveEnterTimestamp,InactiveEnterTimestamp,ActiveState"


@pytest.fixture(scope="module")
def nr_lab(tmp_path_factory):
    """One lab node acting ``fm-restarters``: ``(folder, LabNode)``."""
    with own_lab(tmp_path_factory, "nrlab", [NODE], "fm-restarters") as (folder, (node,)):
        yield folder, node


def show(node, units, props=STAMPS) -> dict[str, dict[str, str]]:
    """``systemctl show -p PROPS UNIT...`` of the node's real systemd, by unit."""
    out = node_run(node, "systemctl", "show", "-p", f"Id,{props}", *units).stdout
    blocks = [dict(line.split("=", 1) for line in block.splitlines() if "=" in line) for block in out.split("\n\n")]
    return {b["Id"]: b for b in blocks if "Id" in b}


def when(stamp: str) -> dt.datetime:
    """systemd's ``Wed 2026-12-02 09:40:01 UTC`` as an aware time."""
    return dt.datetime.strptime(stamp, "%a %Y-%m-%d %H:%M:%S %Z").replace(tzinfo=dt.UTC)


def test_the_packages_live_in_the_nodes_layer_only(nr_lab):
    folder, node = nr_lab
    assert node_run(node, "dpkg-query", "-W", "-f", "${Status}", "needrestart").stdout == "install ok installed"
    host = run(["dpkg-query", "-W", "-f", "${Status}", "needrestart"], check=False)
    assert "install ok installed" not in host.stdout  # the shared host never got it
    assert (Path(folder) / "nodes" / NODE / "upper" / "usr/sbin/needrestart").is_file()


def test_check_reads_fm_restarter_from_the_real_tools_as_the_simulator_does(nr_lab):
    folder, node = nr_lab
    lab = check_json(folder, NODE)[NODE]
    fleet = load_fleet(f"sim:fm-restarters/{NODE}", speed=0)
    (backend,) = sim_backends(fleet)
    sim_state = asyncio.run(backend.snapshot())
    sim = node_json(sim_state, diagnose(sim_state))
    assert lab["restarters"] == sim["restarters"] == {
        "needrestart": {"mode": "a", "units": [FM, "nvidia-persistenced.service", "nvidia-dcgm.service"],
                        "uncertain": []},
        "unattended_upgrades": True, "fm_restarts": 3}
    said = [f["message"] for f in lab["findings"] if f["code"] == "FM_RESTARTER"]
    assert said == [f["message"] for f in sim["findings"] if f["code"] == "FM_RESTARTER"]
    assert len(said) == 3
    assert {u: lab["services"][u] for u in (*TIMERS, "unattended-upgrades")} == {
        "apt-daily.timer": "active", "apt-daily-upgrade.timer": "active", "unattended-upgrades": "active"}


def test_the_simulated_systemctl_prints_nrestarts_and_the_timers_as_the_real_one(nr_lab):
    _, node = nr_lab
    (units,) = [s.argv for s in SECTIONS if s.name == "units"]
    real = node_run(node, *units).stdout
    sim_node = load_fleet(f"sim:fm-restarters/{NODE}", speed=0).node(NODE)
    sim = execute(sim_node, units, sim_node.last_advance).stdout

    def keys(text: str) -> list[list[str]]:
        return [[line.split("=", 1)[0] for line in block.splitlines()] for block in text.split("\n\n")]

    assert keys(sim) == keys(real)
    fm_real = show(node, [FM], "NRestarts,Restart")[FM]
    assert (fm_real["NRestarts"], fm_real["Restart"]) == ("3", "on-failure")


def test_nrestarts_is_kept_by_a_stop_and_zeroed_by_a_start_by_hand_as_in_the_simulator(nr_lab):
    _, node = nr_lab
    sim_node = load_fleet(f"sim:fm-restarters/{NODE}", speed=0).node(NODE)
    count = ["systemctl", "show", "-p", "NRestarts", FM]
    seen_real, seen_sim = [], []
    for verb in ("stop", "start", "reset-failed"):
        node_run(node, "systemctl", verb, FM)
        seen_real.append(node_run(node, *count).stdout)
        execute(sim_node, ["systemctl", verb, FM], sim_node.last_advance)
        seen_sim.append(execute(sim_node, count, sim_node.last_advance).stdout)
    assert seen_sim == seen_real == ["NRestarts=3\n", "NRestarts=0\n", "NRestarts=0\n"]


def test_a_repair_holds_apts_timers_around_the_reset_and_puts_them_back(nr_lab):
    folder, node = nr_lab
    before = show(node, (*TIMERS, *RUNS, "unattended-upgrades.service"))
    done = cli("repair", "--yes", "--json", "--ssh-config", str(folder / "ssh_config"), NODE, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads(done.stdout)["nodes"]
    assert result["result"] == "repaired"
    quiesce = next(s for s in result["steps"] if s["name"] == "quiesce")
    assert quiesce["commands"][:2] == ["systemctl stop apt-daily.timer", "systemctl stop apt-daily-upgrade.timer"]
    after = show(node, (*TIMERS, *RUNS, "unattended-upgrades.service", FM))
    for timer in TIMERS:
        assert after[timer]["ActiveState"] == "active"
        stopped, started = when(after[timer]["InactiveEnterTimestamp"]), when(after[timer]["ActiveEnterTimestamp"])
        # Stopped before FM was started again by the repair, started after it: held across the reset.
        assert stopped <= when(after[FM]["ActiveEnterTimestamp"]) <= started
        assert when(before[timer]["ActiveEnterTimestamp"]) <= stopped
    for service in RUNS:  # neither timer's service ran during the repair (nor since the act)
        assert after[service]["ActiveEnterTimestamp"] == before[service]["ActiveEnterTimestamp"]
    assert after["unattended-upgrades.service"]["ActiveState"] == "active"
    assert after["unattended-upgrades.service"]["ActiveEnterTimestamp"] == \
        before["unattended-upgrades.service"]["ActiveEnterTimestamp"]  # left alone, never restarted
    journal = node_run(node, "journalctl", "--no-pager", "-o", "cat", "-u", RUNS[0], "-u", RUNS[1]).stdout
    assert "Starting" not in journal, journal
    lab = check_json(folder, NODE)[NODE]
    assert not [f for f in lab["findings"] if f["code"] in ("FABRIC_OUT_OF_SYNC", "EVIDENCE_MISSING")]

