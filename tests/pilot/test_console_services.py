"""A screen is built from the services it is given, not from the App it runs in.

Each test mounts a console screen in a bare Textual App (not the console) with a
:class:`ConsoleServices` of its own: a real Session over a scriptable backend, a fleet the test
changes, actions it records. What the screen shows, what it changes on the node and what it asks the
console for all go through those services; the past-tense messages still reach whichever App hosts it.
"""

from __future__ import annotations

from textual.app import App
from textual.reactive import var
from textual.widgets import DataTable

from nvls_tui.console.messages import ActionFinished
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.services import ConsoleServices, ConsoleSettings
from nvls_tui.model import Fleet, NodeState
from nvls_tui.poll.poller import default_diagnose
from nvls_tui.runbook.session import Session
from tests.pilot.test_console_workers import Flow
from tests.test_console_fakes import FIXED_NOW, FakeBackend, fixed_clock, make_node
from tests.waiting import click_shown, wait_until

SIZE = (160, 48)


class BareConsole(App[None]):
    """Not the console: a fleet in a var, a session, and a record of what the screens asked for."""

    fleet: var[Fleet] = var(Fleet, always_update=True)

    def __init__(self, backend: FakeBackend, audit_dir: str, *, read_only: bool = False) -> None:
        super().__init__()
        self.backend = backend
        self.set_reactive(BareConsole.fleet, Fleet((backend.state.replace(polled_at=FIXED_NOW),)))
        self.diagnoses = {backend.host: default_diagnose(backend.state)}
        self.asked: list[tuple[str, object]] = []
        session = Session({backend.host: backend}, audit_dir=audit_dir, read_only=read_only)
        self.services = ConsoleServices(
            live=self, session=session, backend_for=lambda h: backend, clock=fixed_clock,
            settings=ConsoleSettings(read_only=read_only, simulated=True, periodic=False, timeout=5.0),
            actions=self)

    def show(self, state: NodeState) -> None:
        """A new poll of the node (as the console's pollers fold one in)."""
        self.diagnoses[state.host] = default_diagnose(state)
        self.fleet = Fleet((state.replace(polled_at=FIXED_NOW),))

    # LiveFleet
    def verdict(self, host):
        diagnosis = self.diagnoses.get(host)
        return diagnosis.verdict if diagnosis else None

    def follow(self, watcher, callback) -> None:
        watcher.watch(self, "fleet", callback, init=False)

    def cluster_of(self, host):
        return None

    # ConsoleActions
    def start_action(self, description, work, *, hosts=()):
        self.asked.append(("start_action", description))
        return self.run_worker(work, group="action", name=description)

    def poll_now(self, host=None) -> None:
        self.asked.append(("poll_now", host))

    def open_node(self, host) -> None:
        self.asked.append(("open_node", host))

    def plan_repair(self, hosts, *, reply_to=None) -> None:
        self.asked.append(("plan_repair", tuple(hosts)))

    def hold_for_plan(self, screen) -> None:
        self.asked.append(("hold_for_plan", type(screen).__name__))

    def hold_keys_for(self, ready, what) -> None:
        self.asked.append(("hold_keys_for", what))


async def node_screen(app: BareConsole, pilot) -> NodeScreen:
    screen = NodeScreen(app.backend.host, app.services)
    # From the app's own loop, as the console opens it (a pump started from the test's task would not
    # carry run_test's message hook: the messages it handles would go unrecorded).
    app.call_later(app.push_screen, screen)
    await wait_until(pilot, lambda: app.screen is screen and screen.is_mounted
                     and screen.query_one("#holders", DataTable).row_count > 0, "the node screen")
    await pilot.pause()
    return screen


async def test_the_node_screen_draws_and_follows_the_fleet_it_was_given(tmp_path):
    backend = FakeBackend(make_node("gpu05", broken=True, holders=3))
    app = BareConsole(backend, str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await node_screen(app, pilot)
        assert "gpu05" in str(screen.query_one("#node-header").render())
        assert screen.query_one("#holders", DataTable).row_count == 3
        assert screen.query_one("#kernel", DataTable).row_count == 1  # the out-of-sync line
        app.show(make_node("gpu05", holders=1))  # a later poll: one holder left, the kernel line gone
        await wait_until(pilot, lambda: screen.query_one("#holders", DataTable).row_count == 1, "the redraw")
        assert screen.query_one("#kernel", DataTable).row_count == 0
        await pilot.press("p")
        assert app.asked == [("poll_now", "gpu05")]


async def test_a_sigterm_on_a_screen_in_a_bare_app_goes_through_the_session_it_was_given(tmp_path):
    backend = FakeBackend(make_node("gpu05", broken=True, holders=2))
    app = BareConsole(backend, str(tmp_path))
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        await node_screen(app, pilot)
        await pilot.press("a", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await click_shown(pilot, "#confirm")
        await wait_until(pilot, lambda: flow.of(ActionFinished), "the SIGTERM's end")
    assert app.asked == [("start_action", "SIGTERM on gpu05")]
    assert backend.signalled == [4000, 4001]
    (finished,) = flow
    assert (finished.outcome.action, finished.outcome.ok) == ("sigterm", True)
    # Told from the screen, then bubbled to whichever App hosts it.
    assert flow.route == [("ActionFinished", "NodeScreen"), ("ActionFinished", "BareConsole")]
    (log,) = tmp_path.glob("session-*.jsonl")
    assert '"sigterm"' in log.read_text()


async def test_read_only_services_make_the_screen_refuse_before_any_worker(tmp_path):
    from nvls_tui.console.messages import ActionFailed
    from nvls_tui.console.screens.node import READ_ONLY_REFUSAL

    backend = FakeBackend(make_node("gpu05", broken=True, holders=2))
    app = BareConsole(backend, str(tmp_path), read_only=True)
    flow = Flow()
    async with app.run_test(size=SIZE, message_hook=flow) as pilot:
        screen = await node_screen(app, pilot)
        assert screen.check_action("sigterm", ()) is False
        screen.action_restore_repair()
        await wait_until(pilot, lambda: flow, "the refusal")
    (refused,) = flow
    assert isinstance(refused, ActionFailed)
    assert (refused.description, refused.error, refused.refused) == ("restore on gpu05", READ_ONLY_REFUSAL, True)
    assert app.asked == [] and backend.ran == [] and backend.signalled == []
