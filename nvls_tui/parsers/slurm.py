"""Slurm's own outputs: ``scontrol show node -o``, ``squeue -h -o``, ``scontrol listpids``.

Pure and lenient like every parser here: odd lines become warnings, never exceptions. Formats are
Slurm 22.05's (Debian 12), checked against the real daemons in the lab (tests/test_slurm_parsers.py).
"""

from __future__ import annotations

import re

from nvls_tui.model.scheduler import ALLOCATED, DOWN, DRAINED, DRAINING, IDLE, MIXED, UNKNOWN, Job
from nvls_tui.parsers.base import Parsed

# In one-line output every field is KEY=VALUE, separated by spaces; a few values hold spaces (OS=,
# Reason=), so a field ends where the next ``Key=`` begins. Reason is last and runs to the end.
_KEY = re.compile(r"(?:^|\s)([A-Z][A-Za-z_]*)=")

# squeue's format for the jobs of some nodes: id|user|name|end|state|nodes (names may hold spaces, not '|').
SQUEUE_FORMAT = "%i|%u|%j|%e|%T|%N"


def _fields(line: str) -> dict[str, str]:
    marks = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        key = m.group(1)
        if key == "Reason":
            out[key] = line[m.end():].strip()
            break
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        out[key] = line[m.end():end].strip()
    return out


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

    ``Node NAME not found`` lines (a name Slurm does not know) become warnings.
    """
    nodes: dict[str, dict[str, str]] = {}
    warnings: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = _fields(line)
        name = fields.get("NodeName")
        if not name:
            warnings.append(f"not a node line: {line.strip()[:160]}")
            continue
        nodes[name] = fields
    return Parsed(nodes, tuple(warnings))


def parse_squeue(text: str) -> Parsed[list[tuple[Job, str]]]:
    """``squeue -h -o '%i|%u|%j|%e|%T|%N'``: each job and the node list it runs on."""
    jobs: list[tuple[Job, str]] = []
    warnings: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 6 or not parts[0].strip().isdigit():
            warnings.append(f"not a job line: {line.strip()[:160]}")
            continue
        jid, user, name, end, state, nodes = (p.strip() for p in parts)
        jobs.append((Job(int(jid), user, name, None if end in ("", "N/A", "Unknown", "NONE") else end, state),
                     nodes))
    return Parsed(jobs, tuple(warnings))


def parse_listpids(text: str) -> Parsed[dict[int, int]]:
    """``scontrol listpids`` on a node: PID -> job id (header ``PID JOBID STEPID LOCALID GLOBALID``)."""
    pids: dict[int, int] = {}
    warnings: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] == "PID":
            continue
        if len(words) >= 2 and words[0].isdigit() and words[1].isdigit():
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


__all__ = ["SQUEUE_FORMAT", "job_of_cgroup", "node_state_word", "parse_listpids", "parse_show_node", "parse_squeue"]
