"""One Settings for every subcommand: command line > config file > defaults, the file checked whole.

The config file used to be read by the console alone, so `check` and `repair` ignored its `[ssh]`,
`[slurm]` and `targets`; an unknown top-level key or `[keymap]` id was dropped with a warning, and a
key taken by two bindings (`"fleet.sort" = "q"`) silently disabled one of them.
"""

from __future__ import annotations

import json
import os

import pytest

from nvls_tui.cli import main


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    """``write(text)``: the operator's config file (the XDG default), with no Slurm found by chance."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    path = tmp_path / "xdg" / "nvls-tui" / "config.toml"
    path.parent.mkdir(parents=True)

    def write(text: str):
        path.write_text(text)
        return path

    return write


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_check_polls_the_config_files_targets_when_the_command_line_names_none(config_file, capsys):
    config_file('targets = ["sim:seed-incident/gpu05"]\n')
    assert main(["check", "--json"]) == 1
    assert [n["host"] for n in json.loads(capsys.readouterr().out)["nodes"]] == ["gpu05"]


def test_targets_on_the_command_line_win_over_the_config_files(config_file, capsys):
    config_file('targets = ["sim:seed-incident/gpu05"]\n')
    assert main(["check", "--json", "sim:healthy/hgx01"]) == 0
    assert [n["host"] for n in json.loads(capsys.readouterr().out)["nodes"]] == ["hgx01"]


@pytest.mark.parametrize("command", [["check"], ["repair", "--dry-run"]])
def test_check_and_repair_take_the_ssh_options_of_the_config_file(config_file, tmp_path, capsys, command):
    fifo = tmp_path / "known_hosts"
    os.mkfifo(fifo)
    path = config_file(f'[ssh]\nknown_hosts = "{fifo}"\n')
    assert main([*command, "127.0.0.1:1", "--audit-dir", str(tmp_path / "audit")] if command[0] == "repair"
                else [*command, "127.0.0.1:1"]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"{fifo} is not a regular file (a FIFO)" in line and str(path) in line


@pytest.mark.parametrize("command", [["check"], ["repair", "--dry-run"]])
def test_check_and_repair_take_the_slurm_cluster_of_the_config_file(config_file, tmp_path, capsys, command):
    config_file(f'[slurm]\nconf = "{tmp_path / "no-such-slurm.conf"}"\n')
    assert main([*command, "sim:seed-incident/gpu05", "--audit-dir", str(tmp_path / "audit")]
                if command[0] == "repair" else [*command, "sim:seed-incident/gpu05"]) == 2
    assert "no-such-slurm.conf does not exist" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize(("text", "words"), [
    ("pol_interval = 2\n", "unknown setting 'pol_interval'"),
    ('[keymap]\n"node.nuke" = "x"\n', "unknown binding id 'node.nuke'"),
])
@pytest.mark.parametrize("command", [["check", "sim:healthy/hgx01"], ["console", "sim:healthy/hgx01"]])
def test_an_unknown_setting_or_binding_id_is_a_one_line_error_with_exit_2(config_file, capsys, text, words,
                                                                          command):
    path = config_file(text)
    assert main(command) == 2
    line = one_line(capsys.readouterr().err)
    assert words in line and str(path) in line


def test_a_key_taken_by_two_bindings_is_a_one_line_error_naming_both(config_file, capsys):
    path = config_file('[keymap]\n"fleet.sort" = "q"\n')
    assert main(["console", "sim:healthy/hgx01"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "'q'" in line and "fleet.sort" in line and "app.quit" in line and str(path) in line


def test_help_names_the_value_the_config_file_gives_an_option(config_file, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one line per option, so the file's path is not wrapped
    path = config_file('timeout = 30\n[ssh]\nuser = "ops"\n')
    assert main(["check", "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    timeout = next(line for line in lines if line.lstrip().startswith("--timeout"))
    user = next(line for line in lines if line.lstrip().startswith("-l USER"))
    assert f"(config file {path}: 30.0)" in timeout and f"(config file {path}: ops)" in user


def test_a_repair_still_needs_a_target_on_its_command_line_whatever_the_config_file_names(config_file, tmp_path,
                                                                                         capsys):
    config_file('targets = ["sim:seed-incident/gpu05"]\n')
    assert main(["repair", "--yes", "--audit-dir", str(tmp_path / "audit")]) == 2
    assert one_line(capsys.readouterr().err).startswith("nvls-tui: repair needs a TARGET")
    assert not (tmp_path / "audit").exists()


def test_the_config_files_read_only_refuses_a_repair_that_is_not_a_dry_run(config_file, tmp_path, capsys):
    path = config_file("read_only = true\n")
    assert main(["repair", "sim:seed-incident/gpu05", "--yes", "--audit-dir", str(tmp_path / "audit")]) == 2
    assert f"read_only in config file {path} forbids changing a node" in one_line(capsys.readouterr().err)


def test_a_headless_repair_of_a_frozen_simulated_fleet_runs_on_the_fleets_clock(monkeypatch, tmp_path, capsys):
    # NVLS_TUI_SIM_SPEED=0 used to divide the repair's waits by 0 (an internal error): the speed was
    # read twice, once for the fleet's clock and once to scale the waits. Now the run waits on the clock.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    assert main(["repair", "sim:seed-incident/gpu05", "--yes", "--json", "--audit-dir", str(tmp_path)]) == 0
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert node["result"] == "repaired"


@pytest.mark.parametrize("form", ["--config {}", "--config={}"])
def test_help_names_the_values_of_a_config_file_named_on_the_command_line(tmp_path, capsys, monkeypatch, form):
    monkeypatch.setenv("COLUMNS", "400")
    path = tmp_path / "site.toml"
    path.write_text('[ssh]\njump = "bastion"\n')
    assert main(["repair", *form.format(path).split(), "--help"]) == 0
    jump = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("--jump"))
    assert f"(config file {path}: bastion)" in jump


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The simulator's waits for a hung command, recorded instead of slept: each is the --timeout in force."""
    from nvls_tui.backends import simulated

    seen: list[float] = []

    async def record(seconds: float) -> None:
        seen.append(seconds)

    monkeypatch.setattr(simulated, "wait_out", record)
    return seen


@pytest.mark.parametrize("command", [["check", "--json"], ["repair", "--dry-run", "--json"]])
def test_check_and_repair_wait_out_a_hung_command_for_the_config_files_timeout(config_file, tmp_path, capsys, waits,
                                                                               command):
    config_file("timeout = 2\n")
    audit = ["--audit-dir", str(tmp_path / "audit")] if command[0] == "repair" else []
    # sim:wedged's nvidia-smi hangs: the poll (and the dry run's read of the node) waits out one --timeout.
    assert main([*command, *audit, "sim:wedged/gpu-wedged01"]) == 1
    assert waits == [2.0]
    waits.clear()
    assert main([*command, *audit, "--timeout", "3", "sim:wedged/gpu-wedged01"]) == 1  # the command line wins
    assert waits == [3.0]
    capsys.readouterr()


@pytest.mark.parametrize("command", [["check", "sim:healthy/hgx01"], ["repair", "--dry-run", "sim:healthy/hgx01"]])
def test_a_key_taken_by_two_bindings_is_an_error_for_check_and_repair_too(config_file, tmp_path, capsys, command):
    # The file is checked whole whichever subcommand reads it: a collision is not the console's alone.
    path = config_file('[keymap]\n"fleet.sort" = "q"\n')
    assert main([*command, "--audit-dir", str(tmp_path / "audit")] if command[0] == "repair" else command) == 2
    line = one_line(capsys.readouterr().err)
    assert "'q'" in line and "fleet.sort" in line and "app.quit" in line and str(path) in line
    assert not (tmp_path / "audit").exists()
