"""A shell transcript split at its prompts: each command and the lines it printed (issue 35, item 1). Pure.

An operator pastes what the terminal showed: prompts (``$ ``, ``# ``, ``user@host:~$ ``,
``[root@host ~]# ``) with a command after each and its output below it. Read as one text, a transcript is
the kind of its first output and the rest is lost; split here, each output is read as what its command
prints (:func:`command_kind`: ``nvidia-smi -r`` prints a reset's words, ``systemctl status`` a unit's
status, ``journalctl -k`` the kernel's lines).

A bare ``# `` is also how a comment, a Markdown heading or nccl-tests' header starts: it counts as a
prompt only before a command this module knows (:data:`_KNOWN`). ``$ `` and the ``user@host`` forms count
before any command word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# Commands an operator runs on a GPU node while looking at NVLink SHARP (and the shell's own).
_KNOWN = (r"sudo|nvidia-smi|nvidia-[\w-]+|nv-fabricmanager|dcgmi|systemctl|service|journalctl|dmesg|fuser|lsof|kill|"
          r"killall|pkill|modprobe|rmmod|lsmod|lspci|ps|cat|grep|egrep|zgrep|tail|head|less|docker|crictl|kubectl|"
          r"mpirun|srun|torchrun|python3?|\./[\w.-]+|all_reduce_perf|echo|ls|reboot|uname|watch|sleep|ip|ibstat|"
          r"nvsm|dpkg|apt|rpm|yum|dnf")
_HOST = r"[\w.-]{1,64}@[\w.-]{1,64}"
# Anchored, with bounded words: a 200 KB line is tried once per line start, never from every position.
_PROMPT = re.compile(
    # (a user@host prompt may be followed by more than one space: "[root@node ~]#  systemctl start ...")
    rf"^(?:\([\w.-]{{1,40}}\) )?(?:{_HOST}:[^\s$#]{{0,200}} ?[$#]|\[{_HOST} [^\]\n]{{0,200}}\][$#]|{_HOST} [^\s$#]{{0,200}} ?[$#]) {{1,8}}"
    rf"(?P<cmd>\S.*)$"
    rf"|^\$ (?P<dollar>[\w./-]+(?: .*)?)$"
    rf"|^# (?P<hash>(?:{_KNOWN})(?: .*)?)$",
    re.M)


@dataclass(frozen=True, slots=True)
class Command:
    """One command of a transcript: the command line and where its output lies.

    Attributes:
        command: the command as typed (after the prompt).
        line: the prompt's line (0-based).
        start: the output's first line (0-based; ``start == end``: it printed nothing).
        end: one past the output's last line.
        output: the output's text.
    """

    command: str
    line: int
    start: int
    end: int
    output: str


def is_transcript(text: str) -> bool:
    """Whether ``text`` has a shell prompt before a command on a line of its own."""
    return _PROMPT.search(text) is not None


def split_transcript(text: str) -> list[Command]:
    """The commands of a transcript, in order (empty when ``text`` has no prompt). Lines before the first
    prompt are no command's output and are left out. One pass over the text: lines are counted from one
    prompt to the next, never from the start again."""
    prompts: list[tuple[int, int, int, str]] = []  # (line, prompt's start, output's start, command)
    line = at = 0
    for m in _PROMPT.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        command = m.group("cmd") or m.group("dollar") or m.group("hash")
        prompts.append((line, m.start(), min(len(text), m.end() + 1), command.strip()))
    total = line + text.count("\n", at) + (0 if text.endswith("\n") else 1)
    out = []
    for i, (line, _, start_at, command) in enumerate(prompts):
        end, end_at = (prompts[i + 1][0], prompts[i + 1][1]) if i + 1 < len(prompts) else (total, len(text))
        out.append(Command(command, line, line + 1, end, text[start_at:end_at]))
    return out


def lines_of(text: str, start: int, end: int) -> str:
    """Lines ``start`` to ``end`` (0-based, end excluded) of ``text``, without a list of all its lines."""
    at = 0
    for _ in range(start):
        at = text.find("\n", at) + 1
        if at == 0:
            return ""
    stop = at
    for _ in range(end - start):
        nxt = text.find("\n", stop)
        if nxt < 0:
            return text[at:]
        stop = nxt + 1
    return text[at:stop]


def iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (no list of them all: a paste may be 64 MiB of short lines)."""
    at = 0
    while at <= len(text):
        nxt = text.find("\n", at)
        if nxt < 0:
            if at < len(text):
                yield text[at:]
            return
        yield text[at:nxt]
        at = nxt + 1


# What a command prints, as the kind whose reader reads it. The first match wins; None: the output says.
_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bnvidia-smi\b.*(?:\s-q\b.*\s-x\b|\s-x\b.*\s-q\b|\s-qx\b|\s-xq\b|--xml-format)"), "nvidia-smi-q-xml"),
    (re.compile(r"\bnvidia-smi\b.*\s(?:-q|--query)(?:\s|$)"), "nvidia-smi-q"),
    (re.compile(r"\bnvidia-smi\b.*\s--query-[\w-]+="), "nvidia-smi-query-csv"),
    (re.compile(r"\bnvidia-smi\b.*\s(?:-r|--gpu-reset)(?:\s|$)"), "nvidia-smi-reset"),
    (re.compile(r"\bnvidia-smi\b.*\s(?:-mig|--multi-instance-gpu)(?:\s|=|$)"), "nvidia-smi-mig"),
    (re.compile(r"\bnvidia-smi\s+nvlink\b.*\s(?:-s|--status)(?:\s|$)"), "nvlink-status"),
    (re.compile(r"\bnvidia-smi\s+topo\b.*\s-m(?:\s|$)"), "topo-matrix"),
    (re.compile(r"\bnvidia-smi\s*$"), "nvidia-smi"),
    (re.compile(r"\bsystemctl\b.*\sstatus\b"), "systemctl-status"),
    # systemctl's own words of a start, stop or restart job: of Fabric Manager's unit, FM's log reads them
    (re.compile(r"\bsystemctl\b.*\s(?:re)?start\b.*fabricmanager|\bsystemctl\b.*\sstop\b.*fabricmanager"),
     "fabricmanager-log"),
    (re.compile(r"\bjournalctl\b.*(?:\s-k\b|\s--dmesg\b)|^(?:sudo )?dmesg\b|\|\s*dmesg\b"), "kernel-log"),
    (re.compile(r"\bjournalctl\b.*fabricmanager|\bcat\b.*fabricmanager\.log|\bnv-fabricmanager\b.*--version"),
     "fabricmanager-log"),
    # nccl-tests' binaries (all_reduce_perf, ...), run bare or under mpirun
    (re.compile(r"\b[a-z_]+_perf(?:_mpi)?\b"), "nccl-tests"),
    (re.compile(r"^(?:sudo )?fuser\b"), "fuser"),
    (re.compile(r"^(?:sudo )?lsof\b"), "lsof"),
    (re.compile(r"^(?:sudo )?lspci\b"), "lspci"),
)


def command_kind(command: str) -> str | None:
    """The kind of output ``command`` prints (a kind :mod:`nvls_tui.analyze.captured` reads), or None where
    the command line does not say (the output's own words then do)."""
    for pattern, kind in _KINDS:
        if pattern.search(command):
            return kind
    return None


__all__ = ["Command", "command_kind", "is_transcript", "iter_lines", "lines_of", "split_transcript"]
