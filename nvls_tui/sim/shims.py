"""Shim commands: ``DIR/bin/<tool>`` scripts that make any POSIX shell behave as one simulated node.

A real sshd can then serve simulated nodes: put ``DIR/bin`` first on PATH (or copy/symlink it to
``$HOME/bin``). Every script has DIR's absolute path baked in, so it works wherever it is called from.

- Simulated tools (nvidia-smi, systemctl, ...) exec ``<python> -I -S .../sim/shim_client.py PKGROOT DIR tool``:
  a client of the node's fork server (``python -m nvls_tui.sim.shim_server DIR``, started by the first
  command, gone when DIR goes or after a minute idle), whose forked child runs ``shim_main.main`` with the
  client's descriptors, argv and environment; no server, the client runs ``python -m nvls_tui.sim.shim_main``.
- File tools (mkdir, cat, tee, mv, rm, rmdir) are plain sh: paths under /var/lib/nvls-tui are remapped
  to DIR/var/lib/nvls-tui and the real tool runs.
- ``sudo`` strips its options and runs the simulated tool (never a real privileged command).
- ``static=True``: read-only outputs pre-rendered once and printed by /bin/sh ``cat`` (no Python).
- ``DIR/proc``: the node's ``/proc/PID/stat`` and ``cgroup`` files (``sim/proc_files.py``): the poll
  reads the holders' parents and cgroups with shell builtins, from ``$NVLS_TUI_PROC`` where it is set, so
  a shell that serves the node must have ``NVLS_TUI_PROC=DIR/proc`` in its environment.
- ``DIR/var/log/journal``: the node's journal folder, holding a placeholder (the poll starts journalctl only
  where a journal folder holds a file: ``probe.JOURNAL_DIRS``, under ``$NVLS_TUI_JOURNAL_ROOT`` where it is set),
  so a shell that serves the node must have ``NVLS_TUI_JOURNAL_ROOT=DIR`` in its environment.
- ``DIR/devices``: the node's ``/dev/nvidia*`` files, one a line (``Node.device_files()``). The shims
  never read the machine's own ``/dev``; a shell that serves the node must not either: the poll's
  ``fuser -v /dev/nvidia*`` is expanded by that shell, so it must see a ``/dev`` holding these files
  and no others (the test rig gives each node's sshd a private ``/dev`` made from this list).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nvls_tui
from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.poll.kernel_tail import kernel_argv, last_cursor
from nvls_tui.poll.probe import (
    CONFIG_STAMP_ARGV,
    DEVICE_LIST_ARGV,
    JOURNAL_DIRS,
    PICK,
    QUICK,
    SECTIONS,
    STATE_DIR,
    cgroup_argv,
    parents_from,
    ppid_argv,
    ps_argv,
)
from nvls_tui.sim.commands import Output, execute
from nvls_tui.sim.files import SIM_FILES
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.proc_files import PROC_DIR, write_proc
from nvls_tui.sim.procps import USAGE as PS_USAGE
from nvls_tui.sim.store import NodeStore

# dmesg too: the poll's ring section must read the node's ring buffer, never this machine's kernel. grep
# and apt-config too: the needrestart and apt sections read the node's configuration, never this machine's.
PY_COMMANDS = ("nvidia-smi", "systemctl", "journalctl", "dmesg", "fuser", "ps", "kill", "pgrep", "pkill",
               "nv-fabricmanager", "all_reduce_perf", "lspci", "hostname", "date", "find", "grep", "apt-config", "stat")
# A static ps answers any PID list with the same table, but refuses what procps refuses first.
_STATIC_PS_CHECK = (
    'for a do last=$a; done\n'
    'case "$last" in\n'
    '  *[!0-9,\\ ]*|"") ;;\n'
    '  ,*|*,|*,,*|*", "*|*" ,"*|*"  "*|" "*|*" ") printf \'error: improper list\\n%s\' "$usage" >&2; exit 1;;\n'
    'esac\n'
)
FILE_COMMANDS = ("mkdir", "cat", "tee", "mv", "rm", "rmdir")
# A simulated node runs no Slurm, but the machine behind the shims may have Slurm's client (the
# Slurm lab installs it): its scontrol would answer the poll's `scontrol listpids` with a DNS error
# whose words vary under load. The node answers as scontrol does where no Slurm is configured, always
# in the same words.
_NO_SLURM = (
    "#!/bin/sh\n# nvls-tui shim: no Slurm is configured on a simulated node\n"
    "echo 'scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host' >&2\n"
    "echo 'scontrol: error: fetch_config: DNS SRV lookup failed' >&2\n"
    "echo 'scontrol: error: _establish_config_source: failed to fetch config' >&2\n"
    "echo 'scontrol: fatal: Could not establish a configuration source' >&2\n"
    "exit 1\n"
)

DEVICES_FILE = "devices"
"""``DIR/devices``: the node's /dev/nvidia* files, one a line (what a shell serving the node must see)."""
JOURNAL_FOLDER = "nvls-tui-simulated"
"""``DIR/var/log/journal/JOURNAL_FOLDER``: where journald keeps a machine's files (its machine id; here a name)."""

# The caller's timeout ends it: the SSH transport kills the command's process group (its login shell's $$).
_SILENT = "#!/bin/sh\n# nvls-tui shim: this simulated node does not answer\nexec sleep 3600\n"


def _q(text: str) -> str:
    """Single-quote for sh."""
    return "'" + text.replace("'", "'\\''") + "'"


def _real_tool(name: str) -> str:
    for folder in ("/usr/bin", "/bin"):
        if os.access(f"{folder}/{name}", os.X_OK):
            return f"{folder}/{name}"
    return shutil.which(name) or f"/bin/{name}"


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _client(root: Path, command: str) -> str:
    """sh words that run ``command`` through the node's fork server (:mod:`nvls_tui.sim.shim_client`: a
    Python without site or package imports, which falls back to ``python -m nvls_tui.sim.shim_main``)."""
    package = Path(nvls_tui.__file__).resolve().parent
    client = package / "sim" / "shim_client.py"
    return (f"{_q(sys.executable)} -I -S {_q(str(client))} {_q(str(package.parent))} {_q(str(root))} {command}")


def _py_script(root: Path, command: str) -> str:
    return ("#!/bin/sh\n# nvls-tui simulated node shim (generated)\n"
            f"exec {_client(root, command)} \"$@\"\n")


def _machine_files_first(root: Path) -> str:
    """sh that hands a ``cat`` of the machine's own files (its boot id, uptime, machine-id, DMI product UUID)
    to the simulator: they are the simulated node's, never the test machine's, so the Node object a test
    cluster holds for this node can name the same ids (a repair compares them). A ``cat`` of these alone is
    the simulator's; one that mixes them with other files (the probe reads its small files, the boot's
    among them, with one ``cat``: probe.FILE_SECTIONS) reads each file in order, each run of the machine's
    files by the simulator and every other file by the real cat (the node's state directory remapped), and
    exits 1 when any of them failed, as cat does."""
    files = "|".join(SIM_FILES)
    py = _client(root, "cat")
    return ("sim=$#; any=\n"
            f"for a do case $a in {files}) any=1;; *) sim=0;; esac; done\n"
            f"if [ \"$sim\" != 0 ]; then exec {py} \"$@\"; fi\n"
            "if [ -n \"$any\" ]; then\n"
            f"  D={_q(str(root))}; rc=0; run=\n"
            f"  flush() {{ [ -n \"$run\" ] && {{ {py} $run || rc=1; }}; run=; }}\n"
            "  for a do\n"
            f"    case $a in {files}) run=\"$run $a\";;\n"
            f"      *) flush; case $a in {STATE_DIR}|{STATE_DIR}/*) a=\"$D{STATE_DIR}${{a#{STATE_DIR}}}\";; esac\n"
            f"         {_q(_real_tool('cat'))} \"$a\" || rc=1;;\n"
            "    esac\n"
            "  done; flush; exit $rc\n"
            "fi\n")


def _file_script(root: Path, command: str, static: bool = False) -> str:
    # Rebuild "$@" with /var/lib/nvls-tui... remapped (POSIX sh: `for` reads the list once).
    # A static node (benchmarks: no Python per command) reads the machine's files of the test machine.
    first = _machine_files_first(root) if command == "cat" and not static else ""
    return ("#!/bin/sh\n# nvls-tui shim: remaps the node's state directory, then runs the real tool\n" + first +
            f"D={_q(str(root))}\n"
            "n=$#\n"
            "for a do\n"
            f"  case $a in {STATE_DIR}|{STATE_DIR}/*) a=\"$D{STATE_DIR}${{a#{STATE_DIR}}}\";; esac\n"
            "  set -- \"$@\" \"$a\"\n"
            "done\n"
            "shift $n\n"
            f"exec {_q(_real_tool(command))} \"$@\"\n")


def _sudo_script(root: Path) -> str:
    return ("#!/bin/sh\n# nvls-tui shim: sudo runs simulated commands only, never a real privileged one\n"
            "while [ $# -gt 0 ]; do\n  case $1 in --) shift; break;; -*) shift;; *) break;; esac\ndone\n"
            "[ $# -eq 0 ] && { echo 'usage: sudo -n command' >&2; exit 1; }\n"
            "c=${1##*/}; shift\n"
            f"if [ -x {_q(str(root / 'bin'))}/\"$c\" ]; then exec {_q(str(root / 'bin'))}/\"$c\" \"$@\"; fi\n"
            "if [ \"$c\" = env ]; then exec env \"$@\"; fi\n"
            "echo \"sudo: $c: refused by the nvls-tui simulator (not a simulated command)\" >&2\nexit 1\n")


def write_shims(directory: str | os.PathLike[str], scenario: str, node: str, static: bool = False,
                speed: float | None = None) -> Path:
    """Write ``DIR/bin`` and ``DIR/state.json`` so that a shell with DIR/bin first on PATH is ``node``.

    Args:
        directory: where to write (created if missing).
        scenario: a scenario name (``seed-incident``).
        node: one of the scenario's nodes (``gpu05``).
        static: pre-render read-only outputs instead (benchmarks; no state changes).
        speed: simulated clock speed (default 1: real time).

    Returns:
        The absolute DIR.

    Raises:
        ValueError: unknown scenario or node.
    """
    root = Path(directory).resolve()
    fleet = load_fleet(f"sim:{scenario}/{node}", speed=1.0 if speed is None else speed)
    state = fleet.node(node)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "var" / "lib" / "nvls-tui").mkdir(parents=True, exist_ok=True)
    # The probe reads this marker through the remapped `cat`: nodes behind sshd are labelled simulated.
    (root / "var" / "lib" / "nvls-tui" / "SIMULATED").write_text("simulated by nvls-tui\n")
    # The node's /proc/PID files the poll's builtins read (NVLS_TUI_PROC=DIR/proc): kept by every save.
    (root / PROC_DIR).mkdir(exist_ok=True)
    NodeStore(root).save(state, fleet.clock)
    (root / DEVICES_FILE).write_text("".join(f"{path}\n" for path in state.device_files()))
    # The node's journal folder (NVLS_TUI_JOURNAL_ROOT=DIR): the poll starts journalctl only where one of
    # probe.JOURNAL_DIRS holds a file, and a simulated node's journal is its journalctl shim's; the folder
    # holds one placeholder, which nothing reads.
    journal = root / JOURNAL_DIRS[-1].lstrip("/") / JOURNAL_FOLDER
    journal.mkdir(parents=True, exist_ok=True)
    (journal / "system.journal").touch()
    for command in FILE_COMMANDS:
        _write(root / "bin" / command, _file_script(root, command, static))
    _write(root / "bin" / "sudo", _sudo_script(root))
    _write(root / "bin" / "scontrol", _NO_SLURM)
    if state.silent:
        # A node that does not answer at all: the poll's `sh -c SCRIPT` (looked up on PATH by the login
        # shell) never prints a byte, so no section begins, as on a node whose shell is stuck.
        _write(root / "bin" / "sh", _SILENT)
    if static:
        _write_static(root, fleet, node)
    else:
        for command in PY_COMMANDS:
            _write(root / "bin" / command, _py_script(root, command))
    return root


def _write_static(root: Path, fleet, name: str) -> None:
    """Pre-render the probe's commands; each shim is a ``case "$*"`` over the known argument lists."""
    node = fleet.node(name)
    now = fleet.clock.now()
    variants: dict[str, list[tuple[str, ...]]] = {}
    argvs = [s.argv for s in SECTIONS if s.argv[0] != "cat"] + [CONFIG_STAMP_ARGV]
    argvs += [("nvidia-smi",), ("nvidia-smi", "-q"), ("nvidia-smi", "-q", "-x"), ("hostname",), ("hostname", "-s"),
              ("fuser", "/dev/nvidia*"), ("systemctl", "is-active", "nvidia-fabricmanager"), DEVICE_LIST_ARGV]
    # The same fuser calls with the glob expanded by a shell that sees the node's own /dev (DIR/devices).
    argvs += [("fuser", *node.device_files()), ("fuser", "-v", *node.device_files())]
    # The probe asks ps for the holders of the fuser -v table and then for their parents; a static
    # node answers any PID list with that same pre-rendered table.
    table = execute(node, ("fuser", "-v", "/dev/nvidia*"), now)
    holders = sorted({h.pid for h in parse_fuser_v(table.merged or table.stderr).value}) \
        if isinstance(table, Output) else []
    parents: list[int] = []
    if holders:
        found = execute(node, ppid_argv(holders), now)
        assert isinstance(found, Output)  # ps is never a replay or a hang
        parents = parents_from(found.stdout, holders)
        for select in (QUICK, PICK):  # the poll asks with -q; the runbook's re-reads with -p
            argvs += [ps_argv(holders + parents, select), cgroup_argv(holders + parents, select),
                      ppid_argv(holders, select)]
    # A static node's journal never grows: every poll after the first starts at the cursor the first
    # one ended at, so that read is pre-rendered too (the kernel log read incrementally, as on a node).
    full = execute(node, kernel_argv(), now)
    if isinstance(full, Output) and (cursor := last_cursor(full.stdout)) is not None:
        argvs.append(kernel_argv(cursor))
    static_dir = root / "static"
    static_dir.mkdir(exist_ok=True)
    for argv in argvs:
        variants.setdefault(argv[0], []).append(argv)
    for command in PY_COMMANDS:
        cases = []
        for i, argv in enumerate(variants.get(command, [])):
            result = execute(node, argv, now)
            if not isinstance(result, Output):
                continue
            base = static_dir / f"{command}.{i}"
            Path(f"{base}.out").write_text(result.stdout)
            Path(f"{base}.err").write_text(result.stderr)
            key = " ".join(argv[1:])
            if argv[0] == "ps":
                key = " ".join(argv[1:-1]) + " *"  # any PID list (see above)
            cat = _q(_real_tool("cat"))
            pattern = _q(key[:-1]) + "*" if key.endswith(" *") else _q(key)
            if result.chunks is not None:
                # Replay the tool's writes in order with the shell's builtin printf: fuser writes each
                # PID to stdout between the pieces of its row on stderr, and `2>&1` must see them so.
                body = " ".join(f"printf '%s' {_q(text)}{' >&2' if fd == 2 else ''};"
                                for fd, text in result.chunks if text)
            else:
                body = f"{cat} {_q(str(base) + '.out')}; {cat} {_q(str(base) + '.err')} >&2;"
            cases.append(f"  {pattern}) {body} exit {result.exit_status};;\n")
        check = (f"usage={_q(PS_USAGE)}\n" + _STATIC_PS_CHECK) if command == "ps" else ""
        script = ("#!/bin/sh\n# nvls-tui static shim: pre-rendered read-only outputs\n" + check +
                  "case \"$*\" in\n" + "".join(cases) +
                  f"  *) echo \"{command}: the static simulator has no output for: $*\" >&2; exit 2;;\nesac\n")
        _write(root / "bin" / command, script)
    # The process files as of the pre-rendered answers (rendering them ran the node's clock to ``now``).
    write_proc(root / PROC_DIR, node)
