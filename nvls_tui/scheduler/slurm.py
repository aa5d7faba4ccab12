"""Slurm as the bastion sees it: ``scontrol`` and ``squeue`` with the cluster's ``slurm.conf``.

Found from ``--slurm-conf FILE``, else ``SLURM_CONF``, else ``scontrol`` on PATH with the default
``/etc/slurm/slurm.conf``; none of these: no scheduler, and nvls-tui works as without one. A target's
Slurm node name is its short host name (``root@gpu05.cluster:22`` -> ``gpu05``) unless a node map
says otherwise. Commands are argv lists (no shell); what they print is parsed by
:mod:`nvls_tui.parsers.slurm`. A scheduler that was found but did not answer, or answered with text that
could not be read whole (a job's name may hold anything: squeue's records are marked afresh for each
read), is reported as such (state ``unknown`` with the error), never as an idle node.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nvls_tui import node_map
from nvls_tui.model.scheduler import UNKNOWN, Job, SchedulerState
from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.slurm import node_state_word, parse_show_node, parse_squeue, squeue_format
from nvls_tui.textsafe import clean, one_line

DEFAULT_CONF = "/etc/slurm/slurm.conf"
TIMEOUT = 15.0
# The job states in which a job holds its nodes (squeue 22.05's names): a suspended or stopped job's
# processes are still there, and a job between its steps holds no GPU yet is still running.
JOB_STATES = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED,SIGNALING,STAGE_OUT,RESIZING"


class SlurmError(Exception):
    """A Slurm command could not be run or failed (one sentence)."""


@dataclass(frozen=True)
class Slurm:
    """How to reach the cluster's controller from the bastion.

    Attributes:
        conf: the slurm.conf the commands use (``SLURM_CONF``).
        node_map: target host -> Slurm node name, where they differ.
        timeout: seconds a scontrol/squeue may take.
    """

    conf: str
    node_map: Mapping[str, str] = field(default_factory=dict)
    timeout: float = TIMEOUT

    def env(self) -> dict[str, str]:
        """The environment of a Slurm command: ours, with the cluster's slurm.conf."""
        return {**os.environ, "SLURM_CONF": self.conf}

    def node_name(self, host: str) -> str:
        """The Slurm node name of a target (mapped, or its short host name)."""
        if host in self.node_map:
            return self.node_map[host]
        bare = host.rpartition("@")[2]
        if bare.startswith("[") and "]" in bare:  # [::1]:22
            bare = bare[1:bare.index("]")]
        elif bare.count(":") == 1:
            bare = bare.partition(":")[0]
        return bare.split(".")[0] if not bare.replace(".", "").isdecimal() else bare

    async def run(self, argv: Sequence[str]) -> str:
        """Run one Slurm command; its stdout. Raises SlurmError with the tool's own words."""
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=self.env(), stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            raise SlurmError(f"`{argv[0]}` could not be run: {exc.strerror or exc}") from exc
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise SlurmError(f"`{' '.join(argv[:2])}` did not answer within {self.timeout:.0f} s") from None
        if proc.returncode != 0:
            said = one_line(err.decode(errors="replace") or out.decode(errors="replace"), 200)
            raise SlurmError(f"`{' '.join(argv[:2])}` failed (exit {proc.returncode}): {said}")
        return out.decode(errors="replace")

    def hook(self, host: str) -> SlurmNode:
        """The runbook's view of one node's scheduler (see nvls_tui.runbook.scheduling)."""
        return SlurmNode(self, host)

    async def run_status(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run one Slurm command that changes the cluster; (exit status, what it said). Never raises."""
        try:
            return 0, await self.run(argv)
        except SlurmError as exc:
            return 1, str(exc)

    async def states(self, hosts: Sequence[str]) -> dict[str, SchedulerState]:
        """Every host's node state, reason and jobs: one ``scontrol show node`` and one ``squeue``.

        A host Slurm does not know gets no entry (it is not a node of this cluster). If Slurm does not
        answer, every host gets state ``unknown`` with the error.
        """
        names = {host: self.node_name(host) for host in hosts}
        wanted = ",".join(sorted(set(names.values())))
        mark = f"nvls{secrets.token_hex(8)}"  # new for each read: no job's name can hold it
        try:
            shown = parse_show_node(await self.run(["scontrol", "show", "node", "-o", wanted]))
            queued = parse_squeue(await self.run(["squeue", "-h", "-w", wanted, "-t", JOB_STATES,
                                                  "-o", squeue_format(mark)]), mark)
        except SlurmError as exc:
            return {host: SchedulerState("slurm", name, UNKNOWN, error=str(exc)) for host, name in names.items()}
        jobs, unreadable = _read_whole(shown, queued, set(names.values()))
        if unreadable:
            # Whatever could not be read may be any node's job, or any node's state: none is known.
            return {host: SchedulerState("slurm", name, UNKNOWN, error=unreadable, unreadable=True)
                    for host, name in names.items()}
        out = {}
        for host, name in names.items():
            fields = shown.value.get(name)
            if fields is None:
                continue
            raw = fields.get("State", "")
            reason = fields.get("Reason") or None
            out[host] = SchedulerState("slurm", name, node_state_word(raw), reason=clean(reason) if reason else None,
                                       jobs=tuple(jobs.get(name, ())), raw=raw)
        return out


def _read_whole(shown: Parsed[dict[str, dict[str, str]]], queued: Parsed[list[tuple[Job, str]]],
                wanted: set[str]) -> tuple[dict[str, list[Job]], str | None]:
    """The jobs of each node, or why Slurm's answer could not be read whole (one sentence).

    Any warning of the parsers, a node that was not asked for (a free text's newline made it up), or
    a node list that is not one: a job or a node state may be missing, so nothing is read.
    """
    if queued.warnings:
        return {}, f"squeue printed a job that could not be read ({queued.warnings[0]}): the nodes' jobs are unknown"
    if shown.warnings:
        return {}, f"scontrol show node printed a line that could not be read ({shown.warnings[0]})"
    extra = sorted(set(shown.value) - wanted)
    if extra:
        return {}, f"scontrol show node printed a node that was not asked for ({one_line(extra[0], 60)})"
    jobs: dict[str, list[Job]] = {}
    for job, nodelist in queued.value:
        nodes = _expand(nodelist)
        if nodes is None:
            return {}, f"squeue printed a node list that could not be read ({one_line(nodelist, 80)}) for job {job.id}"
        for node in nodes:
            jobs.setdefault(node, []).append(job)
    return jobs, None


@dataclass
class SlurmNode:
    """One target's node in Slurm, for the runbook: read its state, run scontrol on the bastion."""

    slurm: Slurm
    host: str

    @property
    def node(self) -> str:
        """The Slurm node name."""
        return self.slurm.node_name(self.host)

    async def read(self) -> SchedulerState | None:
        """The node's state; None when Slurm answered and has no such node (it is in no job's way).

        A Slurm that did not answer is a state with an error, never None and never idle.
        """
        found = await self.slurm.states([self.host])
        return found.get(self.host)

    async def command(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run a scheduler command with the cluster's configuration."""
        return await self.slurm.run_status(argv)


def _expand(nodelist: str) -> list[str] | None:
    """Slurm's host list (``gpu[05-06],gpu08``) as names (ClusterShell speaks the same syntax); None
    when it is not one (never guessed: the job would be on no node)."""
    if not nodelist:
        return []
    from ClusterShell.NodeSet import NodeSet, NodeSetParseError

    try:
        return list(NodeSet(nodelist))
    except (NodeSetParseError, ValueError):
        return None


def read_node_map(path: str) -> dict[str, str]:
    """``--slurm-node-map FILE``: one ``TARGET SLURM_NODE`` pair per line, ``#`` comments (:mod:`nvls_tui.node_map`).

    Raises:
        OSError: the file cannot be read. ValueError: a line is not two words (one sentence).
    """
    return node_map.read_node_map(path, "SLURM_NODE")


def find_slurm(conf: str | None = None, node_map: Mapping[str, str] | None = None,
               environ: Mapping[str, str] | None = None) -> Slurm | None:
    """The cluster's Slurm, or None when there is none to find.

    Args:
        conf: ``--slurm-conf FILE`` (it must exist).
        node_map: target -> Slurm node name.
        environ: the environment (``SLURM_CONF``); default os.environ.

    Raises:
        SlurmError: a slurm.conf was named (option or SLURM_CONF) but cannot be read, or scontrol is
            missing while a configuration was named.
    """
    env = os.environ if environ is None else environ
    named = conf or env.get("SLURM_CONF")
    if named:
        if not os.path.isfile(named):
            raise SlurmError(f"the Slurm configuration {named} does not exist")
        if shutil.which("scontrol") is None:
            raise SlurmError(f"{named} names a Slurm cluster but scontrol is not installed (slurm-client)")
        return Slurm(named, dict(node_map or {}))
    if shutil.which("scontrol") and os.path.isfile(DEFAULT_CONF):
        return Slurm(DEFAULT_CONF, dict(node_map or {}))
    return None


def with_scheduler(states: Sequence, scheduler: Mapping[str, SchedulerState]) -> list:
    """NodeStates with their scheduler state attached, and each job step holder's job named.

    A holder whose job the scheduler listed gets the job's user and name; one whose job it did not
    list keeps the id alone.
    """
    out = []
    for state in states:
        sched = scheduler.get(state.host)
        if sched is None:
            out.append(state)
            continue
        by_id = {j.id: j for j in sched.jobs}
        holders = tuple(h if h.job is None or h.job.id not in by_id else dataclasses.replace(h, job=by_id[h.job.id])
                        for h in state.holders)
        out.append(state.replace(scheduler=sched, holders=holders))
    return out


__all__ = ["DEFAULT_CONF", "JOB_STATES", "Slurm", "SlurmError", "find_slurm", "read_node_map", "with_scheduler"]
