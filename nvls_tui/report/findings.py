"""A node's findings as plain-language phrases, from the state the log holds (not from the codes alone)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nvls_tui.diagnosis.restore_hint import restore_hint
from nvls_tui.report.clock import NodeClock
from nvls_tui.report.kernel import KERNEL_FINDINGS, kernel_listing
from nvls_tui.report.text import and_list, bandwidth, code_span, prose
from nvls_tui.runbook.observed import KernelLine, ObservedNode
from nvls_tui.runbook.steps import FM_UNIT
from nvls_tui.words import count, verb

# Findings that are the node's circumstance, not a fault of it: told after the faults.
CIRCUMSTANCES = frozenset({"HOLDERS_PRESENT"})
# systemd's Result of a unit that was killed or crashed (``exit-code`` is a unit that exited with an error).
CRASHES = frozenset({"signal", "core-dump", "watchdog"})


@dataclass(frozen=True)
class _Said:
    """What a summary says about findings: the node's state, its clock, the tense, which lines count."""

    summary: ObservedNode
    clock: NodeClock
    past: bool
    kernel: list[KernelLine] | None
    host: str | None = None  # the node as the operator named it (the restore command names it)

    def be(self) -> str:
        return "was" if self.past else "is"

    def say(self) -> str:
        return "said" if self.past else "says"


def _kernel_detail(said: _Said, code: str) -> str:
    """``(`NV_ERR_X`, 3 lines, the last at 15:44:58 UTC)``: the lines behind a kernel finding."""
    lines = [line for line in said.kernel or [] if line.code == code]
    if not lines:
        return f"({code_span(code)})"
    stamp = lines[-1].timestamp
    if not stamp:
        when = ""
    elif len(lines) == 1:
        when = f" at {said.clock.show(stamp)}"
    else:
        when = f", the last at {said.clock.show(stamp)}"
    return f"({code_span(code)}, {count(len(lines), 'line')}{when})"


def _fm_words(said: _Said) -> str:
    s = said.summary
    state = (s.units or {}).get(FM_UNIT)
    if state is None:
        return f"there {said.be()} no Fabric Manager unit"
    result = (s.unit_results or {}).get(FM_UNIT)
    since = (s.unit_since or {}).get(FM_UNIT)
    why = f"{prose(state)}, Result: {prose(result)}" if result and result != "success" else prose(state)
    if state == "failed":
        at = f" at {said.clock.show(since)}" if since else ""  # systemd's time of the failure
        died = result in CRASHES or not result
        return f"Fabric Manager {('had died' if died else 'had failed') if said.past else 'is down'} ({why}){at}"
    down = f" since {said.clock.show(since)}" if since else ""
    return f"Fabric Manager {said.be()} not running ({why}){down}"


def _fabric_words(said: _Said, completed: bool) -> str:
    gpus = said.summary.fabric
    if completed:
        bad = [g for g in gpus if g.state == "Completed" and g.status != "Success"]
        statuses = prose(", ".join(dict.fromkeys(str(g.status) for g in bad)) or "an error")
        return (f"fabric registration of {count(len(bad) or None, 'GPU')} "
                f"{'ended' if said.past else 'ends'} in {statuses}, which a reset does not fix (escalate)")
    bad = [g for g in gpus if g.state != "Completed"]
    states = prose(", ".join(dict.fromkeys(str(g.state) for g in bad)) or "not Completed")
    n = len(bad) or None
    have = "had" if said.past else verb(n or 2, "has")
    return f"{count(n, 'GPU')} {have} not finished fabric registration ({states})"


def _all_registered(summary: ObservedNode) -> bool:
    gpus = summary.fabric
    return bool(gpus) and all(g.state == "Completed" and g.status == "Success" for g in gpus)


def _details(summary: ObservedNode, code: str) -> list[str]:
    return [str(d.message) for d in summary.finding_details if d.code == code and d.message]


def _not_present_words(said: _Said) -> str:
    code = KERNEL_FINDINGS["FABRIC_MANAGER_NOT_PRESENT"]
    return f"the kernel {said.say()} Fabric Manager {said.be()} not present {_kernel_detail(said, code)}"


def _out_of_sync_words(said: _Said) -> str:
    # Completed/Success beside this line is the incident's trap: the fabric looks registered and is not.
    though = ""
    if _all_registered(said.summary):
        though = f", though every GPU {'showed' if said.past else 'shows'} Completed/Success"
    code = KERNEL_FINDINGS["FABRIC_OUT_OF_SYNC"]
    return (f"the kernel {said.say()} the NVLink fabric state {said.be()} out of sync "
            f"{_kernel_detail(said, code)}{though}")


def _mismatch_words(said: _Said) -> str:
    s = said.summary
    return (f"Fabric Manager {prose(s.fm_version)} {'did' if said.past else 'does'} not match driver "
            f"{prose(s.driver)}")


def _xid_words(said: _Said) -> str:
    xids = [line for line in said.kernel or [] if line.code in ("XID", "SXID")]
    return f"the kernel logged {and_list(kernel_listing(xids, said.clock)) if xids else 'Xid lines'}"


def _holders_words(said: _Said) -> str:
    n = said.summary.holders
    return f"{count(n, 'process')} {'held' if said.past else verb(n, 'holds')} {prose('/dev/nvidia*')}"


def _smoke_failed_words(said: _Said) -> str:
    smoke = said.summary.smoke
    return (f"the last NVLS smoke test {'had failed' if said.past else 'failed'} "
            f"({bandwidth(smoke.avg_busbw if smoke else None)})")


def _interrupted_words(said: _Said) -> str:
    if said.past:
        return "an earlier repair had not finished (its record was on the node)"
    hint = f": {restore_hint(said.host)}" if said.host else ""
    return f"an interrupted repair's record is on the node{hint}"


def _platform_words(said: _Said) -> str:
    return f"the board ({prose(said.summary.platform)}) {said.be()} not one this H100/H200 playbook repairs"


def _evidence_words(said: _Said) -> str:
    what = "; ".join(prose(m) for m in _details(said.summary, "EVIDENCE_MISSING")) or "a section"
    return f"part of the node {'could not' if said.past else 'cannot'} be read: {what}"


_FINDING_WORDS: dict[str, Callable[[_Said], str]] = {
    "FM_NOT_RUNNING": _fm_words,
    "FABRIC_MANAGER_NOT_PRESENT": _not_present_words,
    "FABRIC_OUT_OF_SYNC": _out_of_sync_words,
    "FM_VERSION_MISMATCH": _mismatch_words,
    "FABRIC_NOT_COMPLETED": lambda said: _fabric_words(said, completed=False),
    "FABRIC_STATUS_ERROR": lambda said: _fabric_words(said, completed=True),
    "XID": _xid_words,
    "HOLDERS_PRESENT": _holders_words,
    "NVLS_SMOKE_FAILED": _smoke_failed_words,
    "INTERRUPTED_REPAIR": _interrupted_words,
    "PLATFORM_UNSUPPORTED": _platform_words,
    "EVIDENCE_MISSING": _evidence_words,
}


def finding_words(code: str, said: _Said) -> str:
    """One finding as a phrase (Markdown), in the summary's tense, from the logged state (not the code);
    a code this report has no words for is named, with the diagnosis's own sentence when logged."""
    words = _FINDING_WORDS.get(code)
    if words is not None:
        return words(said)
    detail = _details(said.summary, code)
    return code_span(code) + (f": {prose(detail[0])}" if detail else "")


def findings_sentence(summary: ObservedNode, clock: NodeClock, *, past: bool,
                       kernel: list[KernelLine] | None, older: frozenset[str] = frozenset(),
                       host: str | None = None) -> str:
    """The findings as one phrase: the faults, then what only older kernel lines say, then the circumstances.

    Args:
        kernel: the kernel lines the words may cite (None: an older log without them).
        older: kernel findings whose every line was logged before the repair began.
        host: the node, as the operator named it (what still needs doing names it).
    """
    if summary.reachable is False:
        return f"the node could not be reached ({prose(summary.error or 'no answer')})"
    said = _Said(summary, clock, past, kernel, host)
    codes = list(dict.fromkeys(summary.findings))
    faults = [finding_words(c, said) for c in codes if c not in CIRCUMSTANCES and c not in older]
    faults += [f"the kernel's {code_span(KERNEL_FINDINGS[c])} from before the repair still counts "
               "(no smoke test has passed since)" for c in codes if c in older]
    # Holders are the circumstance, not a fault: after the faults, so "and" never joins them to a fault's clause.
    rest = [finding_words(c, said) for c in codes if c in CIRCUMSTANCES]
    return "; ".join(p for p in (and_list(faults), *rest) if p)

