"""The read-only commands that make one poll of a node, and how they travel as one remote script.

Every SSH exec starts a login shell, so a poll runs all its commands in one ``sh`` script whose output
is split back into sections by marker lines. The simulated backend runs the same argv lists one by
one in process. Either way the sections go through the same parsers (see ``nvls_tui.assemble``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

STATE_DIR = "/var/lib/nvls-tui"
RECORD_FILE = f"{STATE_DIR}/repair.json"
SMOKE_FILE = f"{STATE_DIR}/last-smoke.json"
# A simulated node (shims behind a real sshd) carries this file, so it is labelled as simulated.
SIMULATED_MARKER = f"{STATE_DIR}/SIMULATED"
LOCK_DIR = f"{STATE_DIR}/lock"

UNITS = (
    "nvidia-fabricmanager.service",
    "kubelet.service",
    "nvidia-snapshot.timer",
    "nvidia-snapshot.service",
    "nvidia-dcgm.service",
    "nvidia-persistenced.service",
)

QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "name",
    "uuid",
    "driver_version",
    "persistence_mode",
    "fabric.state",
    "fabric.status",
    "fabric.cliqueId",
    "fabric.clusterUuid",
    "fabric.health.summary",
)

NVSWITCH_PCI_ID = "10de:22a3"
KERNEL_PATTERN = "NVRM|nvidia-nvswitch|Xid|SXid|FABRIC"
MARK = "@@nvls-tui"
# fuser -v rows: "... USER PID ACCESS COMMAND"; print each PID (the number before an access field).
# (No {5} interval: Debian's default mawk does not support it.)
_PID_AWK = ("{for (i = 1; i < NF; i++) "
            "if ($i ~ /^[0-9]+$/ && length($(i+1)) == 5 && $(i+1) ~ /^[.FfRrCcEeMm]+$/) print $i}")


@dataclass(frozen=True, slots=True)
class Section:
    """One read-only command of a poll.

    Attributes:
        name: key of the section in the probe output.
        argv: the command.
        privileged: needs root on a real node (prefixed with ``sudo -n`` when asked).
        shell_tail: a fixed filter appended in the remote script only (bounds the output size).
        merge_stderr: the tool writes what we need to stderr (``fuser -v``).
        fallback: run instead when ``argv`` fails (an older tool that rejects a newer option).
    """

    name: str
    argv: tuple[str, ...]
    privileged: bool = False
    shell_tail: str = ""
    merge_stderr: bool = False
    fallback: tuple[str, ...] | None = None


SECTIONS: tuple[Section, ...] = (
    # Drivers 535-550 know fabric.state/status but no fabric.health.*, and nvidia-smi rejects the
    # whole query for one unknown field: ask again without it.
    Section("gpus", ("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv"),
            fallback=("nvidia-smi", f"--query-gpu={','.join(f for f in QUERY_FIELDS if '.health.' not in f)}",
                      "--format=csv")),
    Section("fm_version", ("nv-fabricmanager", "--version"), merge_stderr=True),
    Section(
        "units",
        ("systemctl", "show", "--no-pager",
         "-p", "Id,LoadState,ActiveState,SubState,MainPID,Result,ActiveEnterTimestamp", *UNITS),
    ),
    Section("nvswitches", ("lspci", "-D", "-d", NVSWITCH_PCI_ID)),
    # fuser's table goes to stderr; the glob is expanded by the remote shell (or by the simulator).
    Section("holders", ("fuser", "-v", "/dev/nvidia*"), privileged=True, merge_stderr=True),
    Section(
        "kernel",
        ("journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"),
        privileged=True,
        shell_tail=f"| grep -E {shlex.quote(KERNEL_PATTERN)} | tail -n 300",
    ),
    Section("record", ("cat", RECORD_FILE)),
    Section("smoke", ("cat", SMOKE_FILE)),
    Section("simulated", ("cat", SIMULATED_MARKER)),
)

# Filled per poll from the holders section: identity and cgroup of every holder PID.
PS_FORMAT = "pid=,ppid=,user:32=,lstart=,cgroup=,args="


def ps_argv(pids: list[int]) -> tuple[str, ...]:
    """``ps`` for the given PIDs, one line each: pid ppid user lstart(5 words) cgroup args."""
    return ("ps", "-ww", "-o", PS_FORMAT, "-p", ",".join(str(int(p)) for p in pids))


def _glob_safe_join(argv: tuple[str, ...]) -> str:
    """shlex.join, except that a fixed ``/dev/nvidia*`` glob is left for the remote shell."""
    return " ".join(a if a == "/dev/nvidia*" else shlex.quote(a) for a in argv)


def probe_script(sudo: bool = False) -> str:
    """The whole poll as one POSIX sh script (the PS step reads the PIDs fuser printed).

    Args:
        sudo: prefix the privileged commands with ``sudo -n`` (never prompts).
    """
    lines = ["export LC_ALL=C"]
    for section in SECTIONS:
        prefix = "sudo -n " if sudo and section.privileged else ""
        redirect = " 2>&1" if section.merge_stderr else " 2>/dev/null"
        cmd = f"{prefix}{_glob_safe_join(section.argv)}{redirect}"
        if section.fallback:
            # Only one of the two outputs is kept: a rejected query prints its complaint on stdout.
            again = f"{prefix}{_glob_safe_join(section.fallback)}{redirect}"
            cmd = f"{{ out=$({cmd}) || out=$({again}); rc=$?; printf '%s\\n' \"$out\"; (exit $rc); }}"
        if section.shell_tail:
            cmd = f"{{ {cmd}; }} {section.shell_tail}"
        lines.append(f"echo '{MARK} begin {section.name}'")
        if section.name == "holders":
            # Kept in a variable: the ps step below reads the PIDs from this same table.
            lines += [f"holders=$({cmd})", "rc=$?", 'printf \'%s\\n\' "$holders"',
                      f"echo '{MARK} end {section.name}' $rc"]
            continue
        lines.append(cmd)
        lines.append(f"echo '{MARK} end {section.name}' $?")
    # The PID is the number before the ACCESS column of each fuser -v row.
    lines.append(f'pids=$(printf \'%s\\n\' "$holders" | awk {shlex.quote(_PID_AWK)} | sort -un | paste -sd, -)')
    # Their parents too: a `watch nvidia-smi` loop holds nothing itself but keeps spawning holders.
    lines.append('[ -n "$pids" ] && pids="$pids,$(ps -o ppid= -p "$pids" | sort -un | paste -sd, -)"')
    lines.append(f"echo '{MARK} begin processes'")
    lines.append(f'[ -n "$pids" ] && ps -ww -o {PS_FORMAT} -p "$pids"')
    lines.append(f"echo '{MARK} end processes' $?")
    return "\n".join(lines) + "\n"


def split_probe_output(text: str) -> dict[str, tuple[int | None, str]]:
    """Split a probe script's output into ``{section: (exit status, text)}``.

    A section whose end marker never came (the link dropped, a command hung) has exit status None.
    """
    sections: dict[str, tuple[int | None, str]] = {}
    current: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith(MARK):
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "begin":
                current, body = parts[2], []
                continue
            if len(parts) >= 3 and parts[1] == "end" and current == parts[2]:
                status = int(parts[3]) if len(parts) > 3 and parts[3].lstrip("-").isdigit() else None
                sections[current] = (status, "\n".join(body) + ("\n" if body else ""))
                current = None
                continue
        if current is not None:
            body.append(line)
    if current is not None:
        sections[current] = (None, "\n".join(body) + ("\n" if body else ""))
    return sections
