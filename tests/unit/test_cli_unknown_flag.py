"""A flag a subcommand does not know points to that subcommand's help, as a bad value of a known flag does.

Found by a new operator's pass (tenth session): ``nvls-tui check --jsn`` said ``(see nvls-tui --help)``, the top
help, which does not list check's flags; ``autopilot --mode x`` already said ``(see nvls-tui autopilot --help)``.
"""

from __future__ import annotations

import pytest

from nvls_tui.cli import main


@pytest.mark.parametrize(("argv", "prog"), [
    (["check", "--jsn", "sim:seed-incident"], "nvls-tui check"),
    (["autopilot", "--roundz", "2", "sim:seed-incident"], "nvls-tui autopilot"),
    (["sim", "list", "--all"], "nvls-tui sim list"),
])
def test_an_unknown_flag_points_to_its_subcommands_help(capsys, argv, prog):
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("nvls-tui: unrecognized arguments: ") and line.endswith(f"(see {prog} --help)"), line
