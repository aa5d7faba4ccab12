"""The probe's holder reads, run by real dash and bash against real processes and the real ``ps``.

Only ``fuser`` is a stand-in (there is no /dev/nvidia* here): it prints a given ``-v`` table on
stderr, as psmisc does. The script then takes the PIDs from that table and their parents with
shell builtins and ``ps``, and reads every identity and cgroup with ``ps``: what it found must be
every PID the bastion's own fuser parser finds, whatever the node's text says.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nvls_tui.parsers.fuser import parse_fuser_streams
from nvls_tui.parsers.ps import parse_ps, parse_ps_cgroups
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script

# Above any pid_max (2^22 at most), within ps's list syntax (up to 2^31-1): no process can have it.
NO_PID = 99_999_999
ACCESS = re.compile(r"[.FfRrCcEeMm]{5}")
SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]
READS = ("holders", "processes", "cgroups")
# What the script found, printed after it ends (the variables the ps steps used).
TELL = 'printf "@@found %s|%s\\n" "$pids" "$ppids"\n'


def fake_fuser(bin_dir: Path, table: str) -> None:
    (bin_dir / "table").write_text(table)
    (bin_dir / "fuser").write_text(f"#!/bin/sh\ncat '{bin_dir / 'table'}' >&2\nexit 0\n")
    (bin_dir / "fuser").chmod(0o755)


def run(shell: str, bin_dir: Path) -> tuple[dict, list[int], list[int]]:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"}
    out = subprocess.run([shell, "-c", probe_script(only=READS) + TELL], env=env, capture_output=True,
                         text=True, timeout=60, cwd=bin_dir).stdout
    found = next(line for line in out.splitlines() if line.startswith("@@found "))
    pids, ppids = found.removeprefix("@@found ").split("|")
    return (split_probe_output(out), [int(p) for p in pids.split(",") if p],
            [int(p) for p in ppids.split(",") if p])


@pytest.fixture
def family():
    """A real parent (sh) with a real child (sleep): the child holds a GPU, the parent spawned it."""
    parent = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    yield parent.pid, child
    parent.kill()
    subprocess.run(["kill", str(child)], check=False)
    parent.wait()


def row(device: str, user: str, pid: int, access: str, command: str) -> str:
    return f"{device + ':' if device else '':<20} {user:<9} {pid:>6} {access} {command}\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_holder_and_its_parent_are_read_with_the_real_ps(tmp_path, shell, family):
    parent, child = family
    # Hostile command names beside the real holder: a glob, a bracket name, a name that looks like a row.
    table = ("                     USER        PID ACCESS COMMAND\n"
             + row("/dev/nvidia0", "root", child, "F...m", "sleep")
             + row("", "root", child, "F...m", "*")
             + row("/dev/nvidia1", "root", child, "F....", "[/x]")
             + row("", "bob", 1, "F...m", f"{NO_PID} F...m $(touch pwned) `id`"))
    (tmp_path / "a-file-a-glob-would-find").write_text("")
    fake_fuser(tmp_path, table)
    sections, pids, ppids = run(shell, tmp_path)
    assert pids == [child, 1, NO_PID]  # "NO_PID F...m" reads as a row, as awk read it: ps finds none
    assert ppids == [parent]  # init and the PIDs themselves are no parents to read
    assert not (tmp_path / "pwned").exists()
    entries = {e.pid: e for e in parse_ps(sections["processes"][1]).value}
    assert set(entries) == {child, 1, parent}
    assert entries[child].ppid == parent and entries[child].args == "sleep 300"
    # ps prints each PID's cgroup ("-" for init's root cgroup, which the parser leaves out)
    assert {int(line.split()[0]) for line in sections["cgroups"][1].splitlines()} == {child, 1, parent}
    assert set(parse_ps_cgroups(sections["cgroups"][1]).value) >= {child, parent}
    assert sections["processes"][0] == 0


@pytest.mark.parametrize("shell", SHELLS)
def test_a_ps_that_refuses_quick_pid_is_asked_again_with_the_pid_list(tmp_path, shell, family):
    """procps before 3.3.7 (and any ps without -q): the same answers, none of its complaint."""
    parent, child = family
    real_ps = shutil.which("ps")
    (tmp_path / "ps").write_text('#!/bin/sh\nfor a do [ "$a" = -q ] && { echo "ps: unknown option -q" >&2; '
                                 f'exit 1; }}; done\nexec {real_ps} "$@"\n')
    (tmp_path / "ps").chmod(0o755)
    fake_fuser(tmp_path, "                     USER        PID ACCESS COMMAND\n"
               + row("/dev/nvidia0", "root", child, "F...m", "sleep"))
    sections, pids, ppids = run(shell, tmp_path)
    assert (pids, ppids) == ([child], [parent])
    assert sections["processes"][0] == 0 and "unknown option" not in sections["processes"][1]
    assert {e.pid for e in parse_ps(sections["processes"][1]).value} == {child, parent}
    assert {int(line.split()[0]) for line in sections["cgroups"][1].splitlines()} == {child, parent}


@pytest.mark.parametrize("shell", SHELLS)
def test_a_holder_gone_before_ps_ran_leaves_the_identities_empty_with_ps_s_status(tmp_path, shell):
    fake_fuser(tmp_path, "                     USER        PID ACCESS COMMAND\n"
               + row("/dev/nvidia0", "root", NO_PID, "F...m", "gone"))
    sections, pids, _ = run(shell, tmp_path)
    assert pids == [NO_PID]
    assert sections["processes"] == (1, "") and sections["cgroups"] == (1, "")


@pytest.mark.parametrize("shell", SHELLS)
def test_no_holder_reads_no_process_and_says_so_with_status_0(tmp_path, shell):
    fake_fuser(tmp_path, "")
    sections, pids, ppids = run(shell, tmp_path)
    assert (pids, ppids) == ([], [])
    assert sections["processes"] == (0, "") and sections["cgroups"] == (0, "")


WORDS = st.sampled_from(["root", "F...m", "F....", "....m", "*", "[/x]", "?", "-e", "--", "kernel", "0", "007",
                         "12", "4242", "99999", "$x", "a b", "\\", "USER", "PID", "/dev/nvidia0:"])


@st.composite
def tables(draw) -> str:
    lines = ["                     USER        PID ACCESS COMMAND"]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            device = draw(st.sampled_from(["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl", ""]))
            pid = draw(st.integers(2, 4_000_000))
            access = draw(st.sampled_from(["F...m", "F....", "....m", "f.c.."]))
            lines.append(row(device, draw(st.sampled_from(["root", "ubuntu"])), pid, access,
                             " ".join(draw(st.lists(WORDS, max_size=3)))).rstrip("\n"))
        else:
            lines.append(" ".join(draw(st.lists(WORDS, max_size=6))))
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="procps ps")
@settings(max_examples=40, deadline=None)
@given(table=tables())
# hypothesis found it (the suite branch's runs): a row's PID 7 and a word 007 after it were read as two PIDs.
@example(table="                     USER        PID ACCESS COMMAND\n\n\n\n\n/dev/nvidia0:        root           7 F...m "
               "007 F...m\n")
def test_the_script_reads_every_pid_the_bastion_parser_finds(table):
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        bin_dir = Path(work)
        fake_fuser(bin_dir, table)
        for shell in SHELLS:
            _, pids, ppids = run(shell, bin_dir)
            # Rows are told by fuser's access column (5 of .FfRrCcEeMm, as psmisc prints it); a junk
            # line with a word there instead is no row the script reads (the parser's holder then has
            # no identity: it is never signalled, and it still blocks a reset).
            wanted = [h.pid for h in parse_fuser_streams(table).value if ACCESS.fullmatch(h.access)]
            assert set(wanted) <= set(pids), shell
            assert len(pids) == len(set(pids))  # each once
            assert set(pids) <= {int(w) for w in table.split() if w.isdigit()}  # only numbers it printed
