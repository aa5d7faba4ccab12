"""The pure cores import no UI, transport or hardware library (architecture.md's one-way layers)."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "nvls_tui"
FORBIDDEN = ("textual", "asyncssh", "pynvml", "psutil")
PURE = ["model", "parsers", "runbook", "diagnosis.py", "assemble.py", "analysis.py", "jsonout.py", "probe.py"]


def _modules(entry: str) -> list[pathlib.Path]:
    path = PACKAGE / entry
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("entry", PURE)
def test_pure_layers_import_no_textual_asyncssh_pynvml_or_psutil(entry):
    modules = [m for m in _modules(entry) if m.exists()]
    assert modules, f"{entry} should exist"
    offenders = {str(m.relative_to(PACKAGE)): sorted(_imports(m) & set(FORBIDDEN)) for m in modules}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_pure_core_really_loads_without_those_libraries(tmp_path):
    """Import the cores in a fresh interpreter where the forbidden modules cannot be imported."""
    import subprocess
    import sys

    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {FORBIDDEN!r}:\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    code = ("import nvls_tui.model, nvls_tui.diagnosis, nvls_tui.assemble, nvls_tui.analysis, "
            "nvls_tui.jsonout, nvls_tui.probe; print('ok')")
    env = {"PYTHONPATH": f"{tmp_path}:{PACKAGE.parent}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr
