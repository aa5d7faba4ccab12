"""The lab tier: two lab nodes (real systemd, journald, sshd, processes), booted once, reached over real SSH.

Every test of the session's lab runs on one xdist worker, in file order (the group ``lab``): the seed incident
is read first, then repaired, then the nodes are used for what needs a repaired node. The tests of ``lab up``
and ``lab down`` themselves boot a lab of their own (``lab01``) or none, beside it (the group ``lab-lab01``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvls_tui.backends.base import BackendOptions, ProcessChanged, ProcessIdentity
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import SshTarget
from nvls_tui.lab import lifecycle
from nvls_tui.lab.machine import LabNode, machine_name, missing_requirements, mounted_under, node_run
from tests.conftest import LAB_COMMAND_TIMEOUT
from tests.lab.own_lab import SUBNETS
from tests.waiting import scaled

pytestmark = pytest.mark.lab
SESSION_LAB = pytest.mark.xdist_group("lab")
OWN_LAB = pytest.mark.xdist_group("lab-lab01")



def poll(condition, timeout: float, what: str):
    """The first truthy value of ``condition()`` within ``timeout`` seconds (real time: real processes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """The real command line, as an operator runs it."""
    return subprocess.run([sys.executable, "-m", "nvls_tui.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def check_json(folder: Path, nodeset: str) -> dict:
    done = cli("check", "--json", "--ssh-config", str(folder / "ssh_config"), nodeset)
    assert done.stdout, done.stderr
    return {n["host"]: n for n in json.loads(done.stdout)["nodes"]}


def backend(folder: Path, name: str) -> SshBackend:
    return SshBackend(SshTarget(name), BackendOptions(timeout=scaled(LAB_COMMAND_TIMEOUT),
                                                      ssh_config=str(folder / "ssh_config")))


def is_active(node: LabNode, *units: str) -> list[str]:
    return node_run(node, "systemctl", "is-active", *units, check=False).stdout.split()


@SESSION_LAB
def test_check_reads_the_seed_incident_from_real_systemd_and_real_processes(lab):
    folder, _nodes = lab
    nodes = check_json(folder, "gpu[05-06]")
    gpu05, gpu06 = nodes["gpu05"], nodes["gpu06"]
    assert gpu05["simulated"] is True and gpu06["simulated"] is True
    plain = cli("check", "--ssh-config", str(folder / "ssh_config"), "gpu[05-06]")
    assert "LAB nodes (simulated GPUs)" in plain.stdout
    assert gpu05["verdict"] == "broken" and gpu06["verdict"] == "broken"
    fm = next(f for f in gpu05["findings"] if f["code"] == "FM_NOT_RUNNING")
    assert "Result: signal" in fm["message"]
    assert "FABRIC_OUT_OF_SYNC" in {f["code"] for f in gpu06["findings"]}
    # Real holders: real PIDs with parents, start times and the unit or pod their cgroup names.
    holders = {h["kind"]: h for h in gpu05["holders"]}
    assert holders["nv-hostengine"]["unit"] == "nvidia-dcgm.service"
    assert holders["nv-hostengine"]["ppid"] == 1
    # The user's forgotten watch loop runs in a real login session's scope.
    watch = node_run(_nodes["gpu05"], "pgrep", "-u", "ubuntu", "-x", "watch", check=False).stdout.split()
    assert watch, "no watch loop on gpu05"
    cgroup = node_run(_nodes["gpu05"], "cat", f"/proc/{watch[0]}/cgroup").stdout
    assert "/user.slice/user-1001.slice/session-" in cgroup
    for kind in ("dcgm-exporter", "nvidia-device-plugin", "gpu-feature-discovery", "nvidia-mig-manager"):
        assert holders[kind]["pod"].startswith("pod"), holders[kind]
        assert holders[kind]["start_time"] and holders[kind]["ppid"] > 1
        assert holders[kind]["pid"] > 1


@SESSION_LAB
def test_a_reset_is_refused_while_a_real_pod_process_holds_a_device(lab):
    _folder, nodes = lab
    done = node_run(nodes["gpu06"], "nvidia-smi", "-r", check=False)
    assert done.returncode == 255
    assert "currently being used by one or more other processes" in done.stdout


@SESSION_LAB
def test_kubelet_recreates_a_killed_pod_with_a_new_pid_in_its_kubepods_slice(lab):
    _folder, nodes = lab
    node = nodes["gpu06"]

    def plugin_pids() -> list[str]:
        return node_run(node, "pgrep", "-f", "/usr/bin/nvidia-device-plugin", check=False).stdout.split()

    (old,) = plugin_pids()
    node_run(node, "kill", "-KILL", old)

    def recreated() -> str | None:
        # The new pod counts once it runs in its scope: for a moment it is still systemd-run, in
        # kubelet's own cgroup, on its way there (as containerd's shim is before runc moves it).
        for pid in plugin_pids():
            cgroup = node_run(node, "cat", f"/proc/{pid}/cgroup", check=False).stdout
            if pid != old and "kubepods" in cgroup:
                return cgroup
        return None

    cgroup = poll(recreated, timeout=30, what="the pod's recreation in its scope")
    assert "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" in cgroup
    assert "cri-containerd-" in cgroup


@SESSION_LAB
def test_repair_yes_repairs_both_nodes_and_real_systemd_shows_every_unit_back(lab):
    folder, nodes = lab
    done = cli("repair", "--yes", "--json", "--ssh-config", str(folder / "ssh_config"), "gpu[05-06]", timeout=300)
    results = {n["host"]: n for n in json.loads(done.stdout)["nodes"]}
    assert {h: r["result"] for h, r in results.items()} == {"gpu05": "repaired", "gpu06": "repaired"}, done.stderr
    assert done.returncode == 0
    for node in nodes.values():
        states = is_active(node, "kubelet", "nvidia-dcgm", "nvidia-snapshot.timer", "nvidia-fabricmanager")
        assert states == ["active"] * 4, node_run(node, "journalctl", "-n", "40", "--no-pager", check=False).stdout
        # FM forks as NVIDIA's unit does: the start returned once the daemon systemd runs had registered the fabric
        # (a foreground stand-in let the repair's first nvidia-smi race FM's start: out of sync, CUDA 802).
        shown = node_run(node, "systemctl", "show", "-p", "Type", "-p", "MainPID", "nvidia-fabricmanager").stdout
        registered = node_run(node, "cat", "/var/lib/nvls-lab/fm.pid").stdout.strip()
        assert sorted(shown.split()) == ["MainPID=" + registered, "Type=forking"], (shown, registered)
    # The repair found the watch loop (parent first) and stopped it: nothing of it is left.
    assert node_run(nodes["gpu05"], "pgrep", "-u", "ubuntu", "-x", "watch", check=False).stdout == ""
    after = check_json(folder, "gpu[05-06]")
    assert {h: n["verdict"] for h, n in after.items()} == {"gpu05": "healthy", "gpu06": "healthy"}


@SESSION_LAB
async def test_a_pid_reused_by_another_process_is_not_signalled(lab):
    folder, nodes = lab
    node = nodes["gpu05"]
    holder = next(h for h in check_json(folder, "gpu05")["gpu05"]["holders"] if h["kind"] == "dcgm-exporter")
    identity = ProcessIdentity(holder["pid"], holder["start_time"], holder["command"])
    node_run(node, "systemctl", "stop", "kubelet")  # nobody recreates the pod meanwhile
    try:
        node_run(node, "kill", "-KILL", str(holder["pid"]))
        poll(lambda: node_run(node, "kill", "-0", str(holder["pid"]), check=False).returncode != 0,
                   timeout=10, what="the pod's death")
        # The kernel hands the same PID to a new process: ns_last_pid is the PID namespace's counter
        # (written through the host's /proc: the container's /proc/sys is read-only, as nspawn makes it).
        subprocess.run(["nsenter", "-t", str(node.leader_pid), "--pid", "sh", "-c",
                        f"echo {holder['pid'] - 1} > /proc/sys/kernel/ns_last_pid; "
                        "setsid sleep 600 </dev/null >/dev/null 2>&1 &"], check=True, timeout=10)
        # (setsid execs sleep a moment later: wait for the new process to be what it will stay)
        poll(lambda: node_run(node, "ps", "-o", "args=", "-p", str(holder["pid"]), check=False).stdout.strip()
             == "sleep 600", timeout=10, what="the new process on the old PID")
        ssh = backend(folder, "gpu05")
        try:
            with pytest.raises(ProcessChanged):
                await ssh.signal(holder["pid"], signal.SIGTERM, identity)
        finally:
            await ssh.close()
        assert node_run(node, "ps", "-o", "args=", "-p", str(holder["pid"])).stdout.strip() == "sleep 600"
    finally:
        node_run(node, "pkill", "-x", "sleep", check=False)
        node_run(node, "systemctl", "start", "kubelet")


@OWN_LAB
@pytest.mark.skipif(os.geteuid() != 0, reason="as an ordinary user the first sentence is about root (tested below)")
def test_lab_up_without_systemd_nspawn_names_the_package_in_one_line(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("nsenter", "ssh-keygen"):
        if shutil.which(tool):
            (bare / tool).symlink_to(shutil.which(tool))
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "lab", "up", "--dir", str(tmp_path / "lab")],
                          capture_output=True, text=True, env={**os.environ, "PATH": str(bare)}, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "systemd-container" in done.stderr and "systemd-nspawn" in done.stderr


# Imports first, as root (the modules ``lab up`` imports on its way, ``nvls_tui.paths`` and
# ClusterShell's config reader among them), then the drop to nobody: the checkout, its virtual
# environment or the interpreter's standard library may sit under a folder only root can read, where an
# ordinary user could not even import the package. What is tested is the command's answer to an
# ordinary user, and that runs after the drop.
_AS_NOBODY = """
import os, sys
import ClusterShell.NodeSet, nvls_tui.backends.nodesets, nvls_tui.cli, nvls_tui.headless.lab, nvls_tui.paths
import nvls_tui.config, nvls_tui.settings
import nvls_tui.lab.lifecycle, nvls_tui.lab.machine
os.chdir("/")
os.setgroups([]); os.setgid(65534); os.setuid(65534)
assert os.geteuid() == 65534 and os.getegid() == 65534
raise SystemExit(nvls_tui.cli.main(sys.argv[1:]))
"""


@OWN_LAB
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to an ordinary user")
def test_lab_up_as_an_ordinary_user_says_it_needs_root_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-c", _AS_NOBODY, "lab", "up", "--dir", str(tmp_path / "lab")],
                          capture_output=True, text=True, timeout=60, check=False, cwd=Path(__file__).parents[2])
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "nvls-tui: lab up needs root: it mounts overlays and boots systemd-nspawn containers"


@OWN_LAB
def test_lab_down_leaves_no_process_mount_or_file_behind(tmp_path):
    problem = missing_requirements()
    if problem:
        pytest.skip(f"the lab cannot boot here: {problem}")
    folder = tmp_path / "downlab"
    nodes = lifecycle.up(folder, ["lab01"], "healthy", say=lambda _t: None, subnet=SUBNETS["downlab"])
    pids = [nodes[0].nspawn_pid, nodes[0].leader_pid]
    assert mounted_under(folder)
    # What nspawn keeps on the host under the machine's name is this node's alone (another lab may have a
    # lab01 up at once); inside, the node's host name is its own name.
    own = Path(NSPAWN_PROPAGATE, machine_name(nodes[0]))
    assert machine_name(nodes[0]) == f"lab01-{nodes[0].address.replace('.', '-')}" and own.is_dir()
    assert node_run(nodes[0], "hostname").stdout.strip() == "lab01"
    assert cli("lab", "status", "--dir", str(folder)).stdout.split() == ["lab01", nodes[0].address, "running"]
    done = cli("lab", "down", "--dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert mounted_under(folder) == []
    assert [c for c in nodes[0].cgroups if Path(c).exists()] == []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert [p for p in pids if _alive(p)] == []
    assert sorted(p.name for p in folder.iterdir()) == []
    assert not own.exists()


NSPAWN_PROPAGATE = "/run/systemd/nspawn/propagate"
"""Where systemd-nspawn keeps a folder per machine name while the machine runs, with ``--register=no`` too."""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@SESSION_LAB
def test_fm_killed_mid_repair_fails_the_repair_and_still_restores_every_unit(lab):
    folder, nodes = lab
    node = nodes["gpu05"]
    fm = "nvidia-fabricmanager.service"

    def fm_pid() -> int:
        return int(node_run(node, "systemctl", "show", "-p", "MainPID", "--value", fm).stdout.strip() or 0)

    node_run(node, "systemctl", "start", fm)
    first = fm_pid()
    node_run(node, "kill", "-KILL", str(first))  # broken again: FM failed, fabric state stale
    repair = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", "repair", "--yes", "--json", "--ssh-config",
                               str(folder / "ssh_config"), "gpu05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        restarted = poll(lambda: (pid := fm_pid()) not in (0, first) and pid, timeout=120,
                         what="the repair's FM start")
        node_run(node, "kill", "-KILL", str(restarted))  # FM dies again while the repair verifies the fabric
        out, err = repair.communicate(timeout=300)
    finally:
        if repair.poll() is None:
            repair.kill()
    (result,) = json.loads(out)["nodes"]
    assert repair.returncode == 1, err
    assert result["result"] == "failed"
    failed = [s["name"] for s in result["steps"] if s["status"] == "failed"]
    assert failed and failed[0] in ("fabric-manager", "verify-fabric", "smoke-test"), result["steps"]
    assert is_active(node, "kubelet", "nvidia-dcgm", "nvidia-snapshot.timer") == ["active"] * 3
    node_run(node, "systemctl", "start", fm)  # leave FM running for the tests after this one


@SESSION_LAB
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_console_repairs_a_lab_node_in_a_real_terminal(lab, tmp_path):
    from tests.tmux.test_e2e_tmux import Tmux

    folder, nodes = lab
    node = nodes["gpu06"]
    fm = "nvidia-fabricmanager.service"
    node_run(node, "systemctl", "start", fm)
    pid = node_run(node, "systemctl", "show", "-p", "MainPID", "--value", fm).stdout.strip()
    assert int(pid) > 1
    node_run(node, "kill", "-KILL", pid)
    exe = Path(sys.executable).with_name("nvls-tui")
    # The config home of the test (its per-command timeout scales with the machine's load: conftest).
    env = f"XDG_STATE_HOME={tmp_path / 'state'} XDG_CONFIG_HOME={os.environ['XDG_CONFIG_HOME']} TERM=xterm-256color"
    session = Tmux(f"nvls-lab-{os.getpid()}")
    try:
        session.start(f"env -u COLUMNS -u LINES {env} {exe} --ssh-config {folder / 'ssh_config'} gpu06")
        session.wait_for("gpu06 broken, read over real SSH, and labelled as a lab node",
                         lambda s: "gpu06" in s and "✖ broken" in s and "LAB FLEET" in s, timeout=60)
        session.keys("Space")
        session.wait_for("gpu06 selected", lambda s: "selected for repair: gpu06" in s, timeout=10)
        session.keys("r")
        session.wait_for("the plan", lambda s: "Type gpu06 to go on" in s and "nvidia-smi -r" in s, timeout=30)
        session.keys("gpu06", literal=True)
        session.keys("Enter")
        # The screen's header and the column's summary are drawn by two updates: a frame can show the
        # first without the second, so wait for both (the summary is what proves the smoke test).
        session.wait_for("the repair's end and its summary",
                         lambda s: "✔ gpu06 repaired" in s and re.search(r"✔ repaired\s+\d+\.\d GB/s", s) is not None,
                         timeout=180)
    finally:
        session.kill()
    assert is_active(node, "kubelet", "nvidia-dcgm", "nvidia-snapshot.timer", fm) == ["active"] * 4


@OWN_LAB
def test_lab_down_and_up_never_touch_a_folder_that_is_not_a_lab(tmp_path):
    ssh = tmp_path / "dot-ssh"
    ssh.mkdir()
    for name in ("id_ed25519", "known_hosts", "ssh_config"):
        (ssh / name).write_text("the operator's own\n")
    done = cli("lab", "down", "--dir", str(ssh))
    assert done.returncode == 0 and "no lab in" in done.stderr
    assert sorted(p.name for p in ssh.iterdir()) == ["id_ed25519", "known_hosts", "ssh_config"]
    if missing_requirements() is None:
        up = cli("lab", "up", "--dir", str(ssh))
        assert up.returncode == 2 and "is not a lab folder" in up.stderr
        assert (ssh / "id_ed25519").read_text() == "the operator's own\n"
