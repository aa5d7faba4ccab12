"""Issue 36's acceptance: no module outside the edge renders an argv or parses one.

A change's command lines are rendered once, in ``runbook/changes/`` (and by the transports that send them);
the plan, the confirmation, the console's columns, the progress lines and the report read the changes' fields
or an audit record's typed fields. This walks every module of nvls_tui and fails on:

* ``shlex`` used at all (quoting, joining or splitting a command line);
* a call of, or a reference to, a command-line parser (``kubectl_args``, ``kubectl_line_args``,
  ``legacy_bookkeeping``);
* a command line's words compared as text: ``x.startswith("systemctl stop ")``, ``"nvidia-smi -pm 0" in x``.

Only the modules of :data:`EDGE` may, each for the reason given; no offender is left (the last,
``runbook/kube_repair.py``'s plan lines, are values now).

The report is held closer (:func:`argv_reads`): it reads what a logged command was from the record's typed marks
(``LogEntry.purpose``, ``LogEntry.bookkeeping``, read back by ``runbook/log_entries.py``), and hands a logged argv
only to ``report/text.py``'s renderers, never compares it, slices it or looks at its words.
"""

from __future__ import annotations

import ast
from fnmatch import fnmatch
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "nvls_tui"

# The programs a repair, a probe or a read sends: a string literal that starts with one and a space is a command line.
PROGRAMS = frozenset({"all_reduce_perf", "cat", "date", "fuser", "journalctl", "kill", "kubectl", "mkdir", "mv",
                      "nvidia-smi", "rm", "rmdir", "scancel", "scontrol", "squeue", "systemctl", "tee"})
PARSERS = frozenset({"kubectl_args", "kubectl_line_args", "legacy_bookkeeping", "legacy_purpose", "change_made",
                     "read_cluster_change"})

EDGE: dict[str, str] = {
    "runbook/changes/*": "each change's argv (and each read's and wait's a plan shows), rendered once",
    "backends/*": "the transports that send an argv (backends.base.join_argv is the one renderer the others call)",
    "backends/*/*": "the transports that send an argv",
    "poll/probe*.py": "the probe's own script and its sections' commands",
    "poll/once.py": "a probe command that hung, named in the poll's reason (poll sits below backends)",
    "sim/*": "the simulator runs each argv as a node would",
    "sim/*/*": "the simulator runs each argv as a node would",
    "lab/*": "the lab builds and drives its nodes",
    "lab/*/*": "the lab builds and drives its nodes",
    "kube/client.py": "kubectl's argv, sent",
    "parsers/*": "node output read in (a process's command line from /proc)",
    "runbook/quiesce.py": "a node's process list read for its watch loops (node data, as the parsers read it)",
    "console/ssh_shell.py": "the ssh command line that opens a shell on a node",
    "report/text.py": "the report's one rendering of a logged argv (the audit log keeps argv lists)",
    # nvls-tui's own command for the operator to type, with the host quoted for a shell (no argv sent anywhere).
    "diagnosis/restore_hint.py": "`nvls-tui repair --restore HOST` for the operator",
    "console/yank.py": "`nvls-tui repair HOST --restore` for the operator's clipboard",
    "report/summary.py": "`nvls-tui repair --restore HOST` in the report",
    # Older audit logs carry no bookkeeping mark: their commands are judged by their words, as those versions did.
    "runbook/bookkeeping.py": "judges an older log's commands (the audit-v1 fixtures' reports stay as they were)",
    "runbook/log_entries.py": "reads an older log's commands, which carry no mark, through runbook/bookkeeping, "
                              "and each command's change through runbook/logged_changes",
    "runbook/logged_changes.py": "reads a logged argv back into the change it made (an audit log keeps argvs)",
}



def offences(source: str) -> list[str]:
    """Where ``source`` renders or parses a command line: ``line: what``."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Import) and any(a.name == "shlex" for a in node.names):
            what = "import shlex"
        elif isinstance(node, ast.ImportFrom) and node.module == "shlex":
            what = "from shlex import"
        elif isinstance(node, ast.Name) and node.id in PARSERS:
            what = node.id
        elif isinstance(node, ast.Attribute) and node.attr in PARSERS:
            what = node.attr
        elif isinstance(node, ast.alias) and node.name in PARSERS:
            what = f"import {node.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith"
              and node.args and _command_text(node.args[0])):
            what = f"startswith({node.args[0].value!r})"  # type: ignore[attr-defined]
        elif (isinstance(node, ast.Compare) and _command_text(node.left, alone=True)
              and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)):
            what = f"{node.left.value!r} in ..."  # type: ignore[attr-defined]
        if what:
            found.append(f"{getattr(node, 'lineno', '?')}: {what}")
    return found


def _command_text(node: ast.AST, *, alone: bool = False) -> bool:
    """A string literal that is a command line's beginning: a program's name, then a space (``alone``: or the
    name by itself, as ``"all_reduce_perf" in line`` looks for it in a line)."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    words = node.value.split()
    return bool(words) and words[0] in PROGRAMS and (node.value.startswith(f"{words[0]} ")
                                                      or (alone and node.value == words[0]))


def _listed(name: str, patterns: dict[str, str]) -> bool:
    return any(fnmatch(name, pattern) for pattern in patterns)


def _modules() -> dict[str, list[str]]:
    return {path.relative_to(PACKAGE).as_posix(): offences(path.read_text(encoding="utf-8"))
            for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_check_sees_a_rendered_and_a_parsed_command_line():
    """Not vacuous: each kind of offence is found in a sample."""
    sample = ("import shlex\nfrom nvls_tui.kube.words import kubectl_line_args\n"
              "def f(c, cs):\n"
              "    a = shlex.join(['systemctl', 'stop', 'x'])\n"
              "    b = c.startswith('systemctl stop ')\n"
              "    d = 'nvidia-smi -pm 0' in cs\n"
              "    return a, b, d, kubectl_line_args(c)\n")
    found = offences(sample)
    assert [f.split(": ", 1)[1] for f in found].count("kubectl_line_args") == 1
    assert any("import shlex" in f for f in found)
    assert any("startswith('systemctl stop ')" in f for f in found)
    assert any("'nvidia-smi -pm 0' in" in f for f in found)
    assert offences("def f(c):\n    return 'all_reduce_perf' in c\n")
    assert not offences("def f(c):\n    return c.unit == 'kubelet.service' and c.verb == 'stop'\n")


def test_no_module_outside_the_edge_renders_or_parses_a_command_line():
    _none_outside(_modules(), EDGE, "nvls_tui/",
                  "a command line rendered or parsed outside the edge (use the changes' fields)")


def _none_outside(found_by_module: dict[str, list[str]], allowed: dict[str, str], prefix: str, why: str) -> None:
    """No module but those ``allowed`` (names or patterns) offends."""
    outside = {name: found for name, found in found_by_module.items() if found and not _listed(name, allowed)}
    assert not outside, why + ":\n" + "\n".join(f"{prefix}{name}:{f}" for name, found in outside.items() for f in found)


# ---- the report reads a logged command's marks, never its argv ---------------------------------------------

REPORT = PACKAGE / "report"
# report/text.py's renderers of a logged argv: the one place the report turns one into text.
RENDERERS = frozenset({"command_line", "shown_command"})
# The report's modules that may read an argv: the renderer itself.
REPORT_EDGE = {"text.py": "the report's one rendering of a logged argv"}


def argv_reads(source: str) -> list[str]:
    """Where a report module reads a logged argv itself: ``line: what``.

    An ``.argv`` that is not handed straight to a renderer of :data:`RENDERERS`; a command line kept as a constant
    (a name ending in ``_ARGV`` or ``_ARGVS``); a change's rendered argv (``.argv()``, ``.argvs()``);
    ``ok_commands`` (the argvs of the commands that exited 0, which the report read until it read
    ``LogEntry.change``).
    """
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    handed = {id(arg) for node in calls if _callee(node) in RENDERERS for arg in node.args}
    handed |= {id(node.func) for node in calls}  # a change's argv() is its own offence, below
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Attribute) and node.attr == "argv" and id(node) not in handed:
            what = ".argv read"
        elif isinstance(node, ast.Call) and _callee(node) in ("argv", "argvs", "ok_commands"):
            what = f"{_callee(node)}()"
        elif isinstance(node, ast.Name) and node.id.endswith(("_ARGV", "_ARGVS")):
            what = node.id
        elif isinstance(node, ast.alias) and node.name.endswith(("_ARGV", "_ARGVS")):
            what = f"import {node.name}"
        if what:
            found.append(f"{getattr(node, 'lineno', '?')}: {what}")
    return found


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _report_modules() -> dict[str, list[str]]:
    return {path.name: argv_reads(path.read_text(encoding="utf-8")) for path in sorted(REPORT.glob("*.py"))}


def test_the_report_check_sees_an_argv_compared_sliced_or_kept():
    """Not vacuous: the ways the report once knew a command by its argv are each found."""
    sample = ("from nvls_tui.runbook.steps import DATE_ARGV\n"
              "def f(r, log, e):\n"
              "    a = r.event.argv == DATE_ARGV\n"
              "    b = [x[:2] for x in log.ok_commands()]\n"
              "    c = TakeLock().argv()\n"
              "    return a, b, c, command_line(e.argv), shown_command(e.argv)\n")
    found = [f.split(": ", 1)[1] for f in argv_reads(sample)]
    assert found.count(".argv read") == 1 and "import DATE_ARGV" in found and "DATE_ARGV" in found
    assert "ok_commands()" in found and "argv()" in found
    assert not argv_reads("def f(r, e):\n    return r.purpose == CLOCK, shown_command(e.argv)\n")


def test_no_report_module_reads_a_logged_argv_but_to_render_it():
    _none_outside(_report_modules(), REPORT_EDGE, "nvls_tui/report/",
                  "the report reads a logged argv (read the entry's marks: LogEntry.purpose)")

