"""Lab nodes are machines of their own (issue 37 item 1).

A lab node's root was an overlay of the host's, so its ``/root`` was the host's and every command over SSH
ran the host's ``~/.bashrc``. On machines whose root ``.bashrc`` runs ``pyenv init`` (this project's build
machines), that runs ``pyenv rehash``; a rehash cut short (a command killed at its timeout takes its process
group with it) left its lock file in the node's overlay, and from then on every shell on the node waited
for the lock (60 s): "the command did not start within 20s", repairs that never got through. Each node now
has its own ``/root`` and ``/home`` (from the image: its own minimal start-up files, root's authorized key),
nothing of the host's.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvls_tui.lab.machine import node_run

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab")]


def folder_of(lab) -> Path:
    return lab[0]


def ssh(folder: Path, node: str, command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``command`` over the node's real sshd, as an operator runs it (``ssh -F DIR/ssh_config``)."""
    return subprocess.run(["ssh", "-F", str(folder / "ssh_config"), "-o", "BatchMode=yes", node, command],
                          capture_output=True, text=True, timeout=timeout, check=False)


def interpreter_in_home() -> Path | None:
    """The Python the lab's stand-ins run, where it lies in the host's /root (a pyenv's): the node has that
    installation bound, read-only, at its own path, and nothing else of the folders around it."""
    base = Path(sys.base_prefix).resolve()
    return base if base.is_relative_to("/root") else None


def host_only_names() -> set[str]:
    """What the host's /root holds that the node's own /root must not."""
    names = {p.name for p in Path("/root").iterdir()} - {".ssh", ".bashrc", ".profile"}
    if (base := interpreter_in_home()) is not None:
        names.discard(base.relative_to("/root").parts[0])
    return names


def test_a_file_made_in_the_hosts_home_is_not_in_the_nodes(lab):
    folder, _nodes = lab
    marker = Path("/root") / f".nvls-lab-host-only-{secrets.token_hex(4)}"
    marker.write_text("the host's\n")
    try:
        done = ssh(folder, "gpu05", f"ls -a /root; test -e {marker} && echo PRESENT || echo absent")
    finally:
        marker.unlink()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "absent"
    assert marker.name not in done.stdout
    # What the host's /root holds (a pyenv, a cargo, credentials) is not the node's.
    assert not host_only_names() & set(done.stdout.split())
    if (base := interpreter_in_home()) is not None:
        # Of a pyenv, the one installation the stand-ins run, and none of pyenv itself (no shims, no rehash).
        parts = base.relative_to("/root").parts
        for depth in range(1, len(parts)):
            folder = "/root/" + "/".join(parts[:depth])
            listed = ssh(folder_of(lab), "gpu05", f"ls -A {folder}")
            assert listed.stdout.split() == [parts[depth]], (folder, listed.stdout)


def test_a_login_shell_on_the_node_reads_no_file_of_the_hosts_home(lab):
    folder, _nodes = lab
    # Every command a login shell's start-up files run, traced (PS4 marks each line).
    done = ssh(folder, "gpu05", "PS4='+trace ' bash -lxic true 2>&1; echo HOME=$HOME; cat /root/.bashrc /root/.profile")
    assert done.returncode == 0, done.stderr
    trace = done.stdout
    assert "HOME=/root" in trace
    named = sorted(name for name in host_only_names() if name in trace)
    assert not named, f"the node's shell start-up named the host's {named}:\n{trace}"
    assert "pyenv" not in trace and "cargo" not in trace


def test_a_stale_pyenv_rehash_lock_in_the_node_does_not_hold_its_shells(lab):
    folder, nodes = lab
    lock = "/root/.pyenv/shims/.pyenv-shim"  # pyenv rehash's lock: a rehash killed mid-way leaves it
    node_run(nodes["gpu06"], "sh", "-c", f"mkdir -p {os.path.dirname(lock)} && : > {lock}")
    try:
        started = time.monotonic()
        done = ssh(folder, "gpu06", "systemctl is-active nvidia-fabricmanager; echo started", timeout=120)
        took = time.monotonic() - started
    finally:
        node_run(nodes["gpu06"], "rm", "-f", lock, check=False)
    assert done.stdout.split()[-1:] == ["started"], done.stderr
    assert took < 15, f"a command over SSH took {took:.0f} s to start"  # pyenv waits 60 s for its lock


def test_check_says_how_long_a_lab_nodes_shell_took_to_start(lab):
    """Issue 37 item 2 on a lab node: its own ~/.bashrc made slow (a little longer than --timeout)."""
    import json
    import re

    folder, nodes = lab
    node_run(nodes["gpu05"], "sh", "-c", "cp -p /root/.bashrc /root/.bashrc.nvls-test && echo 'sleep 8' >> /root/.bashrc")
    try:
        done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "check", "gpu05", "--json", "--timeout", "6",
                               "--ssh-config", str(folder / "ssh_config")],
                              capture_output=True, text=True, timeout=120, check=False)
    finally:
        node_run(nodes["gpu05"], "mv", "/root/.bashrc.nvls-test", "/root/.bashrc")
    (node,) = json.loads(done.stdout)["nodes"]
    message = node["findings"][0]["message"]
    assert node["verdict"] == "unreachable", message
    took = re.search(r"the node's shell took (\d+) s to start: its start-up files\?", message)
    assert took and 7 <= int(took.group(1)) <= 10, message


def test_the_hosts_timers_do_not_run_on_the_node_but_apts_do(lab):
    """The host's packages enable timers (the Prometheus node exporter's collectors, man-db, dpkg's backup) that
    basic.target started in every lab node, some at boot and every minute: a node masks them (issue 37 item 4). It
    keeps apt's, which the restarters scenario runs and a repair's quiesce stops and starts, and its own."""
    from nvls_tui.lab.image import HOST_TIMERS, KEPT_TIMERS

    _folder, nodes = lab
    host = sorted(p.name for p in Path(HOST_TIMERS).glob("*.timer"))
    masked = [t for t in host if t not in KEPT_TIMERS]
    if masked:
        states = node_run(nodes["gpu06"], "systemctl", "is-enabled", *masked, check=False).stdout.split()
        assert dict(zip(masked, states, strict=True)) == dict.fromkeys(masked, "masked")
    listed = node_run(nodes["gpu06"], "systemctl", "list-units", "--type=timer", "--state=active", "--no-legend",
                      "--plain").stdout
    active = {line.split()[0] for line in listed.splitlines() if line.strip()}
    systemds = {p.name for p in Path("/lib/systemd/system/timers.target.wants").glob("*.timer")}
    assert "nvidia-snapshot.timer" in active
    assert {t for t in KEPT_TIMERS if t in host} <= active
    assert active - systemds - set(KEPT_TIMERS) == {"nvidia-snapshot.timer"}, sorted(active)
