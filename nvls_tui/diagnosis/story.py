"""A node's story in one line, and the node's times read against the node's own clock.

The grid showed finding codes ("FM_NOT_RUNNING FABRIC_"): what an operator needs at a glance is the
cause and the next move ("FM killed 5 days ago; reset + FM start needed"). Pure: a NodeState and its
Diagnosis in, words out. Times on a node (kernel lines, systemd's timestamps) are on the node's clock;
an age is given only when the poll read that clock (``NodeState.node_clock``), otherwise the time
itself, so a skewed bastion never invents an age.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nvls_tui.diagnosis import fm_container
from nvls_tui.diagnosis.restore_hint import STORY_HINT
from nvls_tui.model import KernelEvent, NodeState, Severity
from nvls_tui.model.node import Diagnosis, Finding
from nvls_tui.words import count, gbps

FM_UNIT = "nvidia-fabricmanager"
# systemd prints its timestamps in the node's zone; only UTC-like zones are read (others: no date).
_SYSTEMD_ZONES = {"UTC": dt.UTC, "GMT": dt.UTC, "Z": dt.UTC}


def node_time(text: str | None) -> float | None:
    """Epoch seconds of a node's timestamp: ISO 8601 (``journalctl -o short-iso``) or systemd's
    ``Mon 2026-08-10 15:45:34 UTC``; None when it is absent or in a zone that cannot be read."""
    if not text:
        return None
    text = text.strip()
    try:
        parsed = dt.datetime.fromisoformat(text)
        return parsed.timestamp() if parsed.tzinfo else None
    except ValueError:
        pass
    words = text.split()
    if len(words) == 4 and words[3] in _SYSTEMD_ZONES:
        try:
            parsed = dt.datetime.strptime(f"{words[1]} {words[2]}", "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
        return parsed.replace(tzinfo=_SYSTEMD_ZONES[words[3]]).timestamp()
    return None


def ago(seconds: float) -> str:
    """``just now``, ``12 min ago``, ``3 h ago``, ``5 days ago``."""
    s = max(0, int(seconds))
    if s < 60:
        return "just now"
    if s < 3600:
        return f"{s // 60} min ago"
    if s < 2 * 86400:
        return f"{s // 3600} h ago"
    return f"{s // 86400} days ago"


def when(text: str | None, state: NodeState) -> str | None:
    """A node time as an age on the node's clock (``5 days ago``), or as ``08-10 15:45`` (node clock)
    when the poll did not read the node's clock; None when the time cannot be read."""
    at = node_time(text)
    if at is None:
        return None
    if state.node_clock is not None:
        return ago(state.node_clock - at)
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%m-%d %H:%M")


def fm_started_at(state: NodeState) -> float | None:
    """When the running Fabric Manager started (node clock); None when FM is not active or the time is unknown."""
    fm = state.service(FM_UNIT)
    if fm is None or fm.active != "active":
        return None
    return node_time(fm.since)


def before_fm_start(event: KernelEvent, state: NodeState) -> bool | None:
    """True when the kernel logged ``event`` before the running Fabric Manager started; None when unknown."""
    started, logged = fm_started_at(state), node_time(event.timestamp)
    if started is None or logged is None:
        return None
    return logged < started


def kernel_when(event: KernelEvent, state: NodeState) -> str:
    """The kernel table's time cell: ``5 days ago · before FM start`` (or the node time), ``?`` unknown."""
    age = when(event.timestamp, state) or "?"
    relation = before_fm_start(event, state)
    if relation is None:
        return age
    return f"{age} · {'before' if relation else 'after'} FM start"


# What NCCL printed on this node for each cause (domain.md; the incident's 802; 401 and "invalid
# argument" from operators' reports): the node screen shows it beside the finding, so the operator can
# tie the error in the job's log to what the node says.
_BIND_802 = "NCCL: \"Failed to bind NVLink SHARP (NVLS) Multicast memory\": CUDA error 802 'system not yet initialized'"
NCCL_SYMPTOMS = {
    "FM_NOT_RUNNING": f"{_BIND_802} (or 401 'operation not permitted')",
    "FABRIC_MANAGER_NOT_PRESENT": _BIND_802,
    "FABRIC_NOT_COMPLETED": _BIND_802,
    "FM_VERSION_MISMATCH": _BIND_802,
    "FABRIC_OUT_OF_SYNC": "NCCL: \"nvls.cc … Cuda failure 'invalid argument'\" after an FM restart without a reset, "
                          "or error 802",
    "NVLS_SMOKE_FAILED": "NCCL: NVLS all-reduce errors or low bus bandwidth in the job's log",
}


def nccl_symptom(code: str) -> str | None:
    """What NCCL says in a job's log when a node has this finding, or None when it says nothing special."""
    return NCCL_SYMPTOMS.get(code)


@dataclass(frozen=True, slots=True)
class Story:
    """One line for the grid: the cause in words and the next move; ``severity`` colours it."""

    text: str
    severity: Severity | None = None

    def fitted(self, width: int) -> str:
        """The story for a cell ``width`` wide: cause and next move; where both do not fit, the cause with `` …``
        for the next move it leaves out (the node screen has it), and the cause alone where even that is too long."""
        if len(self.text) <= width or "; " not in self.text:
            return self.text
        cause, _, rest = self.text.partition("; ")
        more = rest[rest.index(" (+"):] if " (+" in rest else ""
        for fit in (f"{cause} …{more}", f"{cause} …"):
            if len(fit) <= width:
                return fit
        return cause


def _fm_story(state: NodeState) -> str:
    fm = state.service(FM_UNIT)
    if fm is None or not fm.exists:
        return "no Fabric Manager unit; install nvidia-fabricmanager"
    age = when(fm.since, state)
    what = "killed" if fm.result == "signal" else "failed" if fm.active == "failed" else fm.active
    return f"FM {what}{f' {age}' if age else ''}; reset + FM start needed"


# The grid's and the story's words for why a passing smoke record is not trusted (smoke_distrust's).
SHORT_DISTRUST = {
    "the node's clock was stepped back since the smoke test": "clock stepped back",
    "the smoke record is dated after the node's clock": "dated after the node's clock",
    "the smoke record is from another boot": "from another boot",
}


def short_distrust(reason: str) -> str:
    """``reason`` (from ``diagnosis.kernel.smoke_distrust``) in a few words: ``clock stepped back``."""
    return SHORT_DISTRUST.get(reason, reason.removeprefix("the "))


def _out_of_sync_story(state: NodeState, distrust: str | None = None) -> str:
    event = next((e for e in state.kernel_events if e.code == "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"), None)
    age = when(event.timestamp, state) if event else None
    # An old line counts again when the smoke record that dated it stale is not trusted: say so, or the
    # operator reads the alarm as stale.
    why = f"smoke record not trusted: {short_distrust(distrust)}" if distrust else None
    said = "; ".join(w for w in (age, why) if w)
    return f"fabric out of sync{f' ({said})' if said else ''}; stop holders, reset, restart FM"


def _cause(top: Finding, state: NodeState, distrust: str | None = None) -> str:
    """The story of the finding that matters most."""
    code = top.code
    if code == "FM_VERSION_MISMATCH":
        return f"FM {state.fm_version} ≠ driver {state.driver}; install the matching FM"
    if code == "FM_NOT_RUNNING":
        return _fm_story(state)
    if code == "FABRIC_OUT_OF_SYNC":
        return _out_of_sync_story(state, distrust)
    if code == "INTERRUPTED_REPAIR":
        return f"a repair did not finish; {STORY_HINT}"
    if code == "GPU_LOST":
        gpu = f"GPU {top.gpu}" if top.gpu is not None else "a GPU"
        return f"{gpu} fell off the bus; a reset cannot help: reboot / hardware ticket"
    if code == "EVIDENCE_MISSING":
        return f"cannot read {top.section or 'a section'} ({top.reason or 'unknown'}): unknown, not healthy"
    if code == "FABRIC_NOT_COMPLETED":
        if top.severity is Severity.WARNING:
            return "GPUs registering with FM (In Progress)"
        return f"{top.message.split(':')[0] if top.message.startswith('GPUs') else 'GPUs'} not registered; " \
               "reset + FM restart needed"
    if code == "FABRIC_STATUS_ERROR":
        return "fabric status error; a reset will not fix it: escalate"
    if code == "FABRIC_MANAGER_NOT_PRESENT":
        return "kernel: FM not present; reset + FM start needed"
    if code == "NVLS_SMOKE_FAILED":
        bw = state.smoke.avg_busbw if state.smoke else None
        return f"last smoke test failed ({gbps(bw)}); repair, then escalate"
    if code == "XID":  # the Xid and where, then NVIDIA's move (the catalogue's bucket, or the line's order)
        head = top.message.partition(" — ")[0]
        return f"{head}: {top.next_move}" if top.next_move else head
    if code == "PLATFORM_UNSUPPORTED":
        return top.message.split(":")[0]
    return top.message


# Findings that say the same cause again: FM down means the kernel saw no FM and no GPU registered.
EXPLAINED_BY = {
    "FM_VERSION_MISMATCH": frozenset({"FM_NOT_RUNNING", "FABRIC_MANAGER_NOT_PRESENT", "FABRIC_NOT_COMPLETED"}),
    "FM_NOT_RUNNING": frozenset({"FABRIC_MANAGER_NOT_PRESENT", "FABRIC_NOT_COMPLETED"}),
    "FABRIC_OUT_OF_SYNC": frozenset({"FABRIC_MANAGER_NOT_PRESENT", "FABRIC_NOT_COMPLETED"}),
    # Xid 79 is the lost GPU's own line; the GPUs that stopped answering beside it say it again.
    "GPU_LOST": frozenset({"XID", "FABRIC_NOT_COMPLETED"}),
}


def _container_story(state: NodeState, diagnosis: Diagnosis, ranked: list[Finding]) -> Story:
    """FM in the driver pod: the host moves (reset, FM start) do not apply, so the move is always the pod's.

    An error keeps its cause in front (``fabric out of sync (30 min ago); Fabric Manager runs in ...``);
    the FM version the host cannot read is no cause of its own (the pod line already says where FM is).
    """
    line = fm_container.story_line(state)
    errors = [f for f in ranked if f.severity is Severity.ERROR]
    if not errors:
        return Story(line, ranked[0].severity if ranked else None)
    cause = _cause(errors[0], state, diagnosis.smoke_distrust).partition("; ")[0]
    return Story(f"{cause}; {line}", Severity.ERROR)


# What each repair step is, in a few words, for "where the last repair stopped".
STEP_WORDS = {
    "preflight": "the re-check", "quiesce": "stopping the holders' units", "verify-no-holders": "the holders",
    "reset": "the GPU reset", "fabric-manager": "FM start and registration wait",
    "verify-fabric": "the fabric check", "smoke-test": "the NVLS smoke test", "restore": "the restore",
}


@dataclass(frozen=True, slots=True)
class LastRepair:
    """How the console's last repair of a node ended, where that is news the fleet must keep showing.

    Attributes:
        result: ``failed`` or ``aborted``.
        step: the step it stopped at (None when the outcome did not say).
        restored: the restore put the units and settings back (False: it did not, or not all).
    """

    result: str
    step: str | None
    restored: bool = True


def repair_story(last: LastRepair, cause: str | None) -> str:
    """``repair failed at fabric-manager (FM start and registration wait), restored; GPUs not registered``.

    Where it stopped, never the failed step again as the next move; the node's present cause (without its
    advice) follows, when there is one.
    """
    where = f" at {last.step}" + (f" ({STEP_WORDS[last.step]})" if last.step in STEP_WORDS else "") if last.step else ""
    put_back = "restored" if last.restored else "NOT all restored: repair --restore"
    said = f"repair {last.result}{where}, {put_back}"
    return f"{said}; now: {cause}" if cause else said


# The annotation a repair leaves on the cordon it kept (runbook/kube_repair.STOPPED_AT writes it; the runbook
# sits above the diagnosis, so the name is read here and a test holds the two the same).
STOPPED_AT_ANNOTATION = "nvls-tui/repair-stopped-at"


def cordon_words(state: NodeState) -> str | None:
    """Whose cordon keeps the node out of service: ``cordoned (not by nvls-tui)`` (who is unknown), or
    ``cordoned by nvls-tui after a failed repair at STEP`` where nvls-tui's annotation says so; None where the
    node is not cordoned or the cluster could not say (no claim either way)."""
    k8s = state.k8s
    if k8s is None or not k8s.found or k8s.cordoned is not True:
        return None
    step = dict(k8s.annotations).get(STOPPED_AT_ANNOTATION)
    return f"cordoned by nvls-tui after a failed repair at {step}" if step else "cordoned (not by nvls-tui)"


def node_story(state: NodeState, diagnosis: Diagnosis | None, last: LastRepair | None = None) -> Story:
    """What is wrong with a node and what to do, in one line (the grid's last column).

    Args:
        last: the console's last repair of the node, where it failed or was aborted and the node has not
            changed since: the story says where that repair stopped first (not its failed step as advice).
    """
    if not state.reachable:
        return Story(f"unreachable: {state.error or 'no answer'}", Severity.ERROR)
    if diagnosis is None:
        return Story("")
    if last is not None:
        now = node_story(state, diagnosis)
        cause = now.text.partition("; ")[0] if now.severity is not None else None
        severity = Severity.ERROR if last.result == "failed" or not last.restored else Severity.WARNING
        return Story(repair_story(last, cause), severity)
    ranked = [f for f in diagnosis.findings if f.severity in (Severity.ERROR, Severity.WARNING)]
    if any(f.code == "FM_IN_CONTAINER" for f in diagnosis.findings):
        return _container_story(state, diagnosis, ranked)
    if not ranked:
        # A healthy node someone cordoned is not back in service: the story says so, and whose cordon it is.
        cordon = cordon_words(state)
        held = f" · {cordon}" if cordon else ""
        if state.smoke and state.smoke.passed:
            why = diagnosis.smoke_distrust
            return Story(f"NVLS ok · smoke {gbps(state.smoke.avg_busbw)}"
                         + (f" (record not trusted: {short_distrust(why)})" if why else "") + held)
        return Story(f"fabric registered{held}; no smoke test yet")
    top = ranked[0]
    more = len({f.code for f in ranked} - {top.code} - EXPLAINED_BY.get(top.code, frozenset()))
    tail = f" (+{count(more, 'finding')})" if more else ""
    return Story(_cause(top, state, diagnosis.smoke_distrust) + tail, top.severity)


__all__ = ["NCCL_SYMPTOMS", "SHORT_DISTRUST", "STEP_WORDS", "STOPPED_AT_ANNOTATION", "LastRepair", "cordon_words", "Story", "ago", "before_fm_start", "fm_started_at", "kernel_when", "nccl_symptom",
           "node_story", "node_time", "repair_story", "short_distrust", "when"]
