"""``FM_RESTARTER``: what restarts Fabric Manager behind the operator's back. Pure.

An FM restarted under live NCCL clients is one known way into ``NV_ERR_FABRIC_STATE_OUT_OF_SYNC``
(field notes, 3): needrestart restarts the services whose libraries an upgrade replaced, apt's
daily timer runs unattended-upgrades, and a unit that keeps crashing is restarted by systemd
itself (its ``NRestarts`` climbing). Each cause is its own warning, in words, with the move that
prevents it. A repair holds apt's timers for its duration (``runbook/quiesce.py``).
"""

from __future__ import annotations

from nvls_tui.model import Finding, NodeState, Severity
from nvls_tui.parsers.restarters import APT_TIMERS, PREVENTION_FILE, PREVENTION_LINE
from nvls_tui.words import count

FM_UNIT = "nvidia-fabricmanager.service"
CODE = "FM_RESTARTER"
# The timer whose service runs `apt.systemd.daily install`, and so unattended-upgrade.
UPGRADE_TIMER = APT_TIMERS[1]


def _running(state: NodeState, unit: str) -> bool:
    found = state.service(unit)
    return found is not None and found.active in ("active", "activating", "reloading")


def _units(units: tuple[str, ...]) -> str:
    names = [u.removesuffix(".service") for u in units]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def needrestart_finding(state: NodeState) -> Finding | None:
    """needrestart would restart (``a``) or offer pre-selected (``i``) the node's nvidia-* units."""
    found = state.restarters
    if found is None or not found.needrestart or not found.needrestart_units:
        return None
    units = _units(found.needrestart_units)
    if found.needrestart_mode == "a":
        what = (f"needrestart restarts {units} automatically after package upgrades (restart mode 'a'), "
                "unattended ones included")
    elif found.needrestart_mode == "i":
        what = (f"needrestart offers to restart {units} after an interactive apt upgrade, pre-selected "
                "(one Enter restarts it)")
    else:
        return None
    doubt = f" (its configuration was not read whole: {'; '.join(found.uncertain)})" if found.uncertain else ""
    return Finding(CODE, Severity.WARNING,
                   f"{what}{doubt}: a Fabric Manager restarted under running NCCL jobs leaves the fabric out of "
                   f"sync; prevent it with `{PREVENTION_LINE}` in {PREVENTION_FILE}")


def unattended_finding(state: NodeState) -> Finding | None:
    """unattended-upgrades is on and its timer runs: upgrades land on the node without the operator."""
    found = state.restarters
    if found is None or not found.unattended_upgrades or not _running(state, UPGRADE_TIMER):
        return None
    then = ""
    if found.needrestart and found.needrestart_mode == "a" and found.needrestart_units:
        then = f", and needrestart then restarts {_units(found.needrestart_units)}"
    return Finding(CODE, Severity.WARNING,
                   f"unattended-upgrades installs upgrades on its own ({UPGRADE_TIMER} active, "
                   f"APT::Periodic::Unattended-Upgrade on){then}: an upgraded NVIDIA driver or Fabric Manager "
                   "package changes them under running jobs; hold them (`apt-mark hold` the nvidia packages) or "
                   "turn APT::Periodic::Unattended-Upgrade off")


def flapping_finding(state: NodeState) -> Finding | None:
    """systemd restarted FM by its Restart= policy (``NRestarts`` > 0), and more since the last poll."""
    fm = state.service(FM_UNIT)
    if fm is None or not fm.restarts:
        return None
    before = state.fm_restarts_before
    climbing = f", {count(fm.restarts - before, 'more restart')} since the last poll: it is flapping now" \
        if before is not None and fm.restarts > before else ""
    return Finding(CODE, Severity.WARNING,
                   f"systemd restarted nvidia-fabricmanager {count(fm.restarts, 'time')} (NRestarts) since it was "
                   f"last started by hand{climbing}: it keeps exiting and coming back, and each restart under "
                   "running jobs can leave the fabric out of sync; read its log (`journalctl -u "
                   "nvidia-fabricmanager`) for why it exits")


def restarter_findings(state: NodeState) -> list[Finding]:
    """Every ``FM_RESTARTER`` of ``state`` (contract.md), cause by cause."""
    found = (needrestart_finding(state), unattended_finding(state), flapping_finding(state))
    return [f for f in found if f is not None]


def carry_fm_restarts(previous: NodeState | None, current: NodeState) -> NodeState:
    """``current`` with the FM unit's ``NRestarts`` of the last poll (``fm_restarts_before``), so a count that
    climbs between polls reads as flapping now. Nothing is carried from a poll that did not read it."""
    fm = previous.service(FM_UNIT) if previous is not None else None
    return current.replace(fm_restarts_before=fm.restarts if fm is not None else None)


__all__ = ["CODE", "carry_fm_restarts", "flapping_finding", "needrestart_finding", "restarter_findings",
           "unattended_finding"]
