"""The read-only commands that make one poll of a node, and how they travel as one remote script.

Every SSH exec starts a login shell, so a poll runs all its commands in one ``sh`` script whose output
is split back into sections by marker lines. The simulated and local backends run the same argv lists
one by one. Either way the sections go through the same parsers (see ``nvls_tui.poll.assemble``).

What the real tools taught (tests/fixtures/real/nvidia-h200):

- Each section keeps its command's own exit status and its stderr (``2>&1``): a pipeline that ends in
  ``tail`` would report tail's status, and a missing journalctl would read as a clean kernel log.
- procps pads ``ps -o ppid=`` output and refuses a list like ``516,  429``; awk joins the PIDs.
- procps cuts every column but the last to its width (``cgroup`` to 27 characters), so the identity
  (``args`` last) and the cgroup (``cgroup`` last) are read by two ``ps`` runs.
- The marker carries a random nonce per poll, so no text on the node can end a section early.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from nvls_tui.model import CommandResult
from nvls_tui.parsers.restarters import RESTARTER_UNITS
from nvls_tui.poll.evidence import TIMED_OUT_STATUS
from nvls_tui.poll.kernel_tail import (
    KERNEL_LINES,
    KERNEL_PATTERN,
    kernel_argv,
)
from nvls_tui.poll.node_paths import LOCK_DIR, RECORD_FILE, SIMULATED_MARKER, SMOKE_FILE, STATE_DIR

# The node's /dev/nvidia* files, directories (nvidia-caps) left out: the runbook's fuser names these
# only (nvls_tui.runbook.quiesce.present_devices), since a node may lack some of the shared ones.
DEVICE_LIST_ARGV = ("find", "/dev", "-maxdepth", "1", "-name", "nvidia*", "!", "-type", "d")

NEEDRESTART_ARGV = ("grep", "-rH", "--include=*.conf", "^", "/etc/needrestart/needrestart.conf",
                    "/etc/needrestart/conf.d")
APT_PERIODIC_ARGV = ("apt-config", "dump", "APT::Periodic")

UNITS = (
    "nvidia-fabricmanager.service",
    "kubelet.service",
    "nvidia-snapshot.timer",
    "nvidia-snapshot.service",
    "nvidia-dcgm.service",
    "nvidia-persistenced.service",
    # What restarts nvidia-* units behind the operator: apt's daily runs (an upgrade runs needrestart,
    # which restarts services whose libraries changed) and unattended-upgrades (FM_RESTARTER).
    *RESTARTER_UNITS,
)

QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "name",
    "uuid",
    "driver_version",
    "persistence_mode",
    # The MIG mode now and after a reset: a reset commits a pending change (MIG_PENDING); N/A off MIG boards.
    "mig.mode.current",
    "mig.mode.pending",
    "fabric.state",
    "fabric.status",
    "fabric.cliqueId",
    "fabric.clusterUuid",
    "fabric.health.summary",
    # NVML's recovery action (GPU_RECOVERY_ACTION): driver 580.159 knows the field (tests/fixtures/real/h100-1gpu-vm/).
    "gpu_recovery_action",
)
# Asked only where the first query is rejected: drivers 535-550 know fabric.state/status but neither the health
# fields nor the recovery action, and nvidia-smi rejects the whole query for one unknown field. What the fallback
# leaves out stays unread (None), never read as fine.
_NEWER_FIELDS = ("fabric.health.", "gpu_recovery_action")

NVSWITCH_PCI_ID = "10de:22a3"
# Every NVIDIA PCI function with its class and ids (-n): the NVSwitches (10de:22a3) and the GPUs (class
# 03xx), so a GPU on the bus that nvidia-smi does not list is seen (GPU_LOST). By id, not by name: an old
# pci.ids names an NVSwitch "Device 22a3". Numbers only (-n, not -nn, since issue 37): no name is read,
# and -n makes lspci look none up (pci.ids or udev's hwdb), on every poll.
NVIDIA_PCI_VENDOR = "10de:"
MARK = "@@nvls-tui"
# A wedged journald (issue 25): once a journalctl of a poll timed out, the poll's later journalctl sections
# are not run (each would wait out a whole --timeout more, and the poll would pass its deadline). They read
# timed out, and say where journalctl hung in this line; the script keeps that section's name in $jh.
JOURNAL_TOOL = "journalctl"
JOURNAL_HUNG_LINE = "-- nvls-tui not run: journalctl did not answer in the {} section"
JOURNAL_HUNG_EXIT = 4
# A node with no journal at all (no journald, a container): the kernel section's journalctl says so
# (JOURNAL_NONE_LINE, exit 1) and its awk exits JOURNAL_NONE_EXIT; FM's journalctl would read the same
# no-journal and cost the node another journalctl (~5 ms, its own start), so it is not run: fm_log then
# prints JOURNAL_NONE_NOT_RUN, which names journalctl's words and reads as they did (FAILED, evidence.py).
JOURNAL_NONE_LINE = "No journal files were found."
JOURNAL_NONE_EXIT = 5
JOURNAL_NONE_NOT_RUN = f"-- nvls-tui not run: the kernel section found no journal on the node: {JOURNAL_NONE_LINE}"
# journald keeps its files in these folders and nowhere else (volatile, then persistent storage), and journalctl
# reads them from there. Where neither holds a file (each absent beneath a folder the shell can search, or an
# empty folder it can read: a container without journald, whose systemd package left /var/log/journal empty), the
# kernel section does not start journalctl (~1-2 ms of CPU, its own start) and says so in JOURNAL_NO_FILES_LINE
# with journalctl's exit status for that answer (1), read as journalctl's own "No journal files were found."
# (journal_absent; evidence.py). Fail closed: a folder that exists but cannot be read, or whose parent cannot
# be searched, still runs journalctl.
JOURNAL_DIRS = ("/run/log/journal", "/var/log/journal")
# The folder those paths are taken under (default: the node's /): a shell serving a simulated node (the
# shims behind a real sshd) has one of its own, DIR (nvls_tui.sim.shims), as it has its own /proc.
JOURNAL_ROOT_ENV = "NVLS_TUI_JOURNAL_ROOT"
JOURNAL_NO_FILES_LINE = (f"-- nvls-tui journalctl not run: {' and '.join(JOURNAL_DIRS)} hold no file: "
                         f"{JOURNAL_NONE_LINE}")
_JOURNAL_HUNG = re.compile(r"^-- nvls-tui not run: journalctl did not answer in the (\w+) section$", re.M)
# The sections held in shell variables (the gpus fallback, the holders table the PID list is read from)
# are cut on the node: an nvidia-smi that printed without end grew the poll's
# `sh` to 1.7 GB in 8 s, long before the bastion's own cap could see a byte of it. `capped N CMD...` runs
# CMD (stderr merged) through `head -c`, which stops it (SIGPIPE) past N bytes; its exit status travels
# after its output, as the last line, so the pipeline keeps it (dash has no PIPESTATUS). The `.` after
# head keeps the command substitution from eating trailing newlines: only a whole answer ends in a
# status, so one that reached head's limit, or whose text alone passes N, is over the cap ($rc then
# reads OVER_CAP_WORD and $out is empty). Otherwise $out is the text without its trailing newlines, as
# `$(CMD)` gave it.
OVER_CAP_WORD = "over-cap"
# The default cap of one section (4 MiB, as --max-output's default).
SECTION_CAP = 4 << 20

# Fabric Manager's unit journal of this boot, its last FM_LOG_LINES entries (FM_LOG_ERROR, and FM's own
# version-mismatch words): one journalctl, no second call for the unit's start time; the lines before
# the unit's last start are dropped when read (nvls_tui.poll.fm_journal). Bounded in lines on the node
# and in bytes where it is read (FM_LOG_BYTES, nvls_tui.poll.fm_journal.over_bound, every transport):
# FM's inband messages carry multi-line payloads, and a line may be as long as journald keeps. Past the
# bound the section is over the cap (unknown, never "no errors"). Not cut on the node with `capped`:
# that costs the node three processes more per poll (a subshell, the pipeline's, head) than the one
# journalctl, and the bastion's section cap already stops a section that floods.
FM_UNIT_NAME = "nvidia-fabricmanager.service"
FM_LOG_LINES = 400
FM_LOG_BYTES = 256 << 10
FM_LOG_ARGV = ("journalctl", "-u", FM_UNIT_NAME, "-b", "-o", "short-iso", "--no-pager", "-n", str(FM_LOG_LINES))


@dataclass(frozen=True, slots=True)
class Section:
    """One read-only command of a poll.

    Attributes:
        name: key of the section in the probe output.
        argv: the command.
        privileged: needs root on a real node (prefixed with ``sudo -n`` when asked).
        fallback: run instead when ``argv`` fails (an older tool that rejects a newer option).
    """

    name: str
    argv: tuple[str, ...]
    privileged: bool = False
    fallback: tuple[str, ...] | None = None


RING_ARGV = ("dmesg",)
# The node's boot and the seconds since it (/proc/uptime): a smoke record of another boot, or one
# written before the clock was stepped, dates nothing (nvls_tui.diagnosis.kernel.smoke_distrust).
BOOT_ARGV = ("cat", "/proc/sys/kernel/random/boot_id", "/proc/uptime")

SECTIONS: tuple[Section, ...] = (
    Section("identity", ("id", "-u")),
    # Drivers 535-550 know fabric.state/status but no fabric.health.* (nor gpu_recovery_action), and nvidia-smi
    # rejects the whole query for one unknown field: ask again without them.
    Section("gpus", ("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv"),
            fallback=("nvidia-smi", f"--query-gpu={','.join(f for f in QUERY_FIELDS if not f.startswith(_NEWER_FIELDS))}",
                      "--format=csv")),
    Section("fm_version", ("nv-fabricmanager", "--version")),
    Section(
        "units",
        ("systemctl", "show", "--no-pager",
         "-p", "Id,LoadState,ActiveState,SubState,MainPID,Result,ActiveEnterTimestamp,InactiveEnterTimestamp,NRestarts,"
               "ExecMainCode,ExecMainStatus",
         *UNITS),
    ),
    Section("nvswitches", ("lspci", "-D", "-n", "-d", NVIDIA_PCI_VENDOR)),
    # The glob is expanded by the remote shell (or by the local and simulated backends).
    Section("holders", ("fuser", "-v", "/dev/nvidia*"), privileged=True),
    # The whole boot's; a poll of a node read before starts at its cursor (kernel_tail.KernelTail).
    Section("kernel", kernel_argv(), privileged=True),
    # The kernel ring buffer, where the journal does not reach back to the boot or cannot be read
    # (rotated, vacuumed, volatile, absent): its [seconds] stamps are mapped to the node's clock by its
    # boot time (the ``boot`` and ``clock`` sections). The script skips it where the journal covers the boot.
    Section("ring", RING_ARGV, privileged=True),
    # FM's own words since the unit's last start (see FM_LOG_ARGV); root or the systemd-journal group reads it.
    Section("fm_log", FM_LOG_ARGV, privileged=True),
    # needrestart's configuration, its own file then conf.d's (grep -H names each line's file; stderr says
    # which are absent), and whether apt's daily run installs upgrades unattended (FM_RESTARTER). Re-read
    # only when their files changed (CONFIG_STAMP_ARGV): the bastion keeps the last answer.
    Section("needrestart", NEEDRESTART_ARGV),
    Section("apt", APT_PERIODIC_ARGV),
    # The small files, the boot's too, are read by one `cat` (FILE_SECTIONS).
    Section("record", ("cat", RECORD_FILE)),
    Section("smoke", ("cat", SMOKE_FILE)),
    Section("simulated", ("cat", SIMULATED_MARKER)),
    # Read just before the clock, so that a slow read makes the clock look stepped forward, never back.
    Section("boot", BOOT_ARGV),
    # The node's own clock: kernel lines and unit times are on it, so "5 days ago" is read against it.
    Section("clock", ("date", "-u", "+%Y-%m-%dT%H:%M:%SZ")),
)
# The sections that print a file as it is (a smoke record written by hand with printf has no final newline):
# the script prints one newline more before their end marker, which must start a line to count, and both
# readers take that newline off again, so the text is the file's to the byte. A capture of an older probe
# loses its last newline there instead (nothing reads it).
NEWLINE_ADDED = ("record", "smoke", "simulated")
# The sections that print small files (a `cat` each before issue 37): one `cat` reads them all, with a
# here-document between two files (read by cat as /proc/self/fd/N: the boot section needs /proc anyway,
# where /dev/fd may be missing in a bare container) that carries the end marker of one section
# and the begin marker of the next. cat's one exit status cannot say which file failed, so their end
# markers carry FILE_STATUS_WORD and the readers take each status from its text (:func:`file_status`).
# Builtins (`read`) are no way out: the simulator's shims answer these reads as a `cat`, and dash reads
# one byte per read(2).
FILE_SECTIONS = ("record", "smoke", "simulated", "boot")
FILE_STATUS_WORD = "text"
# cat's complaint about one of its files ("cat: PATH: No such file or directory", "Permission denied").
_CAT_COMPLAINT = re.compile(r"^(?:\S*/)?cat: \S.*: \S")
# What the needrestart and apt sections read, stamped by one `find` (each file's and folder's size,
# mtime and ctime; no path: the stamp travels to the node with every poll, and a file added, removed or
# renamed changes its folder's times): the script re-reads them only when the stamp differs from the one the
# bastion sent (the last it saw with a complete answer), and then prints the new stamp as the
# CONFIG_STAMP section. A stamp with any line but a file's or find's "No such file" (a folder it could
# not read, find missing or failing) is no stamp: the configuration is re-read and nothing is kept.
CONFIG_PATHS = ("/etc/needrestart", "/etc/apt/apt.conf", "/etc/apt/apt.conf.d")
CONFIG_STAMP_ARGV = ("find", *CONFIG_PATHS, "-maxdepth", "2", "-printf", "f %s %T@ %C@\\n")
CONFIG_STAMP = "config_stamp"
CONFIG_SECTIONS = ("needrestart", "apt")
# The end word of a section the node did not re-read (its files did not change since the stamp).
UNCHANGED_WORD = "unchanged"
# A stamp longer than this is not sent back (a conf.d of thousands of files): such a node re-reads.
CONFIG_STAMP_MAX = 16 << 10


def file_status(text: str) -> int:
    """The exit status of one file of the probe's shared ``cat``, from what it printed for that file:
    1 where its first or last line is cat's complaint (absent, denied, a folder), else 0."""
    lines = text.splitlines()
    return 1 if lines and (_CAT_COMPLAINT.match(lines[0]) or _CAT_COMPLAINT.match(lines[-1])) else 0


# The sections that run journalctl, in the poll's order (the kernel's first).
JOURNAL_SECTIONS = tuple(s.name for s in SECTIONS if s.argv[0] == JOURNAL_TOOL)
# Filled per poll from the holders section (their identities and cgroups): see ps_argv, cgroup_argv.
# ``jobs``: ``scontrol listpids`` (which PID belongs to which Slurm job), only where there are holders
# and scontrol is installed, so a node without Slurm starts no process for it.
DERIVED_SECTIONS = ("processes", "cgroups", "jobs")
SECTION_NAMES = tuple(s.name for s in SECTIONS) + DERIVED_SECTIONS

# The identity of a process, args last so procps never cuts it: pid ppid user lstart(5 words) args.
PS_FORMAT = "pid=,ppid=,user:32=,lstart=,args="
CGROUP_FORMAT = "pid=,cgroup="


def _pid_list(pids: list[int]) -> str:
    return ",".join(str(int(p)) for p in pids)


# procps's -q ("quick pid", procps-ng >= 3.3.7) reads only the listed PIDs; -p reads every process
# of the node and then picks (each ps of a poll cost a busy H200 ~8 ms of CPU with -p). The poll asks
# with -q and falls back to -p where ps refuses it.
QUICK, PICK = "-q", "-p"


def ps_argv(pids: list[int], select: str = PICK) -> tuple[str, ...]:
    """``ps`` for the given PIDs, one line each: pid ppid user lstart(5 words) args."""
    return ("ps", "-ww", "-o", PS_FORMAT, select, _pid_list(pids))


def cgroup_argv(pids: list[int], select: str = PICK) -> tuple[str, ...]:
    """``ps`` of the given PIDs' cgroups, the cgroup last so that procps prints it whole."""
    return ("ps", "-ww", "-o", CGROUP_FORMAT, select, _pid_list(pids))


def ppid_argv(pids: list[int], select: str = PICK) -> tuple[str, ...]:
    """The parents of the given PIDs (procps pads each one: parse, never paste)."""
    return ("ps", "-o", "ppid=", select, _pid_list(pids))


def parents_from(ppid_output: str, pids: list[int]) -> list[int]:
    """The parents ``ppid_argv(pids)`` printed, as the script keeps them: init and ``pids`` left out."""
    return sorted({int(w) for w in ppid_output.split() if w.isdecimal()} - set(pids) - {0, 1})


def new_nonce() -> str:
    """A fresh random marker suffix for one poll."""
    return secrets.token_hex(8)


# Where systemd knows no Fabric Manager unit (``systemctl show``: ``LoadState=not-found``, the node's units
# section read whole), FM's unit journal is not read: no unit logs under that name, the diagnosis does not
# read it there (diagnosis.fabric_manager.fm_log_needed), and journalctl costs the node ~5 ms of CPU each
# poll (most of it journalctl's own start). The section then says so in this line, and reads as not run.
FM_LOG_NOT_RUN_LINE = f"-- nvls-tui not run: systemd has no {FM_UNIT_NAME} (LoadState=not-found)"


def fm_unit_absent(units: CommandResult | None) -> bool:
    """Whether a units section (answered whole, status 0) says systemd has no Fabric Manager unit: the
    block of ``Id=FM_UNIT_NAME`` holds ``LoadState=not-found``. What the script decides with builtins."""
    if units is None or units.exit_status != 0 or units.truncated:
        return False
    for block in units.output.split("\n\n"):
        lines = block.splitlines()
        if f"Id={FM_UNIT_NAME}" in lines:
            return "LoadState=not-found" in lines
    return False


def journal_absent(sections: Mapping[str, CommandResult]) -> bool:
    """Whether the kernel section found no journal at all: journalctl said so (:data:`JOURNAL_NONE_LINE`), or
    the node's script did not start it, none of :data:`JOURNAL_DIRS` holding a file (:data:`JOURNAL_NO_FILES_LINE`).
    FM's journal is then not asked (:func:`fm_log_no_journal`), as the script does."""
    kernel = sections.get("kernel")
    if kernel is None:
        return False
    lines = kernel.output.splitlines()
    return JOURNAL_NONE_LINE in lines or JOURNAL_NO_FILES_LINE in lines


def fm_log_no_journal() -> CommandResult:
    """The fm_log section where :func:`journal_absent`: not run, in journalctl's own words (what the script prints)."""
    return CommandResult(section_argv("fm_log"), 0, JOURNAL_NONE_NOT_RUN + "\n")


def fm_log_not_run() -> CommandResult:
    """The fm_log section where :func:`fm_unit_absent`: not run, saying why (what the script prints)."""
    return CommandResult(section_argv("fm_log"), 0, FM_LOG_NOT_RUN_LINE + "\n")


def journal_hung_in(result: CommandResult | None) -> str | None:
    """The section where journalctl hung, when ``result`` is a journal section the poll did not run for
    that reason (:data:`JOURNAL_HUNG_LINE`); else None."""
    if result is None or result.exit_status != TIMED_OUT_STATUS:
        return None
    found = _JOURNAL_HUNG.search(result.output)
    return found.group(1) if found is not None and found.group(1) in SECTION_NAMES else None


def journal_hung(sections: Mapping[str, CommandResult]) -> str | None:
    """The journal section of a poll whose journalctl timed out (read so far), or None: the poll's later
    journalctl sections are then not run (see :func:`journal_not_run`)."""
    for name in JOURNAL_SECTIONS:
        result = sections.get(name)
        if result is not None and result.exit_status == TIMED_OUT_STATUS:
            return journal_hung_in(result) or name
    return None


def journal_not_run(name: str, hung: str) -> CommandResult:
    """Journal section ``name``, not run because journalctl timed out in section ``hung`` of the same poll:
    timed out, saying where (what the script prints for it)."""
    return CommandResult(section_argv(name), TIMED_OUT_STATUS, JOURNAL_HUNG_LINE.format(hung) + "\n")


def section_argv(name: str) -> tuple[str, ...]:
    """The command a section runs (for results and messages)."""
    for section in SECTIONS:
        if section.name == name:
            return section.argv
    return {"processes": ("ps", "-ww", "-o", PS_FORMAT), "cgroups": ("ps", "-ww", "-o", CGROUP_FORMAT),
            "jobs": ("scontrol", "listpids")}.get(
        name, ("sh",))


__all__ = [
    "NEWLINE_ADDED",
    "CONFIG_PATHS",
    "CONFIG_SECTIONS",
    "CONFIG_STAMP",
    "CONFIG_STAMP_ARGV",
    "CONFIG_STAMP_MAX",
    "FILE_SECTIONS",
    "FILE_STATUS_WORD",
    "UNCHANGED_WORD",
    "file_status",
    "DERIVED_SECTIONS",
    "DEVICE_LIST_ARGV",
    "FM_LOG_ARGV",
    "FM_LOG_NOT_RUN_LINE",
    "FM_LOG_BYTES",
    "FM_LOG_LINES",
    "JOURNAL_HUNG_EXIT",
    "JOURNAL_NONE_EXIT",
    "JOURNAL_NONE_LINE",
    "JOURNAL_NONE_NOT_RUN",
    "JOURNAL_DIRS",
    "JOURNAL_NO_FILES_LINE",
    "JOURNAL_ROOT_ENV",
    "JOURNAL_HUNG_LINE",
    "JOURNAL_SECTIONS",
    "JOURNAL_TOOL",
    "KERNEL_LINES",
    "KERNEL_PATTERN",
    "LOCK_DIR",
    "QUERY_FIELDS",
    "RECORD_FILE",
    "OVER_CAP_WORD",
    "SECTIONS",
    "SECTION_CAP",
    "SECTION_NAMES",
    "SIMULATED_MARKER",
    "SMOKE_FILE",
    "STATE_DIR",
    "cgroup_argv",
    "fm_log_no_journal",
    "fm_log_not_run",
    "journal_absent",
    "fm_unit_absent",
    "journal_hung",
    "journal_hung_in",
    "journal_not_run",
    "new_nonce",
    "parents_from",
    "ppid_argv",
    "ps_argv",
    "section_argv",
]
