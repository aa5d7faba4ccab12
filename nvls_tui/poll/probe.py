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
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from nvls_tui.model import CommandResult
from nvls_tui.parsers.restarters import RESTARTER_UNITS
from nvls_tui.poll.evidence import TIMED_OUT_STATUS
from nvls_tui.poll.kernel_tail import (
    CURSOR,
    FIRST_LINE,
    KERNEL_LINES,
    KERNEL_PATTERN,
    NOTE_LINES,
    RING_FIRST,
    RING_NEEDED,
    RING_SKIPPED,
    VISITED_LINE,
    kernel_argv,
)

STATE_DIR = "/var/lib/nvls-tui"
RECORD_FILE = f"{STATE_DIR}/repair.json"
SMOKE_FILE = f"{STATE_DIR}/last-smoke.json"
# A simulated node (shims behind a real sshd) carries this file, so it is labelled as simulated.
SIMULATED_MARKER = f"{STATE_DIR}/SIMULATED"
LOCK_DIR = f"{STATE_DIR}/lock"
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
# Every NVIDIA PCI function with its class and ids (-nn): the NVSwitches (10de:22a3) and the GPUs (class
# 03xx), so a GPU on the bus that nvidia-smi does not list is seen (GPU_LOST). By id, not by name: an old
# pci.ids names an NVSwitch "Device 22a3".
NVIDIA_PCI_VENDOR = "10de:"
MARK = "@@nvls-tui"
# A wedged journald (issue 25): once a journalctl of a poll timed out, the poll's later journalctl sections
# are not run (each would wait out a whole --timeout more, and the poll would pass its deadline). They read
# timed out, and say where journalctl hung in this line; the script keeps that section's name in $jh.
JOURNAL_TOOL = "journalctl"
JOURNAL_HUNG_LINE = "-- nvls-tui not run: journalctl did not answer in the {} section"
JOURNAL_HUNG_EXIT = 4
_JOURNAL_HUNG = re.compile(r"^-- nvls-tui not run: journalctl did not answer in the (\w+) section$", re.M)
# fuser -v rows: "... USER PID ACCESS COMMAND"; each PID once, joined by commas (procps's list syntax).
# Shell builtins only (read, set, case): an awk here cost the node a process per poll. Globbing is off
# while the node's own text is split into words, so a command named "*" stays a word.
_PID_LIST = (
    "pids=; set -f",
    "while IFS= read -r l; do set -- $l; while [ $# -gt 1 ]; do",
    "  case $1 in ''|*[!0-9]*) ;; *) case $2 in [.FfRrCcEeMm][.FfRrCcEeMm][.FfRrCcEeMm][.FfRrCcEeMm][.FfRrCcEeMm])",
    # A PID as a number: "007" is 7 (the bastion's parser reads it so), never a second PID; "0" is none.
    '    p=${1#"${1%%[!0]*}"}; case ,$pids, in *,$p,*) ;; *) [ -n "$p" ] && pids=$pids${pids:+,}$p;; esac;;',
    "  esac;; esac; shift",
    "done; done <<NVLS_HOLDERS",
    "$holders",
    "NVLS_HOLDERS",
)
# Their parents (init and the PIDs themselves left out), joined the same way: ps alone, the rest builtins.
_PARENT_LIST = (
    'ppids=; pp=; [ -n "$pids" ] && { pp=$(ps -o ppid= -q "$pids" 2>/dev/null) || pp=$(ps -o ppid= -p "$pids" 2>/dev/null); }',
    "for w in $pp; do",
    "  case $w in ''|*[!0-9]*|0|1) ;; *) case ,$pids,$ppids, in *,$w,*) ;; *) ppids=$ppids${ppids:+,}$w;; esac;; esac",
    "done; set +f",
)
# The kernel log, filtered and bounded on the node in one awk that runs journalctl itself (a pipeline
# would cost a subshell more, to keep journalctl's exit status): journal lines that match the pattern
# (the last KERNEL_LINES of them), journalctl's own messages (its errors and permission hints, at most
# NOTE_LINES), the cursor journalctl ended at, how many entries it visited and whether the first and
# the last of them matched (see nvls_tui.poll.kernel_tail), and the end marker with journalctl's exit
# status: close() gives it (mawk and gawk >= 4.2; older gawk gives it times 256). filter_journal() is
# the same filter in Python. It exits JOURNAL_HUNG_EXIT where journalctl timed out (coreutils timeout's 124):
# the ring buffer is read all the same, and the poll asks no other journalctl. Where the script reads the
# ring section too, this awk reads it as well right after its own end marker (``rcmd``, the ring's dmesg,
# with _RING_FN), whenever it exits non-zero: no second awk for the ring.
_KERNEL_AWK = (
    "function take(s) {if (s ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T/) {v++; h = (s ~ /" + KERNEL_PATTERN
    + "/); if (v == 1) {f = h; ft = s; sub(/ .*/, \"\", ft); fb = (index(s, \"kernel: Linux version \") > 0)}"
    " l = h; if (h) {r[n % " + str(KERNEL_LINES) + "] = s; n++}; pe = 1}"
    " else if (pe && s ~ /^[ \\t]/) {if (l && n) r[(n - 1) % " + str(KERNEL_LINES) + "] = r[(n - 1) % "
    + str(KERNEL_LINES) + "] \"\\n\" s}"
    " else if (index(s, \"-- cursor: \") == 1) {cur = s; pe = 0} else if (index(s, \"-- \") == 1) pe = 0;"
    " else {pe = 0; if (e < " + str(NOTE_LINES) + ") msg[e++] = s}}"
    " BEGIN {while ((cmd | getline s) > 0) take(s); st = close(cmd); if (st >= 256 && st % 256 == 0) st = st / 256;"
    " for (i = 0; i < e; i++) print msg[i]; for (i = (n > " + str(KERNEL_LINES) + " ? n - " + str(KERNEL_LINES)
    + " : 0); i < n; i++) print r[i % " + str(KERNEL_LINES) + "]; if (cur != \"\") print cur;"
    " if (v) print \"" + FIRST_LINE + "\" ft \" \" fb;"
    " print \"" + VISITED_LINE + "\" v + 0 \" first \" f + 0 \" last \" l + 0; print m \" end kernel \" st;"
    " code = st == 124 ? " + str(JOURNAL_HUNG_EXIT) + " : ((st != 0 || (whole && !(v && fb))) ? " + str(RING_NEEDED)
    + " : 0);" + "{RING}" + " exit code}"
)
# Where the script reads the ring too (only then is _RING_FN in the program: awk refuses a call to a
# function it does not define, even one never made).
_KERNEL_RING_CALL = " if (code != 0) {print m \" begin ring\"; ring(rcmd)};"
# The kernel ring buffer, read only where the journal does not cover the boot (the kernel awk exits
# RING_NEEDED): dmesg's own messages, where the buffer starts (its first stamp, and whether that line is
# the boot's first), and the matching lines with the indented lines of their records, bounded as the
# kernel section's. filter_ring() is the same filter in Python.
# As a function of its own names (the kernel awk calls it too, after its own section): ring(CMD) reads
# CMD's output and prints the section's text and its end marker.
_RING_FN = (
    "function ring(c) {while ((c | getline rs) > 0) {if (rs ~ /^\\[ *[0-9]+\\.[0-9]+\\] /) {if (rf == \"\") {rt = rs;"
    " sub(/^\\[ */, \"\", rt); sub(/\\].*/, \"\", rt); rx = rs; sub(/^\\[[^]]*\\] /, \"\", rx);"
    " rf = \"" + RING_FIRST + "\" rt \" \" (index(rx, \"Linux version \") == 1 ? 1 : 0)}"
    " rk = (rs ~ /" + KERNEL_PATTERN + "/); if (rk) {RR[rn % " + str(KERNEL_LINES) + "] = rs; rn++}}"
    " else if (rs ~ /^[ \\t]/ && rs ~ /[^ \\t]/) {if (rk && rn) RR[(rn - 1) % " + str(KERNEL_LINES) + "] = RR[(rn - 1) % "
    + str(KERNEL_LINES) + "] \"\\n\" rs}"
    " else if (rs ~ /[^ \\t]/) {rk = 0; if (re < " + str(NOTE_LINES) + ") RM[re++] = rs}}"
    " rst = close(c); if (rst >= 256 && rst % 256 == 0) rst = rst / 256;"
    " for (ri = 0; ri < re; ri++) print RM[ri]; if (rf != \"\") print rf;"
    " for (ri = (rn > " + str(KERNEL_LINES) + " ? rn - " + str(KERNEL_LINES) + " : 0); ri < rn; ri++) print RR[ri % "
    + str(KERNEL_LINES) + "]; print m \" end ring \" rst}"
)
_RING_AWK = _RING_FN + " BEGIN {ring(cmd)}"
# The poll's user from the shell's own /proc/self/status (effective uid): no process for it; `id -u`
# only where /proc cannot say.
_IDENTITY = ('u=; while read -r k r e _; do [ "$k" = Uid: ] && u=$e; done < /proc/self/status 2>/dev/null',
             'if [ -n "$u" ]; then echo "$u"; rc=0; else id -u 2>&1; rc=$?; fi')
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
_CAPPED = (
    "nl='\n'",
    "capped() { c=$1; shift; out=$({ \"$@\" 2>&1; printf '\\n%s' \"$?\"; } | head -c $((c + 5)); echo .)",
    f"  if [ ${{#out}} -gt $((c + 5)) ]; then out=; rc={OVER_CAP_WORD}; else out=${{out%.}}; rc=${{out##*\"$nl\"}}",
    f"    out=${{out%\"$nl\"*}}; if [ ${{#out}} -gt \"$c\" ]; then out=; rc={OVER_CAP_WORD}; fi",
    "    while [ \"${out%\"$nl\"}\" != \"$out\" ]; do out=${out%\"$nl\"}; done; fi; }",
)
# A capped section's text (none when it was cut) before its end marker.
_PUT_OUT = f"[ \"$rc\" = {OVER_CAP_WORD} ] || printf '%s\\n' \"$out\""
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
# written before the clock was stepped, dates nothing (nvls_tui.diagnosis.node.smoke_distrust).
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
    Section("nvswitches", ("lspci", "-D", "-nn", "-d", NVIDIA_PCI_VENDOR)),
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
_CONFIG_BLOCK = (
    "cs=$({bound}{find} 2>&1); cr=$?; ck=; case $cr in 0|1) [ -n \"$cs\" ] && ck=1;; esac; r=$cs$nl",
    'while [ -n "$r" ]; do l=${{r%%"$nl"*}}; r=${{r#*"$nl"}}',
    '  case $l in "f "*|*"find: "*": No such file or directory") ;; *) ck=;; esac; done',
)


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


def _glob_safe_join(argv: tuple[str, ...]) -> str:
    """shlex.join, except that a fixed ``/dev/nvidia*`` glob is left for the remote shell."""
    return " ".join(a if a == "/dev/nvidia*" else shlex.quote(a) for a in argv)


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


def probe_script(sudo: bool = False, nonce: str = "0", only: tuple[str, ...] | None = None,
                 kernel_cursor: str | None = None, cap: int = SECTION_CAP, section_timeout: float | None = None,
                 journal_hung: str | None = None, config_stamp: str | None = None) -> str:
    """The whole poll as one POSIX sh script.

    Args:
        sudo: prefix the privileged commands with ``sudo -n`` (never prompts).
        nonce: the marker suffix of this poll (letters and digits: :func:`new_nonce`).
        only: the section names to read (default: all); ``processes``/``cgroups`` need ``holders``.
        kernel_cursor: where the node's kernel log was read to (journalctl's cursor); the kernel
            section then reads only what came since. Anything but journalctl's own form is ignored.
        cap: characters a section may print (the bastion's ``--max-output``); the sections held in
            shell variables are cut on the node to fit it (see :data:`OVER_CAP_WORD`).
        section_timeout: seconds each command may run, bounded on the node by coreutils ``timeout``
            (exit 124: the section timed out, the rest still read; no fallback after it). For a
            script nobody watches section by section (one srun); over SSH the bastion ends a hung
            section itself. A node without ``timeout`` runs its commands unbounded: the caller's own
            deadline then ends the whole poll, and the node reads unreachable (unknown, never healthy).
        journal_hung: the section whose journalctl timed out earlier in this poll (an earlier script
            the bastion ended there): the journal sections of this script are not run and read timed
            out, saying so. Within one script the same happens after a journalctl that timed out.
        config_stamp: the stamp of needrestart's and apt's files the bastion saw with its last complete
            answer (the CONFIG_STAMP section of an earlier poll): where the files still match it, their
            sections end in :data:`UNCHANGED_WORD` without being read, and the bastion answers them
            from that poll. None (the first poll, or nothing kept): they are read.

    Returns:
        The script; each section prints ``@@nvls-tui-NONCE begin NAME``, its output (stderr merged)
        and ``@@nvls-tui-NONCE end NAME STATUS`` (STATUS ``over-cap``: cut on the node, nothing kept).
    """
    if not nonce.isalnum():
        raise ValueError("the probe nonce must be letters and digits")
    if journal_hung is not None and journal_hung not in SECTION_NAMES:
        raise ValueError("journal_hung must name a section of the probe")
    mark = f"{MARK}-{nonce}"
    wanted = set(SECTION_NAMES if only is None else only)
    # What a capped section prints is its text and a newline: that must fit the bastion's reader.
    limit = max(int(cap) - 1, 0)
    lines = ["export LC_ALL=C", f"m={mark}", f"jh={journal_hung or ''}", *_CAPPED]
    skipped = "printf '%s\\n' \"" + JOURNAL_HUNG_LINE.format("$jh") + f"\"; rc={TIMED_OUT_STATUS}"
    bound, no_retry = "", OVER_CAP_WORD
    done: set[str] = set()
    if section_timeout is not None:
        # Exported: the kernel section's command line is run by awk's own sh, which expands it too.
        lines += [f'NVLS_TO=; command -v timeout >/dev/null 2>&1 && NVLS_TO="timeout -k 2 {float(section_timeout):.3f}"',
                  "export NVLS_TO"]
        bound, no_retry = "$NVLS_TO ", f"{OVER_CAP_WORD}|124"  # the same tool would hang again
    for section in SECTIONS:
        if section.name not in wanted or section.name in done:
            continue
        if section.name in FILE_SECTIONS:
            names = [n for n in FILE_SECTIONS if n in wanted]
            lines += _files_read(names, bound)
            done.update(names)
            continue
        if section.name in CONFIG_SECTIONS:
            names = [n for n in CONFIG_SECTIONS if n in wanted]
            done.update(names)
            lines += [line.format(bound=bound, find=_glob_safe_join(CONFIG_STAMP_ARGV)) for line in _CONFIG_BLOCK]
            same = (f'[ -n "$ck" ] && [ "$cs" = {shlex.quote(config_stamp)} ]'
                    if config_stamp and len(config_stamp) <= CONFIG_STAMP_MAX else "false")
            lines.append(f"if {same}; then "
                         + " ".join(f'echo "$m begin {n}"; echo "$m end {n} {UNCHANGED_WORD}";' for n in names)
                         + " else")
            for name in names:
                argv = next(s.argv for s in SECTIONS if s.name == name)
                lines += [f'echo "$m begin {name}"', f"{bound}{_glob_safe_join(argv)} 2>&1", "rc=$?",
                          f'echo "$m end {name} $rc"']
            lines += [f'[ -n "$ck" ] && {{ echo "$m begin {CONFIG_STAMP}"; printf \'%s\\n\' "$cs"; '
                      f'echo "$m end {CONFIG_STAMP} 0"; }}', "fi"]
            continue
        prefix = bound + ("sudo -n " if sudo and section.privileged else "")
        argv = kernel_argv(kernel_cursor) if section.name == "kernel" else section.argv
        cmd = f"{prefix}{_glob_safe_join(argv)} 2>&1"
        begin, end = f'echo "$m begin {section.name}"', f'echo "$m end {section.name} $rc"'
        if section.fallback:
            first = f"{prefix}{_glob_safe_join(section.argv)}"
            again = f"{prefix}{_glob_safe_join(section.fallback)}"
            # Only one of the two outputs is kept: a rejected query prints its complaint on stdout.
            lines += [begin, f"capped {limit} {first}; case $rc in 0|{no_retry}) ;; *) capped {limit} {again};; esac",
                      _PUT_OUT, end]
        elif section.name == "holders":
            # Kept in a variable: the ps steps below read the PIDs from this same table (none from a cut one).
            lines += [begin, f"capped {limit} {prefix}{_glob_safe_join(argv)}; holders=$out; hrc=$rc", _PUT_OUT, end]
        elif section.name == "kernel":
            # awk -v takes backslash escapes: the command has none (fixed words, a hex cursor).
            whole = 0 if kernel_cursor is not None and CURSOR.fullmatch(kernel_cursor) else 1
            ring = ""
            if "ring" in wanted:  # the ring is read by this awk where it is needed (see _KERNEL_AWK)
                ring_prefix = bound + ("sudo -n " if sudo else "")
                ring = f"-v {shlex.quote('rcmd=exec ' + ring_prefix + _glob_safe_join(RING_ARGV) + ' 2>&1')} "
            program = (_RING_FN + " " if ring else "") + _KERNEL_AWK.replace("{RING}", _KERNEL_RING_CALL if ring else "")
            # awk runs its command through `sh -c`, which dash forks once more for it: `exec` spares that.
            lines += [begin, f"awk -v m=\"$m\" -v whole={whole} -v {shlex.quote('cmd=exec ' + cmd)} {ring}"
                             f"{shlex.quote(program)}; rk=$?",
                      f"case $rk in {JOURNAL_HUNG_EXIT}) jh=kernel; rk={RING_NEEDED};; esac"]
        elif section.name == "ring" and "kernel" in wanted:
            # Read by the kernel section's awk where it was needed; said to be skipped otherwise.
            lines.append(f'[ "$rk" = {RING_NEEDED} ] || {{ {begin}; echo {shlex.quote(RING_SKIPPED)}; '
                         'echo "$m end ring 0"; }')
        elif section.name == "ring":
            # Without the kernel section's word (it ran in an earlier script, or not at all): read.
            lines += [begin, f'if [ "${{rk:-{RING_NEEDED}}}" = {RING_NEEDED} ]; then '
                             f"awk -v m=\"$m\" -v {shlex.quote('cmd=exec ' + cmd)} {shlex.quote(_RING_AWK)}; "
                             f'else echo {shlex.quote(RING_SKIPPED)}; echo "$m end ring 0"; fi']
        elif section.name == "identity":
            lines += [begin, *_IDENTITY, end]
        elif section.name in JOURNAL_SECTIONS:
            # Not asked once a journalctl of this poll timed out; one that times out here stops the next.
            lines += [begin, f'if [ -n "$jh" ]; then {skipped}; else {cmd}; rc=$?; '
                             f"case $rc in {TIMED_OUT_STATUS}) jh={section.name};; esac; fi", end]
        elif section.name in NEWLINE_ADDED:
            lines += [begin, cmd, "rc=$?", "echo", end]
        else:
            lines += [begin, cmd, "rc=$?", end]
    if wanted & set(DERIVED_SECTIONS) and "holders" in wanted:
        # The PIDs from the table (a here-document: a delimiter in the text cannot end it, the shell
        # expands $holders after it has read the script), then their parents too: a `watch
        # nvidia-smi` loop holds nothing itself but keeps spawning holders. A table cut on the node
        # names no PID: the sections read by them are left out (not run), as the bastion leaves them.
        lines += [f'if [ "$hrc" != {OVER_CAP_WORD} ]; then', *_PID_LIST, *_PARENT_LIST, 'all=$pids${ppids:+,$ppids}']
        for name, fmt in (("processes", PS_FORMAT), ("cgroups", CGROUP_FORMAT)):
            if name in wanted:
                # Printed as ps prints them, not held in the shell (a `capped` read cost three processes
                # more each): the bastion's reader bounds them as every other section. -q's refusal
                # (an older procps) is not printed, only -p's answer after it; one that timed out is not
                # asked again (the same ps would hang again).
                quick, pick = (f'{bound}ps -ww -o {fmt} {flag} "$all"' for flag in (QUICK, PICK))
                retry_on = "0|124" if bound else "0"
                lines += [f'echo "$m begin {name}"',
                          f'if [ -n "$pids" ]; then {quick} 2>/dev/null; rc=$?; '
                          f'case $rc in {retry_on}) ;; *) {pick} 2>&1; rc=$?;; esac; else rc=0; fi',
                          f'echo "$m end {name} $rc"']
        if "jobs" in wanted:
            sudo_prefix = bound + ("sudo -n " if sudo else "")
            lines += ['echo "$m begin jobs"',
                      f'if [ -n "$pids" ] && command -v scontrol >/dev/null 2>&1; then {sudo_prefix}scontrol '
                      'listpids 2>&1; rc=$?; else rc=0; fi',
                      'echo "$m end jobs $rc"']
        lines.append("fi")
    return "\n".join(lines) + "\n"


def _files_read(names: list[str], bound: str) -> list[str]:
    """The file sections ``names`` (in order) read by one ``cat``: each file is followed by a here-document
    (/proc/self/fd/3, 4, ...) that ends its section (after one newline more for NEWLINE_ADDED) and begins the next."""
    paths: list[str] = []
    docs: list[str] = []
    redirections: list[str] = []
    for i, name in enumerate(names):
        fd = 3 + i
        paths += [*next(s.argv for s in SECTIONS if s.name == name)[1:], f"/proc/self/fd/{fd}"]
        redirections.append(f"{fd}<<NVLS_F{fd}")
        docs += ([""] if name in NEWLINE_ADDED else []) + [f"$m end {name} {FILE_STATUS_WORD}"]
        if i + 1 < len(names):
            docs.append(f"$m begin {names[i + 1]}")
        docs.append(f"NVLS_F{fd}")
    return [f'echo "$m begin {names[0]}"',
            f"{bound}cat {' '.join(shlex.quote(p) for p in paths)} 2>&1 {' '.join(redirections)}", *docs]


def _end_status(name: str, word: str, body: str) -> int | None:
    """A section's exit status from its end marker's word: a number, or (FILE_STATUS_WORD) from its text."""
    if word == FILE_STATUS_WORD and name in FILE_SECTIONS:
        return file_status(body)
    return int(word) if word.lstrip("-").isdecimal() else None


def split_probe_output(text: str, nonce: str = "0", *, mark: str | None = None) -> dict[str, tuple[int | None, str]]:
    """Split a probe script's output into ``{section: (exit status, text)}``.

    A section whose end marker never came (the link dropped, a command hung) has exit status None.
    Only lines with this poll's nonce count as markers (``mark`` overrides the whole marker, for
    captured outputs of older probes, whose marker was the bare ``@@nvls-tui``).
    """
    mark = mark or f"{MARK}-{nonce}"
    sections: dict[str, tuple[int | None, str]] = {}
    current: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith(mark + " "):
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "begin":
                if current is not None:
                    sections[current] = (None, "\n".join(body) + ("\n" if body else ""))
                current, body = parts[2], []
                continue
            if len(parts) >= 3 and parts[1] == "end" and current == parts[2]:
                text = "\n".join(body) + ("\n" if body else "")
                text = text[:-1] if current in NEWLINE_ADDED and text else text
                sections[current] = (_end_status(current, parts[3] if len(parts) > 3 else "", text), text)
                current = None
                continue
        if current is not None:
            body.append(line)
    if current is not None:
        sections[current] = (None, "\n".join(body) + ("\n" if body else ""))
    return sections


class SectionReader:
    """Splits a probe's output into sections as it arrives, holding at most ``cap`` characters of each.

    Fed chunk by chunk (:meth:`feed`); once a section passes the cap it stops: that section is kept
    cut (``overflow`` names it) and the caller stops the script, so a tool that prints without end
    costs the bastion ``cap`` characters, not its memory.
    """

    def __init__(self, nonce: str, cap: int, *, mark: str | None = None) -> None:
        # ``mark`` overrides the whole marker (a captured output's, see :func:`probe_mark`).
        self.mark = f"{mark or f'{MARK}-{nonce}'} "
        self.cap = cap
        self.sections: dict[str, tuple[int | None, str]] = {}
        self.overflow: str | None = None
        self._cut_on_node: set[str] = set()
        # The sections the node did not re-read (UNCHANGED_WORD): the caller answers them from its last poll.
        self.unchanged: set[str] = set()
        self._current: str | None = None
        self._body: list[str] = []
        self._size = 0
        self._partial = ""

    @property
    def current(self) -> str | None:
        """The section that began and has not ended yet (the command running now), or None."""
        return self._current

    def feed(self, chunk: str) -> bool:
        """Take the next piece of output. False when a section went past the cap (stop the script)."""
        if self.overflow is not None:
            return False
        text = self._partial + chunk
        end = text.rfind("\n") + 1  # complete lines are read now; the rest waits for its newline
        self._partial = text[end:]
        if end and not self._lines(text, end):
            return False
        if len(self._partial) > self.cap:  # one endless line
            return self._over()
        return True

    def _lines(self, text: str, stop: int) -> bool:
        """Read ``text[:stop]`` (whole lines): the marker lines one by one, the bodies between them in
        one piece each (a poll's 40 KB are a dozen finds, not a thousand lines split and joined)."""
        mark, at = self.mark, 0
        while at < stop:
            found = text.find(mark, at, stop)
            while found > 0 and text[found - 1] != "\n":  # a marker only counts at the start of a line
                found = text.find(mark, found + 1, stop)
            if found < 0:
                return self._take(text[at:stop])
            if found > at and not self._take(text[at:found]):
                return False
            eol = text.index("\n", found) + 1
            if not self._marker(text[found:eol]):
                return False
            at = eol
        return True

    def _marker(self, line: str) -> bool:
        """A line that starts with the marker: a section begins or ends, or it is a body line after all."""
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "begin":
            self._close(None)
            self._current, self._body, self._size = parts[2], [], 0
            return True
        if len(parts) >= 3 and parts[1] == "end" and self._current == parts[2]:
            word = parts[3] if len(parts) > 3 else ""
            if word == OVER_CAP_WORD:
                self._cut_on_node.add(parts[2])
            elif word == UNCHANGED_WORD:
                self.unchanged.add(parts[2])
            if self._current in NEWLINE_ADDED and self._body:
                self._body[-1] = self._body[-1][:-1]  # the script's own newline (NEWLINE_ADDED)
            self._close(_end_status(self._current, word, "".join(self._body)))
            return True
        return self._take(line)

    def over_cap(self, name: str) -> bool:
        """Whether section ``name`` passed the cap: here (:attr:`overflow`) or on the node (``over-cap``)."""
        return name == self.overflow or name in self._cut_on_node

    def _take(self, lines: str) -> bool:
        """Whole lines of the current section's body (nothing is kept between sections)."""
        if self._current is None:
            return True
        if self._size + len(lines) > self.cap:
            # Keep the lines that fit whole, as a reader going line by line would have.
            cut = lines.rfind("\n", 0, self.cap - self._size) + 1
            self._body.append(lines[:cut])
            return self._over()
        self._size += len(lines)
        self._body.append(lines)
        return True

    def _over(self) -> bool:
        self.overflow = self._current
        self._close(None)
        return False

    def _close(self, status: int | None) -> None:
        if self._current is not None:
            self.sections[self._current] = (status, "".join(self._body))
        self._current, self._body, self._size = None, [], 0

    def finish(self) -> dict[str, tuple[int | None, str]]:
        """The sections read (a section without its end marker has status None)."""
        if self.overflow is None and self._partial:
            self._lines(self._partial + "\n", len(self._partial) + 1)
        self._partial = ""
        self._close(None)
        return self.sections


def probe_mark(text: str) -> str | None:
    """The marker of a captured probe output (its first ``... begin NAME`` line), or None."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[1] == "begin" and (words[0] == MARK or words[0].startswith(MARK + "-")):
            return words[0]
    return None


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
    "FM_LOG_BYTES",
    "FM_LOG_LINES",
    "JOURNAL_HUNG_EXIT",
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
    "SectionReader",
    "SECTION_NAMES",
    "SIMULATED_MARKER",
    "SMOKE_FILE",
    "STATE_DIR",
    "cgroup_argv",
    "journal_hung",
    "journal_hung_in",
    "journal_not_run",
    "new_nonce",
    "probe_mark",
    "parents_from",
    "ppid_argv",
    "probe_script",
    "ps_argv",
    "section_argv",
    "split_probe_output",
]
