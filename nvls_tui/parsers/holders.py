"""Who holds /dev/nvidia*: fuser's holders joined with ps's identity, cgroup and command line.

The kind of a holder decides what a repair may stop: the incident's holders were DCGM, GPU Operator
pods, the ``nvidia-snapshot`` timer's nvidia-smi and a ``watch nvidia-smi`` loop, none of which
``nvidia-smi`` lists itself.
"""

from __future__ import annotations

import re
import shlex

from nvls_tui.model import Holder, HolderKind
from nvls_tui.model.scheduler import Job
from nvls_tui.parsers.fuser import FuserHolder
from nvls_tui.parsers.kube import container_id_of
from nvls_tui.parsers.ps import PsEntry
from nvls_tui.parsers.slurm import job_of_cgroup

# Process names as they appear in a command line. fuser prints the kernel's comm, cut to 15
# characters ("nvidia-device-p"), so a 15-character name also matches as a prefix; lsof cuts its
# COMMAND to 9 ("nvidia-pe"), so a 9-character one does too.
_BY_NAME: tuple[tuple[str, HolderKind], ...] = (
    ("dcgm-exporter", HolderKind.DCGM_EXPORTER),
    ("nv-hostengine", HolderKind.NV_HOSTENGINE),
    ("nvidia-device-plugin", HolderKind.DEVICE_PLUGIN),
    ("nvidia-mig-manager", HolderKind.MIG_MANAGER),
    ("gpu-feature-discovery", HolderKind.FEATURE_DISCOVERY),
    ("nv-fabricmanager", HolderKind.FABRIC_MANAGER),
    ("nvidia-persistenced", HolderKind.PERSISTENCED),
    ("nvidia-smi", HolderKind.NVIDIA_SMI),
)
_COMM_LEN = 15
_LSOF_LEN = 9
# Programs that run another one named in their arguments: a shell running a script, the dynamic
# loader running a binary (the real H200 VM's nvidia-smi showed as ``ld-linux-x86-64``), env.
_LAUNCHER = re.compile(r"^(?:sh|bash|dash|env|ld-linux[\w.-]*\.so[\d.]*|ld-[\w.-]+\.so[\d.]*)$")
_CUDA_APP = re.compile(
    r"^(?:python[\d.]*|vllm|torchrun|pt_main_thread|all_reduce_perf|\w+_perf(?:_mpi)?|tritonserver)$"
)


def _words(command: str) -> list[str]:
    if not any(c in command for c in "'\"\\"):
        return command.split()  # the common case, and shlex is slow on a 256-node poll
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote in a command line is not our problem
        return command.split()


def _named(word: str) -> HolderKind | None:
    base = word.rsplit("/", 1)[-1]
    for name, kind in _BY_NAME:
        if base == name or (len(base) in (_COMM_LEN, _LSOF_LEN) and name.startswith(base)):
            return kind
    return None


def classify(command: str) -> HolderKind:
    """The kind of process a command line (or a bare comm name) belongs to.

    Example:
        >>> classify("/snap/dcgm/62/usr/bin/nv-hostengine -n")
        <HolderKind.NV_HOSTENGINE: 'nv-hostengine'>
        >>> classify("watch -n 1 nvidia-smi")
        <HolderKind.WATCH: 'watch'>
    """
    words = _words(command.strip())
    if not words:
        return HolderKind.OTHER
    base = words[0].rsplit("/", 1)[-1]
    if base == "watch":
        # A bare "watch" is what fuser shows for the incident's loop; watching anything else is not ours.
        rest = words[1:]
        return HolderKind.WATCH if not rest or any("nvidia-smi" in w for w in rest) else HolderKind.OTHER
    kind = _named(words[0])
    if kind is not None:
        return kind
    if _LAUNCHER.match(base):
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if words[1:2] == ["-c"] and len(words) > 2:  # sh -c 'nvidia-smi -q': the command's first word
            rest = words[2].split()[:1]
        inner = _named(rest[0]) if rest else None
        if inner is not None:
            return inner
    if _CUDA_APP.match(base):
        # `python3 -m vllm ...` and `python3 /usr/bin/dcgm-exporter` are told apart by what runs.
        for word in words[1:3]:
            inner = _named(word)
            if inner is not None:
                return inner
        return HolderKind.CUDA_APP
    return HolderKind.OTHER


_POD = re.compile(r"(?:^|[-/])pod([0-9a-fA-F][0-9a-fA-F_-]*)")
_V1_ENTRY = re.compile(r"(\d+):([^:,;]*):(/[^,;\s]*)")


def _cgroup_path(cgroup: str) -> str:
    """The unified (v2) path, or the systemd/first path of a v1 ``N:ctrl:/path,...`` list."""
    entries = _V1_ENTRY.findall(cgroup)
    if not entries:
        return cgroup
    # A path that starts with /.. lies outside the reader's cgroup namespace (a container's view of a
    # hybrid host's name=systemd tree): it names nothing, so the next systemd or unified path is read.
    for _, controllers, path in entries:
        if controllers in ("", "name=systemd") and not path.startswith("/.."):
            return path
    return entries[0][2]


def unit_and_pod(cgroup: str | None) -> tuple[str | None, str | None]:
    """``(systemd unit, pod)`` of a process from its cgroup.

    Returns the deepest ``*.service``/``*.scope`` outside kubepods as the unit, and ``pod<uid>``
    for a kubepods path (systemd escapes the uid's dashes as underscores; they are restored).
    """
    if not cgroup or cgroup == "-":
        return None, None
    path = _cgroup_path(cgroup.strip())
    if "kubepods" in path:
        m = _POD.search(path)
        return None, (f"pod{m.group(1).replace('_', '-')}" if m else None)
    parts = [p for p in path.split("/") if p.endswith((".service", ".scope"))]
    return (parts[-1] if parts else None), None


def build_holders(fuser: tuple[FuserHolder, ...], ps: tuple[PsEntry, ...],
                  cgroups: dict[int, str] | None = None) -> tuple[Holder, ...]:
    """Join fuser's holders with ps's entries (and cgroups) by PID into :class:`Holder` objects, by PID.

    Args:
        fuser: who holds which device file.
        ps: identities (start time, parent, user, full command line) of those PIDs and their parents.
        cgroups: ``{pid: cgroup}`` read with the cgroup as ps's last column (whole); without it the
            entries' own cgroup column is used (which procps may have cut).
    """
    by_pid = {entry.pid: entry for entry in ps}
    cgroups = cgroups or {}

    def cgroup_of(pid: int) -> str | None:
        if pid in cgroups:
            return cgroups[pid]
        entry = by_pid.get(pid)
        return entry.cgroup if entry is not None else None

    holders: list[Holder] = []
    for f in fuser:
        entry = by_pid.get(f.pid)
        command = entry.args if entry is not None and entry.args else f.command
        cgroup = cgroup_of(f.pid)
        unit, pod = unit_and_pod(cgroup)
        user = entry.user if entry is not None else f.user
        # A job step of Slurm's cgroup plugin: the scheduler's workload (its name comes from squeue).
        job_id = job_of_cgroup(cgroup)
        holders.append(
            Holder(
                pid=f.pid,
                user=user,
                command=command,
                kind=classify(command),
                devices=f.devices,
                unit=unit,
                pod=pod,
                start_time=entry.lstart if entry is not None else None,
                ppid=entry.ppid if entry is not None else None,
                job=Job(job_id, user, "") if job_id is not None else None,
                container_id=container_id_of(cgroup) if pod else None,
            )
        )
    # A parent that keeps spawning holders (a `watch nvidia-smi` loop) must be stopped first, so it is
    # listed too, holding no device itself.
    holder_pids = {h.pid for h in holders}
    parent_pids = {h.ppid for h in holders if h.ppid}
    for entry in ps:
        if entry.pid in parent_pids and entry.pid not in holder_pids and classify(entry.args) is HolderKind.WATCH:
            unit, pod = unit_and_pod(cgroup_of(entry.pid))
            holders.append(Holder(pid=entry.pid, user=entry.user, command=entry.args, kind=HolderKind.WATCH,
                                  devices=(), unit=unit, pod=pod, start_time=entry.lstart, ppid=entry.ppid))
            holder_pids.add(entry.pid)
    return tuple(sorted(holders, key=lambda h: h.pid))


__all__ = ["build_holders", "classify", "unit_and_pod"]
