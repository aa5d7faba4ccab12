"""The console's messages: what workers tell the app, in the past tense.

A worker never draws or notifies by itself: it posts what happened, from the screen that started it,
and the message bubbles up to the app. The screen's ``@on`` handler keeps what the screen needs (a
stale lock for the next ``U``, a pane that has nothing to show); the app's says it to the operator
and polls the nodes again. A screen's refusal up front is an :class:`ActionFailed` too (``refused``),
and the plan's typed confirmation is :class:`PlanApproved`, which the app answers with the runbook
screen. Pilot tests assert the messages that flowed (``message_hook``).
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.message import Message

from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.poller import PollResult
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.session import ActionOutcome
from nvls_tui.views.runbook import Approval


class NodePolled(Message):
    """A poll of one node finished (or failed: then ``state.reachable`` is False).

    Attributes:
        state: the node's state to show; after a failure, the last known state with the reason.
        diagnosis: findings and verdict of ``state``.
        ok: True when this poll read the node.
    """

    def __init__(self, state: NodeState, diagnosis: Diagnosis, ok: bool) -> None:
        super().__init__()
        self.state = state
        self.diagnosis = diagnosis
        self.ok = ok

    @classmethod
    def of(cls, result: PollResult) -> NodePolled:
        """The message of one poll result."""
        return cls(result.state, result.diagnosis, result.ok)


class ActionStarted(Message):
    """An action that changes nodes began in a worker (``q`` asks first until it ends).

    Attributes:
        description: what it does, as the quit confirmation lists it (``SIGTERM on gpu05``).
        hosts: the nodes it changes.
    """

    def __init__(self, description: str, hosts: Sequence[str]) -> None:
        super().__init__()
        self.description = description
        self.hosts = tuple(hosts)


class ActionFinished(Message):
    """A manual action (SIGTERM, a unit stopped or started, a single action, a restore) ended.

    Attributes:
        outcome: what the session says happened, refused and failed included.
        hint: what the operator may do next, said after the outcome (empty: nothing).
    """

    def __init__(self, outcome: ActionOutcome, hint: str = "") -> None:
        super().__init__()
        self.outcome = outcome
        self.hint = hint

    @property
    def words(self) -> str:
        """The outcome's sentence, then the hint."""
        return f"{self.outcome.message} {self.hint}" if self.hint else self.outcome.message


class ActionFailed(Message):
    """An action did not happen: the console refused it before it began, or its worker raised where the
    session gives no outcome (a bug, or a failure nobody caught).

    Attributes:
        description: the action, as in :class:`ActionStarted` (``SIGTERM on gpu05``).
        error: why, in words: the refusal's sentence, or what was raised.
        hosts: the nodes it was for (after a raise, polled again: what they are now is unknown).
        refused: the console refused it up front (read-only, holders left, a Slurm job's processes):
            no worker ran and nothing on the node changed.
    """

    def __init__(self, description: str, error: str, hosts: Sequence[str], *, refused: bool = False) -> None:
        super().__init__()
        self.description = description
        self.error = error
        self.hosts = tuple(hosts)
        self.refused = refused


class RepairFinished(Message):
    """A repair started from the runbook screen ended, or did not start.

    Attributes:
        hosts: the nodes of the repair.
        outcomes: each node's outcome (empty when it did not start).
        error: why it did not start (a busy node, an audit log that could not be created), else None.
    """

    def __init__(self, hosts: Sequence[str], outcomes: Sequence[NodeOutcome], error: str | None = None) -> None:
        super().__init__()
        self.hosts = tuple(hosts)
        self.outcomes = tuple(outcomes)
        self.error = error

    @property
    def results(self) -> dict[str, str]:
        """Each node's result (``repaired``, ``skipped``, ``failed``, ``aborted``, ``refused``...)."""
        return {o.host: o.result for o in self.outcomes}

    @property
    def ok(self) -> bool:
        """Every node was repaired or had nothing to repair."""
        return self.error is None and all(r in ("repaired", "skipped") for r in self.results.values())


class RepairNeedsOperator(Message):
    """A running repair stopped to wait for the operator's decision (the app rings: nvls_tui/console/notify.py).

    Posted once per wait, not each time the runbook asks again while the same wait lasts.

    Attributes:
        host: the node whose repair waits.
        question: what the operator is asked, in a few words.
    """

    def __init__(self, host: str, question: str) -> None:
        super().__init__()
        self.host = host
        self.question = question


class PlanApproved(Message):
    """The operator typed the node names on the plan screen: the repair may run as planned.

    Posted to the screen that asked for the plan (the fleet clears its selection), then it bubbles to
    the app, which opens the runbook screen.

    Attributes:
        approval: the nodes, the strategy and each node's plan basis.
    """

    def __init__(self, approval: Approval) -> None:
        super().__init__()
        self.approval = approval


__all__ = ["ActionFailed", "ActionFinished", "ActionStarted", "NodePolled", "PlanApproved", "RepairFinished",
           "RepairNeedsOperator"]
