"""Holding apt for a repair: no unattended upgrade, and so no needrestart, restarts FM while it runs.

needrestart runs only from apt's hooks, after a package change: apt's daily runs (``apt-daily.timer``
and ``apt-daily-upgrade.timer``, whose service runs unattended-upgrade) are what start it unasked. So
quiesce stops the two timers first, the restore starts them again (they are recorded with the other
units before anything changes), and preflight refuses while one of their runs is under way (stopping
a timer does not end the run it started, and stopping an upgrade half-way is worse). Not stopped:
``unattended-upgrades.service``, which runs nothing by itself and, when stopped, may install pending
upgrades (``InstallOnShutdown``). An operator's own ``apt`` still runs needrestart: the plan says so.
Pure.
"""

from __future__ import annotations

from nvls_tui.model import NodeState
from nvls_tui.parsers.restarters import APT_SERVICES, APT_TIMERS

RUNNING = frozenset({"active", "activating", "reloading", "deactivating"})
# What the plan and the run say of the timers it holds.
HELD_NOTE = "held for the repair, started again after: no unattended upgrade (nor the needrestart it runs) meanwhile"
APT_BY_HAND = ("an `apt` run by hand still runs needrestart: run none until the repair ends")


def _running(state: NodeState, unit: str) -> bool:
    found = state.service(unit)
    return found is not None and found.exists and found.active in RUNNING


def timers_to_hold(state: NodeState) -> tuple[str, ...]:
    """apt's timers that run on ``state``, in the order quiesce stops them."""
    return tuple(t for t in APT_TIMERS if _running(state, t))


def held_sentence(timers: tuple[str, ...]) -> str:
    """``apt-daily.timer and apt-daily-upgrade.timer stopped for the repair, started after`` (and why)."""
    names = " and ".join(timers)
    return (f"{names} stopped for the repair, started after: no unattended upgrade, nor the needrestart it runs, "
            f"restarts Fabric Manager meanwhile; {APT_BY_HAND}")


def apt_run_refusal(state: NodeState) -> str | None:
    """Why a repair must not start now: one of apt's daily runs is under way (None when none is)."""
    busy = [s for s in APT_SERVICES if _running(state, s)]
    if not busy:
        return None
    return (f"{' and '.join(busy)} {'is' if len(busy) == 1 else 'are'} running (apt's daily run: an upgrade, and "
            "the needrestart after it, can restart nvidia-* units mid-repair, and stopping it half-way can break "
            "packages): wait until it ends, then repair")


__all__ = ["APT_BY_HAND", "HELD_NOTE", "apt_run_refusal", "held_sentence", "timers_to_hold"]
