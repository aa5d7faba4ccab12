"""Text from a node is data: markup, escapes, HTML and bidi controls in process names, kernel lines and
record files reach no terminal, widget, JSON or report as anything but plain characters.

The hostile node is ``sim:hostile/gpu-evil01``: its users' processes, an Xid line and the record file
carry ``HOSTILE_TEXT``. It goes through the real probe path (the tools' outputs), so the boundary
(``CommandResult``) and every renderer are tested, not a hand-built state.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from nvls_tui.audit.log import AuditLog
from nvls_tui.backends.base import CommandResult
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.report.markdown import report_from_file
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.textsafe import clean, markdown_code, markdown_text, one_line
from tests.pilot.test_console_repair import wait_until
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, open_node_screen

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b\ufeff\u2028\u2029]")
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=0.5, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01)


def test_clean_removes_whole_escape_sequences_and_keeps_tabs_and_newlines():
    assert clean("a\x1b]0;title\x07b\x1b[2J\x1b[31mc\x1b[0m") == "abc"
    assert clean("x\x9b31my\x9d0;t\x07z") == "xyz"  # 8-bit CSI and OSC
    assert clean("col1\tcol2\nline2\r\x00\x7f") == "col1\tcol2\nline2"
    assert clean("\u202eevil\u202c") == "evil"
    assert clean("plain [/x] <b>") == "plain [/x] <b>"  # markup is not clean's business: renderers show it plain
    assert one_line("a\n\tb", limit=3) == "a …"


def test_markdown_escapes_node_text_so_it_renders_as_written():
    assert markdown_text("<img src=x> *b* [l](u) http://x") == r"&lt;img src=x&gt; \*b\* \[l\](u) http\://x"
    assert markdown_code("a `b` c") == "``a `b` c``"


def test_a_command_result_is_cleaned_at_the_boundary():
    result = CommandResult(("x",), 0, "ok\x1b[2J\x1b]0;t\x07", "err\x1b[31m")
    assert (result.stdout, result.stderr) == ("ok", "err")


def test_plain_check_shows_every_node_and_no_control_sequence_even_when_piped(capsys):
    code = main(["check", "sim:hostile"])
    out = capsys.readouterr().out
    assert code == 1
    assert "gpu-evil01" in out and "gpu-ok01" in out  # one hostile node hides no other
    assert "[@click=app.quit]click me[/]" in out and "[bold red]PWNED[/]" in out  # shown, not interpreted
    assert not RAW.search(out)


def test_check_json_of_the_hostile_node_is_valid_and_carries_no_control_character(capsys):
    code = main(["check", "sim:hostile", "--json"])
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert code == 1 and [n["host"] for n in doc["nodes"]] == ["gpu-evil01", "gpu-ok01"]
    assert "\\u001b" not in out and "\\u0007" not in out
    evil = doc["nodes"][0]
    assert any("[/x]" in h["command"] for h in evil["holders"])


async def test_the_console_shows_hostile_names_as_plain_text_on_the_node_screen_and_in_toasts():
    fleet = load_fleet("sim:hostile", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await open_node_screen(app, pilot, "gpu-evil01")
        screen = app.screen
        await pilot.pause()
        table = screen.query_one("#holders")
        # The command column by its label (a devices column follows it).
        command = next(k for k, c in table.columns.items() if str(c.label) == "command")
        commands = [table.get_cell(key, command) for key in [r.value for r in table.rows]]
        assert all(isinstance(c, Text) for c in commands)
        hostile = [c for c in commands if "[@click=app.quit]" in c.plain]
        assert hostile and all(not span.style or "@click" not in str(span.style) for c in hostile for span in c.spans)
        kernel = screen.query_one("#kernel")
        lines = [kernel.get_cell(r.value, list(kernel.columns)[-1]).plain for r in kernel.rows]
        assert any("name=x [/x]" in line for line in lines)
        # Select the hostile holders and SIGTERM them: the confirmation and the toast quote their names.
        for i, row in enumerate(table.rows):
            if "[/x]" in table.get_cell(row.value, command).plain:
                table.move_cursor(row=i)
                await pilot.press("space")
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")
        await wait_until(pilot, lambda: any("SIGTERM on gpu-evil01" in n.message for n in app._notifications),
                     "the outcome toast")
        toast = next(n for n in app._notifications if "SIGTERM on gpu-evil01" in n.message)
        assert toast.markup is False and "[/x]" in toast.message and not RAW.search(toast.message)
        assert app.is_running  # [@click=app.quit] was never a live action


def test_the_report_of_a_repair_of_the_hostile_node_escapes_its_text(tmp_path):
    fleet = load_fleet("sim:hostile/gpu-evil01", speed=2000.0)
    node = fleet.node("gpu-evil01")
    node.files.pop("/var/lib/nvls-tui/repair.json")  # else the run is refused before it reads a holder
    with AuditLog.create(tmp_path, "evil") as audit:
        outcome = asyncio.run(Runbook(sim_backends(fleet)[0], FAST, on_event=audit).run())
    assert outcome.result == "failed"  # the users' workloads hold the GPUs: nobody signals them unasked
    text = report_from_file(audit.path)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "[@click=app.quit]" not in text and r"\[@click=app.quit\]" in text
    assert not RAW.search(text)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_in_a_real_terminal_a_hostile_node_can_neither_retitle_nor_clear_the_pane(tmp_path):
    from tests.tmux.test_e2e_tmux import Tmux

    tmux = Tmux(f"nvls-evil-{int(time.time() * 1000) % 100000}")
    exe = Path(sys.executable).with_name("nvls-tui")
    try:
        tmux.start(f"env -u COLUMNS -u LINES TERM=xterm-256color XDG_STATE_HOME={tmp_path} {exe} sim:hostile")
        tmux.tmux("select-pane", "-t", tmux.name, "-T", "operator-title")
        tmux.wait_for("the grid", lambda s: "gpu-evil01" in s and "gpu-ok01" in s, 60)
        tmux.keys("Enter")  # the hostile node sorts first: open it
        # Under load the grid lists the nodes before their first poll lands: wait for the node's holders (state,
        # not time), which a poll brings to the open screen.
        screen = tmux.wait_for("the node screen with its holders",
                               lambda s: "Holders of /dev/nvidia" in s and "[/x]" in s, 90)
        assert "gpu-evil01" in screen
        title = tmux.tmux("display-message", "-p", "-t", tmux.name, "#{pane_title}").strip()
        assert title == "operator-title"  # the OSC 0 in the process name did not reach the terminal
        tmux.keys("q")
    finally:
        tmux.kill()


def test_a_process_named_like_markup_is_rendered_by_check_over_a_real_shell_too(tmp_path):
    """The same text through a real sh: the probe's holders table as psmisc would print it."""
    line = "/dev/nvidia0:        mallory   4242 F...m [/x]\x1b]0;t\x07\n"
    done = subprocess.run(["sh", "-c", f"printf '%s' {json.dumps(line)}"], capture_output=True, text=True)
    result = CommandResult(("fuser",), 0, done.stdout)
    assert "\x1b" not in result.stdout and "[/x]" in result.stdout


async def test_the_runbook_s_holder_selection_lists_hostile_names_as_plain_text(tmp_path):
    from textual.widgets import SelectionList

    from nvls_tui.console.screens.runbook_column import RunbookColumn
    from tests.pilot.test_console_repair import start_repair

    fleet = load_fleet("sim:hostile/gpu-evil01", speed=0)
    fleet.node("gpu-evil01").files.pop("/var/lib/nvls-tui/repair.json")  # a repair that may start
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await start_repair(app, pilot, ["gpu-evil01"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking, "the runbook to wait on the users' workloads")
        await pilot.pause()
        listing = column.query_one(".holders", SelectionList)
        prompts = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert any("[/x]" in p for p in prompts) and not any(RAW.search(p) for p in prompts)
        await pilot.press("a")  # abort (confirmed): the runbook restores and ends
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the abort confirmation")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: screen.finished_at is not None, "the aborted run to end")
        assert column.run.result == "aborted"


def test_nul_and_invalid_utf8_from_a_real_shell_over_ssh_reach_neither_json_nor_terminal(tmp_path, capsys):
    from nvls_tui.sim.shims import write_shims
    from tests.sshd_rig import SshdRig, find_sshd

    if find_sshd() is None:
        pytest.skip("openssh-server is not installed (scripts/test.sh installs it)")

    def populate(name, node_dir):
        write_shims(node_dir, "healthy", "hgx01", static=True)
        lspci = node_dir / "bin" / "lspci"
        lspci.write_text("#!/bin/sh\nprintf '0000:05:00.0 Bridge: NVIDIA Corporation GH100 [H100 NVSwitch] "
                         "\\000\\377\\376[/x]\\033]0;t\\007 (rev a1)\\n'\n")
        lspci.chmod(0o755)

    rig = SshdRig(tmp_path / "rig", ["gpu01"], populate).start()
    try:
        code = main(["check", rig.target("gpu01"), "--json", *rig.cli_args()])
        out = capsys.readouterr().out
        (node,) = json.loads(out)["nodes"]
        assert node["reachable"] and [s["bus_id"] for s in node["nvswitches"]] == ["0000:05:00.0"]
        assert "\\u0000" not in out and "\\u001b" not in out and code == 0
        assert main(["check", rig.target("gpu01"), *rig.cli_args()]) == 0
        plain_out = capsys.readouterr().out
        assert "1 healthy" in plain_out and "root@127.0.0.1" in plain_out
        assert not RAW.search(plain_out) and "\x00" not in plain_out
    finally:
        rig.stop()


def _clean_by_regex(text: str) -> str:
    """clean() as it was before its plain-ASCII fast path: the reference the fast path must match."""
    from nvls_tui import textsafe

    if not text or textsafe._UNSAFE.search(text) is None:
        return text
    return textsafe._CONTROLS.sub("", textsafe._SEQUENCES.sub("", text)).translate(textsafe._SEPARATORS)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x2070)) | st.text(alphabet=st.sampled_from(
    "ab \t\n\r\x00\x07\x1b[]();m0\x7f\x9b\x9c\u202e"), max_size=60))
def test_the_plain_ascii_fast_path_of_clean_drops_exactly_what_the_regexes_drop(text):
    assert clean(text) == _clean_by_regex(text)


# Unicode's default-ignorable code points but the variation selectors (which pick an emoji's form and hide
# nothing): drawn as nothing, their only effect in node text is to make different names look alike, or
# (the bidi controls) to reorder a line. U+2028 and U+2029 are line breaks to many renderers.
INVISIBLE = "".join(map(chr, [0xAD, 0x34F, 0x61C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFEFF, 0xFFA0,
                              *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070),
                              *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B), *range(0xE0000, 0xE0080)]))
SEPARATORS = "\u2028\u2029"
NODE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters=INVISIBLE + SEPARATORS)
                    | st.sampled_from([*INVISIBLE, *SEPARATORS, "\n", "\t", "a"]))


@settings(max_examples=400, deadline=None)
@given(NODE_TEXT)
def test_clean_drops_invisible_characters_and_turns_line_separators_into_newlines(text):
    assert clean(text) == "".join("\n" if c in SEPARATORS else c for c in text if c not in INVISIBLE)


@settings(max_examples=400, deadline=None)
@given(NODE_TEXT)
def test_report_and_one_line_text_carry_no_invisible_character_and_no_line_break(text):
    for out in (markdown_text(text), markdown_code(text), one_line(text)):
        assert not set(out) & set(INVISIBLE + SEPARATORS + "\n"), ascii(out)


def test_a_line_separator_in_node_text_cannot_start_a_line_of_the_report(tmp_path):
    from nvls_tui.runbook.events import Note, RunStarted

    with AuditLog.create(tmp_path, "r1") as audit:
        audit(RunStarted(host="gpu05", run_id="r1"))
        audit(Note(host="gpu05", step="quiesce", message="gpu\u200b05\ufeff ok\u2028## Result: repaired\u2029- done"))
    text = report_from_file(audit.path)
    assert "| quiesce | _info_: gpu05 ok ## Result: repaired - done |" in text
    assert not any(line.startswith("## Result") for line in text.splitlines())  # splitlines breaks at U+2028
    assert not set(text) & set(INVISIBLE + SEPARATORS)
