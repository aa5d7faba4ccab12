"""The lab bastion's files, pure: what an operator installs on a bastion, and the drop-in systemd reads."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from nvls_tui.lab import bastion
from nvls_tui.lab.machine import LabError, LabNode

NODES = [LabNode("gpu05", "127.0.25.10", "/x/gpu05"), LabNode("gpu06", "127.0.25.11", "/x/gpu06")]


def test_the_drop_in_replaces_only_the_command_and_quotes_what_systemd_would_split():
    text = bastion.drop_in(["gpu05", "--state-dir", "/var/lib/x y", "--policy", "50%.toml", "$HOME"], user="root")
    lines = text.splitlines()
    assert lines[1:] == ["[Service]", "User=root", "ExecStart=",
                         'ExecStart=/usr/local/bin/nvls-tui autopilot gpu05 --state-dir "/var/lib/x y" '
                         '--policy 50%%.toml $$HOME']
    assert "User=" not in bastion.drop_in(["gpu05"])


def test_the_bastion_reaches_each_node_by_the_labs_key_with_its_host_key_checked():
    config = bastion.ssh_config(NODES)
    for node in NODES:
        block = config.split(f"Host {node.name}\n", 1)[1].split("Host ", 1)[0]
        assert f"HostName {node.address}\n" in block and "Port 2222\n" in block and "User root\n" in block
        assert f"IdentityFile {bastion.KEY}\n" in block and "StrictHostKeyChecking yes\n" in block
        assert f"UserKnownHostsFile {bastion.KNOWN_HOSTS}\n" in block


def test_the_bastion_carries_the_unit_as_given_and_nvls_tui_as_its_exec_start_names_it():
    unit = "[Service]\nExecStart=/usr/local/bin/nvls-tui autopilot\n"
    files = bastion.files(LabNode("bastion", "127.0.25.2", "/x/b"), NODES, "/opt/venv/bin/python", "ssh-ed25519 K\n",
                          "PRIVATE\n", "[127.0.25.10]:2222 ssh-ed25519 A\n", unit)
    assert files[f"/etc/systemd/system/{bastion.UNIT}"] == (unit, 0o644)
    wrapper, mode = files[bastion.NVLS_TUI]
    assert mode == 0o755 and shlex.split(wrapper.splitlines()[-1]) == ["exec", "/opt/venv/bin/python", "-m",
                                                                         "nvls_tui.cli", "$@"]
    assert files[bastion.KEY] == ("PRIVATE\n", 0o600)
    assert files["/etc/hostname"][0] == "bastion\n"
    assert "ListenAddress 127.0.25.2:2222" in files["/etc/ssh/sshd_config.d/nvls-lab.conf"][0]
    assert "nvidia" not in " ".join(files).lower()  # nothing of a GPU node's
    assert bastion.unit_source().name == bastion.UNIT and "[Service]" in bastion.unit_source().read_text()


def test_the_bastions_slurm_configuration_names_the_munge_socket_where_the_service_sees_it(tmp_path: Path):
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "slurm.conf").write_text(f"ClusterName=nvlslab\nAuthInfo=socket={lab}/munge/munge.socket\n")
    (lab / "gres.conf").write_text("AutoDetect=off\n")
    (lab / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\n")
    files = bastion.slurm_files(lab)
    assert files["/etc/slurm/slurm.conf"][0] == f"ClusterName=nvlslab\nAuthInfo=socket={bastion.MUNGE_RUN}/munge.socket\n"
    assert str(tmp_path) not in "".join(text for text, _mode in files.values())  # nothing under /tmp: PrivateTmp
    assert files["/etc/slurm/gres.conf"] == ("AutoDetect=off\n", 0o644)
    assert bastion.slurm_binds(lab) == [f"--bind={lab}/munge:{bastion.MUNGE_RUN}"]
    (lab / "slurm.conf").write_text("ClusterName=other\n")
    with pytest.raises(LabError, match="munge socket"):
        bastion.slurm_files(lab)


def test_a_project_under_tmp_is_bound_back_in_beside_the_units_private_tmp():
    """A fresh clone under /tmp (CI's) was hidden from the service by the unit's PrivateTmp=yes: it exited 127."""
    assert bastion.hidden_by_private_tmp(["/tmp/ci/main", "/tmp/ci/main/.venv", "/work/main", "/tmp"]) == [
        "/tmp/ci/main", "/tmp/ci/main/.venv", "/tmp"]
    text = bastion.drop_in(["gpu05"], binds=["/tmp/ci/main"])
    assert "BindReadOnlyPaths=/tmp/ci/main" in text.splitlines()
    assert "PrivateTmp" not in text  # the unit's own hardening stays
