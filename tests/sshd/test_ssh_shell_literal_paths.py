"""``S`` hands OpenSSH the very files the poll used, whatever their names hold (issue 34, item 9a).

OpenSSH expands ``%`` tokens and ``${VAR}`` in ``UserKnownHostsFile`` and ``IdentityFile`` (``-i`` too), so a
``--known-hosts`` or ``-i`` path holding ``%h`` or ``${HOME}`` made the shell trust another file than the
poll (asyncssh reads the path as it is). The real ``ssh`` says what it reads: ``ssh -G`` prints the
known-hosts file it resolved, ``ssh -v`` the identity files it loads, and a real connection to the sshd
rig (strict host keys, that key only) goes through only with the very files the poll uses.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nvls_tui.backends.base import BackendOptions
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.console.ssh_shell import ssh_argv
from tests.sshd_rig import options_for

SSH = shutil.which("ssh")
pytestmark = pytest.mark.skipif(SSH is None, reason="the OpenSSH client is not installed")
TRICKY = "keys %h%%p ${HOME} $HOME %C"  # ssh's tokens, an environment variable, and a blank


def tricky_files(tmp_path: Path, known_hosts: str = "", key: bytes = b"") -> tuple[Path, Path]:
    """A known_hosts file and a private key in a directory whose name ssh would expand."""
    folder = tmp_path / TRICKY
    folder.mkdir()
    hosts, identity = folder / "known_hosts", folder / "id_%r"
    hosts.write_text(known_hosts)
    identity.write_bytes(key)
    identity.chmod(0o600)
    return hosts, identity


def with_options(argv: list[str], *options: str) -> list[str]:
    """``argv`` with ``options`` right after the ssh binary (after ``env ...`` where there is one)."""
    at = argv.index(SSH) + 1
    return [*argv[:at], *options, *argv[at:]]


def test_ssh_reads_the_known_hosts_and_identity_paths_as_given(tmp_path):
    hosts, identity = tricky_files(tmp_path)
    (target,) = parse_target("admin@gpu05:2222")
    argv = ssh_argv(target, BackendOptions(known_hosts=str(hosts), identity=str(identity)), SSH)
    config = subprocess.run(with_options(argv, "-G"), capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert config.returncode == 0, config.stderr
    assert f"userknownhostsfile {hosts}" in config.stdout.splitlines()
    # ssh expands identity files when it loads them, after -G: -v says which it loads (a proxy that
    # ends at once stands for the node; nothing is reached).
    loaded = subprocess.run(with_options(argv, "-v", "-o", "ProxyCommand=exec true", "-o", "BatchMode=yes"),
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    files = [line.split("identity file ", 1)[1].rsplit(" type ", 1)[0]
             for line in loaded.stderr.splitlines() if "identity file " in line]
    assert files == [str(identity), f"{identity}-cert"], loaded.stderr


def _batch(argv: list[str], *command: str) -> list[str]:
    cut = argv.index("--")
    return [*argv[:cut], "-o", "BatchMode=yes", "-o", "ConnectTimeout=20", *argv[cut:], *command]


@pytest.mark.parametrize("jump", [False, True], ids=["direct", "through-a-jump-host"])
def test_the_shell_reaches_the_node_with_the_files_the_poll_used(sshd_fleet, tmp_path, jump):
    rig = sshd_fleet(2)
    hosts, identity = tricky_files(tmp_path, rig.known_hosts.read_text(), rig.client_key.read_bytes())
    (target,) = parse_target(rig.target("gpu02"))
    options = options_for(rig, known_hosts=str(hosts), identity=str(identity),
                          jump=rig.target("gpu01") if jump else None)
    argv = ssh_argv(target, options, SSH)
    done = subprocess.run(_batch(argv, "echo node=$NVLS_TUI_SIM_NODE"), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout.strip()) == (0, "node=gpu02"), done.stderr
