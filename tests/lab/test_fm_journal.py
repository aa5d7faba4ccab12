"""Issue 27 acceptance, the poll's side: Fabric Manager's unit journal is a poll section (``fm_log``), so
``check`` says FM_LOG_ERROR and FM's own FM_VERSION_MISMATCH words exactly as ``analyze`` does for the same text.

Real where it can be: the simulated nodes' FM journal entries are written into a real journal file
(systemd-journal-remote, from journald's export format) and read back with the real journalctl by the
section's own command line; the simulator's journalctl must print the same text. The remote script's
section runs in a real ``sh`` around that real journalctl. Fail closed: where the section is needed (a host
FM unit) and cannot be read it is EVIDENCE_MISSING (fm_log) [warning]; where no host FM unit can log (FM in
the driver pod, GB200, the real one-GPU H200 VM) it adds nothing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.backends import local as local_module
from nvls_tui.backends.base import BackendOptions
from nvls_tui.backends.local import LocalBackend
from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import CommandResult, Severity, Verdict
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.evidence import NOT_RUN, OVER_CAP, PERMISSION, TIMED_OUT, TOOL_MISSING
from nvls_tui.poll.fm_journal import read_fm_journal, since_last_start
from nvls_tui.poll.probe import FM_LOG_ARGV, FM_LOG_BYTES, FM_LOG_LINES, SECTIONS
from nvls_tui.poll.probe_output import SectionReader, split_probe_output
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.sim import systemd
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.render_system import JOURNAL_HINT
from nvls_tui.sim.state import Node

FM = "nvidia-fabricmanager.service"
JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
BOOT_ID = "0f3c1a2b4d5e6f708192a3b4c5d6e7f8"
NONCE = "fmlog0"


def _real_tools() -> None:
    if not JOURNAL_REMOTE.exists() or shutil.which("journalctl") is None:
        pytest.skip("systemd-journal-remote and journalctl are needed (scripts/system-deps.sh installs them)")


def _sim(target: str) -> tuple[SimulatedBackend, Node, float]:
    fleet = load_fleet(target, speed=0)
    (backend,) = sim_backends(fleet)
    name = fleet.names[0]
    return backend, fleet.node(name), fleet.clock.now()


def _field(name: str, value: str) -> bytes:
    data = value.encode()
    if b"\n" in data:  # export format: a value with a newline goes as its length and bytes
        return name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
    return name.encode() + b"=" + data + b"\n"


def export(node: Node, now: float) -> bytes:
    """The node's FM unit journal in journald's export format: FM's lines in the unit's cgroup (stdout),
    systemd's about the unit from PID 1 (UNIT=), as journalctl -u selects them."""
    out = []
    for e in sorted((e for e in node.journal if e.unit == FM and e.ts <= now), key=lambda e: (e.ts, e.seq)):
        fields = [("__REALTIME_TIMESTAMP", str(round(node.clock(e.ts) * 1e6))),
                  ("__MONOTONIC_TIMESTAMP", str(round((e.ts - node.boot) * 1e6))), ("_BOOT_ID", BOOT_ID),
                  ("_HOSTNAME", node.name), ("SYSLOG_IDENTIFIER", e.ident), ("_PID", str(e.pid or 1)),
                  ("PRIORITY", "6")]
        if e.ident == "systemd":
            fields += [("UNIT", FM), ("_TRANSPORT", "journal")]
        else:
            fields += [("_SYSTEMD_UNIT", FM), ("_TRANSPORT", "stdout")]
        fields.append(("MESSAGE", e.text))
        out.append(b"".join(_field(k, v) for k, v in fields) + b"\n")
    return b"".join(out)


def real_journal(tmp: Path, node: Node, now: float) -> Path:
    """A real journal file holding the node's FM unit journal (written by systemd-journal-remote)."""
    _real_tools()
    source = tmp / "fm.export"
    source.write_bytes(export(node, now))
    out = tmp / "fm.journal"
    subprocess.run([str(JOURNAL_REMOTE), "-o", str(out), str(source)], capture_output=True, check=True, timeout=60)
    return out


def real_journalctl(journal: Path, argv: tuple[str, ...], tz: str = "UTC") -> CommandResult:
    """The section's journalctl, run for real over ``journal`` (stderr merged, as the script's 2>&1)."""
    done = subprocess.run(["journalctl", "--file", str(journal), *argv[1:]], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TZ": tz})
    return CommandResult(argv, done.returncode, done.stdout + done.stderr)


def sim_journalctl(node_target: str, argv: tuple[str, ...] = FM_LOG_ARGV) -> CommandResult:
    fleet = load_fleet(node_target, speed=0)
    result = fleet.run(fleet.names[0], list(argv))
    return CommandResult(argv, result.exit_status, result.stdout + result.stderr)


def finding(state, code: str):
    return next((f for f in diagnose(state).findings if f.code == code), None)


def analyzed(text: str, code: str) -> dict:
    entry = analyze_text(text, "fm-journal.txt")
    assert entry["kind"] == "fabricmanager-log", entry
    return next(f for f in entry["findings"] if f["code"] == code)


async def _sections(target: str) -> tuple[SimulatedBackend, dict[str, CommandResult]]:
    backend, _, _ = _sim(target)
    return backend, await backend.read_sections()


def _state(host: str, sections: dict[str, CommandResult]):
    return assemble_node_state(host, sections, simulated=True)


# -- the section -----------------------------------------------------------------------------------------------

def test_the_fm_log_section_is_one_journalctl_of_the_unit_this_boot_bounded_in_lines():
    (section,) = [s for s in SECTIONS if s.name == "fm_log"]
    assert section.argv == ("journalctl", "-u", FM, "-b", "-o", "short-iso", "--no-pager", "-n", str(FM_LOG_LINES))
    assert section.privileged and section.fallback is None
    # -q would hide journalctl's hint to a user who cannot read the system journal: never asked for.
    assert "-q" not in section.argv and "--quiet" not in section.argv


def test_the_remote_script_runs_the_section_as_one_journalctl_keeping_its_status():
    """One process on the node (no `capped` pipeline around it): its lines bounded by -n there, its bytes
    where it is read."""
    script = probe_script(nonce=NONCE, only=("fm_log",), sudo=True)
    # (Not asked at all where a journalctl of the same poll timed out: tests/sshd/test_hung_journal.py.)
    assert (f"else sudo -n journalctl -u {FM} -b -o short-iso --no-pager -n {FM_LOG_LINES} 2>&1; rc=$?; "
            "case $rc in 124) jh=fm_log;; esac; fi\n"
            'echo "$m end fm_log $rc"') in script
    assert "capped" not in script.split('begin fm_log"', 1)[1]


def test_only_the_lines_after_the_units_last_start_are_kept():
    text = ("2026-12-02T08:00:00+0000 gpu05 systemd[1]: Starting nvidia-fabricmanager.service - NVIDIA fabric manager service...\n"
            "2026-12-02T08:00:02+0000 gpu05 nv-fabricmanager[10]: [Dec 02 2026 08:00:02] [ERROR] [tid 1] old error\n"
            "2026-12-02T09:00:00+0000 gpu05 systemd[1]: Starting NVIDIA fabric manager service...\n"
            "2026-12-02T09:00:02+0000 gpu05 nv-fabricmanager[11]: [Dec 02 2026 09:00:02] [WARNING] [tid 2] new warning\n")
    assert since_last_start(text) == text.splitlines(keepends=True)[-1]
    journal, why = read_fm_journal(CommandResult(FM_LOG_ARGV, 0, text))
    assert why is None and journal is not None
    assert [(p.level, p.message) for p in journal.problems] == [("WARNING", "new warning")]
    # FM's own words that mention starting never move the cut; only systemd's (PID 1) line does.
    fm_said = "2026-12-02T09:00:03+0000 gpu05 nv-fabricmanager[11]: Starting fabric manager\n"
    assert since_last_start(text + fm_said) == text.splitlines(keepends=True)[-1] + fm_said
    # No start line among the lines read: the last start is older than all of them, every line counts.
    assert since_last_start(text.splitlines(keepends=True)[1]) == text.splitlines(keepends=True)[1]


def test_a_forking_units_started_line_does_not_move_the_cut_but_a_simple_units_does():
    """FM's own unit is Type=forking: systemd says Starting, FM configures, then Started; the lines between are
    this start's. A unit that goes straight to active (Type=simple, as the lab's) says only Started."""
    forking = ("2026-12-02T09:00:00+0000 gpu05 systemd[1]: Starting nvidia-fabricmanager.service - NVIDIA fabric manager service...\n"
               "2026-12-02T09:00:01+0000 gpu05 nv-fabricmanager[11]: Successfully configured all the available NVSwitches to route GPU NVLink traffic.\n"
               "2026-12-02T09:00:02+0000 gpu05 systemd[1]: Started nvidia-fabricmanager.service - NVIDIA fabric manager service.\n"
               "2026-12-02T09:10:00+0000 gpu05 nv-fabricmanager[11]: [Dec 02 2026 09:10:00] [WARNING] [tid 2] late\n")
    assert since_last_start(forking) == "".join(forking.splitlines(keepends=True)[1:])
    journal, _ = read_fm_journal(CommandResult(FM_LOG_ARGV, 0, forking))
    assert journal is not None and journal.configured and [p.message for p in journal.problems] == ["late"]
    simple = ("Dec 02 09:00:00 lab1 systemd[1]: Started NVIDIA fabric manager service.\n"
              "Dec 02 09:00:01 lab1 nv-fabricmanager[11]: [Dec 02 2026 09:00:01] [ERROR] [tid 2] old\n"
              "Dec 02 09:05:00 lab1 systemd[1]: Stopped NVIDIA fabric manager service.\n"
              "Dec 02 09:05:01 lab1 systemd[1]: Started NVIDIA fabric manager service.\n"
              "Dec 02 09:05:02 lab1 nv-fabricmanager[12]: [Dec 02 2026 09:05:02] [ERROR] [tid 3] new\n")
    assert since_last_start(simple) == simple.splitlines(keepends=True)[-1]


# -- the simulator's journalctl against the real one -------------------------------------------------------------

@pytest.mark.parametrize("target", ["sim:fm-log-errors/gpu-fmlog01", "sim:version-mismatch/gpu-ver01",
                                    "sim:fm-restarters/gpu-nr01", "sim:healthy/hgx01", "sim:fm-flapping/gpu-flap01"])
def test_the_simulators_fm_journal_prints_what_the_real_journalctl_prints(target, tmp_path):
    _, node, now = _sim(target)
    real = real_journalctl(real_journal(tmp_path, node, now), FM_LOG_ARGV, node.tz)
    sim = sim_journalctl(target)
    assert (sim.exit_status, sim.stdout) == (real.exit_status, real.stdout)
    assert real.exit_status == 0 and f" {node.name} " in real.stdout


def test_fms_start_times_read_from_the_real_journalctl_are_every_start_of_the_flapping_scenario(tmp_path):
    """Issue 40: the autopilot counts FM's starts by systemd's Started lines; read from what the real journalctl
    prints of sim:fm-flapping's journal: its start at boot and its three restarts by hand."""
    _, node, now = _sim("sim:fm-flapping/gpu-flap01")
    real = real_journalctl(real_journal(tmp_path, node, now), FM_LOG_ARGV, node.tz)
    journal, why = read_fm_journal(real)
    assert why is None and journal is not None
    fm = node.units[FM]
    assert len(journal.starts) == 4 and abs(journal.starts[-1] - (fm.active_enter + 1.5)) < 1.0


def test_the_version_mismatch_scenario_logs_fms_real_words():
    out = sim_journalctl("sim:version-mismatch/gpu-ver01").stdout
    real = (Path(__file__).parents[1] / "fixtures" / "fm" / "version-mismatch-journal-line-gpu-operator-544.txt").read_text()
    words = real.splitlines()[-1].split(": ", 1)[1].replace("530.30.02", "570.172.08").replace("530.41.03", "580.82.07")
    assert "nv-fabricmanager[" in out and words in out


# -- check and analyze say the same for the same text --------------------------------------------------------------

async def test_check_says_fm_log_error_as_analyze_does_for_the_same_journal():
    _, sections = await _sections("sim:fm-log-errors/gpu-fmlog01")
    state = _state("gpu-fmlog01", sections)
    checked = finding(state, "FM_LOG_ERROR")
    said = analyzed(sections["fm_log"].output, "FM_LOG_ERROR")
    assert checked is not None
    assert (checked.code, str(checked.severity), checked.message) == (said["code"], said["severity"], said["message"])
    assert checked.severity is Severity.ERROR  # multicast team errors: NVLS setup fails
    assert checked.message.startswith("Fabric Manager logged 2 errors after it configured the fabric (multicast team")
    assert "failed to find the GPU handle 12766911663723876521 in the multicast team" in checked.message
    assert diagnose(state).verdict is Verdict.BROKEN
    assert state.fm_journal is not None and state.fm_journal.configured


async def test_check_says_fms_own_version_mismatch_words_as_analyze_does():
    _, sections = await _sections("sim:version-mismatch/gpu-ver01")
    state = _state("gpu-ver01", sections)
    assert state.fm_journal is not None and state.fm_journal.mismatch == ("570.172.08", "580.82.07")
    mismatches = [f for f in diagnose(state).findings if f.code == "FM_VERSION_MISMATCH"]
    said = analyzed(sections["fm_log"].output, "FM_VERSION_MISMATCH")
    assert [(f.code, str(f.severity), f.message) for f in mismatches] == [(said["code"], said["severity"],
                                                                          said["message"])]
    assert "Fabric Manager 570.172.08 does not match driver 580.82.07" in said["message"]


async def test_fms_words_name_the_versions_even_where_its_version_could_not_be_read():
    _, sections = await _sections("sim:version-mismatch/gpu-ver01")
    sections["fm_version"] = CommandResult(sections["fm_version"].argv, 127, "sh: 1: nv-fabricmanager: not found\n")
    state = _state("gpu-ver01", sections)
    (mismatch,) = [f for f in diagnose(state).findings if f.code == "FM_VERSION_MISMATCH"]
    assert "Fabric Manager 570.172.08 does not match driver 580.82.07" in mismatch.message


async def test_fms_old_mismatch_words_do_not_outlive_the_package_that_fixed_it():
    """FM refused at its last start; the matching package is installed since (--version says the driver's):
    FM's words name a binary that is gone, so no mismatch now; the unit is still failed."""
    backend, node, _ = _sim("sim:version-mismatch/gpu-ver01")
    node.fm_version = node.driver
    state = _state("gpu-ver01", await backend.read_sections())
    assert state.fm_journal is not None and state.fm_journal.mismatch == ("570.172.08", "580.82.07")
    codes = {f.code for f in diagnose(state).findings}
    assert "FM_VERSION_MISMATCH" not in codes and "FM_NOT_RUNNING" in codes


async def test_fms_old_mismatch_words_do_not_outlive_a_driver_reloaded_since():
    """FM's words name driver 580.82.07; the driver loaded now is FM's own 570.172.08 (a module reload in this
    boot): the words are older than the driver there now, and --version against the driver says they match."""
    backend, node, _ = _sim("sim:version-mismatch/gpu-ver01")
    node.driver = node.fm_version
    state = _state("gpu-ver01", await backend.read_sections())
    assert state.fm_journal is not None and state.fm_journal.mismatch == ("570.172.08", "580.82.07")
    assert state.driver == state.fm_version == "570.172.08"
    assert "FM_VERSION_MISMATCH" not in {f.code for f in diagnose(state).findings}


async def test_a_restart_of_fm_leaves_its_earlier_errors_behind():
    backend, node, now = _sim("sim:fm-log-errors/gpu-fmlog01")
    systemd.stop(node, FM, now - 60)
    systemd.start(node, FM, now - 55)
    state = _state("gpu-fmlog01", await backend.read_sections())
    assert state.fm_journal is not None and state.fm_journal.problems == () and state.fm_journal.configured
    assert finding(state, "FM_LOG_ERROR") is None


async def test_a_healthy_node_reads_its_fm_journal_and_says_nothing_of_it():
    _, sections = await _sections("sim:healthy/hgx01")
    state = _state("hgx01", sections)
    assert state.fm_journal is not None and state.fm_journal.configured and state.fm_journal.problems == ()
    assert state.missing_section("fm_log") is None
    assert diagnose(state).verdict is Verdict.HEALTHY


def test_check_json_names_fm_log_error(capsys):
    import json

    from nvls_tui.cli import main

    assert main(["check", "sim:fm-log-errors", "--json"]) == 1
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert node["verdict"] == "broken"
    assert [(f["code"], f["severity"]) for f in node["findings"]] == [("FM_LOG_ERROR", "error"),
                                                                      ("HOLDERS_PRESENT", "info")]


# -- the real journal through every transport's reading ------------------------------------------------------------

def _wrapper(tmp: Path, journal: Path) -> Path:
    """A PATH folder whose journalctl is the real one reading ``journal`` (this machine's own journal holds no
    FM unit): the command line is the section's, unchanged."""
    folder = tmp / "bin"
    folder.mkdir(exist_ok=True)
    tool = folder / "journalctl"
    tool.write_text(f'#!/bin/sh\nexec {shutil.which("journalctl")} --file {journal} "$@"\n')
    tool.chmod(0o755)
    return folder


def _script_section(tmp: Path, journal: Path, cap: int = 4 << 20) -> tuple[CommandResult, SectionReader]:
    """The remote script's fm_log section run by a real sh, read back as the SSH backend's reader does."""
    script = probe_script(nonce=NONCE, only=("fm_log",), cap=cap)
    env = {**os.environ, "PATH": f"{_wrapper(tmp, journal)}:{os.environ['PATH']}", "TZ": "UTC"}
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60, env=env).stdout
    reader = SectionReader(NONCE, cap)
    reader.feed(out)
    status, text = reader.finish()["fm_log"]
    assert split_probe_output(out, NONCE)["fm_log"][1] == text
    return CommandResult(FM_LOG_ARGV, -1 if status is None else status, text,
                         truncated=reader.over_cap("fm_log")), reader


def _local_section(monkeypatch, journal: Path) -> CommandResult:
    """The local backend's fm_log section: the real journalctl over ``journal`` (the other commands it runs
    are answered as on a node without them: only this section is looked at)."""
    backend = LocalBackend(BackendOptions())
    monkeypatch.setattr(local_module, "read_nvml", lambda: ("580.82.07", ()))
    monkeypatch.setattr(local_module, "scan_holders", lambda root: ((), (), None))
    monkeypatch.setattr(local_module.os, "geteuid", lambda: 0)

    async def run(argv, timeout=None, *, privileged=False, env=None, stdin=None):
        if tuple(argv) == FM_LOG_ARGV:
            return real_journalctl(journal, FM_LOG_ARGV)
        return CommandResult(tuple(argv), 127, f"sh: 1: {argv[0]}: not found\n")

    monkeypatch.setattr(backend, "run", run)
    return asyncio.run(backend.read_probe()).sections["fm_log"]


def test_the_script_the_local_backend_and_the_simulator_read_the_same_fm_journal(tmp_path, monkeypatch):
    backend, node, now = _sim("sim:fm-log-errors/gpu-fmlog01")
    journal = real_journal(tmp_path, node, now)
    sim_sections = asyncio.run(backend.read_sections())
    script, _ = _script_section(tmp_path, journal)
    local = _local_section(monkeypatch, journal)
    read = [read_fm_journal(r) for r in (script, local, sim_sections["fm_log"])]
    assert read[0] == read[1] == read[2]
    journal_read, why = read[0]
    assert why is None and journal_read is not None and len(journal_read.problems) == 2
    assert script.output == local.output == sim_sections["fm_log"].output


def _long_journal(tmp: Path) -> Path:
    """FM's unit journal whose last FM_LOG_LINES lines pass FM_LOG_BYTES (long inband payloads)."""
    _, node, now = _sim("sim:fm-log-errors/gpu-fmlog01")
    fm = node.units[FM]
    for i in range(FM_LOG_LINES):
        node.log_unit(now - 100 + i * 0.1, FM, "nv-fabricmanager",
                      f"[Dec 02 2026 09:00:00] [INFO] [tid 7] Received an inband message: {'ab' * 400} {i}", fm.main_pid)
    return real_journal(tmp, node, now)


def test_an_fm_journal_past_its_byte_bound_is_read_as_missing_on_every_transport(tmp_path, monkeypatch):
    journal = _long_journal(tmp_path)
    script, reader = _script_section(tmp_path, journal)
    assert not reader.over_cap("fm_log") and script.exit_status == 0  # under the bastion's own cap
    assert script.output.count("\n") == FM_LOG_LINES and len(script.output.encode()) > FM_LOG_BYTES
    local = _local_section(monkeypatch, journal)
    assert local.truncated and local.output == ""  # the local backend drops it at once
    for result in (script, local):
        journal_read, why = read_fm_journal(result)
        assert journal_read is None and why is not None and why.reason == OVER_CAP
        assert why.section == "fm_log" and "256 KiB" in why.detail


# -- fail closed: needed and unread is EVIDENCE_MISSING; not needed adds nothing -----------------------------------

UNREAD = {
    "hint": (CommandResult(FM_LOG_ARGV, 0, "-- No entries --\n", JOURNAL_HINT), PERMISSION),
    "no journalctl": (CommandResult(FM_LOG_ARGV, 127, "sh: 1: journalctl: not found\n"), TOOL_MISSING),
    "timed out": (CommandResult(FM_LOG_ARGV, 124, ""), TIMED_OUT),
    "over the cap": (CommandResult(FM_LOG_ARGV, -1, "", truncated=True), OVER_CAP),
    "not run": (None, NOT_RUN),
}


@pytest.mark.parametrize("case", list(UNREAD))
async def test_an_unread_fm_journal_on_a_host_fm_node_is_evidence_missing(case):
    result, reason = UNREAD[case]
    _, sections = await _sections("sim:fm-log-errors/gpu-fmlog01")
    if result is None:
        del sections["fm_log"]
    else:
        sections["fm_log"] = result
    state = _state("gpu-fmlog01", sections)
    assert state.fm_journal is None
    missing = [f for f in diagnose(state).findings if f.code == "EVIDENCE_MISSING" and f.section == "fm_log"]
    assert [(f.severity, f.reason) for f in missing] == [(Severity.WARNING, reason)]
    assert missing[0].message.startswith("Fabric Manager's journal (journalctl -u nvidia-fabricmanager) could not be read")
    # The errors it would have shown are unknown, never "no errors": the node is not healthy.
    assert finding(state, "FM_LOG_ERROR") is None and diagnose(state).verdict is not Verdict.HEALTHY


async def test_a_healthy_node_whose_fm_journal_cannot_be_read_is_not_healthy():
    _, sections = await _sections("sim:healthy/hgx01")
    sections["fm_log"] = UNREAD["hint"][0]
    assert diagnose(_state("hgx01", sections)).verdict is Verdict.DEGRADED


@pytest.mark.parametrize("target", ["sim:fm-in-container/gpu-ctr01", "sim:gb200-no-fm/gb200-n01"])
async def test_no_host_fm_unit_needs_no_fm_journal(target):
    _, sections = await _sections(target)
    sections["fm_log"] = UNREAD["no journalctl"][0]
    state = _state(target.rsplit("/", 1)[1], sections)
    assert state.missing_section("fm_log") is not None  # not read, and said so in missing...
    assert not [f for f in diagnose(state).findings if f.section == "fm_log"]  # ...but no finding of it


async def test_a_node_without_an_fm_unit_needs_no_fm_journal():
    """The unit is not installed (systemd: not-found): FM_NOT_RUNNING says so; no unit logs anything."""
    backend, node, now = _sim("sim:healthy/hgx01")
    systemd.stop(node, FM, now)
    del node.units[FM]
    sections = await backend.read_sections()
    sections["fm_log"] = UNREAD["no journalctl"][0]
    state = _state("hgx01", sections)
    codes = [(f.code, f.section) for f in diagnose(state).findings]
    assert ("FM_NOT_RUNNING", None) in codes and ("EVIDENCE_MISSING", "fm_log") not in codes


async def test_a_node_whose_journal_refuses_the_user_says_so_for_fm_log_too():
    backend, node, _ = _sim("sim:fm-log-errors/gpu-fmlog01")
    node.journal_access = "hint"
    state = _state("gpu-fmlog01", await backend.read_sections())
    missing = state.missing_section("fm_log")
    assert missing is not None and missing.reason == PERMISSION
    assert finding(state, "FM_LOG_ERROR") is None


# -- over SSH: the one remote script, through a real sshd to the simulated node's shims ---------------------------

def test_check_over_ssh_says_what_check_in_process_says_of_fms_journal(sshd_fleet, capsys):
    """The rig's node runs the poll's one script in a real sh behind a real sshd (its journalctl the shims'):
    the fm_log section crosses the link, is cut from the others by its markers and reads as in process."""
    import json

    from nvls_tui.cli import main

    rig = sshd_fleet(["gpu-fmlog01"], scenario="fm-log-errors", speed=0)
    done = subprocess.run([".venv/bin/nvls-tui", "check", rig.target("gpu-fmlog01"), "--json", *rig.cli_args()],
                          capture_output=True, text=True, timeout=180)
    (over_ssh,) = json.loads(done.stdout)["nodes"]
    main(["check", "sim:fm-log-errors", "--json"])
    (in_process,) = json.loads(capsys.readouterr().out)["nodes"]

    def said(node: dict) -> list[tuple[str, str]]:
        return [(f["code"], f["severity"]) for f in node["findings"]]

    assert said(over_ssh) == said(in_process) == [("FM_LOG_ERROR", "error"), ("HOLDERS_PRESENT", "info")]
    ssh_words = over_ssh["findings"][0]["message"]
    assert ssh_words.startswith("Fabric Manager logged 2 errors after it configured the fabric (multicast team")
    assert ssh_words.endswith("failed to find the GPU handle 12766911663723876521 in the multicast team — stop every "
                              "holder, reset all GPUs and NVSwitches, then restart Fabric Manager (the repair's order)")
    assert not [m for m in over_ssh["missing"] if m["section"] == "fm_log"]


# -- the console ----------------------------------------------------------------------------------------------------

async def test_the_node_screen_lists_fm_log_error_like_any_finding():
    from nvls_tui.console.app import NvlsApp
    from tests.test_console_fakes import fixed_clock
    from tests.waiting import open_node_screen

    app = NvlsApp(sim_backends(load_fleet("sim:fm-log-errors", speed=0)), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu-fmlog01")
        findings = " ".join(str(screen.query_one("#findings").render()).split())
        assert "FM_LOG_ERROR" in findings
        assert "Fabric Manager logged 2 errors after it configured the fabric" in findings


# -- a lab node: the real systemd, journald and journalctl --------------------------------------------------------

LAB_NODE = "gpu08"
"""The shared healthy lab's node that this file reads (tests/lab/conftest.py): test_hung_every_transport.py wedges
the other one's nvidia-smi."""
TEAM_ERROR = "failed to release multicast team with handle 17117060486525261364, cannot find the team"


@pytest.fixture(scope="module")
def fmj_lab(healthy_lab):
    """A healthy lab node, the shared healthy lab's gpu08: ``(folder, LabNode)``."""
    folder, nodes, _slurm = healthy_lab
    return folder, nodes[LAB_NODE]


def _lab_check(folder: Path) -> dict:
    from tests.lab.test_lab import check_json

    return check_json(folder, LAB_NODE)[LAB_NODE]


def _until(what: str, probe, timeout: float = 60.0):
    import time

    from tests.waiting import scaled

    deadline = time.monotonic() + scaled(timeout)
    while True:
        found = probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.mark.lab
@pytest.mark.xdist_group("lab-healthy")
def test_check_reads_a_lab_nodes_real_fm_journal_from_the_units_last_start(fmj_lab):
    """The lab's FM unit runs under the node's real systemd 252 and logs to its real journald: check over
    real SSH reads it healthy; FM's team ERROR logged from inside the unit's cgroup (journald files it under the
    unit) is FM_LOG_ERROR with the words analyze gives the node's own journalctl output; a real restart of the
    unit (Type=simple: systemd says only "Started") leaves it behind."""
    from nvls_tui.lab.machine import node_run

    folder, node = fmj_lab

    def when_healthy() -> dict | None:  # a node just booted may still be registering its fabric
        found = _lab_check(folder)
        return found if found["verdict"] == "healthy" else None

    healthy = _until("the lab node to read healthy", when_healthy, timeout=120.0)
    assert not [m for m in healthy["missing"] if m["section"] == "fm_log"]
    stamp = node_run(node, "date", "+%b %d %Y %H:%M:%S").stdout.strip()
    line = f"[{stamp}] [ERROR] [tid 527118] {TEAM_ERROR}"
    cgroup = "/sys/fs/cgroup/system.slice/nvidia-fabricmanager.service/cgroup.procs"
    # journald files a line under a unit by its sender's cgroup, read while it handles the line: the sender must
    # still be alive then. systemd-cat runs the writer itself (the stream's peer), which stays a moment after
    # writing; under load (CI's lab tier beside the sshd tier) `printf | systemd-cat`, gone at once, left the line
    # unfiled and the wait below timed out.
    node_run(node, "sh", "-c", f'echo $$ > {cgroup} && exec systemd-cat -t nv-fabricmanager '
             'sh -c \'printf "%s\\n" "$0"; sleep 3\' "$1"', "sh", line)

    def unit_journal() -> str | None:
        out = node_run(node, *FM_LOG_ARGV).stdout
        return out if TEAM_ERROR in out else None

    printed = _until("the line in FM's unit journal", unit_journal)
    broken = _lab_check(folder)
    (said,) = [f for f in broken["findings"] if f["code"] == "FM_LOG_ERROR"]
    assert (said["severity"], broken["verdict"]) == ("error", "broken")
    assert said["message"] == analyzed(printed, "FM_LOG_ERROR")["message"]
    assert said["message"].startswith("Fabric Manager logged 1 error after it configured the fabric (multicast team")
    node_run(node, "systemctl", "restart", FM)
    _until("FM's configuration after the restart",
           lambda: since_last_start(node_run(node, *FM_LOG_ARGV).stdout).count("Successfully configured"))
    again = _lab_check(folder)
    assert not [f for f in again["findings"] if f["code"] == "FM_LOG_ERROR"], again["findings"]


async def test_fms_journal_text_is_data_in_the_finding():
    """A line in FM's journal is the node's text: escapes never reach the finding, markup stays literal."""
    _, sections = await _sections("sim:fm-log-errors/gpu-fmlog01")
    hostile = ("2026-12-02T09:30:00+0000 gpu-fmlog01 nv-fabricmanager[4242]: [Dec 02 2026 09:30:00] [ERROR] "
               "[tid 1] failed multicast team \x1b]0;pwned\x07\x1b[2J[bold red]PWNED[/] [@click=app.quit]x[/]\n")
    sections["fm_log"] = CommandResult(FM_LOG_ARGV, 0, sections["fm_log"].stdout + hostile)
    said = finding(_state("gpu-fmlog01", sections), "FM_LOG_ERROR")
    assert said is not None and "\x1b" not in said.message and "\x07" not in said.message
    assert "failed multicast team [bold red]PWNED[/] [@click=app.quit]x[/]" in said.message
