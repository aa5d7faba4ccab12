"""The direction of imports (docs/design.md), checked by a tool: import-linter's contracts in
pyproject.toml. One test runs them on the package; one proves they catch a wrong-way import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})


def test_every_import_contract_of_pyproject_holds():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 5 kept, 0 broken." in done.stdout


def test_a_wrong_way_import_breaks_a_contract(tmp_path):
    shutil.copytree(ROOT / "nvls_tui", tmp_path / "nvls_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    parser = tmp_path / "nvls_tui" / "parsers" / "ps.py"
    parser.write_text(parser.read_text() + "\nfrom nvls_tui.screens import node  # noqa: E402 - the wrong way\n")
    done = lint(tmp_path)
    assert done.returncode == 1
    assert "nvls_tui.parsers.ps -> nvls_tui.screens.node" in done.stdout
