"""The runbook's own reads of a node have a deadline (issue 36 item 3): a probe that never answers stops the
repair, the dry run and a single action with a one-line reason naming the command it hung in, instead of
hanging the run (before, ``backend.snapshot()`` was awaited with no deadline of its own)."""

from __future__ import annotations

import asyncio
import dataclasses

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.model import CommandResult
from nvls_tui.runbook import RepairOptions, repair_node
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.events import Note
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.restore import restore
from nvls_tui.runbook.single import ACTIONS, run_single
from nvls_tui.sim.fleet import load_fleet

# A per-command timeout of 50 ms: the whole read may take three of them (poll_deadline).
OPTIONS = RepairOptions(command_timeout=0.05, poll_interval=0.01, restore_attempts=2)
REASON = "no answer within 0.15 s: `nvidia-smi"
# A safety net only, so a regression fails the test instead of hanging the suite.
NET = 60.0


class WedgedProbe(SimulatedBackend):
    """A simulated node whose probe hangs in its first nvidia-smi and never answers."""

    async def _section(self, argv, privileged) -> CommandResult:
        if argv and argv[0] == "nvidia-smi":
            self._begin(argv)
            await asyncio.Event().wait()  # never set: the read never answers
        return await super()._section(argv, privileged)


def wedged() -> WedgedProbe:
    fleet = load_fleet("sim:seed-incident", speed=2000.0)
    return WedgedProbe(fleet, fleet.names[0])


def test_a_repair_whose_preflight_read_never_answers_is_refused_with_where_it_hung():
    outcome = asyncio.run(asyncio.wait_for(repair_node(wedged(), OPTIONS), NET))
    assert outcome.result == "refused"
    assert REASON in outcome.message and "did not finish" in outcome.message
    assert "\n" not in outcome.message


def test_a_dry_run_whose_read_never_answers_refuses_with_where_it_hung():
    outcome = asyncio.run(asyncio.wait_for(repair_node(wedged(), dataclasses.replace(OPTIONS, dry_run=True)), NET))
    assert outcome.result == "refused" and REASON in outcome.message


def test_a_single_action_whose_read_never_answers_stops_with_where_it_hung():
    backend = wedged()
    ctx = NodeContext(backend, OPTIONS, None, NodeOutcome(host=backend.host))
    asyncio.run(asyncio.wait_for(run_single(ACTIONS["reset"], ctx), NET))
    assert ctx.outcome.result in ("refused", "failed") and REASON in ctx.outcome.message


def test_a_restore_that_cannot_read_the_node_says_why_and_goes_on_blindly():
    notes: list[Note] = []
    backend = wedged()
    ctx = NodeContext(backend, OPTIONS, lambda e: notes.append(e) if isinstance(e, Note) else None,
                      NodeOutcome(host=backend.host))
    asyncio.run(asyncio.wait_for(restore(ctx, {"nvidia-dcgm.service": "active"}, {}, record_of=None, lock=None), NET))
    said = [n.message for n in notes if n.message.startswith("the node cannot be read")]
    assert said and REASON in said[0] and said[0].endswith("starting every unit that ran before, blindly")
