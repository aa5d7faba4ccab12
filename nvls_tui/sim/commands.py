"""Run one argv on a simulated node: advance it to ``now``, log the command, dispatch to a tool.

The result is a :class:`Output` (finished), a :class:`~nvls_tui.sim.render_nccl.Plan` (a timed run to
replay: all_reduce_perf) or :data:`HANG` (the command never returns: a wedged node's nvidia-smi).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nvls_tui.poll.fence import FENCE_STATUS, names_run, refusal, unfence
from nvls_tui.sim import (
    fabric,
    files,
    procps,
    render_nccl,
    render_procs,
    render_smi,
    render_system,
    restarters,
)
from nvls_tui.sim.processes import advance
from nvls_tui.sim.state import Node


@dataclass(frozen=True)
class Output:
    """A finished command.

    Attributes:
        merged: the interleaved stdout+stderr where they differ in order (fuser).
        chunks: the writes in the order the tool makes them, as ``(fd, text)``: replayed by the shims
            so that a shell's ``2>&1`` interleaves them exactly as with the real tool.
    """

    exit_status: int
    stdout: str = ""
    stderr: str = ""
    merged: str | None = None
    chunks: tuple[tuple[int, str], ...] | None = None

    def writes(self) -> tuple[tuple[int, str], ...]:
        """``chunks``, or stdout then stderr."""
        return self.chunks if self.chunks is not None else ((1, self.stdout), (2, self.stderr))


class _Hang:
    """Marker: the command never returns."""

    def __repr__(self) -> str:
        return "HANG"


HANG = _Hang()
Result = Output | render_nccl.Plan | _Hang

SIM_COMMANDS = ("nvidia-smi", "systemctl", "journalctl", "fuser", "ps", "kill", "pgrep", "pkill",
                "nv-fabricmanager", "lspci", "hostname", "id", "all_reduce_perf", "date",
                "mkdir", "cat", "tee", "mv", "rm", "rmdir", "find", "grep", "apt-config", "stat")


def strip_wrappers(argv: Sequence[str], env: Mapping[str, str] | None) -> tuple[list[str], dict[str, str]]:
    """Drop ``sudo [-n] [-E] [--]`` and ``env VAR=x`` / ``VAR=x`` prefixes; return (argv, env)."""
    args, merged = list(argv), dict(env or {})
    while args:
        head = args[0].rsplit("/", 1)[-1]
        if head == "sudo":
            args = args[1:]
            while args and args[0].startswith("-"):
                stop = args[0] == "--"
                args = args[1:]
                if stop:
                    break
        elif head == "env":
            args = args[1:]
        elif "=" in args[0] and args[0].split("=", 1)[0].replace("_", "").isalnum() and args[0][0].isalpha():
            key, value = args[0].split("=", 1)
            merged[key] = value
            args = args[1:]
        else:
            break
    return args, merged


def execute(node: Node, argv: Sequence[str], now: float, *, env: Mapping[str, str] | None = None,
            stdin: str | None = None) -> Result:
    """Run ``argv`` on ``node`` at simulated time ``now``.

    A command behind the lock's fence (:mod:`nvls_tui.poll.fence`) is logged as the command itself, as
    the shims behind a real sshd log it (the fence is the node's own ``sh``).
    """
    advance(node, now)
    if node.silent:
        node.log_command(now, list(argv))
        return HANG  # nothing of the node answers, whatever is asked
    args, env_ = strip_wrappers(argv, env)
    behind = unfence([args[0].rsplit("/", 1)[-1], *args[1:]]) if args else None
    if behind is not None:
        return _fence(node, behind, now, env_, stdin)
    node.log_command(now, list(argv))
    if not args:
        return Output(0)
    name, rest = args[0].rsplit("/", 1)[-1], args[1:]
    if name in node.missing_tools:
        return Output(127, "", f"sh: 1: {args[0]}: not found\n")
    if name in node.hung_tools:
        return HANG
    if name == "nvidia-smi":
        return HANG if node.wedged else _nvidia_smi(node, rest, now)
    if name == "all_reduce_perf":
        return render_nccl.all_reduce_perf(node, rest, env_, now)
    if argv and argv[0] == "kill":
        # Over SSH a bare `kill` is the login shell's builtin (bash on the nodes), not procps's
        # /bin/kill: its words for a PID that is gone (golden: the lab's real bash). `env kill` and
        # /bin/kill stay procps.
        code, out, err = render_procs.kill(node, rest, now)
        return Output(code, out, re.sub(r"^kill: \((\d+)\): No such process$",
                                        r"bash: line 1: kill: (\1) - No such process", err, flags=re.M))
    if name == "fuser":
        code, out, err, merged, chunks = render_procs.fuser_writes(node, rest, now)
        return Output(code, out, err, merged, chunks)
    simple = {
        "systemctl": lambda: render_system.systemctl(node, rest, now),
        "journalctl": lambda: render_system.journalctl(node, rest, now),
        "dmesg": lambda: render_system.dmesg(node, rest, now),
        "ps": lambda: procps.ps(node, rest, now),
        "kill": lambda: render_procs.kill(node, rest, now),
        "pgrep": lambda: render_procs.pgrep(node, rest, now),
        "pkill": lambda: render_procs.pgrep(node, rest, now, kill=True),
        "lspci": lambda: render_procs.lspci(node, rest),
        "nv-fabricmanager": lambda: _fabricmanager(node, rest),
        "hostname": lambda: (0, node.name + "\n", ""),
        "id": lambda: _id(rest),
        "date": lambda: _date(node, rest, now),
        "mkdir": lambda: files.mkdir(node, rest),
        "cat": lambda: files.cat(node, rest, stdin, now),
        "tee": lambda: files.tee(node, rest, stdin, now),
        "mv": lambda: files.mv(node, rest),
        "stat": lambda: files.stat(node, rest, now),
        "rm": lambda: files.rm(node, rest),
        "rmdir": lambda: files.rmdir(node, rest),
        "find": lambda: files.find(node, rest),
        "grep": lambda: restarters.grep(node, rest),
        "apt-config": lambda: restarters.apt_config(node, rest),
        "true": lambda: (0, "", ""),
        "false": lambda: (1, "", ""),
    }
    if name in simple:
        code, out, err = simple[name]()
        return Output(code, out, err)
    return Output(127, "", f"sh: 1: {args[0]}: not found\n")


def _fence(node: Node, behind: tuple[str, str, tuple[str, ...]], now: float, env: Mapping[str, str],
           stdin: str | None) -> Result:
    """The lock's fence script as the node's ``sh`` runs it: the command only while the owner file names the run."""
    owner_file, run_id, command = behind
    if not names_run(node.files.get(files.norm(owner_file), ""), run_id):
        return Output(FENCE_STATUS, "", refusal(run_id, owner_file))
    return execute(node, command, now, env=env, stdin=stdin) if command else Output(0)


def _fabricmanager(node: Node, args: list[str]) -> tuple[int, str, str]:
    if node.fm_version is None:
        return 127, "", "sh: 1: nv-fabricmanager: not found\n"
    if args[:1] in (["--version"], ["-v"]):
        return 0, f"Fabric Manager version is : {node.fm_version}\n", ""
    return 1, "", "nv-fabricmanager: unrecognized option; run as a service (nvidia-fabricmanager.service)\n"


def _id(args: list[str]) -> tuple[int, str, str]:
    """coreutils ``id``: simulated nodes are polled as root."""
    if args == ["-u"]:
        return 0, "0\n", ""
    if not args:
        return 0, "uid=0(root) gid=0(root) groups=0(root)\n", ""
    return 1, "", f"id: invalid option -- '{args[0].lstrip('-')[:1]}'\nTry 'id --help' for more information.\n"


def _date(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """coreutils ``date [-u] [+FORMAT]``: the node's clock, in its zone unless ``-u``."""
    fmt = next((a[1:] for a in args if a.startswith("+")), "%a %b %d %H:%M:%S %Z %Y")
    # %s is seconds since the epoch whatever the zone (C's strftime would read it in this process's zone).
    fmt = fmt.replace("%s", str(int(node.clock(now))))
    return 0, node.local_time(now, utc=bool({"-u", "--utc", "--universal"} & set(args))).strftime(fmt) + "\n", ""


def _nvidia_smi(node: Node, args: list[str], now: float) -> Output:
    index: int | None = None
    if "-i" in args or "--id" in args:
        at = args.index("-i") if "-i" in args else args.index("--id")
        raw = args[at + 1] if at + 1 < len(args) else ""
        args = args[:at] + args[at + 2:]
        match = [g.index for g in node.gpus if raw in (str(g.index), g.uuid, g.bus_id)]
        if not match:
            return Output(6, f"No devices were found matching {raw}\n" if raw else "", "")
        index = match[0]
    gpus = [g for g in node.gpus if index is None or g.index == index]
    flags = set(args)
    if not args:
        return Output(0, render_smi.table(node, now))
    if flags <= {"-q", "--query", "-x", "--xml-format"} and flags & {"-q", "--query"}:
        if flags & {"-x", "--xml-format"}:
            return Output(0, render_smi.query_xml(node, now))
        return Output(0, render_smi.query_text(node, now, gpus))
    query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), None)
    if query is not None:
        if fmt is None or "csv" not in fmt.split(","):
            return Output(2, "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
        code, out, err = render_smi.query_csv(node, now, [f.strip() for f in query.split(",") if f.strip()],
                                              set(fmt.split(",")), gpus)
        return Output(code, out, err)
    if flags & {"-r", "--gpu-reset"} and len(args) == 1:
        code, out, err = fabric.reset_gpus(node, now, index)
        return Output(code, out, err)
    pm = _pm_value(args)
    if pm is not None:
        return Output(0, render_smi.set_persistence(node, pm, gpus))
    if args == ["-L"]:
        return Output(0, "".join(f"GPU {g.index}: {g.name} (UUID: {g.uuid})\n" for g in gpus))
    return Output(2, "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")


def _pm_value(args: list[str]) -> bool | None:
    if len(args) == 2 and args[0] in ("-pm", "--persistence-mode") and args[1] in ("0", "1", "ENABLED", "DISABLED"):
        return args[1] in ("1", "ENABLED")
    if len(args) == 1 and args[0].startswith("--persistence-mode="):
        return args[0].split("=", 1)[1] in ("1", "ENABLED")
    return None
