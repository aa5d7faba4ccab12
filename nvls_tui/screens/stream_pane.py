"""Single actions from the node screen (reset, Fabric Manager restart, smoke test), streamed into a side pane.

Each action is a short run of the runbook's own step functions (``fabric.reset``,
``fabric.start_fabric_manager``, ``smoke.smoke_test``) under the node's repair lock, with every
command in an audit log, so it is exactly as careful as the same step inside a repair: the reset is
refused while anything holds a device, the smoke test is judged against the model's threshold. The
pane is a column of the runbook screen (steps, plot, output) sliding over the right of the node screen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from nvls_tui.backends.base import BackendError
from nvls_tui.runbook.context import Aborted, NodeContext, Refused, StepFailed
from nvls_tui.runbook.events import RunbookEvent, RunFinished, RunStarted, StepFinished, StepStarted
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.steps import DEFAULT_THRESHOLDS, FM_UNIT, RepairOptions, threshold_for, unit_argv, unlock_argv
from nvls_tui.screens.confirm import ConfirmScreen
from nvls_tui.screens.runbook_column import RunbookColumn
from nvls_tui.views.runbook import repair_options
from nvls_tui.widgets.step_list import duration_text


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


async def run_single(action: SingleAction, ctx: NodeContext) -> None:
    """Run ``action`` on ``ctx``'s node, announcing each step; fills ``ctx.outcome``. Never raises on failure."""
    from nvls_tui.runbook import fabric, preflight, smoke
    from nvls_tui.runbook.quiesce import read_holders

    outcome, host, clock = ctx.outcome, ctx.host, ctx.options.clock
    began = clock()
    ctx.emit(RunStarted(host=host, run_id=action.kind, mode=action.kind))

    last = ""

    async def step(name: str, body: Callable[[], Awaitable[str | None]]) -> None:
        nonlocal last
        ctx.step = name
        ctx.emit(StepStarted(host=host, step=name))
        t0 = clock()
        try:
            message = await body() or ""
        except BaseException as exc:
            ctx.emit(StepFinished(host=host, step=name, status="failed", duration=clock() - t0,
                                  message=str(exc) or type(exc).__name__))
            raise
        ctx.emit(StepFinished(host=host, step=name, status="ok", duration=clock() - t0, message=message))
        if name not in ("lock", "unlock"):
            last = message

    locked = False
    try:
        state = await ctx.backend.snapshot()

        async def lock() -> str:
            nonlocal locked
            await preflight.take_lock(ctx)
            locked = True
            return "took the node's repair lock"

        await step("lock", lock)
        if action.kind == "reset":
            async def verify() -> str:
                holders = await read_holders(ctx, state)
                if holders:
                    raise StepFailed(f"{len(holders)} processes hold /dev/nvidia*, so the reset would be refused: "
                                     + ", ".join(f"{h.pid} ({h.kind})" for h in holders[:6]))
                return "nothing holds a device"

            await step("verify-no-holders", verify)
            await step("reset", lambda: fabric.reset(ctx))
        elif action.kind == "fm-restart":
            async def stop() -> str:
                result = await ctx.run(unit_argv("stop", FM_UNIT), privileged=True)
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
                await ctx.run(unlock_argv(), privileged=True, abortable=False)
                return "released the lock"

            try:
                await step("unlock", unlock)
            except BackendError as exc:
                outcome.message += f"; the lock could not be released: {exc}"
        outcome.duration = clock() - began
        ctx.emit(RunFinished(host=host, result=outcome.result, message=outcome.message, duration=outcome.duration))


class StreamPane(ModalScreen[None]):
    """The side pane of one single action on one node; the action starts when the pane opens.

    Args:
        host: the node.
        action: what to run.
        options: tunables (default: :func:`repair_options` for the node's backend).
    """

    BINDINGS = [Binding("escape", "close", "Close", tooltip="Close the pane (a running action carries on).")]

    def __init__(self, host: str, action: SingleAction, *, options: RepairOptions | None = None) -> None:
        super().__init__()
        self.host = host
        self.action_spec = action
        self.options = options
        self.outcome: NodeOutcome | None = None
        self.context: NodeContext | None = None

    def compose(self) -> ComposeResult:
        """A header line and the column (steps, plot for a smoke test, output)."""
        with Vertical(id="stream-box"):
            yield Static(id="stream-header")
            state = self.app.fleet.get(self.host)
            threshold = threshold_for(state.gpus if state else (), DEFAULT_THRESHOLDS, None)
            yield RunbookColumn(self.host, threshold=threshold, step_names=self.action_spec.steps, id="stream-column")
            yield Footer()

    def on_mount(self) -> None:
        """Start the action in a worker and tick the spinner."""
        backend = self.app.backend_for(self.host)
        self.options = self.options or repair_options([backend], self.app.timeout)
        self.set_interval(0.2, self.tick)
        self.draw_header()
        self.app.start_action(f"{self.action_spec.title} on {self.host}", self.run_action())

    @property
    def column(self) -> RunbookColumn:
        """The pane's column."""
        return self.query_one(RunbookColumn)

    def tick(self) -> None:
        """Spinner and elapsed times."""
        if self.is_attached:
            self.column.tick(self.options.clock())
            self.draw_header()

    def draw_header(self) -> None:
        """`` Reset every GPU and NVSwitch · gpu05 · running 3.2 s``."""
        run = self.column.run
        text = Text()
        text.append(f" {self.action_spec.title} ", style="bold reverse")
        text.append(f"  {self.host}  ", style="bold")
        if run.result is None:
            text.append(f"running {duration_text(run.elapsed(self.options.clock()))}", style="bold #5fafff")
        else:
            text.append(run.result, style="bold #5fd75f" if run.result == "ok" else "bold #ff5f5f")
        self.query_one("#stream-header", Static).update(text)

    def apply(self, event: RunbookEvent) -> None:
        """One event into the column (ignored once the pane was closed)."""
        if self.is_attached:
            self.column.apply(event, self.options.clock())

    async def run_action(self) -> None:
        """Run the action with its own audit log; tell the operator the outcome, re-poll the node."""
        from nvls_tui.records.audit import AuditLog
        from nvls_tui.runbook import new_run_id

        app = self.app
        backend = app.backend_for(self.host)
        run_id = new_run_id()
        audit = AuditLog.create(getattr(app, "audit_dir", None), run_id, kind=self.action_spec.kind)

        def sink(event: RunbookEvent) -> None:
            try:
                audit(event)
            except OSError as exc:
                app.notify(f"audit log write failed: {exc}", severity="error", timeout=10)
            self.apply(event)

        self.outcome = NodeOutcome(host=self.host, audit_log=str(audit.path))
        self.context = NodeContext(backend, self.options, sink, self.outcome)
        try:
            await run_single(self.action_spec, self.context)
        finally:
            audit.close()
            app.poll_now(self.host)
        ok = self.outcome.result == "ok"
        app.notify(f"{self.action_spec.title} on {self.host}: {self.outcome.result}. {self.outcome.message}",
                   severity="information" if ok else "error", timeout=8)

    def action_close(self) -> None:
        """Close the pane; a running action carries on (its end is notified)."""
        self.dismiss()


def open_single_action(screen, kind: str) -> None:
    """What the node screen's keys call: confirm (typing the node name for reset and FM restart), then run."""
    app, host = screen.app, screen.host
    if app.read_only:
        screen.notify("Read-only mode: this action would change the node, so it is refused.", severity="warning")
        return
    action = ACTIONS[kind]

    def done(ok: bool | None) -> None:
        if ok:
            app.push_screen(StreamPane(host, action))

    app.push_screen(ConfirmScreen(
        f"{action.title} on {host}?", list(action.commands),
        confirm_label=action.title.split(" ")[0] if kind != "fm-restart" else "Restart FM",
        type_to_confirm=host if action.typed else None, note=action.note), done)

