"""The config file is read with limits (issue 34, item 9c): a file over 1 MiB, or one whose arrays or
tables nest deeper than any setting does, is a one-line usage error naming the file (exit 2), never an
internal error or a traceback. Through the real command line, in a child with a memory limit.
"""

from __future__ import annotations

import pytest

from nvls_tui.config import MAX_BYTES, MAX_NESTING
from tests.unit.test_input_limits import cli, one_line


def check_with(config) -> str:
    """``nvls-tui check --config FILE`` on a simulated node: its one line on stderr (exit 2, no output)."""
    done = cli("check", "--config", str(config), "sim:healthy/hgx01")
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
    assert done.stdout == ""
    return one_line(done.stderr)


@pytest.mark.parametrize("value", [
    "[" * 5000 + "]" * 5000,  # arrays in arrays: tomllib recursed until Python stopped it
    "{a = " * 3000 + "1" + "}" * 3000,  # inline tables likewise
    "[" * (MAX_NESTING + 1) + '"gpu01"' + "]" * (MAX_NESTING + 1),  # deep, but not too deep to parse
], ids=["arrays", "inline-tables", "just-past-the-limit"])
def test_a_config_nested_deeper_than_any_setting_is_one_line(tmp_path, value):
    config = tmp_path / "config.toml"
    config.write_text(f"targets = {value}\n")
    line = check_with(config)
    assert line.startswith(f"nvls-tui: config file {config}: ") and f"deeper than {MAX_NESTING}" in line, line


def test_a_nested_identity_list_is_refused_not_read_as_a_file_name(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[ssh]\nidentity = [["~/.ssh/id_ed25519"]]\n')
    line = check_with(config)
    assert line == f"nvls-tui: config file {config}: ssh.identity[] must be a str, not list", line


def test_a_config_over_the_size_cap_is_one_line_naming_the_file_and_the_cap(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("# " + "x" * MAX_BYTES + "\ntimeout = 5\n")
    line = check_with(config)
    assert line == f"nvls-tui: config file {config} is larger than 1 MiB: not a config file", line


def test_a_config_just_under_the_cap_is_read(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("# " + "x" * (MAX_BYTES - 100) + "\nread_only = true\n")
    done = cli("check", "--config", str(config), "sim:healthy/hgx01", "--json")
    assert done.returncode == 0, done.stderr
