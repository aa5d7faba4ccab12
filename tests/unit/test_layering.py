"""The direction of imports (docs/design.md, "Layers"), checked by a tool: import-linter's contracts in
pyproject.toml. One test runs them on the package; the others plant one wrong-way import in a copy of
the package and prove the contracts catch it: each step of the core's order, each pair of siblings that
must not import each other, and the console's modules from a pure core."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]
LAYERS = "the core's layers: each imports only those below it"


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})


def test_every_import_contract_of_pyproject_holds():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{LAYERS} KEPT" in done.stdout
    assert "Contracts: 8 kept, 0 broken." in done.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """One copy of the package and its contracts; each test plants one import in it and takes it out again."""
    root = tmp_path_factory.mktemp("layering")
    shutil.copytree(ROOT / "nvls_tui", root / "nvls_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def lint_with(copy: Path, importer: str, imported: str, type_only: bool = False) -> subprocess.CompletedProcess:
    """lint-imports on the copy with ``import IMPORTED`` added at the end of module ``importer`` (under
    ``if TYPE_CHECKING:`` when ``type_only``: an import for annotations only counts too)."""
    path = copy / (importer.replace(".", "/") + ".py")
    before = path.read_text()
    planted = f"import {imported}  # noqa: E402 - the wrong way\n"
    if type_only:
        planted = f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    {planted}"
    path.write_text(before + "\n" + planted)
    try:
        return lint(copy)
    finally:
        path.write_text(before)


def test_a_console_module_imported_by_a_parser_breaks_a_contract(copy):
    done = lint_with(copy, "nvls_tui.parsers.ps", "nvls_tui.console.screens.node")
    assert done.returncode == 1
    assert "nvls_tui.parsers.ps -> nvls_tui.console.screens.node" in done.stdout


# Each layer of the order importing the layer just above it (every sibling of a split layer once), and
# siblings importing each other: one planted import each, which the layers contract must name.
UPWARD = [
    ("nvls_tui.views.deadlines", "nvls_tui.console.widgets.cells"),
    ("nvls_tui.report.text", "nvls_tui.console.widgets.cells"),
    ("nvls_tui.runbook.ledger", "nvls_tui.views.deadlines"),
    ("nvls_tui.runbook.outcome", "nvls_tui.report.text"),
    ("nvls_tui.audit.log", "nvls_tui.runbook.events"),
    ("nvls_tui.scheduler.slurm", "nvls_tui.audit.log"),
    ("nvls_tui.backends.nodesets", "nvls_tui.scheduler.slurm"),
    ("nvls_tui.sim.clock", "nvls_tui.backends.base"),
    ("nvls_tui.analyze.captured", "nvls_tui.backends.base"),
    ("nvls_tui.poll.evidence", "nvls_tui.sim.clock"),
    ("nvls_tui.poll.evidence", "nvls_tui.analyze.captured"),
    ("nvls_tui.diagnosis.story", "nvls_tui.poll.probe"),
    ("nvls_tui.parsers.ps", "nvls_tui.diagnosis.story"),
    ("nvls_tui.model.enums", "nvls_tui.parsers.base"),
    ("nvls_tui.textsafe", "nvls_tui.model.enums"),
    ("nvls_tui.words", "nvls_tui.model.enums"),
    ("nvls_tui.paths", "nvls_tui.model.enums"),
    ("nvls_tui.localfiles", "nvls_tui.model.enums"),
]
SIBLINGS = [
    ("nvls_tui.report.text", "nvls_tui.views.deadlines"),
    ("nvls_tui.views.deadlines", "nvls_tui.report.text"),
    ("nvls_tui.sim.clock", "nvls_tui.analyze.captured"),
    ("nvls_tui.analyze.captured", "nvls_tui.sim.clock"),
    ("nvls_tui.words", "nvls_tui.textsafe"),
    ("nvls_tui.localfiles", "nvls_tui.paths"),
]


@pytest.mark.parametrize(("importer", "imported"), UPWARD + SIBLINGS, ids=lambda m: m.removeprefix("nvls_tui."))
def test_an_import_against_the_core_order_breaks_the_layers_contract(copy, importer, imported):
    done = lint_with(copy, importer, imported)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{LAYERS} BROKEN" in done.stdout
    assert f"{importer} -> {imported}" in done.stdout


def test_the_poll_names_no_transport_and_the_transports_read_no_settings(copy):
    """The two imports this order was built by removing: ``poll_once`` typed on ``backends.base.Backend``
    (for annotations only), and the command line's targets read inside ``backends`` (``Settings``, for
    annotations only; now ``nvls_tui/targets.py``, above the transports)."""
    done = lint_with(copy, "nvls_tui.poll.once", "nvls_tui.backends.base", type_only=True)
    assert done.returncode == 1
    assert f"{LAYERS} BROKEN" in done.stdout
    assert "nvls_tui.poll.once -> nvls_tui.backends.base" in done.stdout
    done = lint_with(copy, "nvls_tui.backends.nodesets", "nvls_tui.settings", type_only=True)
    assert done.returncode == 1
    assert "Contracts: 7 kept, 1 broken." in done.stdout
    assert "nvls_tui.backends.nodesets -> nvls_tui.settings" in done.stdout
    assert lint(copy).returncode == 0  # the plants are gone again: the copy is clean


WING = "the console wing's layers: the App, the screens, the console's parts, the \nwidgets"
# The console wing's own order (issue 36 item 4): the circle app -> screens -> commands -> app is gone, and
# a planted import that would bring it back (for annotations only, too) is named.
WING_UPWARD = [
    ("nvls_tui.console.screens.node", "nvls_tui.console.app", False),
    ("nvls_tui.console.commands", "nvls_tui.console.app", True),
    ("nvls_tui.console.commands", "nvls_tui.console.screens.help", False),
    ("nvls_tui.console.widgets.cells", "nvls_tui.console.screens.help", False),
    ("nvls_tui.console.bindings", "nvls_tui.console.widgets.cells", False),
]


@pytest.mark.parametrize(("importer", "imported", "type_only"), WING_UPWARD,
                         ids=lambda m: m.removeprefix("nvls_tui.") if isinstance(m, str) else str(m))
def test_an_import_against_the_console_wing_order_breaks_its_contract(copy, importer, imported, type_only):
    done = lint_with(copy, importer, imported, type_only=type_only)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{WING} BROKEN" in done.stdout
    assert f"{importer} -> {imported}" in done.stdout


def test_the_kubernetes_stand_in_imports_nothing_of_nvls_tui(copy):
    done = lint_with(copy, "nvls_tui.lab.kube_standin.store", "nvls_tui.model.enums")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the Kubernetes stand-in imports nothing of nvls-tui" in done.stdout
    assert "nvls_tui.lab.kube_standin.store -> nvls_tui.model.enums" in done.stdout
