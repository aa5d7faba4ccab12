"""The repair runbook: a UI-free state machine that talks to one Backend per node and emits events.

Typical use::

    from nvls_tui.runbook import RepairOptions, Runbook, run_many

    outcome = await Runbook(backend, RepairOptions(), on_event=handle).run()
    outcomes = await run_many(backends, RepairOptions(dry_run=True), strategy="canary")

Steps, in order: preflight, quiesce, verify-no-holders, reset, fabric-manager, verify-fabric,
smoke-test, restore (restore runs on every exit path).
"""

from nvls_tui.runbook.engine import Runbook, new_run_id, repair_node
from nvls_tui.runbook.multi import STRATEGIES, RunGroup, run_many
from nvls_tui.runbook.outcome import NodeOutcome, StepOutcome
from nvls_tui.runbook.plan import plan_commands
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.recover import restore_node
from nvls_tui.runbook.steps import STEPS, HolderDecision, Operator, RepairOptions

__all__ = [
    "STEPS",
    "STRATEGIES",
    "HolderDecision",
    "NodeOutcome",
    "Operator",
    "RepairOptions",
    "RepairRecord",
    "RunGroup",
    "Runbook",
    "StepOutcome",
    "new_run_id",
    "plan_commands",
    "repair_node",
    "restore_node",
    "run_many",
]
