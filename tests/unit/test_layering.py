"""The direction of imports (docs/design.md, "Layers"), checked by a tool: import-linter's contracts in
pyproject.toml. One test runs them on the package; the others plant wrong-way imports in a copy of
the package and prove the contracts catch each: each step of the core's order, each pair of siblings that
must not import each other, and the console's modules from a pure core.

Every plant that is a direct import against a contract goes into the copy at once and lint-imports runs
once (each run builds the whole import graph: about 0.3 s of CPU, 33 runs before); each test then finds its
own import named under its own contract's heading. A direct import from a lower module to a higher one is an
illegal chain of its own, whatever else is planted, so it is named exactly where it alone would be."""

from __future__ import annotations

import re
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


Plant = tuple[str, str, bool]
"""(importer, imported, type_only): ``import IMPORTED`` added at the end of module ``importer`` (under
``if TYPE_CHECKING:`` when ``type_only``: an import for annotations only counts too)."""


def lint_with(copy: Path, *plants: Plant) -> subprocess.CompletedProcess:
    """lint-imports on the copy with ``plants`` added, each at the end of its module; taken out again after."""
    before: dict[Path, str] = {}
    for importer, imported, type_only in plants:
        path = copy / (importer.replace(".", "/") + ".py")
        text = path.read_text()
        before.setdefault(path, text)
        planted = f"import {imported}  # noqa: E402 - the wrong way\n"
        if type_only:
            planted = f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    {planted}"
        path.write_text(text + "\n" + planted)
    try:
        return lint(copy)
    finally:
        for path, text in before.items():
            path.write_text(text)


def broken_under(stdout: str, contract: str) -> str:
    """What lint-imports says under ``contract``'s heading among the broken contracts ("" if it is not broken)."""
    summary, _, broken = stdout.partition("\nBroken contracts\n")
    listed = summary.partition("\nAnalyzed ")[2].split("\n", 2)[-1]  # after its line and the dashes under it
    names = [name.strip() for name, status in re.findall(r"(.+?) (BROKEN|KEPT)\n", listed, re.S)
             if status == "BROKEN"]
    starts = sorted((at, name) for name in names if (at := broken.find(f"{name}\n-")) >= 0)
    for (at, name), (end, _) in zip(starts, [*starts[1:], (len(broken), "")], strict=True):
        if name == contract:
            return broken[at:end]
    return ""


CONSOLE_FROM_A_PARSER: Plant = ("nvls_tui.parsers.ps", "nvls_tui.console.screens.node", False)
PURE_CORES = "the pure cores import no UI, transport, hardware library or console module"


def test_a_console_module_imported_by_a_parser_breaks_a_contract(planted):
    assert planted.returncode == 1
    assert "nvls_tui.parsers.ps -> nvls_tui.console.screens.node" in broken_under(planted.stdout, PURE_CORES)


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
def test_an_import_against_the_core_order_breaks_the_layers_contract(planted, importer, imported):
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert f"{LAYERS} BROKEN" in planted.stdout
    assert f"{importer} -> {imported}" in broken_under(planted.stdout, LAYERS)


POLL_TYPED_ON_A_TRANSPORT: Plant = ("nvls_tui.poll.once", "nvls_tui.backends.base", True)


def test_the_poll_names_no_transport_and_the_transports_read_no_settings(copy, planted):
    """The two imports this order was built by removing: ``poll_once`` typed on ``backends.base.Backend``
    (for annotations only), and the command line's targets read inside ``backends`` (``Settings``, for
    annotations only; now ``nvls_tui/targets.py``, above the transports). The second alone: it must break
    that one contract and no other."""
    assert planted.returncode == 1
    assert "nvls_tui.poll.once -> nvls_tui.backends.base" in broken_under(planted.stdout, LAYERS)
    done = lint_with(copy, ("nvls_tui.backends.nodesets", "nvls_tui.settings", True))
    assert done.returncode == 1
    assert "Contracts: 7 kept, 1 broken." in done.stdout
    assert "nvls_tui.backends.nodesets -> nvls_tui.settings" in done.stdout
    assert lint(copy).returncode == 0  # the plants are gone again (these and the shared run's): the copy is clean


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
def test_an_import_against_the_console_wing_order_breaks_its_contract(planted, importer, imported, type_only):
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert f"{WING} BROKEN" in planted.stdout
    assert f"{importer} -> {imported}" in broken_under(planted.stdout, WING)


STANDIN_IMPORTS_THE_MODEL: Plant = ("nvls_tui.lab.kube_standin.store", "nvls_tui.model.enums", False)
STANDIN_ALONE = "the Kubernetes stand-in imports nothing of nvls-tui (tests and the lab start it \nalone)"


def test_the_kubernetes_stand_in_imports_nothing_of_nvls_tui(planted):
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert "the Kubernetes stand-in imports nothing of nvls-tui" in planted.stdout
    assert "nvls_tui.lab.kube_standin.store -> nvls_tui.model.enums" in broken_under(planted.stdout, STANDIN_ALONE)


@pytest.fixture(scope="module")
def planted(copy) -> subprocess.CompletedProcess:
    """One lint-imports run on the copy with every direct wrong-way import of this module's tests planted."""
    return lint_with(copy, CONSOLE_FROM_A_PARSER, *((i, m, False) for i, m in UPWARD + SIBLINGS),
                     POLL_TYPED_ON_A_TRANSPORT, *WING_UPWARD, STANDIN_IMPORTS_THE_MODEL)
