"""Two labs up at once on one host (issue 37 item 4: the lab tier's files boot their labs side by side, one
xdist worker each): what a lab names on the host is its own, and the sweep of a killed run's labs never takes
down a lab whose maker still runs. Pure parts and a lab folder without nodes; tests/lab boots the real ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from nvls_tui.lab import lifecycle
from nvls_tui.lab.machine import (
    MACHINE_NAME_MAX,
    LabNode,
    machine_name,
    nspawn_argv,
    owner_alive,
    process_start,
    save_state,
)


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_two_labs_with_a_node_of_one_name_boot_machines_of_different_names_with_its_host_name():
    suite = LabNode("gpu05", "127.0.6.10", "/a/nodes/gpu05")
    slurm = LabNode("gpu05", "127.0.8.10", "/b/nodes/gpu05")
    assert (machine_name(suite), machine_name(slurm)) == ("gpu05-127-0-6-10", "gpu05-127-0-8-10")
    for node in (suite, slurm):
        argv = nspawn_argv(node, ["--bind-ro=/x"])
        assert _option(argv, "-M") == machine_name(node)
        assert "--hostname=gpu05" in argv  # kubelet and slurmd inside know the node by its own name
        assert argv[argv.index("--bind-ro=/x") + 1:argv.index("--") + 1] == ["--boot", "--"]


def test_a_long_node_name_is_cut_to_the_machine_name_limit_and_keeps_its_address():
    node = LabNode("n" * 80, "127.0.25.11", "/c/nodes/n")
    name = machine_name(node)
    assert len(name) == MACHINE_NAME_MAX and name.endswith("-127-0-25-11")
    assert f"--hostname={'n' * 80}" in nspawn_argv(node)


def _lab_folder(root, worker: str, prefix: str):
    """A lab folder where pytest-xdist puts a worker's (``pytest-of-USER/pytest-N/popen-gwK/PREFIXn``), with a
    lab.json and no nodes: what ``down`` would remove is its files."""
    folder = root / "pytest-of-u" / "pytest-1" / worker / f"{prefix}0"
    folder.mkdir(parents=True)
    save_state(folder, "healthy", [])
    (folder / "ssh_config").write_text("Host gpu07\n")
    return folder


def _owned_by(folder, pid: int, start: object) -> None:
    data = json.loads((folder / "lab.json").read_text())
    data.update(owner=pid, owner_start=start)
    (folder / "lab.json").write_text(json.dumps(data))


def test_the_sweep_leaves_every_lab_whose_maker_runs_and_takes_down_a_dead_makers(tmp_path):
    mine = _lab_folder(tmp_path, "popen-gw0", "hunglab")
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        # Another live worker's lab (another process, its start time as save_state records it).
        theirs = _lab_folder(tmp_path, "popen-gw1", "hunglab")
        _owned_by(theirs, other.pid, process_start(other.pid))
        dead = _lab_folder(tmp_path, "popen-gw2", "hunglab")
        finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                                  text=True, check=True)
        _owned_by(dead, int(finished.stdout), 1)
        assert (owner_alive(mine), owner_alive(theirs), owner_alive(dead)) == (True, True, False)
        assert lifecycle.down_abandoned(tmp_path, "hunglab") == [dead]
        assert (mine / "lab.json").exists() and (theirs / "ssh_config").exists()
        assert sorted(p.name for p in dead.iterdir()) == []
    finally:
        other.stdin.close()
        other.wait()


def test_a_maker_whose_pid_now_names_another_process_is_gone(tmp_path):
    """A killed run's PID given to a later process (a live worker of another run): its lab is abandoned."""
    folder = _lab_folder(tmp_path, "popen-gw0", "aplab")
    recorded = json.loads((folder / "lab.json").read_text())
    assert recorded["owner"] == os.getpid() and owner_alive(folder)
    _owned_by(folder, os.getpid(), recorded["owner_start"] + 1)
    assert not owner_alive(folder)
    assert lifecycle.down_abandoned(tmp_path, "aplab") == [folder]


def test_a_lab_json_of_an_earlier_version_without_the_start_time_is_judged_by_its_pid(tmp_path):
    folder = _lab_folder(tmp_path, "popen-gw0", "nrlab")
    data = json.loads((folder / "lab.json").read_text())
    del data["owner_start"]
    (folder / "lab.json").write_text(json.dumps(data))
    assert owner_alive(folder)
    assert lifecycle.down_abandoned(tmp_path, "nrlab") == []


def test_every_lab_of_the_suite_has_a_subnet_and_a_folder_prefix_of_its_own():
    from nvls_tui.lab.machine import DEFAULT_SUBNET
    from nvls_tui.lab.slurm import ctld_port, node_port
    from tests.conftest import TEST_SUBNET
    from tests.lab.own_lab import SUBNETS

    subnets = list(SUBNETS.values())
    assert len(set(subnets)) == len(subnets) and DEFAULT_SUBNET not in subnets and SUBNETS["lab"] == TEST_SUBNET
    assert all(0 < s < 255 for s in subnets)
    # Slurm's ports of each subnet (slurmctld's and one per node) are below the kernel's ephemeral range.
    assert max(node_port(s, 63) for s in subnets) < 32768 and min(ctld_port(s) for s in subnets) > 1024
    # The sweep of a killed run's labs looks for PREFIX*: no prefix may catch another lab's folder.
    assert not [(a, b) for a in SUBNETS for b in SUBNETS if a != b and b.startswith(a)]


def test_a_lab_test_names_one_lab_group_and_a_test_of_the_shared_lab_is_in_its_group():
    from tests.conftest import lab_group_problem

    assert lab_group_problem({"lab"}, {"lab"}, {"lab", "tmp_path"}) is None
    assert lab_group_problem({"lab", "tmux"}, {"lab-slurm"}, {"slurm_lab"}) is None
    assert lab_group_problem({"ssh"}, set(), {"rigs"}) is None  # not a lab test: any worker
    assert "not none" in lab_group_problem({"lab"}, set(), {"h200_lab"})
    assert "not ['lab', 'lab-kube']" in lab_group_problem({"lab"}, {"lab", "lab-kube"}, {"k8s_lab"})
    assert "not ['slurm']" in lab_group_problem({"lab"}, {"slurm"}, {"slurm_lab"})
    said = lab_group_problem({"lab"}, {"lab-kernel"}, {"lab", "rot_lab"})
    assert said == "it takes the shared lab 'lab': its xdist group is 'lab', not 'lab-kernel'"
