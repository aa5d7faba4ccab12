"""A shim node's /proc files (nvls_tui/sim/proc_files.py) answer the poll's builtins as the simulated ps does.

The poll reads the holders' parents and cgroups with the shell's ``read`` from ``$NVLS_TUI_PROC`` (issue 37: no
process for them); a shell serving a simulated node must find the node's processes there, never this machine's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.parsers.ps import parse_proc_stat, parse_ps, parse_ps_cgroups
from nvls_tui.poll.probe import cgroup_argv, parents_from, ppid_argv
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.proc_files import PROC_DIR, PROC_ENV, cgroup_lines, stat_line
from nvls_tui.sim.shims import write_shims
from nvls_tui.sim.state import Proc


def test_a_stat_line_names_the_parent_after_any_name_and_the_start_in_ticks():
    proc = Proc(pid=4242, ppid=77, user="root", start=1012.5, argv=["/opt/x) 9 (y", "-n"], cgroup="-")
    parsed = parse_proc_stat(stat_line(proc, boot=1000.0)).value[4242]
    assert (parsed.comm, parsed.ppid, parsed.starttime) == ("x) 9 (y", 77, 1250)
    assert cgroup_lines(proc) == "0::/\n"
    assert cgroup_lines(Proc(pid=1, ppid=0, user="root", start=0, argv=["a"], cgroup="4:memory:/a,0::/b")) == \
        "4:memory:/a\n0::/b\n"


@pytest.mark.parametrize("static", [True, False])
def test_the_shim_nodes_proc_files_give_the_simulated_ps_s_parents_and_cgroups(tmp_path, static):
    root = write_shims(tmp_path / "n", "seed-incident", "gpu05", static=static, speed=0)
    env = {"PATH": f"{root}/bin:/usr/bin:/bin", "LC_ALL": "C", PROC_ENV: str(root / PROC_DIR)}
    out = subprocess.run(["/bin/sh", "-c", probe_script(only=("holders", "processes", "cgroups"))
                          + 'echo "@@all $all"\n'], env=env, capture_output=True, text=True, timeout=120).stdout
    sections = split_probe_output(out)
    # The same node in process: its fuser table, the parents by the simulated ps, their cgroups.
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    table = fleet.sh("gpu05", "fuser", "-v", *fleet.node("gpu05").device_files())
    holders = sorted({h.pid for h in parse_fuser_v(table.merged or table.stderr).value})
    parents = parents_from(fleet.sh("gpu05", *ppid_argv(holders)).stdout, holders)
    assert holders and parents  # the scenario's watch loop: a parent that holds nothing itself
    read = [int(p) for p in out.split("@@all ")[1].split()[0].split(",")]
    assert sorted(read) == sorted(holders + parents)
    by_ps = parse_ps_cgroups(fleet.sh("gpu05", *cgroup_argv(holders + parents)).stdout).value
    assert sections["cgroups"][0] == 0 and parse_ps_cgroups(sections["cgroups"][1]).value == by_ps
    assert {e.pid for e in parse_ps(sections["processes"][1]).value} == set(holders + parents)


def test_the_files_follow_the_node_a_process_gone_from_it_is_gone_from_proc(tmp_path):
    from nvls_tui.sim.store import NodeStore

    root = write_shims(tmp_path / "n", "seed-incident", "gpu05", speed=0)
    store = NodeStore(root)
    with store.locked() as (node, _clock):
        gone = max(node.procs)
        del node.procs[gone]
    assert not (Path(root) / PROC_DIR / str(gone)).exists()
    assert sorted(int(e.name) for e in (Path(root) / PROC_DIR).iterdir()) == sorted(store.load()[0].procs)

