"""The corpus of the field (tests/corpus/): every real public output reads as an operator should be told.

Each file under tests/corpus/<kind>/ is a real output someone posted in public (its ``# source:`` line says
where), with its expected reading in tests/corpus/expected.toml, written from the domain before the code
was run: the kind(s) the text is, the finding codes that must be present, the highest severity, and the
exit status of ``nvls-tui analyze``. The files main reads wrongly today are listed, with what main says, in
tests/corpus/KNOWN_MISREADS.md; this test holds both lists exactly:

- every file not listed there reads as expected;
- every file listed there still reads exactly as recorded, and not as expected. When a fix lands, this
  test fails on that line: delete it (the file now reads as expected), or record the new misreading.
"""

from __future__ import annotations

import io
import json
import pathlib
import re
import tomllib
from contextlib import redirect_stdout
from dataclasses import dataclass

import pytest

from nvls_tui.cli import main

CORPUS = pathlib.Path(__file__).parents[1] / "corpus"
EXPECTED = tomllib.loads((CORPUS / "expected.toml").read_text())
SEVERITIES = ("none", "info", "warning", "error")


@dataclass(frozen=True)
class Reading:
    """What ``nvls-tui analyze --json FILE`` says about one file, in the terms the expectations use."""

    kinds: tuple[str, ...]  # the entry's kind, then its parts' kinds (a paste read line by line)
    codes: tuple[str, ...]  # sorted, each once
    severity: str  # the highest finding severity, "none" without findings
    exit: int

    def record(self) -> str:
        """The one-line form KNOWN_MISREADS.md keeps."""
        return f"kind={'+'.join(self.kinds)}; codes={','.join(self.codes) or '-'}; severity={self.severity}; exit={self.exit}"


def read(path: pathlib.Path) -> Reading:
    """Run ``nvls-tui analyze --json`` on one file: the real parsers and the real exit rule."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["analyze", "--json", str(path)])
    (entry,) = json.loads(out.getvalue())
    kinds = [entry["kind"]] + [p["kind"] for p in entry.get("parts") or [] if p.get("kind") != entry["kind"]]
    findings = list(entry["findings"]) + [f for p in entry.get("parts") or [] for f in p.get("findings") or []]
    codes = tuple(sorted({f["code"] for f in findings}))
    severity = max((f["severity"] for f in findings), key=SEVERITIES.index, default="none")
    return Reading(tuple(dict.fromkeys(kinds)), codes, severity, code)


def meets(reading: Reading, expected: dict) -> list[str]:
    """How the reading falls short of the expectation (empty: it reads as expected)."""
    short = []
    if missing := [k for k in expected["kinds"] if k not in reading.kinds]:
        short.append(f"kind {'+'.join(reading.kinds)}, expected {', '.join(missing)}")
    if missing := [c for c in expected["codes"] if c not in reading.codes]:
        short.append(f"no {', '.join(missing)} (codes: {', '.join(reading.codes) or 'none'})")
    if reading.severity != expected["severity"]:
        short.append(f"severity {reading.severity}, expected {expected['severity']}")
    if reading.exit != expected["exit"]:
        short.append(f"exit {reading.exit}, expected {expected['exit']}")
    return short


def known_misreads() -> dict[str, str]:
    """KNOWN_MISREADS.md's table: file -> what main says today (its `kind=...; exit=N` cell)."""
    rows = {}
    for line in (CORPUS / "KNOWN_MISREADS.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and (m := re.fullmatch(r"`([^`]+\.txt)`", cells[0])):
            today = re.fullmatch(r"`([^`]+)`", cells[2])
            assert today, f"KNOWN_MISREADS.md: {m.group(1)}: the 'main today' cell must be one `kind=...` code span"
            assert m.group(1) not in rows, f"KNOWN_MISREADS.md lists {m.group(1)} twice"
            rows[m.group(1)] = today.group(1)
    return rows


MISREADS = known_misreads()
FILES = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.txt"))


def test_every_file_has_an_expectation_and_every_expectation_a_file():
    assert FILES, "the corpus is empty"
    assert sorted(EXPECTED) == FILES
    assert set(MISREADS) <= set(FILES), f"KNOWN_MISREADS.md names files that do not exist: {set(MISREADS) - set(FILES)}"


@pytest.mark.parametrize("name", FILES)
def test_provenance_header(name):
    """Each file says where it was posted and what it is, then `# ---`, then the output as posted."""
    lines = (CORPUS / name).read_text().splitlines()
    # Public outputs name where they were posted; a few were captured on this project's own device machine.
    assert lines[0].startswith(("# source: http", "# source: captured on ")), name
    assert lines[1].startswith("# what: ") and len(lines[1]) > len("# what: "), name
    assert "# ---" in lines[:6], name
    expected = EXPECTED[name]
    assert expected["severity"] in SEVERITIES and expected["exit"] in (0, 1) and isinstance(expected["benign"], bool)


@pytest.mark.parametrize("name", FILES)
def test_reads_as_expected_or_as_recorded(name):
    reading = read(CORPUS / name)
    short = meets(reading, EXPECTED[name])
    if name not in MISREADS:
        assert not short, f"{name} misreads: {'; '.join(short)} (today: `{reading.record()}`)"
        return
    assert short, (f"{name} now reads as expected: delete its line from tests/corpus/KNOWN_MISREADS.md")
    assert reading.record() == MISREADS[name], (
        f"{name} misreads differently than recorded: today `{reading.record()}`, recorded `{MISREADS[name]}`; "
        "update its line in tests/corpus/KNOWN_MISREADS.md")


def test_docs_table_counts_the_corpus():
    """docs/corpus.md's coverage table has one row per kind folder and its file count."""
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "corpus.md").read_text()
    folders: dict[str, int] = {}
    for name in FILES:
        folders[name.split("/")[0]] = folders.get(name.split("/")[0], 0) + 1
    for folder, count in folders.items():
        assert re.search(rf"^\| `{re.escape(folder)}/` \| {count} \|", doc, re.M), f"docs/corpus.md: row for {folder}/ ({count} files)"
    assert re.search(rf"^\| \*\*all\*\* \| \*\*{len(FILES)}\*\* \|", doc, re.M), "docs/corpus.md: the total row"
