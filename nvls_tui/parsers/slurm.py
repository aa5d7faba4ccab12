"""Slurm's own outputs: ``scontrol show node -o``, ``squeue -h -o``, ``scontrol listpids``.

Pure and lenient like every parser here: odd lines become warnings, never exceptions. Where the
scheduler's word guards a repair, a warning is text that could not be read whole, and the caller reads
nothing from it (what it left out might be a job). Formats are Slurm 22.05's (Debian 12), checked against
the real daemons in the lab (tests/unit/test_slurm_parsers.py, tests/lab/test_lab_slurm.py).
"""

from __future__ import annotations

import re

from nvls_tui.model.scheduler import ALLOCATED, DOWN, DRAINED, DRAINING, IDLE, MIXED, UNKNOWN, Job
from nvls_tui.parsers.base import Parsed
from nvls_tui.textsafe import clean, one_line

# In one-line output every field is KEY=VALUE, separated by spaces; a few values hold spaces (OS=,
# Reason=), so a field ends where the next ``Key=`` begins.
_KEY = re.compile(r"(?:^|\s)([A-Z][A-Za-z_]*)=")
# The free text of a node, last in 22.05's line (Reason=, then Comment=, then Extra=): anything may follow
# its ``=``, ``State=IDLE`` and newlines included (scontrol prints a Comment's newline as it is), so no
# field is read after the first of them, and a line a newline cut off is no node's line.
FREE_TEXT = ("Reason", "Comment", "Extra")
_AFTER_REASON = re.compile(r"\s(?:Comment|Extra)=")

# squeue's fields for the jobs of some nodes: job id (``%A``: an array task's own number, which scancel
# takes, where ``%i`` says ``6_1``), user, end of the time limit, state, node list, and the name last:
# a name may hold anything (Slurm 22.05 takes and prints ``|``, quotes and newlines as they are), so it
# is what is left of the record after the fifth ``|``. Each record starts with a mark made afresh for
# each read (:func:`squeue_format`), which no name, given before, can hold: only the mark says where a
# record begins, so a name's newline is the name's.
JOB_FIELDS = "%A|%u|%e|%T|%N|%j"
_END = re.compile(r"N/A|NONE|Unknown|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_JOB_STATE = re.compile(r"[A-Z][A-Z_]*")
_NODE_LIST = re.compile(r"[A-Za-z0-9_.,\[\]-]*")


def squeue_format(mark: str) -> str:
    """``squeue -o``'s format: every record starts with ``mark`` (letters and digits, new for each read)."""
    if not mark.isalnum():
        raise ValueError(f"a record mark must be letters and digits: {mark!r}")
    return mark + JOB_FIELDS


def _fields(line: str) -> tuple[dict[str, str], str | None]:
    """The fields of one node line, and the first key found twice before its free text (or None)."""
    marks = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        key = m.group(1)
        if key in FREE_TEXT:
            if key == "Reason":
                rest = line[m.end():]
                cut = _AFTER_REASON.search(rest)
                out[key] = (rest[:cut.start()] if cut else rest).strip()
            break
        if key in out:
            return out, key
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        out[key] = line[m.end():end].strip()
    return out, None


def node_state_word(raw: str) -> str:
    """contract.md's state for Slurm's ``State=`` (``IDLE+DRAIN`` -> drained, ``MIXED+DRAIN`` -> draining)."""
    words = raw.upper().rstrip("*").split("+")
    base, flags = words[0], set(words[1:])
    if base in ("DOWN", "FUTURE") or "NOT_RESPONDING" in flags and base != "IDLE":
        return DOWN
    if "DRAIN" in flags or base in ("DRAINED", "DRAINING", "DRAIN"):
        if base in ("ALLOCATED", "MIXED", "COMPLETING", "DRAINING") or "COMPLETING" in flags:
            return DRAINING
        return DRAINED
    return {"IDLE": IDLE, "ALLOCATED": ALLOCATED, "MIXED": MIXED, "COMPLETING": ALLOCATED}.get(base, UNKNOWN)


def parse_show_node(text: str) -> Parsed[dict[str, dict[str, str]]]:
    """``scontrol show node -o [NODES]``: each node's fields, keyed by NodeName.

    Every line is one node's whole line, or a warning: a line that is not a node's (``Node NAME not
    found``, or the rest of a free text cut by its newline), a node named twice, a field named twice
    before the free text (some value said ``State=``), a line with no ``State=``. A warning means the
    text could not be read whole: :mod:`nvls_tui.scheduler.slurm` then reads nothing from it.
    """
    nodes: dict[str, dict[str, str]] = {}
    warnings: list[str] = []
    for line in text.split("\n"):  # scontrol's lines end at newlines only (free text may hold \x85, \u2028...)
        if not line.strip():
            continue
        fields, twice = _fields(line)
        name = fields.get("NodeName")
        if not name or not line.startswith("NodeName="):
            warnings.append(f"not a node line: {one_line(line, 160)}")
        elif twice:
            warnings.append(f"a field twice ({twice}) in the line of {one_line(name, 60)}")
            nodes.pop(name, None)
        elif "State" not in fields:
            warnings.append(f"no State= in the line of {one_line(name, 60)}")
        elif name in nodes:
            warnings.append(f"the node {one_line(name, 60)} twice")
        else:
            nodes[name] = fields
    return Parsed(nodes, tuple(warnings))


def _job(record: str) -> tuple[Job, str] | None:
    """One squeue record (mark removed) as a job and its node list; None when a field is not its kind's.

    A ``|`` in a field before the name (a user name NSS gave) shifts the fields after it: the end, the
    state or the node list is then not of its kind, and the record is not read at all.
    """
    parts = record.split("|", 5)
    if len(parts) != 6:
        return None
    jid, user, end, state, nodes, name = parts
    if not (jid.isdecimal() and jid.isascii() and user and _END.fullmatch(end) and _JOB_STATE.fullmatch(state)
            and _NODE_LIST.fullmatch(nodes)):
        return None
    return Job(int(jid), clean(user), clean(name), None if end in ("N/A", "Unknown", "NONE") else end, state), nodes


def parse_squeue(text: str, mark: str) -> Parsed[list[tuple[Job, str]]]:
    """``squeue -h -o squeue_format(mark)``: each job and the node list it runs on.

    A record that cannot be read whole is a warning (never a job left out quietly): text before the
    first mark, a record whose fields are not of their kinds, output that does not end its last record.
    The name keeps every character but control characters (text is data), newlines included.
    """
    jobs: list[tuple[Job, str]] = []
    warnings: list[str] = []
    if not text:
        return Parsed(jobs, ())
    if not text.endswith("\n"):
        warnings.append(f"squeue's output ends inside a record: {one_line(text[-160:], 160)}")
    body = text[:-1] if text.endswith("\n") else text  # squeue ends every record with one newline
    records = body.split("\n" + mark)
    if records[0].startswith(mark):
        records[0] = records[0][len(mark):]
    else:
        warnings.append(f"not a job record: {one_line(records[0], 160)}")
        records = records[1:]
    for record in records:
        job = _job(record)
        if job is None:
            warnings.append(f"not a job record: {one_line(record, 160)}")
        else:
            jobs.append(job)
    return Parsed(jobs, tuple(warnings))


def parse_listpids(text: str) -> Parsed[dict[int, int]]:
    """``scontrol listpids`` on a node: PID -> job id (header ``PID JOBID STEPID LOCALID GLOBALID``)."""
    pids: dict[int, int] = {}
    warnings: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] == "PID":
            continue
        if len(words) >= 2 and words[0].isdecimal() and words[1].isdecimal():
            pids[int(words[0])] = int(words[1])
        else:
            warnings.append(f"not a pid line: {line.strip()[:160]}")
    return Parsed(pids, tuple(warnings))


def job_of_cgroup(cgroup: str | None) -> int | None:
    """The job id in a cgroup path of Slurm's cgroup plugin (``.../slurmstepd.scope/job_1234/step_0/...``)."""
    if not cgroup:
        return None
    m = re.search(r"/job_(\d+)(?:/|$)", cgroup)
    return int(m.group(1)) if m else None


__all__ = ["FREE_TEXT", "JOB_FIELDS", "job_of_cgroup", "node_state_word", "parse_listpids", "parse_show_node",
           "parse_squeue", "squeue_format"]
