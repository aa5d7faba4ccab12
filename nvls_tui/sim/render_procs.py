"""Process tools: ``fuser``, ``pgrep``/``pkill``, ``kill`` and ``lspci`` in their real formats (``ps``: procps.py)."""

from __future__ import annotations

import re
import signal as _signal

from nvls_tui.sim.processes import send_signal
from nvls_tui.sim.state import Node

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


FUSER_USAGE = """Usage: fuser [-fIMuvw] [-a|-s] [-4|-6] [-c|-m|-n SPACE]
             [-k [-i] [-SIGNAL]] NAME...
       fuser -l
       fuser -V
Show which processes use the named files, sockets, or filesystems.

  -a,--all              display unused files too
  -i,--interactive      ask before killing (ignored without -k)
  -I,--inode            use always inodes to compare files
  -k,--kill             kill processes accessing the named file
  -l,--list-signals     list available signal names
  -m,--mount            show all processes using the named filesystems or
                        block device
  -M,--ismountpoint     fulfill request only if NAME is a mount point
  -n,--namespace SPACE  search in this name space (file, udp, or tcp)
  -s,--silent           silent operation
  -SIGNAL               send this signal instead of SIGKILL
  -u,--user             display user IDs
  -v,--verbose          verbose output
  -w,--writeonly        kill only processes with write access
  -V,--version          display version information
  -4,--ipv4             search IPv4 sockets only
  -6,--ipv6             search IPv6 sockets only
  udp/tcp names: [local_port][,[rmt_host][,[rmt_port]]]

"""


class _Streams:
    """stdout, stderr and the two interleaved as a terminal (or ``2>&1``) shows them."""

    def __init__(self) -> None:
        self.out = self.err = self.merged = ""
        self.chunks: list[tuple[int, str]] = []

    def stdout(self, text: str) -> None:
        self.out += text
        self.merged += text
        self.chunks.append((1, text))

    def stderr(self, text: str) -> None:
        self.err += text
        self.merged += text
        self.chunks.append((2, text))


def fuser(node: Node, args: list[str], now: float) -> tuple[int, str, str, str]:
    """``fuser [-v] [-k] [-s] FILE...``: (exit, stdout, stderr, merged); see :func:`fuser_writes`."""
    return fuser_writes(node, args, now)[:4]


def fuser_writes(node: Node, args: list[str], now: float) -> tuple[int, str, str, str, tuple[tuple[int, str], ...]]:
    """``fuser [-v] [-k] [-s] FILE...``: (exit, stdout, stderr, merged, writes) exactly like psmisc 23.6.

    As in psmisc, the PIDs go to stdout (``" %5d"`` each, no newline at the end) and everything else,
    the ``-v`` table included, to stderr: only the merged stream has each PID in its table row.
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
        usage = "No process specification given\n" + FUSER_USAGE
        return 1, "", usage, usage, ((2, usage),)
    files = expand_devices(node, files)
    known = set(node.device_files())
    holders = node.holders()
    io = _Streams()
    found = False
    header_done = False
    # psmisc checks every name before it looks at any process: its complaints come first.
    for path in files:
        if path not in known:
            io.stderr(f"Specified filename {path} does not exist.\n")
    for path in files:
        if path not in known:
            continue
        procs = sorted(holders.get(path, []), key=lambda p: p.pid)
        if not procs:
            continue
        found = True
        if silent:
            continue
        label = f"{path}:"
        if verbose:
            if not header_done:
                io.stderr(" " * (NAME_FIELD + 1) + "USER        PID ACCESS COMMAND\n")
                header_done = True
            for i, proc in enumerate(procs):
                if i == 0 and len(label) > NAME_FIELD:
                    first = label + "\n" + " " * (NAME_FIELD + 1)
                else:
                    first = f"{label:<{NAME_FIELD}} " if i == 0 else " " * (NAME_FIELD + 1)
                io.stderr(f"{first}{proc.user:<8} ")
                io.stdout(f" {proc.pid:>5}")
                io.stderr(f" {proc.access} {proc.comm}\n")
        else:
            io.stderr(f"{label:<{NAME_FIELD}}")
            for proc in procs:
                io.stdout(f" {proc.pid:>5}")
                io.stderr("m" if "m" in proc.access else "")
            io.stderr("\n")
    if kill and found:
        for pid in sorted({p.pid for f in files for p in holders.get(f, [])}):
            send_signal(node, pid, _signal.SIGKILL, now)
    return (0 if found else 1), io.out, io.err, io.merged, tuple(io.chunks)


# ---- pgrep / pkill / kill ------------------------------------------------------------------------
def _signal_number(text: str) -> int | None:
    t = text.upper().removeprefix("SIG")
    if t.isdecimal():
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
            parents |= {int(x) for x in nxt.split(",") if x.isdecimal()}
            i += 1
        elif a in ("--signal",) and nxt is not None:
            signo = _signal_number(nxt) or signo
            i += 1
        elif kill and a.startswith("-") and (a[1:].isdecimal() or a[1:].isupper()) and _signal_number(a[1:]):
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


KILL_USAGE = (
    "\n"
    "Usage:\n"
    " kill [options] <pid> [...]\n"
    "\n"
    "Options:\n"
    " <pid> [...]            send signal to every <pid> listed\n"
    " -<signal>, -s, --signal <signal>\n"
    "                        specify the <signal> to be sent\n"
    " -q, --queue <value>    integer value to be sent with the signal\n"
    " -l, --list=[<signal>]  list all signal names, or convert one to a name\n"
    " -L, --table            list all signal names in a nice table\n"
    "\n"
    " -h, --help     display this help and exit\n"
    " -V, --version  output version information and exit\n"
    "\n"
    "For more details see kill(1).\n"
)
_PID_ARG = re.compile(r"^-?\d{1,10}$")


def kill(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """procps-ng 4.0 ``kill [-SIG|-s SIG] [--] PID...``, with its messages and exit status.

    As in procps, an unknown name after ``-s`` is not refused up front: the kill(2) call fails per
    PID (``Invalid argument``, or ``No such process`` for a PID that does not exist), while an
    unknown ``-NAME`` is a usage error naming its first letter.
    """
    signo: int | None = int(_signal.SIGTERM)
    pids: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-s", "--signal") and not pids:
            if i + 1 >= len(args):
                return 1, "", f"kill: option requires an argument -- 's'\n{KILL_USAGE}"
            signo = _signal_number(args[i + 1])
            i += 1
        elif a == "-l":
            return 0, " ".join(s.name.removeprefix("SIG") for s in _signal.Signals if s.value < 32) + "\n", ""
        elif a == "--":
            pids += args[i + 1:]
            break
        elif a.startswith("-") and len(a) > 1 and not pids:
            number = _signal_number(a[1:])
            if number is None:
                return 1, "", f"kill: invalid argument {a[1]}\n{KILL_USAGE}"
            signo = number
        else:
            pids.append(a)
        i += 1
    if not pids:
        return 1, "", f"kill: not enough arguments\n{KILL_USAGE}"
    code, err = 0, ""
    for text in pids:
        if not _PID_ARG.match(text):
            return 1, "", f"{err}kill: failed to parse argument: '{text}'\n"
        pid = abs(int(text))  # a negative PID names a process group: its leader stands for it here
        if pid not in node.procs:
            err += f"kill: ({text}): No such process\n"
            code = 1
        elif signo is None or not 0 <= signo <= 64:
            err += f"kill: ({text}): Invalid argument\n"
            code = 1
        else:
            send_signal(node, pid, signo, now)
    return code, "", err


# (a word of the GPU's name, its vendor:device id, lspci's name for it); the last is the fallback.
GPU_PCI_IDS = (("H100", "10de:2330", "GH100 [H100 SXM5 80GB]"), ("H200", "10de:2335", "GH100 [H200 SXM 141GB]"),
               ("GB200", "10de:2941", "GB100 [GB200]"))


def lspci(node: Node, args: list[str]) -> tuple[int, str, str]:
    """``lspci [-D] [-n|-nn] [-d 10de:22a3]``: the NVSwitch bridges (and GPUs without a filter)."""
    domain = "-D" in args
    numeric = "-nn" if "-nn" in args else ("-n" if "-n" in args else "")
    wanted = args[args.index("-d") + 1].lower() if "-d" in args and args.index("-d") + 1 < len(args) else None
    rows = []
    for g in node.gpus:
        # The device ids of the real boards (the H200's from tests/fixtures/real/nvidia-h200/sysfs-pci-nvidia.txt).
        gpu_id, model = next(((i, m) for key, i, m in GPU_PCI_IDS if key in g.name), GPU_PCI_IDS[-1][1:])
        rows.append((g.bus_id[4:].lower(), "3D controller", "0302", model, gpu_id))  # lspci -D: 4-digit domain
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
