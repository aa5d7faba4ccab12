"""An xdist scheduler that keeps at most N workers in the lab at once (``pytest --lab-slots N``).

``--dist loadgroup`` hands the groups with the most tests out first, and the lab's groups are the big ones: with
three workers on two cores, all three spent the first ~220 s of a run in lab groups, which mostly wait (systemd
boots, Slurm, sshd), and a quarter of the machine's CPU went idle (docs/performance.md). Here a worker that asks
for work gets a lab group only while fewer than N *other* workers hold one; otherwise the first unit that is not a
lab group, so the remaining workers run the CPU-bound tiers beside the labs. The longest lab groups go first
(:data:`LONGEST_LABS`, measured), so the last lab group to end is a short one.

Only the order in which work is handed out changes: every group still runs whole on one worker, as loadgroup's.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdist.scheduler import LoadGroupScheduling

LONGEST_LABS = ("lab-slurm", "lab-autopilot", "lab", "lab-kube", "lab-restarters", "lab-device-files")
"""The lab groups that took longest, longest first (wall seconds at -n 3, 2026-12-07: 168, 136, ~135, 41, 38, 29);
any other lab group follows them, the groups with more tests first. A scheduling hint only: a group missing from
it, or a new one, still runs."""


def is_lab(scope: str) -> bool:
    """Whether a work unit is a lab group (``lab`` or ``lab-<name>``, as tests/conftest.py holds every lab test)."""
    return scope == "lab" or scope.startswith("lab-")


def lab_rank(scope: str) -> tuple[int, int]:
    """Sort key of a lab group among the others: the known long ones in their order, then the rest."""
    return (LONGEST_LABS.index(scope), 0) if scope in LONGEST_LABS else (len(LONGEST_LABS), 1)


class LabSlotScheduling(LoadGroupScheduling):
    """loadgroup scheduling with at most ``slots`` workers in lab groups at a time (see the module's docstring)."""

    def __init__(self, config, log=None, slots: int = 2) -> None:
        super().__init__(config, log)
        self.slots = max(1, slots)
        self._labs_ordered = False  # loadgroup builds its queue in schedule(), just before the first hand-out

    def _assign_work_unit(self, node) -> None:
        """Hand ``node`` the first unit its turn allows (see :func:`next_scope`), then as loadgroup does."""
        if not self._labs_ordered:
            self._labs_ordered = True
            order_labs(self.workqueue)
        busy = sum(1 for other, work in self.assigned_work.items()
                   if other is not node and any(is_lab(s) and not all(done.values()) for s, done in work.items()))
        scope = next_scope(list(self.workqueue), labs_elsewhere=busy, slots=self.slots)
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)


def order_labs(workqueue) -> None:
    """Put the lab groups at the front of ``workqueue`` (an OrderedDict of scope -> tests), longest first; the
    other units keep their order behind them."""
    labs = sorted((s for s in workqueue if is_lab(s)), key=lambda s: (lab_rank(s), -len(workqueue[s])))
    for scope in reversed(labs):
        workqueue.move_to_end(scope, last=False)


def next_scope(queue: Sequence[str], *, labs_elsewhere: int, slots: int) -> str:
    """The unit a worker gets: the first of ``queue`` (scopes in order), skipping lab groups while ``slots`` other
    workers already hold one, unless nothing but lab groups is left (a worker is never left idle)."""
    if labs_elsewhere < slots:
        return queue[0]
    return next((s for s in queue if not is_lab(s)), queue[0])


__all__ = ["LONGEST_LABS", "LabSlotScheduling", "is_lab", "lab_rank", "next_scope", "order_labs"]
