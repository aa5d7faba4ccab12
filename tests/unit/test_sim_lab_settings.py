"""Issue 36 item 4: ``sim`` and ``lab`` take the one Settings too, as every other subcommand does.

They were the two commands handed argparse's namespace itself (``module.run(args)``), so what they read
was not in ``Settings`` and a caller (a test, a script) could not build them as it builds the others.
"""

from __future__ import annotations

from nvls_tui.cli import build_parser, build_settings, main
from nvls_tui.settings import LabCommand, SimCommand


def _settings(*argv: str):
    return build_settings(build_parser().parse_args(list(argv)))


def test_lab_up_is_read_into_settings_with_its_defaults_and_what_was_given():
    settings = _settings("lab", "up", "--nodes", "gpu[01-02]", "--slurm", "--dir", "/tmp/lab-x")
    assert settings.command == "lab" and settings.sim is None
    assert settings.lab == LabCommand(action="up", dir="/tmp/lab-x", scenario="seed-incident", nodes="gpu[01-02]",
                                      slurm=True)
    assert _settings("lab", "status").lab == LabCommand(action="status")


def test_sim_shims_is_read_into_settings():
    settings = _settings("sim", "shims", "/tmp/shims-x", "--node", "gpu05", "--static", "--speed", "4")
    assert settings.lab is None
    assert settings.sim == SimCommand(action="shims", dir="/tmp/shims-x", scenario="seed-incident", node="gpu05",
                                      static=True, speed=4.0)


def test_lab_status_runs_from_settings_and_says_there_is_no_lab(tmp_path, capsys):
    assert main(["lab", "status", "--dir", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out == f"no lab in {tmp_path / 'none'}\n"
