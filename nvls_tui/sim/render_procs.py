"""Process tools: ``fuser``, ``ps``, ``pgrep``/``pkill``, ``kill`` and ``lspci`` in their real formats."""

from __future__ import annotations

import re
import signal as _signal
import time

from nvls_tui.sim.processes import send_signal
from nvls_tui.sim.state import Node, Proc

NAME_FIELD = 20  # psmisc's NAME_FIELD: file names are padded to this width


def expand_devices(node: Node, paths: list[str]) -> list[str]:
    """Expand a literal ``/dev/nvidia*`` (the shell would have) against the node's device files."""
    out: list[str] = []
    for path in paths:
        if "*" in path or "?" in path:
            rx = re.compile("^" + re.escape(path).replace(r"\*", ".*").replace(r"\?", ".") + "$")
            matches = [f for f in node.device_files() if rx.match(f)]
            out += matches or [path]
        else:
            out.append(path)
    return out


def fuser(node: Node, args: list[str], now: float) -> tuple[int, str, str, str]:
    """``fuser [-v] [-k] [-s] FILE...``: (exit, stdout, stderr, merged) like psmisc 23.

    ``merged`` is what a terminal (or ``2>&1``) shows, with stdout and stderr interleaved.
    """
    verbose = kill = silent = False
    files: list[str] = []
    for a in args:
        if a.startswith("-") and len(a) > 1 and a[1:].isalpha():
            verbose |= "v" in a
            kill |= "k" in a
            silent |= "s" in a
        else:
            files.append(a)
    if not files:
        usage = "No process specification given\n"
        return 1, "", usage, usage
    files = expand_devices(node, files)
    known = set(node.device_files())
    holders = node.holders()
    out = err = merged = ""
    found = False
    header_done = False
    for path in files:
        if path not in known:
            msg = f"Specified filename {path} does not exist.\n"
            err += msg
            merged += msg
            continue
        procs = sorted(holders.get(path, []), key=lambda p: p.pid)
        if not procs:
            continue
        found = True
        if silent:
            continue
        if verbose:
            if not header_done:
                line = " " * (NAME_FIELD + 1) + "USER        PID ACCESS COMMAND\n"
                err += line
                merged += line
                header_done = True
            label = f"{path}:"
            for i, proc in enumerate(procs):
                if i == 0 and len(label) > NAME_FIELD:
                    first = label + "\n" + " " * (NAME_FIELD + 1)
                else:
                    first = f"{label:<{NAME_FIELD}} " if i == 0 else " " * (NAME_FIELD + 1)
                line = f"{first}{proc.user:<8}{proc.pid:>7} {proc.access} {proc.comm}\n"
                err += line
                merged += line
        else:
            label = f"{path}:"
            err += f"{label:<{NAME_FIELD}}"
            merged += f"{label:<{NAME_FIELD}}"
            for proc in procs:
                # psmisc separates PIDs with a space, so long PIDs never run together.
                out += f" {proc.pid:>5}"
                merged += f" {proc.pid:>5}"
                letter = "m" if "m" in proc.access else ""
                err += letter
                merged += letter
            err += "\n"
            merged += "\n"
    if kill and found:
        for pid in sorted({p.pid for f in files for p in holders.get(f, [])}):
            send_signal(node, pid, _signal.SIGKILL, now)
    if out:
        out += "\n"
    return (0 if found else 1), out, err, merged


# ---- ps ------------------------------------------------------------------------------------------
PS_FIELDS = {  # name: (header, width, right-aligned)
    "pid": ("PID", 7, True), "ppid": ("PPID", 7, True), "user": ("USER", 8, False), "uid": ("UID", 5, True),
    "lstart": ("STARTED", 24, False), "cgroup": ("CGROUP", 27, False), "comm": ("COMMAND", 15, False),
    "etimes": ("ELAPSED", 7, True), "stat": ("STAT", 4, False), "args": ("COMMAND", 0, False),
    "cmd": ("CMD", 0, False), "command": ("COMMAND", 0, False), "tty": ("TT", 8, False),
}


def lstart(ts: float) -> str:
    """ps's ``lstart``: ``Mon Aug 10 15:45:34 2026`` (day of month space-padded)."""
    t = time.gmtime(ts)
    return time.strftime("%a %b ", t) + f"{t.tm_mday:>2}" + time.strftime(" %H:%M:%S %Y", t)


def _value(proc: Proc, field: str, now: float) -> str:
    return {
        "pid": str(proc.pid), "ppid": str(proc.ppid), "user": proc.user, "uid": "0" if proc.user == "root" else "1000",
        "lstart": lstart(proc.start), "cgroup": proc.cgroup, "comm": proc.comm,
        "etimes": str(int(now - proc.start)), "stat": "Ssl" if proc.ppid == 1 else "S", "args": proc.args,
        "cmd": proc.args, "command": proc.args, "tty": "?",
    }[field]


def ps(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """``ps [-ww] [-e] -o FMT [-p PIDS]`` (also ``-eo``, ``-ef``)."""
    fmt: list[str] = []
    pids: list[int] | None = None
    every = full = False
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-o", "--format", "-eo", "-Ao") and nxt is not None:
            fmt.append(nxt)
            every |= a in ("-eo", "-Ao")
            i += 1
        elif a in ("-p", "--pid", "-q") and nxt is not None:
            try:
                pids = (pids or []) + [int(x) for x in re.split(r"[,\s]+", nxt.strip()) if x]
            except ValueError:
                return 1, "", "error: process ID list syntax error\n"
            i += 1
        elif a in ("-e", "-A"):
            every = True
        elif a in ("-ef", "-fe"):
            every = full = True
        elif a in ("-w", "-ww", "--no-headers", "--cols", "-f"):
            full |= a == "-f"
        elif a.isdigit():
            pids = (pids or []) + [int(a)]
        else:
            return 1, "", "error: unsupported option (BSD syntax)\n" if not a.startswith("-") else \
                "error: unknown gnu long option\n" if a.startswith("--") else "error: unsupported SysV option\n"
        i += 1
    if full and not fmt:
        fmt = ["user=UID,pid,ppid,stime=STIME,tty,etimes=TIME,cmd"]
    columns: list[tuple[str, str | None, int]] = []
    for spec in ",".join(fmt or ["pid,tty,etimes,cmd"]).split(","):
        name, has_header, header = spec.partition("=")
        name, _colon, width = name.partition(":")
        name = {"stime": "lstart"}.get(name, name)
        if name not in PS_FIELDS:
            return 1, "", f"error: unknown user-defined format specifier \"{name}\"\n"
        base = PS_FIELDS[name]
        columns.append((name, header if has_header else base[0], int(width) if width.isdigit() else base[1]))
    # ps lists each PID once, whatever the -p list repeats, and skips PIDs that are gone.
    alive = {p.pid for p in node.alive()}
    procs = node.alive() if every or pids is None else [node.procs[p] for p in sorted(set(pids)) if p in alive]
    if pids is not None and not every:
        procs = sorted(procs, key=lambda p: p.pid)

    def row(cells: list[str]) -> str:
        parts = []
        for (name, _h, width), cell in zip(columns, cells, strict=True):
            right = PS_FIELDS[name][2]
            last = name == columns[-1][0]
            parts.append(cell.rjust(width) if right else (cell if last else cell.ljust(width)))
        return " ".join(parts).rstrip()

    lines = []
    if any(h for _n, h, _w in columns):
        lines.append(row([h or "" for _n, h, _w in columns]))
    lines += [row([_value(p, n, now) for n, _h, _w in columns]) for p in procs]
    code = 0 if procs else 1
    return code, "".join(line + "\n" for line in lines), ""


# ---- pgrep / pkill / kill ------------------------------------------------------------------------
def _signal_number(text: str) -> int | None:
    t = text.upper().removeprefix("SIG")
    if t.isdigit():
        return int(t)
    try:
        return int(_signal.Signals[f"SIG{t}"])
    except KeyError:
        return None


def pgrep(node: Node, args: list[str], now: float, kill: bool = False) -> tuple[int, str, str]:
    """``pgrep [-a] [-f] [-l] [-x] [-u USER] [-P PPID] PATTERN`` (and ``pkill`` with ``-SIG``)."""
    full = show_args = show_name = exact = False
    users: set[str] = set()
    parents: set[int] = set()
    pattern: str | None = None
    signo = int(_signal.SIGTERM)
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-u", "-U") and nxt is not None:
            users |= set(nxt.split(","))
            i += 1
        elif a == "-P" and nxt is not None:
            parents |= {int(x) for x in nxt.split(",") if x.isdigit()}
            i += 1
        elif a in ("--signal",) and nxt is not None:
            signo = _signal_number(nxt) or signo
            i += 1
        elif kill and a.startswith("-") and (a[1:].isdigit() or a[1:].isupper()) and _signal_number(a[1:]):
            signo = _signal_number(a[1:]) or signo
        elif a.startswith("-") and len(a) > 1 and pattern is None:
            flags = a[1:]
            full |= "f" in flags
            show_args |= "a" in flags
            show_name |= "l" in flags
            exact |= "x" in flags
        elif pattern is None:
            pattern = a
        else:
            return 2, "", f"{'pkill' if kill else 'pgrep'}: only one pattern can be provided\n"
        i += 1
    if pattern is None:
        return 2, "", f"{'pkill' if kill else 'pgrep'}: no matching criteria specified\n"
    try:
        rx = re.compile(pattern)
    except re.error:
        return 2, "", f"{'pkill' if kill else 'pgrep'}: invalid regular expression\n"
    matched = []
    for proc in node.alive():
        subject = proc.args if full else proc.comm
        hit = rx.fullmatch(subject) if exact else rx.search(subject)
        if hit and (not users or proc.user in users) and (not parents or proc.ppid in parents):
            matched.append(proc)
    if kill:
        for proc in matched:
            send_signal(node, proc.pid, signo, now)
        return (0 if matched else 1), "", ""
    lines = [f"{p.pid} {p.args}" if show_args else f"{p.pid} {p.comm}" if show_name else str(p.pid)
             for p in matched]
    return (0 if matched else 1), "".join(line + "\n" for line in lines), ""


def kill(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """procps ``kill [-SIG|-s SIG|-n N] PID...``."""
    signo = int(_signal.SIGTERM)
    pids: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-s", "-n", "--signal") and i + 1 < len(args):
            number = _signal_number(args[i + 1])
            if number is None:
                return 1, "", f"kill: unknown signal name {args[i + 1]}\n"
            signo = number
            i += 1
        elif a == "-l":
            return 0, " ".join(s.name.removeprefix("SIG") for s in _signal.Signals if s.value < 32) + "\n", ""
        elif a == "--":
            pids += args[i + 1:]
            break
        elif a.startswith("-") and len(a) > 1 and not pids:
            number = _signal_number(a[1:])
            if number is None:
                return 1, "", f"kill: unknown signal name {a[1:]}\n"
            signo = number
        else:
            pids.append(a)
        i += 1
    if not pids:
        return 1, "", "kill: not enough arguments\n"
    code, err = 0, ""
    for text in pids:
        if not text.isdigit():
            err += f"kill: failed to parse argument: '{text}'\n"
            code = 1
            continue
        if not send_signal(node, int(text), signo, now):
            err += f"kill: ({text}): No such process\n"
            code = 1
    return code, "", err


def lspci(node: Node, args: list[str]) -> tuple[int, str, str]:
    """``lspci [-D] [-n|-nn] [-d 10de:22a3]``: the NVSwitch bridges (and GPUs without a filter)."""
    domain = "-D" in args
    numeric = "-nn" if "-nn" in args else ("-n" if "-n" in args else "")
    wanted = args[args.index("-d") + 1].lower() if "-d" in args and args.index("-d") + 1 < len(args) else None
    rows = []
    for g in node.gpus:
        gpu_id = "10de:2330" if "H100" in g.name else "10de:2941"
        model = "GH100 [H100 SXM5 80GB]" if "H100" in g.name else "GB100 [GB200]"
        rows.append((f"0000:{g.bus_id.split(':')[1].lower()}:00.0", "3D controller", "0302", model, gpu_id))
    for bus in node.switches:
        rows.append((f"0000:{bus.lower()}:00.0", "Bridge", "0680", "GH100 [H100 NVSwitch]", "10de:22a3"))
    out = []
    for addr, cls, cls_id, model, dev_id in sorted(rows):
        if wanted and not _pci_match(wanted, dev_id):
            continue
        shown = addr if domain else addr[5:]
        if numeric == "-n":
            out.append(f"{shown} {cls_id}: {dev_id} (rev a1)")
        elif numeric == "-nn":
            out.append(f"{shown} {cls} [{cls_id}]: NVIDIA Corporation {model} [{dev_id}] (rev a1)")
        else:
            out.append(f"{shown} {cls}: NVIDIA Corporation {model} (rev a1)")
    return 0, "".join(line + "\n" for line in out), ""


def _pci_match(wanted: str, dev_id: str) -> bool:
    vendor, _, device = wanted.partition(":")
    v, d = dev_id.split(":")
    return vendor in ("", v) and device in ("", d)
