"""The README is a front door (issue 38 item 11): short, with a screenshot of the console as it is, the two
commands, a key table of real keys, and links that lead somewhere.

The screenshot is made by ``scripts/screenshot.py`` (Textual's own ``export_screenshot`` in a Pilot run on the
demo fleet); it is compared with a fresh rendering, so a change to the console that changes what the demo
shows fails here until the screenshot is made again.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path

import pytest

from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.fleet import FleetScreen
from nvls_tui.console.screens.logs import LogsScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.screens.runbook import RunbookScreen

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SHOT = ROOT / "docs" / "img" / "console.svg"

IMAGE = re.compile(r"!\[[^\]]+\]\(([^)]+)\)")
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)#]+)(#[^)]*)?\)")
TICKED = re.compile(r"`([^`]+)`")

# The README's words for where a key works, and the classes whose BINDINGS hold that place's keys.
WHERE = {"anywhere": NvlsApp, "fleet": FleetScreen, "node": NodeScreen, "repair": RunbookScreen, "logs": LogsScreen}
# The README writes a few keys as they are printed on the keyboard; the bindings use Textual's key names.
KEY_NAMES = {"?": "question_mark", "/": "slash", ":": "colon", "Esc": "escape", "Enter": "enter"}


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else len(text)]


def bound_keys(cls: type) -> set[str]:
    """Every key a screen (or the app) binds, as Textual names it."""
    keys: set[str] = set()
    for binding in cls.BINDINGS:
        key = binding.key if hasattr(binding, "key") else binding[0]
        keys.update(k.strip() for k in key.split(","))
    return keys


def key_table() -> list[tuple[list[str], list[str], str]]:
    """``(keys, places, does)`` for each row of the README's key table."""
    rows = []
    for line in section(readme(), "Keys").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] == "key" or set(cells[0]) <= set("-: "):
            continue
        keys = [k for tick in TICKED.findall(cells[0]) for k in tick.split()]
        rows.append((keys, [p.strip() for p in cells[1].split(",")], cells[2]))
    return rows


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_short_and_its_lines_fit():
    lines = readme().splitlines()
    assert len(lines) < 150
    assert [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 120] == []


def test_the_two_commands_are_there_as_they_are():
    text = readme()
    assert "make demo    # the console on the simulated demo fleet (gpu[01-08]; gpu05 and gpu06 broken)" in text
    assert "make test    # installs what the tests need" in text and "runs the whole suite" in text
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:.*\n\t\.venv/bin/nvls-tui --demo$", makefile, re.M)
    assert re.search(r"^test:.*\n\tbash scripts/test\.sh$", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_shows_the_screenshot_and_it_was_rendered_from_the_console():
    assert IMAGE.findall(readme()) == ["docs/img/console.svg"]
    svg = SHOT.read_text(encoding="utf-8")
    assert svg.startswith('<svg class="rich-terminal"') and "Generated with Rich" in svg  # Textual's own export
    words = svg.replace("&#160;", " ")
    for seen in ("nvls-tui", "SIMULATED FLEET", "FM killed 5 days ago", "gpu05: findings", "Quit"):
        assert seen in words, seen


def test_the_screenshot_is_the_console_as_it_is_now(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)  # as the script renders it: in colour
    spec = importlib.util.spec_from_file_location("screenshot", ROOT / "scripts" / "screenshot.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    fresh = tmp_path / "console.svg"
    asyncio.run(script.render(fresh))
    assert fresh.read_text(encoding="utf-8") == SHOT.read_text(encoding="utf-8"), \
        "the console changed: make the README's screenshot again with .venv/bin/python scripts/screenshot.py"


def test_every_key_in_the_readme_table_is_a_real_binding_where_it_says():
    rows = key_table()
    assert len(rows) >= 10
    wrong = []
    for keys, places, does in rows:
        assert keys and does, (keys, places, does)
        for place in places:
            bound = bound_keys(WHERE[place])
            wrong += [f"{key} on {place}" for key in keys if KEY_NAMES.get(key, key) not in bound]
    assert wrong == []


@pytest.mark.parametrize("key,place", [("Enter", "fleet"), ("space", "fleet"), ("r", "fleet"), ("n", "fleet"),
                                       ("g", "fleet"), ("l", "node"), ("e", "repair"), ("Esc", "anywhere"),
                                       ("q", "anywhere")])
def test_the_walkthroughs_keys_are_in_the_table(key, place):
    assert any(key in keys and place in places for keys, places, _ in key_table())


def test_every_link_in_the_readme_leads_to_a_file_and_heading_that_exist():
    broken = []
    for target, anchor in LINK.findall(readme()):
        if "://" in target:
            continue
        path = ROOT / target
        if not path.exists():
            broken.append(target)
        elif anchor:
            headings = [line.lstrip("#").strip() for line in path.read_text(encoding="utf-8").splitlines()
                        if line.startswith("#")]
            if anchor[1:] not in {github_anchor(h) for h in headings}:
                broken.append(target + anchor)
    assert broken == []


def test_the_readme_links_every_doc():
    docs = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} - {"docs/textual-key-order.md"}
    linked = {target for target, _ in LINK.findall(readme())}
    assert sorted(docs - linked) == []


def test_the_headless_synopsis_and_examples_use_options_the_commands_have():
    import argparse

    from nvls_tui.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    text = section(readme(), "Headless commands")
    lines = [line for line in text.splitlines() if line.startswith("nvls-tui ")]
    assert {line.split()[1] for line in lines} == {"check", "analyze", "repair", "autopilot", "report"}
    unknown = []
    for line in lines:
        command = line.split()[1]
        known = set(commands[command]._option_string_actions)
        unknown += [f"{command} {opt}" for opt in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", line.split("#")[0])
                    if opt not in known]
    assert unknown == []


def test_the_headless_examples_run_as_typed_after_make_demo():
    """The README's walkthrough redone by hand from a fresh clone: after `make demo`, `nvls-tui check ...` as the
    examples have it said `bash: nvls-tui: command not found` (the README had said `.venv/bin/nvls-tui` is the
    command, then typed it bare), and an unquoted `gpu[01-16]` is a shell glob (a file named gpu1 in the directory
    turns it into that name). The section says how the bare name is reached, and every node set is quoted."""
    text = section(readme(), "Headless commands")
    assert "source .venv/bin/activate" in text
    examples = re.findall(r"```sh\n(.*?)```", text, re.S)
    assert examples
    for line in "".join(examples).splitlines():
        words = line.split("#")[0].split()
        assert not [w for w in words if "[" in w and not w.startswith(("'", '"'))], line
