"""Fabric Manager as findings: its unit, its version against the driver's, its own log. Pure."""

from __future__ import annotations

import signal

from nvls_tui.diagnosis import fm_container
from nvls_tui.diagnosis.unread import fm_unread_finding
from nvls_tui.model import Finding, NodeState, Severity
from nvls_tui.model.node import FM_UNKNOWN, FmLogLine
from nvls_tui.parsers.fabricmanager_log import FmEvent, multicast_error
from nvls_tui.words import count

FM_UNIT = "nvidia-fabricmanager"


def playbook_may_apply(state: NodeState) -> bool:
    """True on a board that needs a host Fabric Manager, and where the GPUs, so the board, are unknown.

    The platform is read from the GPUs' model: without them it is unknown, and a guard that cannot
    see refuses, so whatever a repair's guards need is as necessary as on an HGX board (fail closed).
    """
    return state.platform.has_host_fm or state.missing_section("gpus") is not None


def fm_log_needed(state: NodeState) -> bool:
    """Whether FM's unit journal (the ``fm_log`` section) has anything to say on ``state``'s node: a board that
    needs a host Fabric Manager (or one not known, fail closed) whose FM is not in the driver pod and whose
    unit is not known to be absent (then ``FM_NOT_RUNNING`` says so, and no unit logs anything)."""
    if not playbook_may_apply(state) or fm_container.in_container(state):
        return False
    unit = state.service(FM_UNIT)
    return not (state.was_read("units") and (unit is None or not unit.exists))


def version_mismatch_finding(fm_version: str, driver: str) -> Finding:
    """``FM_VERSION_MISMATCH``, worded the same for check (``--version`` against the driver) and analyze (FM's
    own words): the move that works is the package, since FM checks the versions each time it starts."""
    return Finding("FM_VERSION_MISMATCH", Severity.ERROR,
                   f"Fabric Manager {fm_version} does not match driver {driver}: FM will not start until they match. "
                   f"Install the nvidia-fabricmanager package of version {driver} (the driver's) and hold it "
                   "(apt-mark hold, dnf versionlock) so that an upgrade cannot part them again; clearing the unit's "
                   "failed state, starting it again or resetting GPUs do not help")


def fm_log_finding(errors: tuple[FmEvent, ...] | tuple[FmLogLine, ...], configured: bool) -> Finding | None:
    """``FM_LOG_ERROR`` for FM's ERROR/WARNING lines after its configuration (:func:`fm_log_errors`); an
    error when FM failed a multicast team (NVLS jobs then fail to bind), else a warning. None without any.

    Args:
        errors: the lines, in order.
        configured: the text holds FM's successful configuration (else what came after it is unknown).
    """
    if not errors:
        return None
    multicast = any(multicast_error(e.message) for e in errors)
    n_errors = sum(1 for e in errors if (e.level or "").upper() in ("ERROR", "ERR", "FATAL", "CRITICAL")
                   or (e.level is None and multicast_error(e.message)))
    said = " and ".join(count(n, word) for n, word in ((n_errors, "error"), (len(errors) - n_errors, "warning")) if n)
    where = ("after it configured the fabric" if configured else
             "(no successful configuration in this text, so these may be from before one)")
    what = " (multicast team errors: NVLS multicast setup fails)" if multicast else ""
    last = errors[-1]
    at = f" at {last.timestamp}" if last.timestamp else ""
    move = ("stop every holder, reset all GPUs and NVSwitches, then restart Fabric Manager (the repair's order)"
            if multicast else "read them in FM's log (journalctl -u nvidia-fabricmanager, /var/log/fabricmanager.log)")
    return Finding("FM_LOG_ERROR", Severity.ERROR if multicast else Severity.WARNING,
                   f"Fabric Manager logged {said} {where}{what}; the last{at}: {last.message[:200]} — {move}")


def _fm_findings(state: NodeState) -> list[Finding]:
    """FM's unit and version; a version mismatch comes first, as the cause of a unit that cannot start."""
    findings = []
    journal = state.fm_journal
    # FM's own words since its unit's last start name the versions it compared; else --version against the
    # driver. Words naming another FM than the binary there now, or another driver than the one loaded, are
    # older than a package change or a module reload: not now.
    said = journal.mismatch if journal is not None else None
    if said and (state.fm_version and state.fm_version != said[0] or state.driver and state.driver != said[1]):
        said = None
    mismatch = bool(said) or bool(state.fm_version and state.driver and state.fm_version != state.driver)
    if said:
        findings.append(version_mismatch_finding(*said))
    elif mismatch:
        findings.append(version_mismatch_finding(str(state.fm_version), str(state.driver)))
    unit = state.service(FM_UNIT)
    place = state.fm_place
    if unit is None and not state.was_read("units"):
        pass  # unknown, not absent: EVIDENCE_MISSING says so
    elif fm_container.in_container(state):
        # No host unit, and that is how the GPU Operator runs it: never "FM missing" here.
        findings.append(Finding("FM_IN_CONTAINER", Severity.INFO, fm_container.finding_message(state)))
    elif (why := fm_container.unknown_place(state)) is not None:
        findings.append(Finding("EVIDENCE_MISSING", Severity.ERROR,
                                f"where Fabric Manager runs could not be told: {why}; a repair refuses until it can",
                                section="fm_place", reason="unparseable"))
    elif (unit is None or not unit.exists) and place is not None and place.location == FM_UNKNOWN:
        pass  # no unit, and the holders (where a driver pod's FM shows) were not read: EVIDENCE_MISSING says so
    elif unit is None or not unit.exists:
        findings.append(Finding("FM_NOT_RUNNING", Severity.ERROR,
                                "no nvidia-fabricmanager unit on a board that needs a host Fabric Manager"))
    elif unit.active != "active":
        detail = f" (Result: {unit.result}{killed_words(unit.killed_by)})" if unit.result and unit.result != "success" \
            else ""
        if mismatch:
            why = ": it cannot start while its version differs from the driver's (FM_VERSION_MISMATCH)"
        elif unit.active == "failed":
            why = ": it died and systemd did not restart it; GPUs and NVSwitches need a reset before it starts again"
        else:
            why = ""
        findings.append(Finding("FM_NOT_RUNNING", Severity.ERROR, f"nvidia-fabricmanager is {unit.active}{detail}{why}"))
    if journal is not None and fm_log_needed(state):
        # The same words analyze gives a pasted FM journal (fm_log_finding), from the lines since the last start.
        logged = fm_log_finding(journal.problems, journal.configured)
        if logged is not None:
            findings.append(logged)
        # What no FM rule reads in the same lines, as analyze says it for that text.
        explained = any(f.code in ("FM_NOT_RUNNING", "FM_VERSION_MISMATCH") for f in findings)
        unread = fm_unread_finding(journal.unread, explained, "Fabric Manager's log")
        if unread is not None:
            findings.append(unread)
    return findings


def signal_name(signal_number: int) -> str:
    """``SIGKILL`` for 9; ``signal N`` for a number this system does not name."""
    try:
        return signal.Signals(signal_number).name
    except (ValueError, OverflowError):
        return f"signal {signal_number}"


def killed_words(signal_number: int | None) -> str:
    """``, killed by SIGKILL`` for the signal that ended a unit's main process; empty where none did."""
    return f", killed by {signal_name(signal_number)}" if signal_number else ""
