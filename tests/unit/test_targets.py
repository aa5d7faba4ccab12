"""SSH target parsing: the forms operators type, node sets, hosts files, and what is refused."""

from __future__ import annotations

import pytest

from nvls_tui.backends.base import InvalidArgument
from nvls_tui.backends.ssh.targets import (
    SshTarget,
    parse_target,
    parse_targets,
    read_hosts_file,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu05", SshTarget("gpu05")),
        ("root@gpu05", SshTarget("gpu05", "root")),
        ("ops@gpu05.dc1.example.com:2222", SshTarget("gpu05.dc1.example.com", "ops", 2222)),
        ("127.0.0.1:2200", SshTarget("127.0.0.1", None, 2200)),
        ("[::1]:22", SshTarget("::1", None, 22)),
        ("root@[fe80::1]:2222", SshTarget("fe80::1", "root", 2222)),
        ("::1", SshTarget("::1")),
    ],
)
def test_a_single_target_parses_into_host_user_and_port(text, expected):
    assert parse_target(text) == [expected]


def test_a_node_set_expands_in_order_with_zero_padding_kept():
    targets = parse_targets(["gpu[01-03]"])
    assert [t.host for t in targets] == ["gpu01", "gpu02", "gpu03"]


def test_user_and_port_apply_to_every_node_of_a_set():
    targets = parse_targets(["admin@gpu[01-04]:2222"])
    assert targets == [SshTarget(f"gpu0{i}", "admin", 2222) for i in range(1, 5)]


def test_sixty_four_nodes_come_from_one_node_set():
    targets = parse_targets(["gpu[01-64]"])
    assert len(targets) == 64 and targets[-1].host == "gpu64"


def test_repeated_targets_are_kept_once_in_first_seen_order():
    targets = parse_targets(["gpu02", "gpu[01-02]", "gpu02"])
    assert [t.host for t in targets] == ["gpu02", "gpu01"]


def test_a_target_prints_back_as_the_operator_would_write_it():
    assert str(SshTarget("gpu05", "root", 2222)) == "root@gpu05:2222"
    assert str(SshTarget("::1", None, 22)) == "[::1]:22"
    assert str(SshTarget("gpu05")) == "gpu05"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-oProxyCommand=sh", "starts with '-'"),
        ("gpu05;reboot", "shell characters"),
        ("gpu05 gpu06", "spaces"),
        ("$(id)", "shell characters"),
        ("gpu`id`", "shell characters"),
        ("gpu05|nc", "shell characters"),
        ("gpu[1-4]!gpu2", "shell characters"),
        ("u$er@gpu05", "user name"),
        ("-root@gpu05", "starts with '-'"),
        ("gpu05:0", "port"),
        ("gpu05:99999", "port"),
        ("gpu05:ssh", "port"),
        ("root@", "no host"),
        ("", "empty"),
        ("gpu[05", "node set"),
    ],
)
def test_targets_that_could_smuggle_shell_syntax_or_options_are_refused_with_a_reason(text, reason):
    with pytest.raises(InvalidArgument) as info:
        parse_targets([text])
    message = str(info.value)
    assert reason in message and "\n" not in message


def test_a_hosts_file_gives_one_target_per_line_without_comments_or_blank_lines(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# rack 1\ngpu[01-02]\n\n  root@gpu09:2222   # spare\n#gpu10\n")
    lines = read_hosts_file(hosts)
    assert lines == ["gpu[01-02]", "root@gpu09:2222"]
    assert [str(t) for t in parse_targets(lines)] == ["gpu01", "gpu02", "root@gpu09:2222"]


def test_a_hosts_file_line_with_two_words_is_refused(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("gpu01 gpu02\n")
    with pytest.raises(InvalidArgument, match="spaces"):
        parse_targets(read_hosts_file(hosts))


def test_a_missing_hosts_file_is_one_clear_sentence(tmp_path):
    with pytest.raises(InvalidArgument, match="cannot read hosts file"):
        read_hosts_file(tmp_path / "nope")
