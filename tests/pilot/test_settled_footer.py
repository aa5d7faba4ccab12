"""The footer that folds the rebuilds of one refresh into one (nvls_tui.console.widgets.settled_footer).

Opening a node screen signalled about fifteen binding changes and Textual's Footer rebuilt every key for
each. This footer must show exactly what the screen's bindings say after any burst of changes, and must
build the keys once for a burst that arrives before one refresh, and not at all for changes that leave the
keys as they are (the CPU it exists to save)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from nvls_tui.console.widgets.settled_footer import SettledFooter
from tests.waiting import wait_until


class Toggles(Screen[None]):
    """Three keys; which of them show depends on ``shown``, changed by the test."""

    BINDINGS = [Binding("a", "one", "One"), Binding("b", "two", "Two"), Binding("c", "three", "Three")]

    def __init__(self) -> None:
        super().__init__()
        self.shown = {"one", "two", "three"}
        self.rebuilds = 0

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield SettledFooter(compact=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in {"one", "two", "three"}:
            return action in self.shown
        return True


class FooterApp(App[None]):
    ENABLE_COMMAND_PALETTE = False

    def on_mount(self) -> None:
        self.push_screen(Toggles())


def shown_keys(screen: Screen) -> list[str]:
    return [key.description for key in screen.query_one(Footer).query("FooterKey")]


async def test_the_footer_shows_the_bindings_after_a_burst_of_changes_and_builds_them_once():
    app = FooterApp()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, Toggles) and shown_keys(app.screen),
                         "the footer's first keys")
        screen = app.screen
        assert isinstance(screen, Toggles)
        footer = screen.query_one(SettledFooter)
        assert shown_keys(screen) == ["One", "Two", "Three"]

        built = []
        original = footer.recompose

        async def counted() -> None:
            built.append(sorted(screen.shown))
            await original()

        footer.recompose = counted  # type: ignore[method-assign]
        # Changes that end where they began build nothing: the keys on show are already those.
        for shown in ({"one"}, set(), {"one", "two", "three"}):
            screen.shown = shown
            screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert built == [], built
        assert shown_keys(screen) == ["One", "Two", "Three"]

        # Five changes before one refresh, the last one leaving only Two: one rebuild, and it shows Two.
        for shown in ({"one"}, {"two", "three"}, set(), {"one", "three"}, {"two"}):
            screen.shown = shown
            screen.refresh_bindings()
        await wait_until(pilot, lambda: shown_keys(screen) == ["Two"], "the footer to show only Two")
        await pilot.pause()
        assert built == [["two"]], built

        # A change after that rebuild ran is one more rebuild of its own, and the keys follow it.
        screen.shown = {"one", "two", "three"}
        screen.refresh_bindings()
        await wait_until(pilot, lambda: shown_keys(screen) == ["One", "Two", "Three"], "all three keys back")
        assert built == [["two"], ["one", "three", "two"]], built


async def test_a_footer_of_textual_builds_the_same_burst_once_per_change():
    """What the settled footer saves, shown on Textual's own: the same burst rebuilds it five times."""

    class PlainToggles(Toggles):
        def compose(self) -> ComposeResult:
            yield Static("body")
            yield Footer(compact=True)

    class PlainApp(App[None]):
        ENABLE_COMMAND_PALETTE = False

        def on_mount(self) -> None:
            self.push_screen(PlainToggles())

    app = PlainApp()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, PlainToggles) and shown_keys(app.screen),
                         "the footer's first keys")
        screen = app.screen
        footer = screen.query_one(Footer)
        built = []
        original = footer.recompose

        async def counted() -> None:
            built.append(1)
            await original()

        footer.recompose = counted  # type: ignore[method-assign]
        for shown in ({"one"}, {"two", "three"}, set(), {"one", "three"}, {"two"}):
            screen.shown = shown  # type: ignore[attr-defined]
            screen.refresh_bindings()
        await wait_until(pilot, lambda: len(built) == 5 and shown_keys(screen) == ["Two"],
                         "five rebuilds ending on Two")
