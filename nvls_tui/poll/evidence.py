"""Was a section of a poll really read? Fail closed: what could not be read is unknown.

Every command nvls-tui reads a node with (the probe's sections, and the runbook's own reads before
a guard) goes through :func:`missing_evidence`, which turns its result into either ``None`` (read)
or a :class:`~nvls_tui.model.MissingEvidence` saying why not. The rules come from what the real tools
do when they cannot answer: a shell's ``not found`` and 127, ``Permission denied`` and 126, journalctl's
"not seeing messages from other users" hint (printed with exit status 0), fuser's ``Cannot stat
file /proc/N/fd`` (also 0, the other processes' holders still listed), a section cut off by the byte
cap or a timeout. A tool's documented "nothing found" answer is not missing evidence: fuser exits 1
when no process holds a file, cat 1 when the repair record does not exist.
"""

from __future__ import annotations

import re

from nvls_tui.model import CommandResult, MissingEvidence

TOOL_MISSING = "tool missing"
PERMISSION = "permission denied"
TIMED_OUT = "timed out"
UNPARSEABLE = "unparseable"
OVER_CAP = "over the size cap"
FAILED = "failed"
NOT_RUN = "not run"
# The exit status of a command cut off at its timeout, as coreutils `timeout` gives it (every transport).
TIMED_OUT_STATUS = 124
REASONS = (TOOL_MISSING, PERMISSION, TIMED_OUT, UNPARSEABLE, OVER_CAP, FAILED, NOT_RUN)

# What each section is for, in the operator's words (the detail sentence names it).
PURPOSE = {
    "identity": "the probe's user id",
    "gpus": "the GPUs and their fabric state",
    "fm_version": "the Fabric Manager version",
    "units": "the systemd units",
    "nvswitches": "the NVSwitches on the PCI bus",
    "holders": "the processes holding /dev/nvidia*",
    "processes": "the holders' identities (start time, parent, command line)",
    "cgroups": "the holders' cgroups (unit or pod)",
    "kernel": "the kernel log",
    "ring": "the kernel ring buffer (dmesg)",
    "fm_log": "Fabric Manager's journal (journalctl -u nvidia-fabricmanager)",
    "record": "the record of an interrupted repair",
    "smoke": "the last smoke test's result",
    "simulated": "the simulator's marker",
    "clock": "the node's clock",
    "boot": "the node's boot id and uptime",
    "jobs": "which holder belongs to which Slurm job",
    "devices": "the node's /dev/nvidia* device files",
    "needrestart": "needrestart's configuration",
    "apt": "apt's periodic settings (unattended upgrades)",
}
# How to get the tool, for the usual Debian/Ubuntu packages.
PACKAGE = {"lspci": "pciutils", "fuser": "psmisc", "ps": "procps", "journalctl": "systemd", "find": "findutils",
           "systemctl": "systemd", "awk": "mawk", "dmesg": "util-linux", "nv-fabricmanager": "nvidia-fabricmanager-<driver branch>"}

_NOT_FOUND = re.compile(r"(?:command )?not found", re.I)
_DENIED = re.compile(r"Permission denied|Operation not permitted|access denied", re.I)
# journalctl without access to the system journal still exits 0 (systemd 249 and 255 both).
# Plain phrases, looked up with `in`: the kernel section is tens of KB, and a regex of alternatives
# scanned it ~7x slower (the bastion's CPU per node-poll, issue 16).
_JOURNAL_DENIED = ("You are currently not seeing messages from other users and the system",
                   "No journal files were opened due to insufficient permissions",
                   "Failed to get journal access")
_JOURNAL_NONE = "No journal files were found"
_FUSER_PARTIAL = re.compile(r"^Cannot (?:stat|open) (?:file )?/proc/(\d+)", re.M)
_GLOB_UNMATCHED = re.compile(r"^Specified filename /dev/nvidia\* does not exist\.", re.M)
_PS_ERROR = re.compile(r"^error: .*", re.M)
_ABSENT_FILE = re.compile(r"^(?:\S*/)?cat: .*: No such file or directory\s*$", re.M)


def tool_of(result: CommandResult) -> str:
    """The tool a command line runs (``sudo -n env X=1 journalctl ...`` -> ``journalctl``)."""
    words = list(result.argv)
    while words and (words[0] in ("sudo", "env", "-n", "--") or "=" in words[0]):
        words = words[1:]
    return (words[0] if words else "?").rsplit("/", 1)[-1]


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:200]


def _missing(section: str, reason: str, detail: str) -> MissingEvidence:
    return MissingEvidence(section=section, reason=reason,
                           detail=f"{PURPOSE.get(section, section)} could not be read: {detail}")


def _general(section: str, result: CommandResult, tool: str, ok_statuses: frozenset[int]) -> MissingEvidence | None:
    """The reasons every tool shares: cap, timeout, missing, denied, a failing exit status."""
    if result.truncated:
        return _missing(section, OVER_CAP, f"`{tool}` printed more than the byte cap allows and was stopped")
    if result.exit_status in (-1, TIMED_OUT_STATUS):
        return _missing(section, TIMED_OUT, f"`{tool}` did not finish")
    if result.exit_status in ok_statuses and result.exit_status not in (126, 127):
        return None  # read (the reasons below all need a failing status)
    text = result.output
    first = _first_line(text)
    if result.exit_status == 127 or (result.exit_status not in ok_statuses and _NOT_FOUND.search(first)
                                     and tool in first):
        package = f" (install {PACKAGE[tool]})" if tool in PACKAGE else ""
        return _missing(section, TOOL_MISSING, f"`{tool}` is not installed on the node{package}")
    if result.exit_status == 126 or (result.exit_status not in ok_statuses and _DENIED.search(text)):
        return _missing(section, PERMISSION, f"`{tool}`: {first or 'permission denied'}")
    if result.exit_status not in ok_statuses:
        return _missing(section, FAILED, f"`{tool}` exited {result.exit_status}" + (f": {first}" if first else ""))
    return None


def missing_evidence(section: str, result: CommandResult | None, *, root: bool | None = True) -> MissingEvidence | None:
    """Whether ``result`` really read ``section``; None when it did.

    Args:
        section: the probe section (or the runbook read) the command was for.
        result: the finished command; None when it never ran (the poll ended before it).
        root: whether the privileged sections ran as root (None: unknown). fuser silently skips
            the processes of other users, so a non-root holders table is incomplete.

    Returns:
        None when the section was read (possibly with nothing in it), else why not.
    """
    if result is None:
        return _missing(section, NOT_RUN, "the poll ended before it ran")
    tool = tool_of(result)
    text = result.output
    if section == "holders":
        found = _general(section, result, tool, frozenset({0, 1}))
        if found:
            return found
        if root is False:
            return _missing(section, PERMISSION, "the probe does not run as root and fuser cannot see other "
                                                 "users' processes (use --sudo, or connect as root)")
        if root is None:
            return _missing(section, UNPARSEABLE, "the probe's user id is unknown, so fuser may have missed other "
                                                  "users' processes")
        if m := _FUSER_PARTIAL.search(text):
            return _missing(section, PERMISSION, f"fuser could not read the open files of PID {m.group(1)} "
                                                 f"({_first_line(m.string[m.start():])})")
        if _GLOB_UNMATCHED.search(text):
            return _missing(section, UNPARSEABLE, "no /dev/nvidia* device file exists on the node")
        if result.exit_status == 1 and text.strip() and "USER" not in text:
            return _missing(section, UNPARSEABLE, f"fuser said: {_first_line(text)}")
        return None
    if section in ("kernel", "fm_log"):
        # FM's unit journal is the system journal too: the same hint (exit 0, no line of the unit) and errors.
        denied = next((phrase for phrase in _JOURNAL_DENIED if phrase in text), None)
        if not result.truncated and result.exit_status not in (-1, 124) and denied:
            hint = " (use --sudo, or add the user to the systemd-journal group)" if root is not True else ""
            return _missing(section, PERMISSION, f"journalctl cannot read the system journal: {denied}{hint}")
        # No journal at all, in journalctl's words (systemd 252 exits 1 with them, others 0), or in the node's
        # own where its script did not start journalctl for want of a journal folder holding a file
        # (probe.JOURNAL_NO_FILES_LINE, which quotes them, with status 1): one reading for all.
        if not result.truncated and result.exit_status in (0, 1) and _JOURNAL_NONE in text:
            return _missing(section, FAILED, "journalctl found no journal on the node (is systemd-journald running?)")
        return _general(section, result, tool, frozenset({0}))
    if section in ("record", "smoke", "simulated"):
        if result.exit_status == 1 and _ABSENT_FILE.search(text):
            return None  # the file does not exist: nothing to read, and that is an answer
        return _general(section, result, tool, frozenset({0}))
    if section in ("processes", "cgroups"):
        # ps exits 1 when none of the PIDs is alive any more: they all exited, which is an answer.
        if result.exit_status == 1 and not result.truncated and not _PS_ERROR.search(text) and not text.strip():
            return None
        found = _general(section, result, tool, frozenset({0}))
        if found is None and (m := _PS_ERROR.search(text)):
            return _missing(section, FAILED, f"`ps` said {m.group(0)!r}")
        return found
    if section == "units":
        found = _general(section, result, tool, frozenset({0}))
        if found is None and "Id=" not in text:
            return _missing(section, UNPARSEABLE, f"`systemctl show` printed no unit: {_first_line(text) or 'nothing'}")
        return found
    return _general(section, result, tool, frozenset({0}))


def missing_from_unparsed(section: str, what: str) -> MissingEvidence:
    """A section that ran and answered, but whose answer could not be understood."""
    return _missing(section, UNPARSEABLE, what)


__all__ = [
    "FAILED",
    "NOT_RUN",
    "OVER_CAP",
    "PERMISSION",
    "REASONS",
    "TIMED_OUT",
    "TIMED_OUT_STATUS",
    "TOOL_MISSING",
    "UNPARSEABLE",
    "missing_evidence",
    "missing_from_unparsed",
    "tool_of",
]
