"""A key file that cannot be used is named in one line before any connection (bad input, never a riddle).

asyncssh's own word for a missing ``-i`` file was ``gpu01: No such file or directory`` on every node: it named
the node, not the file.
"""

from __future__ import annotations

import os

import pytest

from nvls_tui.cli import main


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo"])
def test_a_key_that_is_no_file_is_refused_naming_it(tmp_path, capsys, kind):
    key = tmp_path / "id_ed25519"
    if kind == "directory":
        key.mkdir()
    elif kind == "fifo":
        os.mkfifo(key)
    assert main(["check", "--json", "-i", str(key), "127.0.0.1:1"]) == 2
    captured = capsys.readouterr()
    line = _one_line(captured.err)
    assert "--identity" in line and str(key) in line and captured.out == ""


def test_a_key_named_for_a_simulated_fleet_is_not_read(tmp_path, capsys):
    # The demo and sim: fleets connect nowhere: a config's key that is missing here does not stop them.
    assert main(["check", "--json", "-i", str(tmp_path / "absent"), "sim:healthy/hgx01"]) == 0
