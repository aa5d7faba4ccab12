"""docs/contract.md (the project's own copy of the contract) says what the code does (issue 28 item 17).

Compared with the code itself: every finding code the code can emit (each ``Finding("CODE", ...)`` in
nvls_tui, read from the source) is in the registry ``nvls_tui.model.codes.FINDING_CODES``, and the
registry and the doc's finding table name the same codes; every field ``check --json`` prints on six
simulated scenarios, top-level, node-level and inside a node's objects, is named in the doc's
``check --json`` section; every kind ``analyze`` recognises is a row of the analyze table; ``--help`` cites
``docs/contract.md`` (a file in the repository), never a bare ``contract.md``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nvls_tui.analyze.captured import HANDLERS
from nvls_tui.model.codes import FINDING_CODES
from nvls_tui.parsers import detect

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "contract.md"
EXE = Path(sys.executable).with_name("nvls-tui")  # the installed entry point
SCENARIOS = ("seed-incident", "k8s-incident", "fm-in-container", "journal-rotated", "fm-restarters", "mig-pending",
             "clock-step")  # clock-step: nodes with a smoke record
# Objects whose keys are data, not field names: unit names, label keys, a fabric's health words.
DATA_KEYED = {"services", "labels", "health", "repair_record"}


def section(text: str, heading: str) -> str:
    """The doc's text from ``## heading`` to the next ``## ``."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else len(text)]


def first_cells(text: str) -> list[str]:
    """The first cell of each row of every Markdown table in ``text`` (header and separator rows left out)."""
    cells = []
    rows = [line for line in text.splitlines() if line.lstrip().startswith("|")]
    for line in rows:
        cell = line.strip().strip("|").split("|")[0].strip()
        if set(cell) <= set("-: ") or cell in ("code", "KIND", "key", "column"):
            continue
        cells.append(cell)
    return cells


def doc_finding_codes() -> list[str]:
    text = section(DOC.read_text(), "`check --json`")
    table = text[text.index("Finding codes"):]
    return [re.match(r"`([A-Z_]+)`", cell).group(1) for cell in first_cells(table)]


def emitted_codes() -> dict[str, str]:
    """``{code: where}`` for every ``Finding(CODE, ...)`` in the package whose code is a literal, or a
    module-level name bound to one."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "nvls_tui").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                    == "Finding"):
                continue
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "code"), None)
            code = (arg.value if isinstance(arg, ast.Constant) else names.get(arg.id) if isinstance(arg, ast.Name)
                    else None)
            if isinstance(code, str):
                found.setdefault(code, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


@pytest.mark.long  # seconds: handed out first of its tier (tests/conftest.py)
def test_every_code_the_code_emits_is_in_the_registry():
    emitted = emitted_codes()
    assert len(emitted) >= 20, emitted  # the scan finds the codes (a broken scan finds none)
    assert {code: where for code, where in emitted.items() if code not in FINDING_CODES} == {}


def test_the_registry_and_the_docs_finding_table_name_the_same_codes():
    documented = doc_finding_codes()
    assert len(documented) == len(set(documented)), "a code is in the table twice"
    assert [c for c in FINDING_CODES if c not in documented] == []
    assert [c for c in documented if c not in FINDING_CODES] == []


def test_the_shared_contracts_codes_keep_their_names():
    shared = Path("/work/shared/docs/contract.md")
    if not shared.is_file():
        pytest.skip("the shared contract is not on this machine")
    text = shared.read_text()
    table = text[text.index("Finding codes"):text.index("## `analyze --json`")]
    names = [re.match(r"`([A-Z_]+)`", cell).group(1) for cell in first_cells(table)]
    assert [c for c in names if c not in FINDING_CODES] == []


def _keys(value: object, path: str, out: dict[str, set[str]]) -> None:
    """Every key of every object in ``value``, by the path of the object that holds it."""
    if isinstance(value, dict):
        for key, inner in value.items():
            out.setdefault(path, set()).add(key)
            if key not in DATA_KEYED:
                _keys(inner, f"{path}.{key}", out)
    elif isinstance(value, list):
        for inner in value:
            _keys(inner, f"{path}[]", out)


@pytest.fixture(scope="module")
def check_fields() -> dict[str, set[str]]:
    fields: dict[str, set[str]] = {}
    for scenario in SCENARIOS:
        done = subprocess.run([str(EXE), "check", f"sim:{scenario}", "--json"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode in (0, 1), done.stderr
        _keys(json.loads(done.stdout), "", fields)
    return fields


def named(key: str, text: str) -> bool:
    """``key`` appears in ``text`` as a JSON key or a field name (``"key"``, `` `key` ``, `` `x.key` ``,
    `` `key[]` ``), not merely as a word of the prose."""
    return re.search(r'["`.]' + re.escape(key) + r'["`\[.:]', text) is not None


def test_every_field_check_json_prints_is_named_in_the_doc(check_fields):
    text = section(DOC.read_text(), "`check --json`")
    assert check_fields[""] >= {"nodes", "elapsed_s"} and "host" in check_fields[".nodes[]"]
    missing = sorted(f"{path or '(top)'}: {key}" for path, keys in check_fields.items() for key in keys
                     if not named(key, text))
    assert missing == []


def test_every_analyze_kind_is_a_row_of_the_analyze_table():
    text = section(DOC.read_text(), "`analyze --json`")
    rows = " ".join(first_cells(text))
    kinds = set(re.findall(r"`([a-z0-9][a-z0-9-]*)`", rows))  # a KIND, not an option quoted beside it
    detected = {kind for kind, _ in detect._RULES}
    assert detected <= set(HANDLERS), "a kind is detected that analyze cannot parse"
    assert sorted(set(HANDLERS) - kinds) == []
    assert sorted(kinds - set(HANDLERS) - {"unknown"}) == []


@pytest.mark.parametrize("argv", [["--help"], ["check", "--help"], ["analyze", "--help"], ["repair", "--help"],
                                  ["report", "--help"]])
def test_help_cites_the_contract_inside_the_repository(argv):
    done = subprocess.run([str(EXE), *argv], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    bare = re.findall(r"(?<!docs/)contract\.md", done.stdout)
    assert bare == [], done.stdout
    if argv[0] in ("check", "analyze", "repair"):
        assert "docs/contract.md" in done.stdout
