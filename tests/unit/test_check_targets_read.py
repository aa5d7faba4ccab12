"""Issue 38 item 1: an empty target list checked the simulated demo fleet.

``HOSTS=""; nvls-tui check $HOSTS --json`` polled the 8 demo nodes and exited 1 with gpu05 and gpu06
broken, and nothing at the JSON's top level said the nodes were simulated: a cron job whose host list came
out empty paged someone about fake nodes. ``check`` now takes the demo only with ``--demo`` (as ``repair``
already did): no target is a usage error, one line on stderr, exit 2, nothing polled (``--watch`` too, and a
hosts file that names none). The config file's ``targets`` still count. ``check --json`` says at the top which
targets it read, from where, and whether any node is simulated.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nvls_tui.cli import main

REPO = Path(__file__).parents[2]


@pytest.fixture
def no_config(tmp_path, monkeypatch):
    """No config file of the operator's (XDG points at an empty folder), no Slurm found by chance."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    return tmp_path / "xdg"


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("argv", [["check", "--json"], ["check"]])
def test_check_with_no_target_is_a_usage_error_and_polls_nothing(no_config, capsys, argv):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no table, no JSON of simulated nodes
    line = _one_line(err)
    assert "TARGET" in line and "--demo" in line
    assert "gpu05" not in line


def test_an_empty_hosts_file_is_no_target_either(no_config, tmp_path, capsys):
    hosts = tmp_path / "hosts"
    hosts.write_text("# the inventory query printed nothing\n")
    assert main(["check", "--json", "--hosts-file", str(hosts)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert str(hosts) in _one_line(err)


def test_check_watch_with_no_target_ends_at_once_with_a_usage_error(no_config):
    proc = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", "check", "--watch", "0.2", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=REPO,
                            env={**os.environ, "XDG_CONFIG_HOME": str(no_config)})
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # it went on polling something: stop it, then say what it printed
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 2, (out.decode()[:500], err.decode()[-500:])
    assert out == b""
    assert "--demo" in _one_line(err.decode())


def test_demo_is_checked_when_asked_for_and_the_json_says_it_is_simulated(no_config, capsys):
    assert main(["check", "--demo", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert next(iter(doc)) == "targets"  # at the top, before the nodes
    assert doc["targets"] == {"read": ["sim:seed-incident"], "from": ["--demo"], "simulated": True}
    assert len(doc["nodes"]) == 8


def test_the_config_files_targets_still_count_and_the_json_names_the_file(no_config, capsys):
    path = no_config / "nvls-tui" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('targets = ["sim:healthy/hgx01"]\n')
    assert main(["check", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["targets"] == {"read": ["sim:healthy/hgx01"], "from": [f"config file {path}"], "simulated": True}


def test_a_real_target_is_not_called_simulated(no_config, tmp_path, capsys):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1:1\n")
    # Nothing listens on port 1: that node is unreachable, and the JSON still comes.
    main(["check", "--json", "--timeout", "2", "sim:healthy/hgx01", "--hosts-file", str(hosts)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["targets"]["read"] == ["sim:healthy/hgx01", "127.0.0.1:1"]
    assert doc["targets"]["from"] == ["command line", f"hosts file {hosts}"]
    assert doc["targets"]["simulated"] is True  # one of them is
    assert main(["check", "--json", "--timeout", "2", "127.0.0.1:1"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["targets"] == {"read": ["127.0.0.1:1"], "from": ["command line"], "simulated": False}


def test_each_watch_round_says_which_targets_it_read(no_config):
    proc = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", "check", "--watch", "0.2", "--json",
                             "sim:healthy/hgx01"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=REPO,
                            env={**os.environ, "XDG_CONFIG_HOME": str(no_config)})
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    for line in (first, second):
        doc = json.loads(line)
        assert doc["targets"] == {"read": ["sim:healthy/hgx01"], "from": ["command line"], "simulated": True}


def test_repair_with_a_hosts_file_that_names_none_repairs_no_demo_node(no_config, tmp_path, capsys):
    # repair refused an empty command line already; a hosts file that came out empty went on to the demo.
    hosts = tmp_path / "hosts"
    hosts.write_text("")
    assert main(["repair", "--hosts-file", str(hosts), "--dry-run", "--json", "--audit-dir", str(tmp_path / "a")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and str(hosts) in _one_line(err)
