"""The tools a poll reads needrestart and apt with, on a simulated node: GNU ``grep`` and ``apt-config``.

Strict stand-ins for the forms nvls-tui runs, with the real tools' words and exit status (checked
against GNU grep 3.8 and apt 2.6 on Debian bookworm): ``grep -rH --include=GLOB PATTERN PATH...``
prints ``PATH:LINE`` for each line, says ``grep: PATH: No such file or directory`` for a path that
is not there and exits 2 whenever one was not (0 when a line was printed and nothing was missing,
1 when nothing matched); ``--include`` filters the files named on the command line too.
``apt-config dump KEY`` prints ``KEY "";`` and the settings under it, from the node's
``/etc/apt/apt.conf.d`` files, or nothing when none is set.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

from nvls_tui.sim.files import is_dir
from nvls_tui.sim.state import Node

Out = tuple[int, str, str]
GREP_USAGE = "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"
APT_CONF_D = "/etc/apt/apt.conf.d"
# apt.conf's one-line form, as 20auto-upgrades writes it: `APT::Periodic::Unattended-Upgrade "1";`.
_APT_SETTING = re.compile(r'^\s*(?P<key>[\w:.+-]+)\s+"(?P<value>[^"]*)"\s*;\s*$')


def _bre(pattern: str) -> re.Pattern[str] | None:
    """A basic regular expression as Python reads it: the anchors and plain text the probe uses."""
    try:
        return re.compile(pattern.replace(r"\(", "(").replace(r"\)", ")").replace(r"\|", "|"))
    except re.error:
        return None


def _files_under(node: Node, folder: str) -> list[str]:
    """The node's files below ``folder``, at any depth (grep -r)."""
    prefix = folder.rstrip("/") + "/"
    return sorted(p for p in node.files if p.startswith(prefix))


def grep(node: Node, args: list[str]) -> Out:
    """``grep [-r] [-H] [-s] [--include=GLOB] PATTERN PATH...`` over the node's files."""
    recursive = with_name = quiet = False
    includes: list[str] = []
    words: list[str] = []
    for arg in args:
        if arg.startswith("--include="):
            includes.append(arg.split("=", 1)[1])
        elif arg.startswith("--"):
            return 2, "", f"grep: unrecognized option '{arg}'\n{GREP_USAGE}"
        elif arg.startswith("-") and len(arg) > 1 and not words:
            for flag in arg[1:]:
                if flag == "r":
                    recursive = True
                elif flag == "H":
                    with_name = True
                elif flag == "s":
                    quiet = True
                else:
                    return 2, "", f"grep: invalid option -- '{flag}'\n{GREP_USAGE}"
        else:
            words.append(arg)
    if not words:
        return 2, "", GREP_USAGE
    regex = _bre(words[0])
    if regex is None:
        return 2, "", "grep: Unmatched ( or \\(\n"
    paths = words[1:]
    name = with_name or recursive or len(paths) > 1
    out, err, failed, matched = [], [], False, False

    def wanted(path: str) -> bool:
        return not includes or any(fnmatch.fnmatchcase(posixpath.basename(path), g) for g in includes)

    for raw in paths:
        path = posixpath.normpath(raw)
        if path in node.files:
            found = [path] if wanted(path) else []
        elif is_dir(node, path):
            if not recursive:
                err.append(f"grep: {raw}: Is a directory")
                failed = True
                continue
            found = [p for p in _files_under(node, path) if wanted(p)]
        else:
            if not quiet:
                err.append(f"grep: {raw}: No such file or directory")
            failed = True
            continue
        for file in found:
            shown = raw if file == path else raw.rstrip("/") + file[len(path):]
            for line in node.files[file].splitlines():
                if regex.search(line):
                    matched = True
                    out.append(f"{shown}:{line}" if name else line)
    code = 2 if failed else (0 if matched else 1)
    return code, "".join(f"{ln}\n" for ln in out), "".join(f"{ln}\n" for ln in err)


def apt_config(node: Node, args: list[str]) -> Out:
    """``apt-config dump [KEY]``: the settings of the node's apt.conf.d files under KEY, in file order."""
    if not args or args[0] != "dump":
        return 100, "", f"E: Invalid operation {args[0] if args else ''}\n".replace("operation \n", "operation\n")
    key = args[1] if len(args) > 1 else ""
    settings: dict[str, str] = {}  # a key set again keeps its place in apt's tree
    for path in sorted(p for p in node.files if p.startswith(APT_CONF_D + "/")):
        for line in node.files[path].splitlines():
            if m := _APT_SETTING.match(line):
                settings[m.group("key")] = m.group("value")
    under = [(k, v) for k, v in settings.items() if not key or k == key or k.startswith(key + "::")]
    if not under:
        return 0, "", ""
    head = [f'{key} "";'] if key and all(k != key for k, _ in under) else []
    return 0, "".join(f"{line}\n" for line in head + [f'{k} "{v}";' for k, v in under]), ""


__all__ = ["APT_CONF_D", "apt_config", "grep"]
