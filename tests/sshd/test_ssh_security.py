"""Host keys, authentication, ssh config, jump host, sudo and argument validation against a real sshd."""

from __future__ import annotations

import asyncssh
import pytest

from nvls_tui.backends.base import (
    BackendOptions,
    CommandFailed,
    HostKeyRejected,
    InvalidArgument,
    Unreachable,
    validate_unit,
)
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import SshTarget
from tests.sshd_rig import backend_for

pytestmark = pytest.mark.ssh


async def test_an_unknown_host_key_is_refused_with_a_one_line_reason(sshd_fleet, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    backend = backend_for(sshd_fleet(2), known_hosts=str(empty))
    with pytest.raises(HostKeyRejected) as info:
        await backend.run(["true"])
    message = str(info.value)
    assert "is not in" in message and str(empty) in message and "\n" not in message
    assert not backend.connector.connected


async def test_a_changed_host_key_is_refused_and_named_as_changed(sshd_fleet, tmp_path):
    rig = sshd_fleet(2)
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    wrong = tmp_path / "known_hosts"
    wrong.write_text("".join(f"[127.0.0.1]:{n.port} {other}\n" for n in rig.nodes.values()))
    backend = backend_for(rig, known_hosts=str(wrong))
    with pytest.raises(HostKeyRejected, match="does not match"):
        await backend.run(["true"])


async def test_a_missing_known_hosts_file_is_refused_rather_than_unchecked(sshd_fleet, tmp_path):
    backend = backend_for(sshd_fleet(2), known_hosts=str(tmp_path / "absent"))
    with pytest.raises(HostKeyRejected, match="cannot read known_hosts"):
        await backend.run(["true"])


async def test_a_key_the_server_does_not_accept_is_an_authentication_error(sshd_fleet, tmp_path):
    stranger = tmp_path / "stranger"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(stranger))
    backend = backend_for(sshd_fleet(2), identity=str(stranger))
    with pytest.raises(Unreachable, match="authentication refused"):
        await backend.run(["true"])


async def test_an_ssh_config_alias_supplies_host_port_user_and_identity(sshd_fleet, tmp_path):
    rig = sshd_fleet(2)
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host node-a\n  HostName 127.0.0.1\n  Port {rig.nodes['gpu02'].port}\n  User {rig.user}\n"
        f"  IdentityFile {rig.client_key}\n"
    )
    options = BackendOptions(timeout=5, known_hosts=str(rig.known_hosts), ssh_config=str(config))
    backend = SshBackend(SshTarget("node-a"), options)
    try:
        result = await backend.run(["sh", "-c", "echo $NVLS_TUI_SIM_NODE"])
    finally:
        await backend.close()
    assert result.stdout == "gpu02\n"


async def test_the_ssh_configs_known_hosts_file_is_the_trust_when_no_known_hosts_is_given(sshd_fleet, tmp_path):
    # `lab up` writes exactly this: an alias whose UserKnownHostsFile holds the node's own host key.
    rig = sshd_fleet(2)
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host node-b\n  HostName 127.0.0.1\n  Port {rig.nodes['gpu02'].port}\n  User {rig.user}\n"
        f"  IdentityFile {rig.client_key}\n  UserKnownHostsFile {rig.known_hosts}\n  StrictHostKeyChecking yes\n"
    )
    backend = SshBackend(SshTarget("node-b"), BackendOptions(timeout=5, ssh_config=str(config)))
    try:
        result = await backend.run(["sh", "-c", "echo $NVLS_TUI_SIM_NODE"])
    finally:
        await backend.close()
    assert result.stdout == "gpu02\n"


async def test_a_known_hosts_file_of_none_in_the_ssh_config_does_not_switch_checking_off(sshd_fleet, tmp_path):
    rig = sshd_fleet(2)
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host node-c\n  HostName 127.0.0.1\n  Port {rig.nodes['gpu02'].port}\n  User {rig.user}\n"
        f"  IdentityFile {rig.client_key}\n  UserKnownHostsFile none\n  StrictHostKeyChecking no\n"
    )
    backend = SshBackend(SshTarget("node-c"), BackendOptions(timeout=5, ssh_config=str(config)))
    with pytest.raises(HostKeyRejected, match="refusing to connect"):
        await backend.run(["true"])
    await backend.close()


async def test_a_jump_host_carries_the_connection_with_its_key_checked_too(sshd_fleet):
    rig = sshd_fleet(2)
    backend = backend_for(rig, "gpu02", jump=rig.target("gpu01"))
    try:
        result = await backend.run(["sh", "-c", "echo $NVLS_TUI_SIM_NODE"])
    finally:
        await backend.close()
    assert result.stdout == "gpu02\n"


async def test_an_unreachable_jump_host_is_named_in_the_error(sshd_fleet):
    rig = sshd_fleet(2)
    backend = backend_for(rig, "gpu02", jump="127.0.0.1:1")
    with pytest.raises(Unreachable, match="jump host 127.0.0.1:1"):
        await backend.run(["true"])


async def test_sudo_prefixes_privileged_commands_with_sudo_n_and_env_goes_through_env():
    backend = SshBackend(SshTarget("gpu05"), BackendOptions(sudo=True))
    assert backend.command_line(["fuser", "-v", "/dev/nvidia0"], privileged=True) == "sudo -n fuser -v /dev/nvidia0"
    assert backend.command_line(["all_reduce_perf", "-g", "8"], env={"NCCL_ALGO": "NVLS"}, privileged=True) == (
        "sudo -n env NCCL_ALGO=NVLS all_reduce_perf -g 8"
    )
    assert backend.command_line(["ls"], privileged=False) == "ls"


async def test_a_sudo_password_prompt_becomes_a_clear_command_failed(sshd_fleet):
    rig = sshd_fleet(["sudo01"])
    fake = rig.nodes["sudo01"].bin / "sudo"  # what sudo -n prints for a user without NOPASSWD
    fake.write_text("#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n")
    fake.chmod(0o755)
    backend = backend_for(rig, "sudo01", sudo=True)
    try:
        with pytest.raises(CommandFailed, match="sudo wants a password") as info:
            await backend.run(["systemctl", "stop", "kubelet"], privileged=True)
        assert info.value.result is not None and info.value.result.exit_status == 1
    finally:
        await backend.close()


@pytest.mark.parametrize("host", ["gpu05;reboot", "-oProxyCommand=id", "gpu 05", "$(id)"])
def test_a_host_with_shell_syntax_is_refused_before_any_backend_exists(host):
    with pytest.raises(InvalidArgument, match="refusing host name"):
        SshBackend(SshTarget(host), BackendOptions())


@pytest.mark.parametrize(
    "argv", ["rm -rf /", [], ["echo", "nul\0byte"]], ids=["shell-string", "empty", "nul-byte"]
)
async def test_commands_that_are_not_clean_argv_lists_are_refused_before_connecting(argv):
    backend = SshBackend(SshTarget("127.0.0.1", port=1), BackendOptions(timeout=1))
    with pytest.raises(InvalidArgument):
        await backend.run(argv)
    assert backend.connector.failures == 0  # no connection was even attempted


async def test_env_names_that_could_inject_shell_are_refused_before_connecting():
    backend = SshBackend(SshTarget("127.0.0.1", port=1), BackendOptions(timeout=1))
    with pytest.raises(InvalidArgument, match="environment variable"):
        await backend.run(["true"], env={"A;id": "x"})
    assert backend.connector.failures == 0


@pytest.mark.parametrize("pid", ["1;reboot", "-1", 1, 0, "12 13", True])
async def test_pids_that_are_not_plain_process_ids_are_refused_before_connecting(pid):
    from nvls_tui.backends.base import ProcessIdentity

    backend = SshBackend(SshTarget("127.0.0.1", port=1), BackendOptions(timeout=1))
    with pytest.raises(InvalidArgument):
        await backend.signal(pid, 15, ProcessIdentity(pid=4242, start_time="x", command="y"))
    assert backend.connector.failures == 0


@pytest.mark.parametrize("unit", ["kubelet;reboot", "-x.service", "a b.service", "$(id).timer"])
def test_unit_names_with_shell_syntax_are_refused(unit):
    with pytest.raises(InvalidArgument, match="refusing unit name"):
        validate_unit(unit)
