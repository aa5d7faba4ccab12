"""The console's messages: what workers tell the app, in the past tense."""

from __future__ import annotations

from textual.message import Message

from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.poller import PollResult


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


__all__ = ["NodePolled"]
