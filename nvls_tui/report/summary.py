"""The plain-language summary of one node: what was wrong, what was done (by hand too), what is left."""

from __future__ import annotations

import shlex
from collections import Counter

from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.report.clock import epoch_utc, record_utc
from nvls_tui.report.cluster import cluster_done, cluster_left
from nvls_tui.report.findings import findings_sentence
from nvls_tui.report.kernel import KERNEL_FINDINGS, kernel_lines, since_repair
from nvls_tui.report.node_log import NodeLog, change_of, change_words, operator_of
from nvls_tui.report.text import (
    as_number,
    bandwidth,
    code_span,
    code_spans,
    one_sentence,
    prose,
)
from nvls_tui.report.timeline import fabric_wait
from nvls_tui.runbook.changes import ReleaseLock, RemoveFile, SetPersistence, TakeLock, UnitChange, WriteFile
from nvls_tui.runbook.events import FabricProgress, ManualChanged, ProcessSignalled, StepFinished
from nvls_tui.runbook.log_entries import ChangeByHand
from nvls_tui.runbook.observed import NOTHING_OBSERVED
from nvls_tui.runbook.smoke_words import nccl_lines, reasons
from nvls_tui.runbook.steps import FM_UNIT, is_running
from nvls_tui.words import count, gbps


def _was_wrong(log: NodeLog) -> str | None:
    before = log.observed("before")
    if before is None:
        return None
    lines = kernel_lines(before)
    counting = [line for line in lines if line.current] if lines is not None else None
    words = findings_sentence(before, log.clock, past=True, kernel=counting, host=log.host)
    return f"- Was wrong: {words or 'nothing: the node was ' + prose(before.verdict)}."


def _by_hand(log: NodeLog) -> list[str]:
    """The bullets about the operator's own hand: before this repair (its list), and in this log."""
    day, out = log.clock.day, []
    listed = log.manual_list()
    changes = log.manual_changes()
    if listed and changes:
        words = [change_words(c, operator_of(listed[0]), epoch_utc(c.at, day)) for c in changes]
        out.append(f"- By hand before this run: {'; '.join(words)}.")
    done = log.by_hand()
    if done:
        words = [change_words(change_of(r), operator_of(r), record_utc(r.time, day)) for r in done]
        out.append(f"- By hand: {'; '.join(words)}.")
    return out


def _stopped_by_hand(log: NodeLog) -> list[str]:
    """Units stopped by hand before this repair (its ``manual-changes`` list)."""
    return [str(c.unit) for c in log.manual_changes() if c.what == "stopped" and c.unit]


def _fm_started(log: NodeLog) -> bool:
    """The repair's fabric-manager step started Fabric Manager (its stop in quiesce is then told with it)."""
    return any(isinstance(c, UnitChange) and c.verb == "start" and c.unit == FM_UNIT
               for c in log.changes_made("fabric-manager"))


def _units_done(log: NodeLog) -> list[str]:
    stopped = [u for u in log.stopped_units() if u != FM_UNIT or not _fm_started(log)]
    restored = list(log.happened.restored)
    by_hand = [u for u in _stopped_by_hand(log) if u in restored]
    parts = []
    if stopped and set(stopped) <= set(restored):
        parts.append(f"{count(len(stopped), 'unit')} stopped and started again ({code_spans(stopped)})")
    elif stopped:
        parts.append(f"{count(len(stopped), 'unit')} stopped ({code_spans(stopped)})")
        again = [u for u in restored if u not in by_hand]
        if again and not _aborted(log):
            parts.append(f"the restore started {code_spans(again)} again")
    if by_hand:
        parts.append(f"the restore put back {code_spans(by_hand)}, stopped by hand")
    return parts


def _signals_done(log: NodeLog) -> list[str]:
    """The runbook's own signals (those sent by hand are told with the operator's name)."""
    by_hand = {id(r.event) for r in log.by_hand()}
    mine = [e for e in log.events(ProcessSignalled) if id(e) not in by_hand]
    sent = Counter(str(e.signal or "SIGTERM") for e in mine if e.outcome == "signalled")
    other = Counter(str(e.outcome) for e in mine if e.outcome != "signalled")
    words = {"gone": "already gone", "changed": "left alone (changed since the check)"}
    return ([f"{count(n, 'holder')} stopped with {prose(sig)}" for sig, n in sent.items()] +
            [f"{count(n, 'holder')} {words.get(what, prose(what))}" for what, n in other.items()])


def _fabric_done(log: NodeLog) -> list[str]:
    parts = []
    reset = log.step("reset")
    if reset and reset.status == "ok":
        gpus = len((log.observed("before") or NOTHING_OBSERVED).fabric) or None
        parts.append(f"{count(gpus, 'GPU')} and the NVSwitches reset")
    elif reset:
        parts.append(f"the reset failed: {prose(log.clock.annotate(reset.message or 'no reason given'))}")
    if _fm_started(log):
        head = ("Fabric Manager stopped, then started after the reset" if FM_UNIT in log.stopped_units() else
                "Fabric Manager started")
        segment = [r for r in log.records if r.step == "fabric-manager"]
        wait = fabric_wait([r for r in segment if isinstance(r.event, FabricProgress)], segment)
        step = log.step("fabric-manager")
        if wait and wait.done:
            parts.append(f"{head}: {count(wait.gpus, 'GPU')} registered in {wait.seconds:.1f} s")
        elif step and step.status != "ok" and step.message:
            parts.append(f"{head}, but {prose(log.clock.annotate(step.message))}")
        else:
            parts.append(head)
    verify = log.step("verify-fabric")
    if verify and verify.status != "ok" and verify.message:
        parts.append(f"verify-fabric failed: {prose(log.clock.annotate(verify.message))}")
    return parts


def _smoke_done(log: NodeLog) -> list[str]:
    smokes = log.smokes()
    if not smokes:
        return []
    last = smokes[-1]
    verdict = "passed" if last.passed else "failed"
    threshold = as_number(last.threshold)
    limit = f" (threshold {gbps(threshold)})" if threshold is not None else ""
    errors = list(last.errors) if not last.passed else []
    said, raw = reasons(errors), nccl_lines(errors)
    # NCCL's own lines are listed apart under "Smoke test": glued here they would read as one sentence.
    why = f": {prose('; '.join(said))}" if said else ""
    if raw:
        why += f" (NCCL's {count(len(raw), 'line')} under Smoke test)" if said else ": NCCL's lines under Smoke test"
    head = f"{count(len(smokes), 'smoke test')}, the last" if len(smokes) > 1 else "smoke test"
    return [f"{head} {verdict} at {bandwidth(last.avg_busbw)}{limit}{why}"]


def _persistence_done(log: NodeLog) -> list[str]:
    if not any(isinstance(c, SetPersistence) and not c.enabled for c in log.changes_made("quiesce")):
        return []
    gpus = log.happened.restored_gpus
    back = f", back on for {count(len(gpus), 'GPU')} by the restore" if gpus else ""
    return [f"persistence mode turned off{back}"]


def _done(log: NodeLog) -> str | None:
    happened = log.happened
    if log.dry_run:
        return "- Done: nothing (a dry run: the plan was read, nothing was changed)."
    if happened.result == "refused":
        why = f": {prose(log.clock.annotate(happened.message))}" if happened.message else ""
        return f"- Done: nothing, the run was refused{why}".rstrip(".") + "."
    parts = (cluster_done(log) + _units_done(log) + _persistence_done(log) + _signals_done(log) +
             _fabric_done(log) + _smoke_done(log))
    if not parts:
        return None if log.by_hand() else "- Done: nothing was changed."
    return f"- Done: {one_sentence(parts)}"


def _aborted(log: NodeLog) -> bool:
    return log.happened.result == "aborted"


def _abort_bullet(log: NodeLog) -> str | None:
    """Where an aborted run stopped (the runbook's own sentence names the step) and what the restore did."""
    if not _aborted(log):
        return None
    message = log.happened.message or "aborted"
    if "aborted at " not in message:
        failed = next((e for e in reversed(log.events(StepFinished)) if e.status == "failed"), None)
        message += f" (during {failed.step or None})" if failed else ""
    units, failed_units = list(log.happened.restored), list(log.happened.restore_failed)
    restore = log.step("restore")
    if failed_units:
        then = f" The restore could not put back: {prose(', '.join(failed_units))}."
    elif units:
        then = f" The restore put back {count(len(units), 'unit')} ({code_spans(units)})."
    elif restore and restore.status == "ok":
        then = " The restore had nothing to put back."
    else:
        then = ""
    return f"- Aborted: {prose(log.clock.annotate(message)).rstrip('.')}.{then}"


def _lock_made(log: NodeLog) -> bool:
    """The run made the node's lock (its directory)."""
    return any(isinstance(c, TakeLock) for c in log.changes_made())


def _left_on_node(log: NodeLog) -> tuple[bool, bool]:
    """(repair record still on the node, lock still held), as far as the log's commands show."""
    record = lock = False
    for change in log.changes_made():  # the changes read back from the log (runbook/log_entries), in order
        if isinstance(change, WriteFile | RemoveFile) and change.path == RECORD_FILE:
            record = isinstance(change, WriteFile)  # written once its rename succeeded
        elif isinstance(change, TakeLock | ReleaseLock):
            lock = isinstance(change, TakeLock)
    return record, lock


def _restore_command(host: str, lock: bool = False) -> str:
    """The command that puts the node back. With the run's lock left on the node it needs ``--force``
    once that run is gone (its lock is stale then), and ``--force`` never overrides a run still alive."""
    force = " --force" if lock else ""
    return code_span(f"nvls-tui repair --restore{force} {shlex.quote(host)}")


# Said wherever the advice carries --force, so that nobody reads it as "override whatever runs".
_FORCE_NOTE = " (`--force` takes over the lock only once its run is gone; a live run refuses it)"


def log_ends(log: NodeLog) -> str:
    """Where the log of a run that did not finish ends: its last record's time and step (Markdown)."""
    last = log.records[-1] if log.records else None
    time, step = (last.time, last.step) if last else (None, "")
    return f"the log ends at {record_utc(time, log.clock.day)} during {code_span(step or '?')}"


def restore_advice(log: NodeLog) -> str:
    """What a run that did not finish left on the node, and the exact command that puts the node back."""
    record, lock = _left_on_node(log)
    command = _restore_command(log.host, lock)
    note = _FORCE_NOTE if lock else ""
    if record:
        keeps = "its repair record and lock" if lock else "its repair record"
        return f", and the node keeps {keeps}: {command} puts back what the run stopped{note}"
    if lock:
        return f", and the node keeps its lock: {command} clears it{note}"
    return f": {command} checks the node and puts back anything left"


def _verdict_words(log: NodeLog) -> list[str]:
    """The node after the run: verdict and remaining findings; kernel lines older than the repair are
    named as such, not as something the repair left."""
    after, before = log.observed("after"), log.observed("before")
    if after is None:
        if before is None:
            return []
        if not _lock_made(log):  # no lock, no change: the before still stands
            return [f"nothing was changed, so the node is as it was ({prose(before.verdict)})"]
        return ["no read of the node after the run"]
    lines = kernel_lines(after)
    new = since_repair(lines, log.clock) if lines is not None else None
    older = frozenset(c for c in after.findings if c in KERNEL_FINDINGS and new is not None
                      and not any(line.code == KERNEL_FINDINGS[c] for line in new))
    words = findings_sentence(after, log.clock, past=False, kernel=new, older=older, host=log.host)
    verdict = prose(after.verdict)
    return [f"{verdict}: {words}" if words else f"{verdict}; no finding remains"]


def _units_left(log: NodeLog) -> list[str]:
    before, after = log.observed("before") or NOTHING_OBSERVED, log.observed("after") or NOTHING_OBSERVED
    was, now = before.units or {}, after.units
    parts = []
    if now is not None:
        # A unit caught "activating" is a oneshot mid-run (the snapshot timer's service): "inactive"
        # afterwards is it having run, not it being down. A unit that was active and is not, is down.
        down = [u for u, state in was.items() if is_running(state) and not is_running(now.get(u))
                and not (state == "activating" and now.get(u) == "inactive")]
        if down:
            parts.append("not running as before the repair: " + ", ".join(
                f"{code_span(u)} (was {prose(was[u])}, now {prose(now.get(u, 'gone'))})" for u in down))
    failed = list(log.happened.restore_failed)
    if failed:
        parts.append(f"could not put back: {prose(', '.join(failed))}")
    return parts


def _manual_left(log: NodeLog) -> list[str]:
    """Units stopped by hand that nothing put back."""
    parts = []
    listed = log.manual_list()
    restored = list(log.happened.restored)
    now = (log.observed("after") or NOTHING_OBSERVED).units or {}
    stays = [u for u in _stopped_by_hand(log) if u not in restored and not is_running(now.get(u))]
    if stays:
        chose = ""
        if listed and listed[1].put_back is False:
            chose = f" (the operator chose to leave {'it' if len(stays) == 1 else 'them'} stopped)"
        parts.append(f"stopped by hand and not put back: {code_spans(stays)}{chose}")
    open_stops: dict[str, None] = {}
    for change in map(ChangeByHand.of_event, log.events(ManualChanged)):
        unit = str(change.unit)
        if change.what == "stopped":
            open_stops[unit] = None
        elif change.what == "started":
            open_stops.pop(unit, None)
    if open_stops:
        parts.append(f"stopped by hand and not started again in this log: {code_spans(open_stops)}")
    return parts


def _record_left(log: NodeLog) -> list[str]:
    """What the run left of its own on the node: the record and lock, or, after an abort, the advice."""
    record, lock = _left_on_node(log)
    command = _restore_command(log.host, lock)
    note = _FORCE_NOTE if lock else ""
    if record:
        return [f"the node keeps its repair record: {command} puts back what the run stopped{note}"]
    if lock:
        return [f"the node keeps the repair's lock: {command} clears it{note}"]
    if _aborted(log):
        took = _lock_made(log)
        cleaned = (f"the restore removed the repair record and the lock (nothing for {command} to do)" if took else
                   "nothing was changed")
        return [f"{cleaned}; run the repair again"]
    return []


def _left(log: NodeLog) -> str:
    if log.happened.result is None and not log.by_hand():
        parts = [f"the run did not finish: {log_ends(log)}{restore_advice(log)}"]
    else:
        parts = _verdict_words(log) + _units_left(log)
    parts += cluster_left(log)
    parts += _manual_left(log)
    if log.happened.result is not None:
        parts += _record_left(log)
    return f"- Left: {one_sentence(parts) if parts else 'nothing, as far as this log shows.'}"


def node_summary(log: NodeLog) -> list[str]:
    """A few bullets about one node: what was wrong, what was done (by hand too), what is left."""
    first, last = (log.records[0].time, log.records[-1].time) if log.records else (None, None)
    result = prose(log.happened.result or "unfinished")
    span = f"{record_utc(first, log.clock.day).removesuffix(' UTC')} to " \
           f"{record_utc(last, log.clock.day)}"
    bullets = [_was_wrong(log), *_by_hand(log), _done(log), _abort_bullet(log), _left(log)]
    return [f"**{prose(log.host)}: {result}** ({span})", "", *[b for b in bullets if b], ""]

