"""A node that keeps no journal starts no journalctl (issue 37 item 5): the poll script run by real dash and bash.

journald keeps its files in /run/log/journal and /var/log/journal and nowhere else. Where neither holds a file
(absent, or an empty folder: a container without journald whose systemd package left /var/log/journal
behind), the kernel section's awk does not start journalctl: it prints the node's own line
(``JOURNAL_NO_FILES_LINE``) with the status journalctl gives there (1), and the poll reads it as journalctl's
"No journal files were found." (the ring read, FM's journal not run, the kernel log unknown). A folder that
exists but cannot be read still runs journalctl (fail closed), and a node whose journal folder holds a file
reads exactly as before. The folders are taken under ``$NVLS_TUI_JOURNAL_ROOT`` (a simulated node's DIR); here
a temporary folder of the test's.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from nvls_tui.model import CommandResult
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.evidence import FAILED, missing_evidence
from nvls_tui.poll.kernel_tail import RING_SKIPPED
from nvls_tui.poll.probe import (
    FM_LOG_ARGV,
    JOURNAL_DIRS,
    JOURNAL_NO_FILES_LINE,
    JOURNAL_NONE_NOT_RUN,
    JOURNAL_ROOT_ENV,
    journal_absent,
    section_argv,
)
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script
from tests.unit.test_probe_script import SHELLS

RING = "[    0.000000] Linux version 6.8.0\n[   12.500000] NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off\n"
JOURNAL = ("2026-12-06T10:00:00+0000 h kernel: Linux version 6.8.0\n"
           "2026-12-06T10:00:01+0000 h kernel: NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off\n"
           "-- cursor: s=0123456789abcdef0123456789abcdef;i=1;b=0123456789abcdef0123456789abcdef;m=1;t=1;x=1\n")
NO_JOURNAL = "No journal files were found.\n"
SECTIONS = ("kernel", "ring", "fm_log")


def journal_in(root: Path, folder: str = JOURNAL_DIRS[-1]) -> Path:
    """``root`` with a journal file in ``folder`` (under it): a node that keeps a journal there."""
    machine = root / folder.lstrip("/") / "0123456789abcdef0123456789abcdef"
    machine.mkdir(parents=True, exist_ok=True)
    (machine / "system.journal").write_text("")
    return root


def tools(bin_dir: Path, journal: str, status: int) -> Path:
    """journalctl (answering ``journal`` with ``status`` to -k, nothing to -u) and dmesg stand-ins that log
    their first argument."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = bin_dir / "log"
    (bin_dir / "journal.out").write_text(journal)
    (bin_dir / "ring.out").write_text(RING)
    (bin_dir / "journalctl").write_text(f'#!/bin/sh\necho "journalctl $1" >> "{log}"\n'
                                        f'[ "$1" = -k ] || {{ echo "-- No entries --"; exit 0; }}\n'
                                        f'cat "{bin_dir}/journal.out"; exit {status}\n')
    (bin_dir / "dmesg").write_text(f'#!/bin/sh\necho dmesg >> "{log}"\ncat "{bin_dir}/ring.out"\n')
    for tool in ("journalctl", "dmesg"):
        (bin_dir / tool).chmod(0o755)
    return log


def poll(shell: str, bin_dir: Path, root: Path, user: int | None = None) -> tuple[dict[str, CommandResult], list[str]]:
    """The script's kernel, ring and fm_log sections with ``root`` as the node's journal root, and the tools it
    started (as ``user`` where given: a poll user that is not root)."""
    log = bin_dir / "log"
    log.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C", JOURNAL_ROOT_ENV: str(root)}
    argv = [shell, "-c", probe_script(only=SECTIONS)]
    if user is not None:
        log.chmod(0o666)
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.stderr == ""
    sections = {name: CommandResult(section_argv(name), -1 if status is None else status, text)
                for name, (status, text) in split_probe_output(done.stdout).items()}
    return sections, log.read_text().splitlines()


def reading(sections: dict[str, CommandResult]):
    """What the bastion makes of a poll's kernel sections: each one's missing evidence, the kernel events (a
    node whose nvidia-smi is missing: read without its GPUs)."""
    gpus = CommandResult(section_argv("gpus"), 127, "sh: 1: nvidia-smi: not found\n")
    state = assemble_node_state("n1", {**sections, "gpus": gpus}, simulated=False)
    missing = {n: (m.reason, m.detail) if (m := state.missing_section(n)) is not None else None for n in SECTIONS}
    return missing, [(e.code, e.line) for e in state.kernel_events], state.kernel_coverage, journal_absent(sections)


def layouts(root: Path) -> dict[str, Path]:
    """Journal roots that hold no journal file, each one a way a node has none."""
    bare = root / "bare"  # neither folder, nor /run/log, nor /var/log
    bare.mkdir()
    empty = root / "empty"  # /var/log/journal left empty by the systemd package; /run/log without journal
    (empty / "var" / "log" / "journal").mkdir(parents=True)
    (empty / "run" / "log").mkdir(parents=True)
    both = root / "both-empty"
    for folder in JOURNAL_DIRS:
        (both / folder.lstrip("/")).mkdir(parents=True)
    return {"bare": bare, "empty": empty, "both-empty": both}


@pytest.mark.parametrize("shell", SHELLS)
def test_where_no_journal_folder_holds_a_file_journalctl_is_not_started_and_the_poll_reads_as_its_no_journal(
        tmp_path, shell):
    # What journalctl's own answer read as: a node whose folder holds a (broken) file, journalctl saying so.
    said = tmp_path / "said"
    tools(said, NO_JOURNAL, 1)
    asked, started = poll(shell, said, journal_in(tmp_path / "with-file"))
    assert started == ["journalctl -k", "dmesg"]  # FM's journalctl already not run: it would say the same
    assert asked["fm_log"] == CommandResult(FM_LOG_ARGV, 0, JOURNAL_NONE_NOT_RUN + "\n")
    for name, root in layouts(tmp_path).items():
        skipped, started = poll(shell, said, root)
        assert started == ["dmesg"], name  # no journalctl at all; the ring read as before
        assert skipped["kernel"].exit_status == 1 and JOURNAL_NO_FILES_LINE in skipped["kernel"].output.splitlines()
        assert skipped["ring"] == asked["ring"] and "Xid" in skipped["ring"].output
        assert skipped["fm_log"] == asked["fm_log"]
        assert reading(skipped) == reading(asked), name
    missing, events, coverage, absent = reading(skipped)
    # The kernel lines from the ring alone (the journal read nothing); FM's journal unknown, never "no FM errors".
    assert absent and coverage is not None and coverage.sources == ("dmesg",) and coverage.journal_since is None
    assert missing["kernel"] is None and missing["ring"] is None and ["Xid" in line for _, line in events] == [True]
    assert missing["fm_log"] is not None and missing["fm_log"][0] == FAILED and "no journal" in missing["fm_log"][1]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("folder", JOURNAL_DIRS)
def test_a_node_whose_journal_folder_holds_a_file_reads_its_journal_exactly_as_before(tmp_path, shell, folder):
    bin_dir = tmp_path / "bin"
    tools(bin_dir, JOURNAL, 0)
    sections, started = poll(shell, bin_dir, journal_in(tmp_path / "root", folder))
    assert started == ["journalctl -k", "journalctl -u"]  # the journal covers the boot: no dmesg
    status, text = sections["kernel"].exit_status, sections["kernel"].output
    assert status == 0 and JOURNAL_NO_FILES_LINE not in text
    assert text.splitlines() == [*JOURNAL.splitlines()[1:], "-- nvls-tui first 2026-12-06T10:00:00+0000 1",
                                 "-- nvls-tui visited 2 first 0 last 1"]
    assert sections["ring"].output == RING_SKIPPED + "\n" and sections["fm_log"].output == "-- No entries --\n"
    assert not journal_absent(sections)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_journal_folder_that_is_not_surely_empty_still_runs_journalctl(tmp_path, shell):
    # Fail closed: a link (even one that leads nowhere), a file where the folder should be, a hidden entry.
    bin_dir = tmp_path / "bin"
    tools(bin_dir, JOURNAL, 0)
    cases = {}
    for name in ("dangling-link", "a-file", "hidden-entry"):
        root = tmp_path / name
        (root / "var" / "log").mkdir(parents=True)
        cases[name] = root
    (cases["dangling-link"] / "var" / "log" / "journal").symlink_to(tmp_path / "nowhere")
    (cases["a-file"] / "var" / "log" / "journal").write_text("")
    (cases["hidden-entry"] / "var" / "log" / "journal").mkdir()
    (cases["hidden-entry"] / "var" / "log" / "journal" / ".0123456789abcdef").mkdir()
    for name, root in cases.items():
        sections, started = poll(shell, bin_dir, root)
        assert started == ["journalctl -k", "journalctl -u"], name
        assert sections["kernel"].exit_status == 0 and "NVRM: Xid" in sections["kernel"].output, name


@pytest.mark.parametrize("shell", SHELLS)
def test_a_journal_folder_the_poll_user_cannot_read_or_reach_still_runs_journalctl(shell):
    # As a user who is not root (root reads every folder): a folder it cannot list, and one beneath a folder
    # it cannot search (whose journal may well exist: the shell cannot tell "absent" from "hidden").
    nobody = 65534
    base = Path(tempfile.mkdtemp(prefix="nvls-journal-"))
    try:
        base.chmod(0o755)
        bin_dir = base / "bin"
        tools(bin_dir, JOURNAL, 0)
        unlistable, unsearchable = base / "unlistable", base / "unsearchable"
        (unlistable / "var" / "log" / "journal").mkdir(parents=True)
        (unlistable / "var" / "log" / "journal").chmod(stat.S_IWUSR | stat.S_IXUSR | stat.S_IXOTH)  # --x for others
        journal_in(unsearchable)
        (unsearchable / "var" / "log").chmod(stat.S_IRWXU | stat.S_IROTH)  # others may list it, not search it
        for root in (base, unlistable, unsearchable):
            for path in [root, *root.rglob("*")]:
                if path.is_dir() and path not in (unlistable / "var" / "log" / "journal", unsearchable / "var" / "log"):
                    path.chmod(0o755)
        for root in (unlistable, unsearchable):
            sections, started = poll(shell, bin_dir, root, user=nobody)
            assert started == ["journalctl -k", "journalctl -u"], root.name
            assert sections["kernel"].exit_status == 0 and "NVRM: Xid" in sections["kernel"].output
        # The same user, where the folder is surely absent (its parent searchable): no journalctl.
        (unlistable / "var" / "log" / "journal").rmdir()
        _, started = poll(shell, bin_dir, unlistable, user=nobody)
        assert started == ["dmesg"]
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                os.chmod(path, 0o755)
        subprocess.run(["rm", "-rf", str(base)], check=True)


def test_the_node_s_line_reads_as_journalctl_s_no_journal_in_every_reader():
    # The evidence reader, the backends' rule for FM's journal: the node's line and journalctl's words alike.
    for kernel in (CommandResult(section_argv("kernel"), 1, JOURNAL_NO_FILES_LINE + "\n"),
                   CommandResult(section_argv("kernel"), 1, NO_JOURNAL), CommandResult(section_argv("kernel"), 0, NO_JOURNAL)):
        why = missing_evidence("kernel", kernel)
        assert why is not None and (why.reason, why.detail) == (
            FAILED, "the kernel log could not be read: journalctl found no journal on the node (is systemd-journald "
                    "running?)")
        assert journal_absent({"kernel": kernel})
    assert not journal_absent({"kernel": CommandResult(section_argv("kernel"), 1, "-- No entries --\n")})
