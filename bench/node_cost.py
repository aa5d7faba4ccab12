"""What ONE poll costs the node, measured on the node itself (issue 16's "measure first", node side).

The probe (``nvls_tui.poll.probe_script.probe_script()``, the whole poll as one ``sh`` script) runs wrapped
in a few measuring lines, in the same shell::

    t0=$(command -p date +%s%N); p0=$(command -p cat /proc/sys/kernel/ns_last_pid)
    <the probe script>
    p1=$(command -p cat /proc/sys/kernel/ns_last_pid); t1=$(command -p date +%s%N)
    { echo MARK p0 p1 pid_max t0 t1; times; } >&2

- tasks: ``p1 - p0`` (``ns_last_pid`` is the PID the kernel handed out last in the shell's PID
  namespace, so it counts every process the probe's tree forked, and every thread: both take a
  PID), minus what the measuring lines cost themselves, measured by the same wrapper around an
  empty script (the second ``cat``: 1). ``cat`` and not the ``read`` builtin: dash's ``read`` takes
  one byte per ``read(2)``, and a /proc/sys integer file answers only the first one (``2`` for 25160).
- CPU: the second line of the POSIX ``times`` builtin (user + sys of every child the shell waited
  for, and of everything those waited for: the probe's whole process tree), less the empty script's.
  dash reports it in clock ticks (``CLK_TCK`` = 100: 10 ms steps, rounded down). The first line
  (the shell's own CPU, interpreting the script) is reported beside it. Where the node has Python
  (``--local``: this interpreter; over SSH: ``python3`` if the node has one), a small helper is the
  wrapped shell's parent and reports its ``wait4`` rusage: the same tree, the shell included, in
  microseconds; the verdict uses it when it is there (``times`` otherwise).
- wall: ``date +%s%N`` before and after, less the empty script's (GNU date; n/a elsewhere).
  ``command -p``: the measuring lines use the system's own ``cat`` and ``date``, never a node's shims.
- bytes: what the script printed on stdout, which is what travels to the bastion (the measuring
  lines go to stderr).

Where the probe reads the same there, the wrapper runs as PID 1 of a PID namespace of its own
(``unshare --pid --fork sh -c ...``), so no other process of the node moves the counter. That is
checked, not assumed: the probe runs once each way and every section but ``clock`` must match. On a
node with systemd it does not (``systemctl`` cannot reach systemd from a nested PID namespace:
"Failed to connect to bus: No data available"), so there the wrapper shares the node's namespace,
whatever else the node forks in the meantime is counted too, and the count is an upper bound: the
tables then also give the smallest count of the runs, and the verdict uses it.

Every variant runs ``--runs`` times (default 5), interleaved; the tables give median and max. Kinds:

- ``static``: a static shim node (sim:fleet-256 gpu001, kernel log padded to ~48 KB like ``bench.run``)
  behind the loopback sshd of ``tests/sshd_rig.py``, over ``ssh``;
- ``lab``: a lab node (gpu05, healthy: FM running, DCGM and kubelet's pods holding the GPUs) booted on
  127.0.9.x in a temporary folder, over ``ssh``; always brought down at the end, also on error or
  Ctrl-C (root and systemd-nspawn; skipped with the reason otherwise);
- ``local``: this machine, plain ``sh``. Needs only the standard library and ``nvls_tui``; the probe
  is read-only and nothing is written unless ``--out`` is given, so on a real GPU node::

    python bench/node_cost.py --local            # add --sudo where fuser/journalctl need it

Usage: ``python -m bench.node_cost [--kinds static,lab,local] [--local] [--runs 5] [--sudo]
[--isolate auto|yes|no] [--lab-scenario healthy] [--holder] [--out bench/results] [--strict]``.
``--holder`` (with ``--local``, on a GPU node): a CUDA process holds GPU 0 for the whole measurement (a
context made through the driver's ``libcuda.so.1`` by ctypes: no torch, no CUDA toolkit), so the poll's
holder reads (the PID list, the parents, identities and cgroups) are measured as a node with a workload
runs them; the target is then 12 tasks.
Exit status 1 when a run failed (or, with ``--strict``, when a target is not met).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python bench/node_cost.py): the checkout's packages first
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nvls_tui.poll.kernel_tail import last_cursor
from nvls_tui.poll.probe import CONFIG_STAMP, DERIVED_SECTIONS, SECTIONS
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script

MARK = "@@nvls-node-cost"
RUSAGE_MARK = "@@nvls-node-cost-rusage"
# Where the node has Python: the parent of the wrapped shell, so wait4 gives the tree's CPU in microseconds
# (the shell itself included). It forks before the first reading of the counter: none of it is counted.
RUSAGE_HELPER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_, status, ru = os.wait4(pid, 0)\n"
    f"sys.stderr.write('{RUSAGE_MARK} %.6f %.6f\\n' % (ru.ru_utime, ru.ru_stime))\n"
    "sys.exit(status >> 8 if status & 0x7f == 0 else 128 + (status & 0x7f))\n"
)
LAST_PID = "/proc/sys/kernel/ns_last_pid"
PID_MAX = "/proc/sys/kernel/pid_max"
RUN_TIMEOUT = 120.0
# Issue 16: "a poll costs a node at most 10 processes and 30 ms of CPU beyond nvidia-smi's own"; issue 37
# item 5: a later poll at most 10 tasks (12 with a process holding a GPU) and 20 ms.
TARGET_TASKS = 10
TARGET_TASKS_HELD = 12
TARGET_CPU_MS = 20.0
LAB_SUBNET = 9  # 127.0.9.x: the suite uses 6, --slurm's tests 8, an operator's lab 5 (7: other runs)
LAB_NODE = "gpu05"
LAB_SCENARIO = "healthy"  # seed-incident's gpu05 runs a user's `watch -n 1 nvidia-smi`: ~3 forks a second
STATIC_NODE = "gpu001"
KERNEL_RAW = ("journalctl", "-k", "-b", "--no-pager", "-o", "short-iso")

SH_BUILTINS = frozenset({
    ":", ".", "[", "alias", "break", "cd", "command", "continue", "echo", "eval", "exec", "exit", "export",
    "false", "getopts", "hash", "kill", "local", "printf", "pwd", "read", "readonly", "return", "set",
    "shift", "test", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "wait",
})
SH_OPENERS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "{", "!"})
SH_CLOSERS = frozenset({"fi", "done", "}", "esac"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


# ----- what the script starts (read from its text) -----------------------------------------------
@dataclass
class Started:
    """One external command of the script: its name and whether it runs only on a condition."""

    name: str
    conditional: bool

    def __str__(self) -> str:
        return f"{self.name}{' (if)' if self.conditional else ''}"


def external_commands(text: str) -> list[Started]:
    """The external commands a piece of sh starts, in order (builtins and keywords left out).

    A small reader of the probe's own shapes: simple commands, pipelines, ``&&``/``||`` lists,
    ``$(...)``, ``{ ...; }``, ``if``, ``for`` and ``case`` (its word and patterns are no commands);
    redirections and assignments skipped; ``sudo -n CMD`` is two processes (sudo forks the command).
    A command after ``&&``/``||``, in an ``if`` or in a ``case`` branch is conditional. A call of a shell
    function the same text defines (``name() { ...; }``) starts nothing itself: its body's commands are
    listed where it is defined.
    """
    found: list[Started] = []
    functions = set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{", text, re.M))
    for line in _without_heredoc_text(text):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        at_command, cond, skip, sudo = True, False, False, False
        stack: list[tuple[bool, bool]] = []
        cases: list[str] = []  # per open `case`: "word" (until `in`), "pattern" (until `)`), "branch"
        if_depth = 0
        for tok in tokens:
            if cases and cases[-1] in ("word", "pattern") and not (cases[-1] == "pattern" and tok == "esac"):
                if cases[-1] == "word" and tok == "in":
                    cases[-1] = "pattern"
                elif cases[-1] == "pattern" and ")" in tok and all(c in "();<>|&" for c in tok):
                    cases[-1], at_command, cond = "branch", True, True
                continue
            if tok == "esac" or (tok == ";;" and cases):
                if tok == "esac" and cases:
                    cases.pop()
                elif cases:
                    cases[-1] = "pattern"
                at_command = False
                continue
            if at_command and tok == "case":
                cases.append("word")
                continue
            if at_command and tok == "for":
                at_command = False  # the loop's name and words; a $( in them still starts its command
                continue
            if skip:
                skip = False
            elif tok and all(c in "();<>|&" for c in tok):
                if "<" in tok or ">" in tok:
                    skip = True  # the redirection's target
                else:
                    for c in re.findall(r"\|\||&&|[();|&]", tok):
                        if c == "(":  # $( or a subshell: its commands inherit the condition
                            stack.append((at_command, cond))
                            at_command = True
                        elif c == ")":
                            _, cond = stack.pop() if stack else (False, cond)
                            at_command = False
                        elif c in ("||", "&&"):
                            at_command, cond = True, True
                        elif c == "|":
                            at_command = True
                        else:  # ; &
                            at_command, cond = True, if_depth > 0 or bool(stack and stack[-1][1])
            elif at_command and tok in SH_OPENERS:
                if tok == "if":
                    if_depth += 1
                if tok in ("then", "else", "elif"):
                    cond = True
            elif at_command and tok in SH_CLOSERS:
                if tok == "fi":
                    if_depth = max(0, if_depth - 1)
                at_command = False
            elif tok.startswith("cmd="):  # awk -v cmd=...: the command the kernel section's awk runs
                # (only where the node keeps a journal, where its awk is given nj=)
                found += [Started(c.name, c.conditional or cond or "-v nj=" in line)
                          for c in external_commands(tok[4:])]
            elif tok.startswith("rcmd="):  # ... and the ring's, which it runs only where the journal falls short
                found += [Started(c.name, True) for c in external_commands(tok[5:])]
            elif at_command and ASSIGNMENT.match(tok):
                pass  # NAME=value: the command word (if any) follows
            elif at_command or sudo:
                if sudo and tok.startswith("-"):
                    continue
                if tok not in SH_BUILTINS and tok not in functions:
                    found.append(Started(tok, cond))
                sudo = tok in ("sudo", "exec")  # their command follows (sudo forks it, exec replaces the shell)
                at_command = False
    return found


def _without_heredoc_text(text: str) -> list[str]:
    """The script's lines with here-document bodies reduced to the command substitutions in them (a line
    may open several, read one after the other: the probe's shared cat of its small files)."""
    out: list[str] = []
    ends: list[str] = []
    guard = ""  # the body's commands run only when the line that opened it does
    for line in text.splitlines():
        if ends:
            if line == ends[0]:
                ends.pop(0)
            else:
                out += [f"{guard}{inner}" for inner in re.findall(r"\$\((.*)\)", line)]
            continue
        out.append(line)
        ends = re.findall(r"<<-?\s*([A-Za-z_][A-Za-z0-9_]*)", line)
        guard = "true && " if ("&&" in line or "||" in line) else ""
    return out


def script_sections(script: str) -> list[tuple[str, str]]:
    """``[(section, its lines)]`` of a probe script, in order. The lines between two sections belong to the
    next one (the stamp of needrestart's and apt's files, the holders' PID lists the ps sections read);
    those after the last are named ``pids``. The shared cat of the small files is its first section's."""
    parts: list[tuple[str, list[str]]] = []
    current: str | None = None
    between: list[str] = []
    for line in script.splitlines():
        begin = re.match(r'^echo "\$m begin (\w+)"$', line)
        end = re.match(r'^echo "\$m end (\w+) \$rc"$', line)
        if begin:
            current = begin.group(1)
            parts.append((current, between))
            between = []
        elif end:
            current = None
        elif current is not None:
            parts[-1][1].append(line)
        elif parts:  # between sections
            between.append(line)
        if current == "kernel" and not begin:  # the kernel section ends inside its awk
            current = None
    if between:
        parts.append(("pids", between))
    return [(name, "\n".join(lines)) for name, lines in parts]


# ----- one measured run -----------------------------------------------------------------------
def wrap(script: str) -> str:
    """The script between the measuring lines (see the module's text); they report on stderr."""
    return (
        "_nc_t0=$(command -p date +%s%N)\n"
        f"_nc_p0=$(command -p cat {LAST_PID})\n"
        + script
        + f"_nc_p1=$(command -p cat {LAST_PID})\n"
        "_nc_t1=$(command -p date +%s%N)\n"
        f"_nc_max=$(command -p cat {PID_MAX})\n"
        f'{{ echo "{MARK} $_nc_p0 $_nc_p1 $_nc_max $_nc_t0 $_nc_t1"; times; }} >&2\n'
    )


_TIME = re.compile(r"(\d+)m([\d.]+)s")


def _seconds(text: str) -> list[float]:
    return [int(m) * 60 + float(s) for m, s in _TIME.findall(text)]


@dataclass
class Run:
    """One wrapped run: raw counter delta, CPU (ms), wall (ms), bytes printed."""

    tasks: int
    cpu_ms: float
    shell_ms: float
    wall_ms: float | None
    out_bytes: int
    rusage_ms: float | None = None
    wrapped: bool = False


def parse_run(stdout: bytes, stderr: bytes) -> Run:
    """Read the measuring lines of one run (raises ValueError when they are missing)."""
    text = stderr.decode(errors="replace")
    rusage_ms = None
    found = re.search(re.escape(RUSAGE_MARK) + r" ([\d.]+) ([\d.]+)", text)
    if found:
        rusage_ms = (float(found.group(1)) + float(found.group(2))) * 1e3
    at = text.rfind(MARK + " ")
    if at < 0:
        raise ValueError(f"no measuring line in the output (stderr: {text[-400:]!r})")
    head, _, rest = text[at:].partition("\n")
    words = head.split()[1:]
    p0, p1, pmax = int(words[0]), int(words[1]), int(words[2])
    wrapped = p1 < p0
    tasks = p1 - p0 + (pmax if wrapped else 0)
    times = _seconds(rest)
    if len(times) < 4:
        raise ValueError(f"no `times` output after the measuring line: {rest[:200]!r}")
    try:
        wall: float | None = (int(words[4]) - int(words[3])) / 1e6
    except (IndexError, ValueError):
        wall = None  # a date without %N (busybox)
    return Run(tasks=tasks, cpu_ms=(times[2] + times[3]) * 1e3, shell_ms=(times[0] + times[1]) * 1e3,
               wall_ms=wall, out_bytes=len(stdout), rusage_ms=rusage_ms, wrapped=wrapped)


@dataclass
class Target:
    """How one kind of node runs a command line (``argv(inner)``), and what to call it.

    ``python``: the node's interpreter for the wait4 helper (None: no rusage column).
    """

    kind: str
    title: str
    argv: Callable[[list[str]], list[str]]
    python: str | None = None
    isolated: bool = False
    notes: list[str] = field(default_factory=list)
    stand_ins: tuple[str, ...] = ()  # sections whose tool is a simulator's stand-in (the lab's Python ones)

    def shell(self, script: str) -> list[str]:
        inner = (["unshare", "--pid", "--fork"] if self.isolated else []) + ["sh", "-c", script]
        return self.argv(([self.python, "-c", RUSAGE_HELPER] if self.python else []) + inner)

    def run(self, script: str) -> Run:
        """One wrapped run of ``script``."""
        proc = subprocess.run(self.shell(wrap(script)), capture_output=True, timeout=RUN_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
        return parse_run(proc.stdout, proc.stderr)

    def find_python(self) -> None:
        """Use the node's python3 for the wait4 helper, where it has one."""
        try:
            proc = subprocess.run(self.argv(["python3", "-c", "print(6 * 7)"]), capture_output=True, timeout=30,
                                  stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return
        if proc.stdout.strip() == b"42":
            self.python = "python3"

    def try_isolation(self, sudo: bool) -> str | None:
        """Switch to a private PID namespace where the node allows it and the probe reads the same there.

        Returns:
            None (isolated), or why not.
        """
        try:
            proc = subprocess.run(self.argv(["unshare", "--pid", "--fork", "sh", "-c", f"cat {LAST_PID}"]),
                                  capture_output=True, timeout=30, stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if not (proc.returncode == 0 and proc.stdout.strip().isdigit() and int(proc.stdout) < 10):
            return "unshare --pid: " + (proc.stderr.decode(errors="replace").strip().splitlines()
                                        or [f"exit {proc.returncode}"])[-1]
        script = probe_script(sudo)
        seen = []
        for isolated in (False, True):
            self.isolated = isolated
            try:
                done = subprocess.run(self.shell(script), capture_output=True, timeout=RUN_TIMEOUT,
                                      stdin=subprocess.DEVNULL, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.isolated = False
                return str(exc)
            sections = split_probe_output(done.stdout.decode(errors="replace"))
            sections.pop("clock", None)
            if "boot" in sections:  # its boot id, not its uptime (which ticks between the two runs)
                status, text = sections["boot"]
                sections["boot"] = (status, text.partition("\n")[0])
            seen.append(sections)
        differ = [name for name in seen[0] if seen[0][name] != seen[1].get(name)]
        if differ:
            self.isolated = False
            first = seen[1].get(differ[0], (None, ""))[1].strip().splitlines()
            return (f"the probe reads differently in a PID namespace of its own (section {', '.join(differ)}"
                    + (f": {first[0][:90]!r}" if first else "") + ")")
        return None


# ----- the variants -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """One script that is measured: a name, the script, and whether it is a row of the section table."""

    name: str
    script: str
    section: bool = False


def variants(sudo: bool, cursor: str | None = None, stamp: str | None = None) -> list[Variant]:
    """The empty script, the whole probe, each section alone, and the raw kernel log.

    ``probe`` and ``kernel`` are a poll of a node read before (its kernel log from ``cursor``, where
    the node gave one; needrestart's and apt's files checked against ``stamp``, as the SSH backend's
    later polls do); ``probe first`` and ``kernel first`` the first poll (the whole boot's log, the
    configuration read).
    """
    out = [Variant("empty", ""), Variant("probe", probe_script(sudo, kernel_cursor=cursor, config_stamp=stamp)),
           Variant("probe first", probe_script(sudo))]
    for s in SECTIONS:
        out.append(Variant(s.name, probe_script(sudo, only=(s.name,), kernel_cursor=cursor, config_stamp=stamp),
                           section=True))
    out.append(Variant("kernel first", probe_script(sudo, only=("kernel",))))
    # The ps/scontrol sections take their PIDs from the holders table: measured with it, less it.
    out.append(Variant("holders+derived", probe_script(sudo, only=("holders", *DERIVED_SECTIONS))))
    prefix = "sudo -n " if sudo else ""
    out.append(Variant("journalctl raw", f"{prefix}{shlex.join(KERNEL_RAW)} 2>&1\n"))
    return out


def first_poll(target: Target, sudo: bool) -> tuple[str | None, str | None, bool]:
    """What a first poll of the node leaves the bastion for its next one: the journal cursor it ended at,
    the stamp of needrestart's and apt's files (None where the node could not take one), and whether a
    process holds a GPU (the ps sections read someone: the targets allow two tasks more then)."""
    proc = subprocess.run(target.shell(probe_script(sudo)), capture_output=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL, check=False)
    text = proc.stdout.decode(errors="replace")
    sections = split_probe_output(text)
    status, printed = sections.get(CONFIG_STAMP, (None, ""))
    stamp = printed[:-1] if printed.endswith("\n") else printed
    held = bool(sections.get("processes", (None, ""))[1].strip())
    return last_cursor(text), (stamp if status == 0 and stamp else None), held


@dataclass
class Measured:
    """All runs of one kind of node: ``runs[variant] = [Run, ...]`` (one per repetition)."""

    target: Target
    sudo: bool = False
    runs: dict[str, list[Run]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    cursor: str | None = None  # where the steady-state polls' kernel read starts
    stamp: str | None = None  # the configuration's stamp the steady-state polls send
    held: bool = False  # a process held a GPU at the first poll

    def net(self, name: str, attr: str) -> list[float]:
        """Per repetition: the variant's value less the empty script's of the same repetition."""
        base, mine = self.runs.get("empty", []), self.runs.get(name, [])
        out = []
        for b, m in zip(base, mine, strict=False):
            bv, mv = getattr(b, attr), getattr(m, attr)
            if bv is None or mv is None:
                continue
            out.append(mv - (0 if attr == "out_bytes" else bv))
        return out

    def diff(self, a: str, b: str, attr: str) -> list[float]:
        """Per repetition: variant ``a`` less variant ``b``."""
        return [x - y for x, y in zip(self.net(a, attr), self.net(b, attr), strict=False)]


def measure(target: Target, runs: int, sudo: bool, say: Callable[[str], None]) -> Measured:
    """Every variant ``runs`` times, interleaved (repetition by repetition)."""
    result = Measured(target, sudo)
    result.cursor, result.stamp, result.held = first_poll(target, sudo)
    if result.cursor is None:
        target.notes.append("journalctl gave no cursor: every poll reads the whole boot's kernel log")
    if result.stamp is None:
        target.notes.append("no stamp of needrestart's and apt's files: every poll reads them")
    if result.held:
        target.notes.append("a process holds a GPU: the ps sections run (task target 12)")
    todo = variants(sudo, result.cursor, result.stamp)
    for rep in range(runs):
        for v in todo:
            try:
                run = target.run(v.script)
            except (ValueError, OSError, subprocess.TimeoutExpired) as exc:
                result.errors.append(f"{v.name} (run {rep + 1}): {exc}")
                continue
            result.runs.setdefault(v.name, []).append(run)
        probe = result.runs.get("probe", [])
        if probe:
            say(f"  {target.kind}: run {rep + 1}/{runs}: probe {probe[-1].tasks} tasks (raw), "
                f"{probe[-1].cpu_ms:.0f} ms CPU, {probe[-1].out_bytes} bytes")
    return result


# ----- the report -------------------------------------------------------------------------------
def _mm(values: list[float], fmt: str = "{:.0f}", low: bool = False) -> str:
    """``median / max`` (with ``low``: and the smallest, where others' forks may have added to it)."""
    if not values:
        return "n/a"
    med, top = statistics.median(values), max(values)
    return f"{fmt.format(med)} / {fmt.format(top)}" + (f" (min {fmt.format(min(values))})" if low else "")


def _med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def verdicts(m: Measured) -> list[tuple[str, bool | None]]:
    """The issue's targets, beyond nvidia-smi's own (the whole probe less its gpus section alone).

    In a shared PID namespace the task count is the smallest of the runs (others' forks only add).
    """
    beyond = m.diff("probe", "gpus", "tasks")
    if m.target.isolated:
        tasks = _med(beyond)
    else:  # the smallest whole probe less the smallest gpus section: each the closest to its own count
        whole, gpus = m.net("probe", "tasks"), m.net("gpus", "tasks")
        tasks = min(whole) - min(gpus) if whole and gpus else None
    ticks = _med(m.diff("probe", "gpus", "cpu_ms"))
    precise = _med(m.diff("probe", "gpus", "rusage_ms"))
    out: list[tuple[str, bool | None]] = []
    if tasks is not None:
        how = "" if m.target.isolated else ", the smallest counts of the runs (shared PID namespace)"
        goal = TARGET_TASKS_HELD if m.held else TARGET_TASKS
        out.append((f"tasks beyond nvidia-smi's own: {tasks:.0f}{how} (target <= {goal}"
                    f"{', a process holds a GPU' if m.held else ''})", tasks <= goal))
    if precise is not None:
        out.append((f"CPU beyond nvidia-smi's own: {precise:.1f} ms by wait4, the shell included"
                    f"{f' ({ticks:.0f} ms by times, 10 ms steps)' if ticks is not None else ''} "
                    f"(target <= {TARGET_CPU_MS:.0f} ms)", precise <= TARGET_CPU_MS))
    elif ticks is not None:
        near = abs(ticks - TARGET_CPU_MS) < 10
        out.append((f"CPU beyond nvidia-smi's own: {ticks:.0f} ms by times (target <= {TARGET_CPU_MS:.0f} ms"
                    f"{'; within the 10 ms step of times' if near else ''})", ticks <= TARGET_CPU_MS))
    return out


def report(m: Measured) -> str:
    """The tables of one kind of node (Markdown)."""
    t = m.target
    lines = [f"### {t.title}", ""]
    lines += [f"- {n}" for n in t.notes]
    ns = ("private PID namespace (unshare --pid --fork): the counter moves only for the probe"
          if t.isolated else "the node's own PID namespace: other processes of the node move the counter too "
          "(tasks: an upper bound; min = the closest to the probe's own)")
    base = m.runs.get("empty", [])
    lines.append(f"- {ns}; {len(m.runs.get('probe', []))} runs")
    if base:
        walls = [b.wall_ms for b in base if b.wall_ms is not None]
        lines.append(f"- the measuring lines' own cost (empty script, median; subtracted below): "
                     f"{statistics.median(b.tasks for b in base):.0f} task(s) "
                     f"(min {min(b.tasks for b in base)}, max {max(b.tasks for b in base)}), "
                     f"{statistics.median(b.cpu_ms for b in base):.0f} ms CPU, "
                     f"{statistics.median(walls) if walls else float('nan'):.1f} ms wall")
    if any(r.wrapped for rs in m.runs.values() for r in rs):
        lines.append("- the PID counter wrapped during a run (pid_max): that run's count is a lower bound")
    lines.append("")
    precise = any(r.rusage_ms is not None for r in m.runs.get("probe", []))
    lines.append("Each cell: median / max over the runs, less the empty script's (tasks, CPU, wall).")
    lines.append("")
    head = ("| what | tasks | CPU ms, times (children) | sh itself ms, times | wall ms | bytes |"
            + (" CPU ms, wait4 (tree + sh) |" if precise else ""))
    lines += [head, "| --- | --- | --- | --- | --- | --- |" + (" --- |" if precise else "")]

    def row(label: str, get: Callable[[str], list[float]]) -> str:
        cells = [label, _mm(get("tasks"), low=not t.isolated), _mm(get("cpu_ms")), _mm(get("shell_ms")),
                 _mm(get("wall_ms"), "{:.1f}"), _mm(get("out_bytes"))]
        if precise:
            cells.append(_mm(get("rusage_ms"), "{:.1f}"))
        return "| " + " | ".join(cells) + " |"

    lines.append(row("whole probe (a later poll: kernel log from the cursor)", lambda a: m.net("probe", a)))
    lines.append(row("whole probe, first poll (the whole boot's kernel log: every poll before issue 16)",
                     lambda a: m.net("probe first", a)))
    lines.append(row("gpus section alone (nvidia-smi's own)", lambda a: m.net("gpus", a)))
    lines.append(row("**beyond nvidia-smi** (whole - gpus), a later poll", lambda a: m.diff("probe", "gpus", a)))
    lines.append(row("beyond nvidia-smi, first poll", lambda a: m.diff("probe first", "gpus", a)))
    lines.append(row("kernel section from the cursor (journalctl -k -b --cursor \\| awk)",
                     lambda a: m.net("kernel", a)))
    lines.append(row("kernel section, first poll (journalctl -k -b \\| awk)", lambda a: m.net("kernel first", a)))
    lines.append(row("journalctl -k -b alone (raw, before awk)", lambda a: m.net("journalctl raw", a)))
    if t.stand_ins:
        cpu_attr = "rusage_ms" if precise else "cpu_ms"
        real = [s.name for s in SECTIONS if s.name != "gpus" and s.name not in t.stand_ins]
        tasks = [_med(m.net(name, "tasks")) for name in real] + [_med(m.diff("holders+derived", "holders", "tasks"))]
        cpus = [_med(m.net(name, cpu_attr)) for name in real] + [_med(m.diff("holders+derived", "holders", cpu_attr))]
        if all(v is not None for v in tasks + cpus):
            n_tasks, n_cpu = sum(v or 0 for v in tasks), sum(v or 0 for v in cpus)
            cells = [f"beyond nvidia-smi, real tools only (sum of the sections' medians, less "
                     f"{', '.join(t.stand_ins)}: stand-ins)", f"{n_tasks:.0f}", "" if precise else f"{n_cpu:.0f}",
                     "", "", ""]
            lines.append("| " + " | ".join(cells + ([f"{n_cpu:.1f}"] if precise else [])) + " |")
    lines.append("")
    whole = {a: _med(m.net("probe", a)) for a in ("wall_ms", "cpu_ms", "out_bytes")}
    kern = {a: _med(m.net("kernel", a)) for a in ("wall_ms", "cpu_ms", "out_bytes")}
    share = []
    for a, label in (("wall_ms", "wall"), ("cpu_ms", "CPU"), ("out_bytes", "bytes")):
        w, k = whole[a], kern[a]
        if w and k is not None:
            share.append(f"{100 * k / w:.0f}% of the {label}")
    raw = _med(m.net("journalctl raw", "out_bytes"))
    if share:
        lines.append(f"Kernel section's share of a later poll: {', '.join(share)}"
                     + (f"; a first poll reads the boot's whole kernel log ({raw:.0f} bytes raw), later polls "
                        "only what came since the cursor." if raw else "."))
        lines.append("")
    lines.append("Targets (issues 16 and 37), a later poll beyond nvidia-smi's own:")
    for text, ok in verdicts(m):
        lines.append(f"- {text}: {'met' if ok else 'NOT MET'}")
    lines.append("")
    cpu = "rusage_ms" if precise else "cpu_ms"
    lines += ["Each section alone (`probe_script(only=(NAME,))`, the same wrapper):", "",
              f"| section | external commands (from the script) | tasks | CPU ms, {'wait4' if precise else 'times'} | "
              "wall ms | bytes |", "| --- | --- | --- | --- | --- | --- |"]
    started = dict(script_sections(probe_script(m.sudo)))
    for v in variants(m.sudo, m.cursor, m.stamp):
        if not v.section:
            continue
        cmds = ", ".join(str(c) for c in external_commands(started.get(v.name, ""))) or "-"
        lines.append(f"| {v.name} | {cmds} | {_mm(m.net(v.name, 'tasks'), low=not t.isolated)} | "
                     f"{_mm(m.net(v.name, cpu), '{:.1f}')} | {_mm(m.net(v.name, 'wall_ms'), '{:.1f}')} | "
                     f"{_mm(m.net(v.name, 'out_bytes'))} |")
    derived = ", ".join(str(c) for name in ("pids", *DERIVED_SECTIONS)
                        for c in external_commands(started.get(name, ""))) or "-"
    lines.append(f"| pids, processes, cgroups, jobs (with holders, less holders) | {derived} | "
                 f"{_mm(m.diff('holders+derived', 'holders', 'tasks'), low=not t.isolated)} | "
                 f"{_mm(m.diff('holders+derived', 'holders', cpu), '{:.1f}')} | "
                 f"{_mm(m.diff('holders+derived', 'holders', 'wall_ms'), '{:.1f}')} | "
                 f"{_mm(m.diff('holders+derived', 'holders', 'out_bytes'))} |")
    if m.errors:
        lines += ["", f"ERRORS ({len(m.errors)}):"] + [f"- {e}" for e in m.errors[:10]]
    return "\n".join(lines)


def static_summary(sudo: bool) -> str:
    """Which commands the probe starts, per section, read from the script itself."""
    lines = ["### What the probe script starts (read from its text)", "",
             "| section | external commands | count (of them conditional) |", "| --- | --- | --- |"]
    total = cond = 0
    for name, text in script_sections(probe_script(sudo)):
        cmds = external_commands(text)
        total += len(cmds)
        cond += sum(c.conditional for c in cmds)
        lines.append(f"| {name} | {', '.join(str(c) for c in cmds) or '-'} | {len(cmds)} "
                     f"({sum(c.conditional for c in cmds)}) |")
    lines.append(f"| **all** | | {total} ({cond}) |")
    lines += ["", "Processes are more than commands: each `$(...)` and each pipeline element is a fork (dash "
              "execs a lone simple command in it), the kernel section's awk starts journalctl (and, where the journal falls short, dmesg) "
              "through `sh -c`, which `exec` spares a fork, and shims and stand-ins add their own forks; threads take PIDs too."]
    return "\n".join(lines)


# ----- the kinds of node ------------------------------------------------------------------------
def local_target() -> Target:
    """This machine: ``sh -c`` (in a PID namespace of its own where root may make one)."""
    tools = [name for name in ("nvidia-smi", "journalctl", "fuser", "systemctl", "lspci") if shutil.which(name)]
    missing = [name for name in ("nvidia-smi", "journalctl", "fuser", "systemctl", "lspci") if name not in tools]
    notes = [f"{platform.node()}: {platform.platform()}, {os.cpu_count()} CPUs, /bin/sh -> "
             f"{os.path.realpath('/bin/sh')}, uid {os.geteuid()}"]
    if missing:
        notes.append(f"not installed here: {', '.join(missing)} (those sections measure a failing lookup)")
    return Target("local", "local: this machine, plain sh", lambda inner: inner, python=sys.executable, notes=notes)


def ssh_argv(config: Path, host: str) -> Callable[[list[str]], list[str]]:
    """``ssh -F CONFIG HOST 'CMD'``: a fresh connection per run (like a cold poll)."""
    def argv(inner: list[str]) -> list[str]:
        return ["ssh", "-F", str(config), "-o", "BatchMode=yes", "-o", "ConnectTimeout=15", host, shlex.join(inner)]
    return argv


@contextmanager
def static_node(say: Callable[[str], None]) -> Iterator[Target]:
    """One static shim node behind the loopback sshd rig (stopped by PID at the end)."""
    from bench.rig import BenchRig  # the rig needs asyncssh and psutil: not for --local

    with BenchRig(1) as rig:
        node = rig.rig.nodes[STATIC_NODE]
        say(f"static: {STATIC_NODE} on {rig.rig.target(STATIC_NODE)}, probe {rig.sizes[STATIC_NODE]} bytes")
        yield Target("static", f"static shim node ({STATIC_NODE} of sim:fleet-256, /bin/sh + cat shims, "
                     "behind the loopback sshd of tests/sshd_rig.py, over ssh)",
                     ssh_argv(rig.ssh_config, STATIC_NODE),
                     notes=[f"shims in {node.bin} (first on PATH for that port); kernel log padded so one "
                            f"probe is ~48 KB, like `make bench`",
                            "each static shim is a sh script that forks `cat` for its stdout and stderr files: "
                            "more processes than the real tool, and none of its CPU"])


def lab_unavailable() -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root (the lab mounts overlays and boots systemd-nspawn containers)"
    if shutil.which("systemd-nspawn") is None:
        return "systemd-nspawn is missing (apt-get install systemd-container)"
    from nvls_tui.lab.machine import missing_requirements

    return missing_requirements()


@contextmanager
def lab_node(say: Callable[[str], None], scenario: str = LAB_SCENARIO) -> Iterator[Target]:
    """A lab of one node on 127.0.9.x in a temporary folder; ``lifecycle.down`` always, also on error."""
    from nvls_tui.lab import lifecycle
    from nvls_tui.lab.machine import mounted_under

    folder = Path(tempfile.mkdtemp(prefix="nvls-node-cost-lab-"))
    old_term = signal.getsignal(signal.SIGTERM)

    def on_term(_sig: int, _frame: object) -> None:
        raise KeyboardInterrupt  # so that the finally below brings the lab down

    signal.signal(signal.SIGTERM, on_term)
    try:
        began = time.monotonic()
        lifecycle.up(folder, [LAB_NODE], scenario, say=lambda text: say(f"lab: {text}"), subnet=LAB_SUBNET)
        say(f"lab: up in {time.monotonic() - began:.1f} s ({folder})")
        yield Target("lab", f"lab node ({LAB_NODE}, {scenario}: a systemd-nspawn container on "
                     f"127.0.{LAB_SUBNET}.10, real systemd, sshd, journald, procps, psmisc; over ssh)",
                     ssh_argv(folder / "ssh_config", LAB_NODE), stand_ins=("fm_version", "nvswitches", "kernel"),
                     notes=["nvidia-smi, nv-fabricmanager, lspci and journalctl -k are the lab's Python stand-ins "
                            "(one interpreter start each): their CPU is the simulator's, not the real tools'"])
    finally:
        try:
            lifecycle.down(folder, say=lambda text: say(f"lab: {text}"))
        finally:
            signal.signal(signal.SIGTERM, old_term)
            if not mounted_under(folder):
                shutil.rmtree(folder, ignore_errors=True)
            else:
                say(f"lab: WARNING something is still mounted under {folder}: left in place")


# ----- a CUDA process holding the GPU (--holder) -------------------------------------------------------
# A CUDA context on GPU 0 through the driver API alone (the driver ships libcuda.so.1): the process then holds
# /dev/nvidia0, /dev/nvidiactl and /dev/nvidia-uvm open, as a training job does. It says "held" once the
# context exists and keeps it until its stdin closes.
CUDA_HOLDER = (
    "import ctypes, sys\n"
    "cuda = ctypes.CDLL('libcuda.so.1')\n"
    "ctx, dev = ctypes.c_void_p(), ctypes.c_int()\n"
    "for step, rc in (('cuInit', cuda.cuInit(0)), ('cuDeviceGet', cuda.cuDeviceGet(ctypes.byref(dev), 0)),\n"
    "                 ('cuCtxCreate', cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))):\n"
    "    if rc != 0:\n"
    "        sys.exit(f'{step} failed: CUDA error {rc}')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


@contextmanager
def cuda_holder(say: Callable[[str], None]) -> Iterator[int]:
    """A process holding GPU 0 through a CUDA context for the duration (its PID); ended at the end."""
    proc = subprocess.Popen([sys.executable, "-c", CUDA_HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "held":
            proc.wait(timeout=30)
            raise RuntimeError(f"the CUDA holder did not start: {(proc.stderr.read() if proc.stderr else '').strip()}")
        say(f"holder: PID {proc.pid} holds GPU 0 (a CUDA context through libcuda.so.1)")
        yield proc.pid
    finally:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ----- main ---------------------------------------------------------------------------------------
def measure_kind(target: Target, args: argparse.Namespace, say: Callable[[str], None]) -> Measured:
    """Isolate where possible, then measure every variant."""
    if target.python is None:
        target.find_python()
    if target.python is None:
        target.notes.append("no python3 on the node: CPU only from `times` (10 ms steps)")
    if args.isolate != "no":
        why = target.try_isolation(args.sudo)
        if why is not None:
            target.notes.append(f"no private PID namespace: {why}")
            if args.isolate == "yes":
                raise SystemExit(f"{target.kind}: --isolate yes, but unshare --pid failed: {why}")
    return measure(target, args.runs, args.sudo, say)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--kinds", default="static,lab,local", help="comma-separated: static, lab, local")
    p.add_argument("--local", action="store_true", help="only this machine (standard library + nvls_tui only)")
    p.add_argument("--runs", type=int, default=5, help="repetitions of each script (median and max)")
    p.add_argument("--sudo", action="store_true", help="prefix the privileged reads with sudo -n, as the poll's --sudo")
    p.add_argument("--isolate", choices=("auto", "yes", "no"), default="auto",
                   help="run each wrapped script in a PID namespace of its own (auto: where unshare works)")
    p.add_argument("--lab-scenario", default=LAB_SCENARIO, help="the lab node's scenario (seed-incident: gpu05's "
                   "FM killed and a user's watch -n 1 nvidia-smi running)")
    p.add_argument("--out", type=Path, default=None, help="also write the raw numbers as JSON into this directory")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is not met")
    p.add_argument("--holder", action="store_true", help="with --local on a GPU node: a CUDA process holds GPU 0 "
                   "while the poll is measured (libcuda.so.1 by ctypes)")
    args = p.parse_args(argv)
    kinds = ["local"] if args.local else [k.strip() for k in args.kinds.split(",") if k.strip()]
    if args.runs < 1 or not set(kinds) <= {"static", "lab", "local"}:
        p.error("--runs must be positive; kinds are static, lab, local")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    print("## Node cost of one poll (bench/node_cost.py)\n")
    print(static_summary(args.sudo) + "\n", flush=True)
    done: list[Measured] = []
    skipped: dict[str, str] = {}
    for kind in kinds:
        say(f"node cost: {kind}")
        try:
            if kind == "local" and args.holder:
                with cuda_holder(say) as pid:
                    target = local_target()
                    target.notes.append(f"a CUDA process (PID {pid}, a context on GPU 0 through libcuda.so.1) "
                                        "holds the GPU for the whole measurement")
                    done.append(measure_kind(target, args, say))
            elif kind == "local":
                done.append(measure_kind(local_target(), args, say))
            elif kind == "static":
                with static_node(say) as target:
                    done.append(measure_kind(target, args, say))
            else:
                why = lab_unavailable()
                if why:
                    skipped[kind] = why
                    print(f"### lab node: skipped: {why}\n", flush=True)
                    continue
                with lab_node(say, args.lab_scenario) as target:
                    done.append(measure_kind(target, args, say))
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            skipped[kind] = f"failed: {exc}"
            print(f"### {kind}: FAILED: {exc}\n", flush=True)
            continue
        print(report(done[-1]) + "\n", flush=True)
    failed = any(m.errors for m in done) or any(v.startswith("failed") for v in skipped.values())
    missed = any(ok is False for m in done for _, ok in verdicts(m))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"node-cost-{time.strftime('%Y%m%d-%H%M%S')}.json"
        path.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "runs": args.runs, "sudo": args.sudo,
            "machine": {"node": platform.node(), "platform": platform.platform(), "cpus": os.cpu_count()},
            "skipped": skipped,
            "kinds": {m.target.kind: {"isolated": m.target.isolated, "errors": m.errors,
                                      "verdicts": [[t, ok] for t, ok in verdicts(m)],
                                      "runs": {k: [r.__dict__ for r in v] for k, v in m.runs.items()}}
                      for m in done},
        }, indent=1))
        print(f"raw numbers: {path}")
    return 1 if failed or (args.strict and missed) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the lab and the rig were already brought down by their finally blocks
        print("node cost: interrupted", file=sys.stderr)
        sys.exit(130)
