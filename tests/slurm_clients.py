"""Slurm's clients as the bastion runs them, for tests without a cluster: a stand-in for ``Slurm.run``.

``squeue`` renders its jobs in the ``-o`` format it is given, as squeue 22.05 does (literal text kept,
one job a line, every field in full, a job's name printed as it is: ``|``, newlines and escapes
included), after ``-w`` and ``-t`` have picked them; it refuses what it does not know rather than
guess. ``scontrol show node -o`` prints the lines it was given. tests/lab/test_lab_slurm.py holds the
squeue stand-in to the real one (same jobs, same format, same bytes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nvls_tui.scheduler.slurm import Slurm, SlurmError

# The job states squeue 22.05 accepts after -t (its own list, in its error message).
STATES = frozenset("PENDING RUNNING SUSPENDED COMPLETED CANCELLED FAILED TIMEOUT NODE_FAIL PREEMPTED BOOT_FAIL "
                   "DEADLINE OUT_OF_MEMORY COMPLETING CONFIGURING RESIZING RESV_DEL_HOLD REQUEUED REQUEUE_FED "
                   "REQUEUE_HOLD REVOKED SIGNALING SPECIAL_EXIT STAGE_OUT STOPPED".split())
_FIELD = re.compile(r"%(.)")


@dataclass(frozen=True)
class QueuedJob:
    """One job as slurmctld holds it: ``id`` (``%A``), ``nodes`` (``%N``, empty while pending)."""

    id: int
    user: str
    name: str
    state: str = "RUNNING"
    nodes: str = ""
    end: str = "NONE"
    array: str | None = None  # %i of an array task ("6_0"); else the id


def render_squeue(fmt: str, jobs: Sequence[QueuedJob]) -> str:
    """What ``squeue -h -o FMT`` prints for ``jobs`` (no width or alignment: the stand-in refuses them)."""
    def field(job: QueuedJob, letter: str) -> str:
        values = {"A": str(job.id), "i": job.array or str(job.id), "u": job.user, "j": job.name, "T": job.state,
                  "N": job.nodes, "e": job.end}
        if letter not in values:
            raise ValueError(f"the squeue stand-in has no %{letter}")
        return values[letter]

    def record(job: QueuedJob) -> str:
        return _FIELD.sub(lambda m: field(job, m.group(1)), fmt) + "\n"

    return "".join(record(job) for job in jobs)


def _option(argv: Sequence[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


class FakeSlurm(Slurm):
    """A Slurm whose clients answer from ``show_node`` (scontrol's lines) and ``jobs`` (squeue's)."""

    def __init__(self, show_node: str, jobs: Sequence[QueuedJob] = ()) -> None:
        super().__init__("/nonexistent/slurm.conf")
        object.__setattr__(self, "show_node", show_node)
        object.__setattr__(self, "jobs", tuple(jobs))
        object.__setattr__(self, "calls", [])

    async def run(self, argv: Sequence[str]) -> str:
        self.calls.append(tuple(argv))  # type: ignore[attr-defined]
        if list(argv[:4]) == ["scontrol", "show", "node", "-o"]:
            return self.show_node  # type: ignore[attr-defined]
        if argv[0] != "squeue" or "-h" not in argv:
            raise SlurmError(f"the stand-in does not run {' '.join(argv)}")
        from ClusterShell.NodeSet import NodeSet

        states = (_option(argv, "-t") or ",".join(sorted(STATES - {"PENDING"}))).split(",")
        if any(s not in STATES for s in states):
            raise SlurmError(f"`squeue -h` failed (exit 1): squeue: error: Invalid job state specified: {states}")
        wanted = NodeSet(_option(argv, "-w") or "")
        jobs = [j for j in self.jobs if j.state in states  # type: ignore[attr-defined]
                and (not wanted or (j.nodes and NodeSet(j.nodes) & wanted))]
        return render_squeue(_option(argv, "-o") or "%A", jobs)
