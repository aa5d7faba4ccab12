"""Single actions on one node (reset, Fabric Manager restart, smoke test), outside a repair.

Each action is a short run of the runbook's own step functions (``fabric.reset``,
``fabric.start_fabric_manager``, ``smoke.smoke_test``) under the node's repair lock, so it is
exactly as careful as the same step inside a repair: the reset is refused while anything holds a
device, FM only starts once nothing does, the smoke test is judged against the model's threshold.
Pure orchestration over a :class:`~nvls_tui.runbook.context.NodeContext`: no UI here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nvls_tui.backends.base import BackendError
from nvls_tui.diagnosis import fm_container
from nvls_tui.runbook import fabric, smoke
from nvls_tui.runbook.changes import UnitChange
from nvls_tui.runbook.context import Aborted, NodeContext, Refused, StepFailed
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.engine import new_run_id
from nvls_tui.runbook.events import RunFinished, RunStarted
from nvls_tui.runbook.lock import NodeLock, whoami
from nvls_tui.runbook.quiesce import read_holders
from nvls_tui.runbook.steps import FM_UNIT
from nvls_tui.words import count, verb


@dataclass(frozen=True)
class SingleAction:
    """One action the node screen offers.

    Attributes:
        kind: ``reset``, ``fm-restart`` or ``smoke``.
        title: words for the pane and the confirmation.
        steps: the step names the pane lists.
        commands: what the confirmation says will run.
        typed: the operator must type the node name (destructive beyond doubt).
    """

    kind: str
    title: str
    steps: tuple[str, ...]
    commands: tuple[str, ...]
    typed: bool
    note: str = ""


ACTIONS = {
    "reset": SingleAction("reset", "Reset every GPU and NVSwitch", ("lock", "verify-no-holders", "reset", "unlock"),
                          ("fuser -v /dev/nvidia*  (refused if anything holds a device)", "nvidia-smi -r"), True,
                          "Nothing is stopped for you: stop the holders first (or use the repair, r on the fleet, "
                          "which does it all in the safe order)."),
    "fm-restart": SingleAction("fm-restart", "Restart Fabric Manager", ("lock", "stop", "fabric-manager", "unlock"),
                               (f"systemctl stop {FM_UNIT}", f"systemctl reset-failed {FM_UNIT}",
                                f"systemctl start {FM_UNIT}", "wait until every GPU is Completed/Success"), True,
                               "An FM restart without a GPU reset before it can leave NVLS broken; the repair "
                               "(r on the fleet) resets first."),
    "smoke": SingleAction("smoke", "Run the NVLS smoke test", ("lock", "smoke-test", "unlock"),
                          ("NCCL_NVLS_ENABLE=1 NCCL_ALGO=NVLS all_reduce_perf -b 8M -e 128M -f 2 -g 8",),
                          False, "It holds every GPU for a few seconds; the result goes where `check` reads it."),
}


async def run_single(action: SingleAction, ctx: NodeContext, *, run_id: str = "") -> None:
    """Run ``action`` on ``ctx``'s node, announcing each step; fills ``ctx.outcome``. Never raises on failure."""
    outcome, host, clock = ctx.outcome, ctx.host, ctx.options.clock
    began = clock()
    ctx.emit(RunStarted(host=host, run_id=run_id or action.kind, mode=action.kind))

    last = ""

    async def step(name: str, body: Callable[[], Awaitable[str | None]]) -> None:
        nonlocal last
        message = await ctx.run_step(name, body) or ""
        if name not in ("lock", "unlock"):
            last = message

    locked = False
    # The operator's name is the owner's; the heartbeat keeps the lock live through a long reset.
    lock_ = NodeLock(ctx, run_id or new_run_id(), whoami())
    try:
        state = await ctx.read_node()  # under the poll's deadline, never raises
        if not state.reachable:
            raise Refused(f"the node cannot be read: {state.error or 'unreachable'}")
        if action.kind in ("reset", "fm-restart") and fm_container.in_container(state):
            # FM lives in the GPU Operator's driver pod: no host unit to stop or start, and FM keeps the
            # NVSwitches open from there. Refused before the lock, with the move that works instead.
            raise Refused(fm_container.refusal(state))

        async def lock() -> str:
            nonlocal locked
            await lock_.take()
            locked = True
            return "took the node's repair lock"

        await step("lock", lock)
        if action.kind == "reset":
            async def verify() -> str:
                holders = await read_holders(ctx, state)
                if holders:
                    raise StepFailed(f"{count(len(holders), 'process')} {verb(len(holders), 'holds')} /dev/nvidia*, so the reset would be refused: "
                                     + ", ".join(f"{h.pid} ({h.kind})" for h in holders[:6]))
                return "nothing holds a device"

            await step("verify-no-holders", verify)
            await step("reset", lambda: fabric.reset(ctx))
        elif action.kind == "fm-restart":
            async def stop() -> str:
                result = await perform(ctx, UnitChange("stop", FM_UNIT))
                if not result.ok:
                    raise StepFailed(f"systemctl stop {FM_UNIT} failed: {result.output.strip()[:200]}")
                return "Fabric Manager stopped"

            await step("stop", stop)
            await step("fabric-manager", lambda: fabric.start_fabric_manager(ctx, len(state.gpus)))
        else:
            async def test() -> str:
                result = await smoke.smoke_test(ctx, state)
                outcome.smoke = result
                if not result.passed:
                    raise StepFailed("the NVLS smoke test failed: " + ("; ".join(result.errors) or "no reason given"))
                return f"passed: {result.avg_busbw:.1f} GB/s"

            await step("smoke-test", test)
        outcome.result, outcome.message = "ok", f"{action.title}: {last or 'done'}"
    except (Refused, StepFailed, Aborted, BackendError) as exc:
        outcome.result, outcome.message = "failed", str(exc)
    finally:
        if locked:
            async def unlock() -> str:
                left = await lock_.release()
                if left:
                    raise StepFailed(f"could not release {left}")
                return "released the lock"

            try:
                await step("unlock", unlock)
            except (BackendError, StepFailed) as exc:
                outcome.message += f"; the lock could not be released: {exc}"
        outcome.duration = clock() - began
        ctx.emit(RunFinished(host=host, result=outcome.result, message=outcome.message, duration=outcome.duration))


__all__ = ["ACTIONS", "SingleAction", "run_single"]
