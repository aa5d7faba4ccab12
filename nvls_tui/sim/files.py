"""A tiny virtual file area (``/var/lib/nvls-tui``): the coreutils the runbook uses on a node.

``mkdir D/lock`` without ``-p`` is atomic and fails with "File exists" when the directory is there:
that is how a repair takes the node's lock, so these semantics matter more than completeness.

A file's age runs in real seconds. The simulated clock runs faster than real time (a repair takes a
second), but the lock's heartbeat and its staleness are real seconds of the bastion, and the lock is
judged by the owner file's age on the node (``date +%s`` less ``stat -c %Y``). So ``stat`` reports the
node's clock when the file was written, moved on by the simulated time since, less the real time since:
on a node whose clock did not step that is "now less the real age", and a clock step after the write
still shows (a node whose clock stepped back an hour dates the file an hour in its future).
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable

from nvls_tui.sim.journal_cursor import boot_id
from nvls_tui.sim.state import Node, digest

ROOTS = ("/", "/var", "/var/lib", "/tmp", "/run")

Out = tuple[int, str, str]


def norm(path: str) -> str:
    """A path as the node's file area keys it."""
    return posixpath.normpath(path) if path else path


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def is_dir(node: Node, path: str) -> bool:
    """True for an existing directory (the roots always exist)."""
    return path in ROOTS or path in node.dirs


def _parent_ok(node: Node, path: str) -> bool:
    return is_dir(node, posixpath.dirname(path))


def mkdir(node: Node, args: list[str]) -> Out:
    """``mkdir [-p] DIR...``."""
    parents = any(a in ("-p", "--parents") for a in args)
    code, err = 0, ""
    for raw in [a for a in args if not a.startswith("-")]:
        path = _norm(raw)
        if is_dir(node, path) or path in node.files:
            if not parents or path in node.files:
                err += f"mkdir: cannot create directory '{raw}': File exists\n"
                code = 1
            continue
        if not _parent_ok(node, path):
            if not parents:
                err += f"mkdir: cannot create directory '{raw}': No such file or directory\n"
                code = 1
                continue
            chain = []
            cur = posixpath.dirname(path)
            while not is_dir(node, cur):
                chain.append(cur)
                cur = posixpath.dirname(cur)
            node.dirs.extend(reversed(chain))
        node.dirs.append(path)
    return code, "", err


BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
MACHINE_ID_FILE = "/etc/machine-id"
PRODUCT_UUID_FILE = "/sys/class/dmi/id/product_uuid"
#: The files the simulator answers for the machine itself (not the node's state directory): behind the shims a
#: ``cat`` of these alone is the simulated node's, never the test machine's (nvls_tui/sim/shims.py).
SIM_FILES = (BOOT_ID_FILE, "/proc/uptime", MACHINE_ID_FILE, PRODUCT_UUID_FILE)


def _dashed(hex32: str) -> str:
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:32]}"


def proc_files(node: Node, now: float) -> dict[str, str]:
    """The kernel's files a poll reads: the boot id (the one the journal's cursors carry, in /proc's
    dashed form) and /proc/uptime (seconds since boot, whatever the node's clock did; idle time beside)."""
    up = max(0.0, now - node.boot)
    return {BOOT_ID_FILE: _dashed(boot_id(node)) + "\n",
            "/proc/uptime": f"{up:.2f} {up * 7.6:.2f}\n"}


def identity(node: Node) -> dict[str, str]:
    """The node's ids as its kubelet reports them in ``status.nodeInfo`` (``bootID``, ``machineID``,
    ``systemUUID``): the same text the machine's own files hold (:func:`machine_files`, :func:`proc_files`)."""
    return {"bootID": _dashed(boot_id(node)),
            "machineID": node.machine_id or digest("machine-id", node.name)[:32],
            "systemUUID": node.product_uuid or _dashed(digest("product-uuid", node.name)[:32]).upper()}


def machine_files(node: Node) -> dict[str, str]:
    """``/etc/machine-id`` and the DMI product UUID (root-readable on a real machine; here anyone reads it)."""
    ids = identity(node)
    return {MACHINE_ID_FILE: ids["machineID"] + "\n", PRODUCT_UUID_FILE: ids["systemUUID"] + "\n"}


def cat(node: Node, args: list[str], stdin: str | None, now: float | None = None) -> Out:
    """``cat FILE...`` (``-`` or no file: stdin; /proc's files of :func:`proc_files` when ``now`` is given, and
    the machine's ids of :func:`machine_files`)."""
    out, err, code = "", "", 0
    proc = (proc_files(node, now) if now is not None else {}) | machine_files(node)
    for raw in [a for a in args if a != "--"] or ["-"]:
        if raw == "-":
            out += stdin or ""
            continue
        path = _norm(raw)
        if path in proc:
            out += proc[path]
        elif path in node.files:
            out += node.files[path]
        elif is_dir(node, path):
            err += f"cat: {raw}: Is a directory\n"
            code = 1
        else:
            err += f"cat: {raw}: No such file or directory\n"
            code = 1
    return code, out, err


def tee(node: Node, args: list[str], stdin: str | None, now: float | None = None) -> Out:
    """``tee [-a] FILE...``: stdin to each file and to stdout (each file written at simulated time ``now``)."""
    append = any(a in ("-a", "--append") for a in args)
    data = stdin or ""
    code, err = 0, ""
    for raw in [a for a in args if not a.startswith("-")]:
        path = _norm(raw)
        if not _parent_ok(node, path) or is_dir(node, path):
            why = "Is a directory" if is_dir(node, path) else "No such file or directory"
            err += f"tee: {raw}: {why}\n"
            code = 1
            continue
        node.files[path] = (node.files.get(path, "") if append else "") + data
        if now is not None:
            node.mtimes[path] = [now, time.time()]
    return code, data, err


def mv(node: Node, args: list[str]) -> Out:
    """``mv [-f] SRC DST`` for files (an atomic replace, as the runbook's record writes rely on)."""
    paths = [_norm(a) for a in args if not a.startswith("-")]
    if len(paths) != 2:
        return 1, "", "mv: missing destination file operand\n"
    src, dst = paths
    if is_dir(node, dst):
        dst = posixpath.join(dst, posixpath.basename(src))
    if src not in node.files:
        return 1, "", f"mv: cannot stat '{src}': No such file or directory\n"
    if not _parent_ok(node, dst):
        return 1, "", f"mv: cannot move '{src}' to '{dst}': No such file or directory\n"
    node.files[dst] = node.files.pop(src)
    if src in node.mtimes:  # rename(2) keeps the file's mtime
        node.mtimes[dst] = node.mtimes.pop(src)
    else:
        node.mtimes.pop(dst, None)
    return 0, "", ""


def rm(node: Node, args: list[str]) -> Out:
    """``rm [-f] [-r] PATH...``."""
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    force, recursive = "f" in flags or "--force" in args, "r" in flags or "R" in flags or "--recursive" in args
    code, err = 0, ""
    for raw in [a for a in args if not a.startswith("-")]:
        path = _norm(raw)
        if path in node.files:
            del node.files[path]
            node.mtimes.pop(path, None)
        elif is_dir(node, path) and path not in ROOTS:
            if not recursive:
                err += f"rm: cannot remove '{raw}': Is a directory\n"
                code = 1
                continue
            prefix = path.rstrip("/") + "/"
            node.files = {k: v for k, v in node.files.items() if not k.startswith(prefix)}
            node.mtimes = {k: v for k, v in node.mtimes.items() if not k.startswith(prefix)}
            node.dirs = [d for d in node.dirs if d != path and not d.startswith(prefix)]
        elif not force:
            err += f"rm: cannot remove '{raw}': No such file or directory\n"
            code = 1
    return code, "", err


def rmdir(node: Node, args: list[str]) -> Out:
    """``rmdir DIR...``."""
    code, err = 0, ""
    for raw in [a for a in args if not a.startswith("-")]:
        path = _norm(raw)
        if not is_dir(node, path) or path in ROOTS:
            err += f"rmdir: failed to remove '{raw}': No such file or directory\n"
            code = 1
            continue
        prefix = path.rstrip("/") + "/"
        if any(k.startswith(prefix) for k in node.files) or any(d.startswith(prefix) for d in node.dirs):
            err += f"rmdir: failed to remove '{raw}': Directory not empty\n"
            code = 1
            continue
        node.dirs.remove(path)
    return code, "", err


# /dev beside the NVIDIA files, as a real node has it: what a find without a name filter would meet.
_DEV_DIRS = ("/dev/nvidia-caps", "/dev/pts", "/dev/shm")
_DEV_CHARS = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def _entries(node: Node, start: str) -> list[tuple[str, str, int]]:
    """``(path, type letter, depth)`` under ``start`` as find meets them, or [] when it does not exist."""
    if start == "/dev":
        chars = [*node.device_files(), *_DEV_CHARS]
        return ([("/dev", "d", 0)] + [(d, "d", 1) for d in _DEV_DIRS] + [(c, "c", 1) for c in chars])
    if not is_dir(node, start):
        return [(start, "f", 0)] if start in node.files else []
    inside = [(p, "f") for p in node.files] + [(d, "d") for d in node.dirs if d != start]
    return [(start, "d", 0)] + [(p, kind, p.count("/") - start.rstrip("/").count("/"))
                                for p, kind in inside if p.startswith(start.rstrip("/") + "/")]


def _written(node: Node, path: str) -> float:
    """When a path of the node's file area was written, on the node's clock (a file seeded with the node,
    or a folder: at its boot). Fixed while the file is not written again, as a real file's mtime."""
    when = node.mtimes.get(path)
    return node.clock(when[0] if when else node.boot)


def _find_printf(node: Node, fmt: str, path: str, kind: str) -> str:
    """One entry as ``find -printf FMT`` prints it (the directives the probe's stamp uses)."""
    size = len(node.files[path].encode()) if kind == "f" and path in node.files else 4096
    stamp = f"{_written(node, path):.10f}"
    values = {"p": path, "s": str(size), "T@": stamp, "C@": stamp, "%": "%"}
    out = re.sub(r"%(T@|C@|[ps%])", lambda m: values[m.group(1)], fmt)
    return out.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


def find(node: Node, args: list[str]) -> Out:
    """GNU ``find PATH... [-maxdepth N] [-mindepth N] [!|-not] [-name PAT] [-type X] [-printf FORMAT]``
    (tests joined by "and"), with findutils' words for what it refuses; sorted where a real find lists in
    directory order. ``-printf`` knows ``%p``, ``%s``, ``%T@`` and ``%C@`` (a file's size, and the node's
    clock when it was written: :func:`_written`) and the escapes ``\\n``, ``\\t``, ``\\\\``."""
    import fnmatch

    at = next((i for i, a in enumerate(args) if a.startswith("-") or a in ("!", "(")), len(args))
    starts, expr = args[:at] or ["."], args[at:]
    maxdepth, mindepth = 1 << 30, 0
    printf: str | None = None
    tests: list[tuple[bool, str, str]] = []  # (negated, test, argument)
    negate = False
    i = 0
    while i < len(expr):
        word = expr[i]
        if word in ("!", "-not"):
            negate = not negate
            i += 1
            continue
        if word in ("-maxdepth", "-mindepth", "-name", "-type"):
            if i + 1 >= len(expr):
                return 1, "", f"find: missing argument to `{word}'\n"
            value = expr[i + 1]
            if word in ("-maxdepth", "-mindepth"):
                if not value.isdecimal():
                    return 1, "", f"find: Expected a positive decimal integer argument to {word}, but got '{value}'\n"
                maxdepth, mindepth = (int(value), mindepth) if word == "-maxdepth" else (maxdepth, int(value))
            elif word == "-type" and value not in ("b", "c", "d", "p", "f", "l", "s"):
                return 1, "", f"find: Unknown argument to -type: {value}\n"
            else:
                tests.append((negate, word, value))
            negate = False
            i += 2
            continue
        if word == "-print":
            i += 1
            continue
        if word == "-printf":
            if i + 1 >= len(expr):
                return 1, "", f"find: missing argument to `{word}'\n"
            printf = expr[i + 1]
            i += 2
            continue
        return 1, "", f"find: unknown predicate `{word}'\n"
    out, err, code = "", "", 0
    for start in starts:
        entries = _entries(node, _norm(start))
        if not entries:
            err += f"find: '{start}': No such file or directory\n"
            code = 1
            continue
        for path, kind, depth in sorted(entries, key=lambda e: (e[2], e[0])):
            if not mindepth <= depth <= maxdepth:
                continue
            name = posixpath.basename(path) or path
            hits = (fnmatch.fnmatchcase(name, value) if test == "-name" else kind == value
                    for _negated, test, value in tests)
            if all(hit != negated for hit, (negated, _, _) in zip(hits, tests, strict=True)):
                out += path + "\n" if printf is None else _find_printf(node, printf, path, kind)
    return code, out, err


def stat(node: Node, args: list[str], now: float,
         entry: Callable[[str], tuple[float, int] | None] | None = None) -> Out:
    """GNU ``stat -c %Y|%s|%n [--] FILE...`` (the format the runbook asks for), with coreutils' words otherwise.

    Args:
        entry: ``(mtime on the node's clock, size)`` of a path, None where there is none (default: the
            node's file area; a file seeded with the node reads as written at its boot). The shims behind a
            real sshd keep the node's files as real files and give their own.
    """
    fmt: str | None = None
    paths: list[str] = []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--":
            paths.extend(rest)
            break
        if word in ("-c", "--format") and rest:
            fmt = rest.pop(0)
        elif word.startswith("--format="):
            fmt = word.split("=", 1)[1]
        elif word.startswith("-"):
            return 1, "", f"stat: invalid option -- '{word.lstrip('-')[:1]}'\nTry 'stat --help' for more information.\n"
        else:
            paths.append(word)
    if fmt is None or not paths or not set(re.findall(r"%.", fmt)) <= {"%Y", "%s", "%n"}:
        return 1, "", "stat: the simulator's stat knows only -c with %Y, %s and %n\n"
    look = entry or (lambda path: _entry(node, path, now))
    out, err, code = "", "", 0
    for raw in paths:
        found = look(_norm(raw))
        if found is None:
            err += f"stat: cannot statx '{raw}': No such file or directory\n"
            code = 1
            continue
        mtime, size = found
        out += fmt.replace("%Y", str(int(mtime))).replace("%s", str(size)).replace("%n", raw) + "\n"
    return code, out, err


def node_mtime(node: Node, written: float, written_real: float, now: float) -> float:
    """A file's mtime on the node's clock, written at simulated time ``written`` (real ``written_real``), read
    at simulated ``now``: its age in real seconds, with the node's clock steps since (module docstring)."""
    return node.clock(written) + (now - written) - (time.time() - written_real)


def age_file(node: Node, path: str, seconds: float) -> None:
    """Make ``path`` ``seconds`` older (as if written that long before): tests of a lock's staleness."""
    written, real = node.mtimes.get(path, [node.boot, time.time()])
    node.mtimes[path] = [written, real - seconds]


def _entry(node: Node, path: str, now: float) -> tuple[float, int] | None:
    """A path of the node's file area as stat sees it (a file seeded with the node: written at its boot)."""
    if path in node.files:
        written = node.mtimes.get(path)
        mtime = node_mtime(node, written[0], written[1], now) if written else node.clock(node.boot)
        return mtime, len(node.files[path].encode())
    return (node.clock(node.boot), 4096) if is_dir(node, path) else None
