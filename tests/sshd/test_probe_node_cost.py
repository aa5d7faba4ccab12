"""A later poll is light on the node (issue 37, item 5): the probe run by real dash and bash, its tools logged.

The small files (the repair record, the smoke record, the simulator's marker, the boot id and uptime) are
read by one ``cat``; needrestart's and apt's configuration is read again only when a stamp of its files
(one ``find``) differs from the one the bastion kept with its last answer. Every tool here is the real one,
wrapped in a stand-in that first notes its name in a log; ``find``'s stamp is a file the test writes where
a case needs the configuration to change or the stamp to fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nvls_tui.model import CommandResult
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.config_cache import ConfigCache
from nvls_tui.poll.evidence import FAILED
from nvls_tui.poll.probe import (
    CONFIG_STAMP,
    CONFIG_STAMP_ARGV,
    JOURNAL_ROOT_ENV,
    RECORD_FILE,
    SIMULATED_MARKER,
    STATE_DIR,
    section_argv,
)
from nvls_tui.poll.probe_output import SectionReader, split_probe_output
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import backend_for, find_sshd
from tests.unit.test_probe_journal_dirs import journal_in
from tests.unit.test_probe_script import SHELLS

LOGGED = ("cat", "grep", "apt-config", "find")


def logging_tools(bin_dir: Path, state_dir: Path, stamp: Path | None = None) -> Path:
    """Stand-ins that log their name and run the real tool (cat with the node's state directory in
    ``state_dir``; find printing ``stamp`` as its stamp where one is given)."""
    log = bin_dir / "log"
    for tool in LOGGED:
        real = next(f"{d}/{tool}" for d in ("/usr/bin", "/bin") if os.access(f"{d}/{tool}", os.X_OK))
        body = f'echo {tool} >> "{log}"\n'
        if tool == "cat":
            body += ('n=$#; for a do case $a in ' + STATE_DIR + '/*) a="' + str(state_dir) + '/${a#' + STATE_DIR
                     + '/}";; esac; set -- "$@" "$a"; done; shift $n\n')
        if tool == "find" and stamp is not None:
            body += f'case "$*" in *-printf*) {real} --version >/dev/null; cat "{stamp}"; exit "$(cat "{stamp}.rc")";; esac\n'
        # By name on the system's PATH, so that its messages begin with its name, as on a node.
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}PATH=/usr/bin:/bin; exec {tool} \"$@\"\n")
        (bin_dir / tool).chmod(0o755)
    return log


class Node:
    """A node's script run by ``shell`` with the logging tools first on PATH, read as the SSH backend reads it."""

    def __init__(self, tmp_path: Path, shell: str, stamp: Path | None = None) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.state = tmp_path / "state"
        self.state.mkdir()
        (self.state / Path(SIMULATED_MARKER).name).write_text("simulated by a test\n")
        self.log = logging_tools(self.bin, self.state, stamp)
        self.shell = shell
        self.cache = ConfigCache()

    def poll(self) -> tuple[dict[str, CommandResult], list[str]]:
        """One poll: its sections (the config cache folded in) and the logged tools it started."""
        self.log.write_text("")
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "LC_ALL": "C"}
        out = subprocess.run([self.shell, "-c", probe_script(config_stamp=self.cache.stamp)], env=env,
                             capture_output=True, text=True, timeout=60).stdout
        reader = SectionReader("0", 1 << 20)
        assert reader.feed(out)
        sections = {name: CommandResult(section_argv(name), -1 if status is None else status, text)
                    for name, (status, text) in reader.finish().items()}
        return self.cache.take(sections, reader.unchanged), self.log.read_text().split()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_later_poll_reads_the_small_files_with_one_cat_and_no_unchanged_configuration(tmp_path, shell):
    node = Node(tmp_path, shell)
    first, started = node.poll()
    assert started.count("cat") == 1  # record, smoke, simulated and the boot's files: one cat
    assert {"grep", "apt-config", "find"} <= set(started)
    assert CONFIG_STAMP not in first and node.cache.stamp
    later, started = node.poll()
    assert sorted(started) == ["cat", "find"]  # neither grep nor apt-config: their files did not change
    assert node.cache.hits == 1
    assert {n: later[n] for n in ("needrestart", "apt")} == {n: first[n] for n in ("needrestart", "apt")}
    # Each file section keeps its own status and text: the record absent (cat's complaint, 1), the marker read.
    assert later["record"].exit_status == 1 and "No such file or directory" in later["record"].stdout
    assert later["simulated"] == CommandResult(section_argv("simulated"), 0, "simulated by a test\n")
    assert later["boot"].exit_status == 0 and len(later["boot"].stdout.splitlines()) == 2
    state = assemble_node_state("n", later, simulated=False)
    assert state.missing_section("needrestart") is None and state.missing_section("apt") is None
    assert state.missing_section("record") is None and state.simulated and state.boot_id is not None


@pytest.mark.parametrize("shell", SHELLS)
def test_a_changed_configuration_file_is_read_again(tmp_path, shell):
    stamp = tmp_path / "stamp"
    stamp.write_text("f 512 1700000000.0000000000 1700000000.0000000000\n")
    (tmp_path / "stamp.rc").write_text("0")
    node = Node(tmp_path, shell, stamp)
    node.poll()
    kept = node.cache.stamp
    assert kept is not None and "1700000000" in kept
    stamp.write_text("f 513 1700000060.0000000000 1700000060.0000000000\n")
    _, started = node.poll()
    assert {"grep", "apt-config"} <= set(started)  # the file changed: read again
    assert node.cache.stamp != kept and "1700000060" in (node.cache.stamp or "")
    _, started = node.poll()
    assert "grep" not in started and "apt-config" not in started


@pytest.mark.parametrize("shell", SHELLS)
def test_a_stamp_that_could_not_be_taken_reads_the_configuration_every_poll(tmp_path, shell):
    stamp = tmp_path / "stamp"
    stamp.write_text("f 4096 1700000000.0000000000 1700000000.0000000000\n"
                     "find: '/etc/needrestart/conf.d': Permission denied\n")
    (tmp_path / "stamp.rc").write_text("1")
    node = Node(tmp_path, shell, stamp)
    for _ in range(2):
        sections, started = node.poll()
        assert {"grep", "apt-config"} <= set(started)
        assert node.cache.stamp is None and CONFIG_STAMP not in sections


def test_an_unchanged_section_with_nothing_kept_is_missing_evidence_never_an_empty_configuration():
    # What a node answers when sent a stamp the bastion no longer holds (it never does: read closed).
    text = ('@@nvls-tui-0 begin needrestart\n@@nvls-tui-0 end needrestart unchanged\n'
            '@@nvls-tui-0 begin apt\n@@nvls-tui-0 end apt unchanged\n')
    reader = SectionReader("0", 1 << 20)
    reader.feed(text)
    sections = {name: CommandResult(section_argv(name), -1 if status is None else status, body)
                for name, (status, body) in reader.finish().items()}
    folded = ConfigCache().take(sections, reader.unchanged)
    state = assemble_node_state("n", {**folded, "units": CommandResult(("systemctl",), 0, "Id=x.service\n")},
                                simulated=False)
    assert state.missing_section("needrestart") is not None and state.missing_section("apt") is not None
    assert state.restarters is None


@pytest.mark.parametrize("shell", SHELLS)
def test_a_record_that_cannot_be_read_is_unknown_and_the_files_after_it_are_still_read(tmp_path, shell):
    node = Node(tmp_path, shell)
    (node.state / Path(RECORD_FILE).name).mkdir()  # cat: ...: Is a directory
    sections, _ = node.poll()
    assert sections["record"].exit_status == 1 and "Is a directory" in sections["record"].stdout
    state = assemble_node_state("n", sections, simulated=False)
    missing = state.missing_section("record")
    assert missing is not None and missing.reason == FAILED
    assert sections["simulated"].exit_status == 0 and state.simulated and state.boot_id is not None


def test_every_reader_takes_the_file_statuses_from_the_text(tmp_path):
    node = Node(tmp_path, "/bin/sh")
    env = {"PATH": f"{node.bin}:/usr/bin:/bin", "LC_ALL": "C"}
    out = subprocess.run(["/bin/sh", "-c", probe_script()], env=env, capture_output=True, text=True,
                         timeout=60).stdout
    whole = split_probe_output(out)
    reader = SectionReader("0", 1 << 20)
    for at in range(0, len(out), 5):  # streamed in odd chunks, as SSH delivers it
        assert reader.feed(out[at:at + 5])
    assert reader.finish() == whole
    assert (whole["record"][0], whole["smoke"][0], whole["simulated"][0], whole["boot"][0]) == (1, 1, 0, 0)


@pytest.mark.parametrize("static", [False, True])
def test_the_shims_answer_the_stamp_and_the_shared_cat_as_the_simulated_node(tmp_path, static):
    root = write_shims(tmp_path / "n", "fm-restarters", "gpu-nr01", static=static, speed=0)
    script = " ".join(f"'{a}'" for a in CONFIG_STAMP_ARGV)
    shim = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{root}/bin:/usr/bin:/bin"})
    sim = load_fleet("sim:fm-restarters/gpu-nr01", speed=0).sh("gpu-nr01", *CONFIG_STAMP_ARGV)
    assert (shim.returncode, shim.stdout, shim.stderr) == (sim.exit_status, sim.stdout, sim.stderr)
    # The node's files (it has needrestart's), not this machine's (which has none).
    assert "needrestart" not in shim.stderr and len(shim.stdout.splitlines()) >= 3
    if not static:
        # The boot's files in the shared cat are the simulated node's (its boot id), never this machine's.
        env = {"PATH": f"{root}/bin:{os.environ['PATH']}", "LC_ALL": "C"}
        out = subprocess.run(["/bin/sh", "-c", probe_script(only=("simulated", "boot"))], env=env,
                             capture_output=True, text=True, timeout=120).stdout
        boot = split_probe_output(out)["boot"]
        machine = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        assert boot[0] == 0 and machine not in boot[1] and len(boot[1].splitlines()) == 2
        assert split_probe_output(out)["simulated"] == (0, "simulated by nvls-tui\n")


@pytest.mark.ssh
@pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")
async def test_over_ssh_a_later_poll_answers_the_unchanged_configuration_from_the_first(sshd_fleet):
    from nvls_tui.poll.assemble import assemble_node_state as assemble

    rig = sshd_fleet(["gpu-nr01"], scenario="fm-restarters", speed=0)
    backend = backend_for(rig, "gpu-nr01", timeout=60)
    try:
        first = await backend.read_sections()
        later = await backend.read_sections()
    finally:
        await backend.close()
    assert backend.config_cache.hits == 1 and CONFIG_STAMP not in later
    assert {n: later[n] for n in ("needrestart", "apt")} == {n: first[n] for n in ("needrestart", "apt")}
    states = [assemble("gpu-nr01", s, simulated=True) for s in (first, later)]
    assert states[0].restarters == states[1].restarters and states[1].restarters is not None
    assert states[1].restarters.needrestart_mode == "a" and states[1].restarters.unattended_upgrades is True


@pytest.mark.parametrize("shell", SHELLS)
def test_the_holders_parents_identities_and_cgroups_cost_one_ps_and_read_as_ps_reads_them(tmp_path, shell):
    from nvls_tui.parsers.ps import parse_ps, parse_ps_cgroups
    from nvls_tui.poll.probe import CGROUP_FORMAT
    from tests.unit.test_probe_holders import fake_fuser, row

    # A holder whose name holds ") " and a number (its stat line's PPID must still be found after it).
    odd = tmp_path / "a) 9 b"
    odd.symlink_to(next(f"{d}/sleep" for d in ("/usr/bin", "/bin") if os.access(f"{d}/sleep", os.X_OK)))
    holder = subprocess.Popen([str(odd), "300"])
    try:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        fake_fuser(bin_dir, "                     USER        PID ACCESS COMMAND\n"
                            + row("/dev/nvidia0", "root", holder.pid, "F...m", "a) 9 b"))
        log = bin_dir / "log"
        for tool in ("ps", "head"):
            (bin_dir / tool).write_text(f'#!/bin/sh\necho {tool} >> "{log}"\nPATH=/usr/bin:/bin; exec {tool} "$@"\n')
            (bin_dir / tool).chmod(0o755)
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"}
        out = subprocess.run([shell, "-c", probe_script(only=("holders", "processes", "cgroups"))], env=env,
                             capture_output=True, text=True, timeout=60).stdout
        both = f"{holder.pid},{os.getpid()}"
        by_ps = subprocess.run(["ps", "-ww", "-o", CGROUP_FORMAT, "-p", both], capture_output=True, text=True).stdout
    finally:
        holder.kill()
        holder.wait()
    sections = split_probe_output(out)
    # One ps, for the identities; head only for the fuser table's cap. The parent and the cgroups are read
    # from /proc by the shell's builtins (two `ps` of ~4 ms each before, on an H100).
    assert sorted(log.read_text().split()) == ["head", "ps"]
    (status, text), (cg_status, cg_text) = sections["processes"], sections["cgroups"]
    entries = {e.pid: e for e in parse_ps(text).value}
    assert status == 0 and set(entries) == {holder.pid, os.getpid()}  # the holder and its parent (this test)
    assert entries[holder.pid].ppid == os.getpid()
    # What ps's cgroup column says of both, to the entry.
    assert cg_status == 0 and parse_ps_cgroups(cg_text).value == parse_ps_cgroups(by_ps).value
    assert {int(line.split()[0]) for line in cg_text.splitlines()} == {holder.pid, os.getpid()}


@pytest.mark.parametrize("shell", SHELLS)
def test_a_holder_whose_proc_files_cannot_be_read_has_no_parent_and_no_cgroup_never_a_made_up_one(tmp_path, shell):
    from tests.unit.test_probe_holders import fake_fuser, row

    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "stat").write_text("4242 (x) S 77 4242 4242 0 -1\n")
    (proc / "4242" / "cgroup").mkdir()  # a cgroup file that cannot be read (here: a folder)
    (proc / "77").mkdir()  # the parent's files are gone (it exited)
    fake_fuser(tmp_path, "                     USER        PID ACCESS COMMAND\n"
               + row("/dev/nvidia0", "root", 4242, "F...m", "x") + row("", "root", 5151, "F...m", "y"))
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C", "NVLS_TUI_PROC": str(proc)}
    out = subprocess.run([shell, "-c", probe_script(only=("holders", "cgroups")) + 'echo "@@all $all"\n'], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stderr == ""
    assert "@@all 4242,5151,77" in out.stdout  # 5151 has no stat: no parent; 77 read from 4242's
    assert split_probe_output(out.stdout)["cgroups"] == (1, "")  # none could be read: ps's "found none"


@pytest.mark.parametrize("shell", SHELLS)
def test_where_the_journal_falls_short_one_awk_reads_the_journal_and_the_ring(tmp_path, shell):
    from nvls_tui.poll.kernel_tail import filter_ring

    ring = "[    0.000000] Linux version 6.8.0\n[   12.500000] NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off\n"
    log = tmp_path / "log"
    for name, text, status in (("journalctl", "No journal files were found.\n", 1), ("dmesg", ring, 0)):
        (tmp_path / f"{name}.out").write_text(text)
        (tmp_path / name).write_text(f"#!/bin/sh\ncat {tmp_path / name}.out\nexit {status}\n")
        (tmp_path / name).chmod(0o755)
    real_awk = next(f"{d}/awk" for d in ("/usr/bin", "/bin") if os.access(f"{d}/awk", os.X_OK))
    (tmp_path / "awk").write_text(f'#!/bin/sh\necho awk >> "{log}"\nexec {real_awk} "$@"\n')
    (tmp_path / "awk").chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))}
    for only, awks in ((("kernel", "ring"), 1), (("ring",), 1)):  # the ring alone: a later script's
        log.write_text("")
        out = subprocess.run([shell, "-c", probe_script(only=only)], env=env, capture_output=True, text=True,
                             timeout=60).stdout
        sections = split_probe_output(out)
        assert sections["ring"] == (0, filter_ring(ring)) and "Xid" in sections["ring"][1]
        assert log.read_text().split() == ["awk"] * awks
    assert sections.get("kernel") is None


@pytest.mark.parametrize("shell", SHELLS)
def test_the_kernel_section_alone_reads_the_journal(tmp_path, shell):
    # Without the ring section in the same script its awk has no ring() to call: it must still run.
    (tmp_path / "journalctl").write_text("#!/bin/sh\necho '2026-12-06T10:00:00+0000 h kernel: Linux version 6.8'\n"
                                         "echo '2026-12-06T10:00:01+0000 h kernel: NVRM: Xid 79'\n")
    (tmp_path / "journalctl").chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))}
    done = subprocess.run([shell, "-c", probe_script(only=("kernel",))], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.stderr == ""
    status, text = split_probe_output(done.stdout)["kernel"]
    assert status == 0 and "NVRM: Xid 79" in text


@pytest.mark.parametrize("shell", SHELLS)
def test_the_kernel_awk_runs_journalctl_and_dmesg_without_a_shell_between(tmp_path, shell):
    # awk runs its command through `sh -c`, which dash forks again for it: `exec` makes the tool awk's child.
    for name in ("journalctl", "dmesg"):
        (tmp_path / name).write_text(f'#!/bin/sh\necho "{name}\'s parent: $(cat /proc/$PPID/comm)"\nexit 1\n')
        (tmp_path / name).chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))}
    out = subprocess.run([shell, "-c", probe_script(only=("kernel", "ring"))], env=env, capture_output=True,
                         text=True, timeout=60).stdout
    sections = split_probe_output(out)
    assert "journalctl's parent: " in sections["kernel"][1] and "dmesg's parent: " in sections["ring"][1]
    parents = [line.rsplit(" ", 1)[1] for line in out.splitlines() if "'s parent: " in line]
    assert len(parents) == 2 and all(p.endswith("awk") for p in parents), parents


# ---- FM's unit journal where systemd has no FM unit ------------------------------------------------------
FM_ABSENT = ("Id=nvidia-fabricmanager.service\nLoadState=not-found\nActiveState=inactive\n\n"
             "Id=kubelet.service\nLoadState=loaded\nActiveState=active\n")
FM_LOADED = ("Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState=failed\n\n"
             "Id=kubelet.service\nLoadState=not-found\nActiveState=inactive\n")
# LoadState before Id in FM's block (the order is systemd's, not the -p list's): still FM's own block.
FM_ABSENT_REORDERED = "ActiveState=inactive\nLoadState=not-found\nId=nvidia-fabricmanager.service\n"
NO_SYSTEMD = "System has not been booted with systemd as init system (PID 1). Can't operate.\n"


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(("units", "status", "read"), [
    (FM_ABSENT, 0, False), (FM_ABSENT_REORDERED, 0, False),
    (FM_LOADED, 0, True),  # another unit's not-found is not FM's
    (NO_SYSTEMD, 1, True),  # systemctl could not say: read as before (fail closed)
    (FM_ABSENT, 3, True),  # an answer with a failing status is not believed
])
def test_fm_s_journal_is_read_unless_systemd_says_it_has_no_fm_unit(tmp_path, shell, units, status, read):
    from nvls_tui.poll.fm_journal import read_fm_journal
    from nvls_tui.poll.probe import FM_LOG_NOT_RUN_LINE, fm_unit_absent

    log = tmp_path / "log"
    (tmp_path / "units.out").write_text(units)
    (tmp_path / "systemctl").write_text(f"#!/bin/sh\ncat {tmp_path / 'units.out'}\nexit {status}\n")
    (tmp_path / "journalctl").write_text(f'#!/bin/sh\necho journalctl >> "{log}"\necho "-- No entries --"\n')
    for tool in ("systemctl", "journalctl"):
        (tmp_path / tool).chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C"}
    out = subprocess.run([shell, "-c", probe_script(only=("units", "fm_log"))], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.stderr == ""
    sections = split_probe_output(out.stdout)
    assert sections["units"] == (status, units)  # the section is systemctl's answer, to the byte
    units_result = CommandResult(section_argv("units"), status, units)
    assert fm_unit_absent(units_result) is (not read)  # the other backends decide as the script does
    if read:
        assert log.read_text().split() == ["journalctl"] and sections["fm_log"] == (0, "-- No entries --\n")
    else:
        assert not log.exists() and sections["fm_log"] == (0, FM_LOG_NOT_RUN_LINE + "\n")
        journal, why = read_fm_journal(CommandResult(section_argv("fm_log"), 0, sections["fm_log"][1]))
        assert journal is None and why is not None and why.reason == "not run"  # unknown, never "no FM errors"


async def test_a_node_without_a_host_fm_unit_reads_no_fm_journal_on_either_path_and_says_nothing_of_it(tmp_path):
    from nvls_tui.backends.simulated import SimulatedBackend
    from nvls_tui.diagnosis import diagnose
    from nvls_tui.poll.probe import fm_log_not_run
    from nvls_tui.sim.fleet import load_fleet as load

    fleet = load("sim:fm-in-container/gpu-ctr01", speed=0)
    sections = await SimulatedBackend(fleet, "gpu-ctr01").read_sections()
    assert sections["fm_log"] == fm_log_not_run()
    root = write_shims(tmp_path / "n", "fm-in-container", "gpu-ctr01", speed=0)
    env = {"PATH": f"{root}/bin:/usr/bin:/bin", "LC_ALL": "C", "NVLS_TUI_PROC": f"{root}/proc"}
    out = subprocess.run(["/bin/sh", "-c", probe_script(only=("units", "fm_log"))], env=env, capture_output=True,
                         text=True, timeout=120).stdout
    assert split_probe_output(out)["fm_log"] == (0, fm_log_not_run().output)
    state = assemble_node_state("gpu-ctr01", sections, simulated=True)
    assert state.missing_section("fm_log") is not None  # not read: unknown, and the diagnosis needs none of it
    assert not [f for f in diagnose(state).findings if "Fabric Manager's journal" in f.message]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(("kernel_says", "status", "asked"), [
    ("No journal files were found.\n", 1, False),  # no journal at all: FM's journalctl would say the same
    ("No journal files were opened due to insufficient permissions.\n", 1, True),  # FM's may differ: asked
    ("-- No entries --\n", 0, True),
])
def test_fm_s_journalctl_is_not_run_where_the_kernel_s_found_no_journal_at_all(tmp_path, shell, kernel_says,
                                                                              status, asked):
    from nvls_tui.poll.evidence import FAILED, missing_evidence
    from nvls_tui.poll.probe import JOURNAL_NONE_NOT_RUN, journal_absent

    log = tmp_path / "log"
    (tmp_path / "journal.out").write_text(kernel_says)
    (tmp_path / "journalctl").write_text(f'#!/bin/sh\necho "$1" >> "{log}"\ncat {tmp_path / "journal.out"}\n'
                                         f"exit {status}\n")
    (tmp_path / "dmesg").write_text("#!/bin/sh\necho '[    0.000000] Linux version 6.8.0'\n")
    for tool in ("journalctl", "dmesg"):
        (tmp_path / tool).chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))}
    out = subprocess.run([shell, "-c", probe_script(only=("kernel", "ring", "fm_log"))], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stderr == ""
    sections = split_probe_output(out.stdout)
    assert log.read_text().split() == (["-k", "-u"] if asked else ["-k"])  # -u: FM's unit journal
    assert sections["ring"][0] == 0 and "ring first 0.000000 1" in sections["ring"][1]  # the ring is read as before
    read = {n: CommandResult(section_argv(n), s, t) for n, (s, t) in sections.items()}
    assert journal_absent(read) is (not asked)  # the other backends decide as the script does
    if not asked:
        assert sections["fm_log"] == (0, JOURNAL_NONE_NOT_RUN + "\n")
        # Read as journalctl's own words were: no journal on the node (unknown), never "no FM errors".
        why = missing_evidence("fm_log", read["fm_log"])
        assert why is not None and why.reason == FAILED and "no journal" in why.detail

