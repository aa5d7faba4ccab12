"""The runbook's step list asks the screen for a layout only when its words change.

``StepList.show`` runs on every event of a run (each line of output, each poll) and on the clock's tick;
``Static.update`` asks for a layout each time, and a repair streaming output drew a layout frame for words
that had not changed. A show that would draw what is shown is skipped; one that changes a word is drawn."""

from __future__ import annotations

import functools

from textual.app import App, ComposeResult

from nvls_tui.console.widgets.step_list import StepList, step_lines
from nvls_tui.runbook.events import StepFinished, StepStarted
from nvls_tui.views.runbook import NodeRun
from tests.waiting import wait_until


class Steps(App[None]):
    def compose(self) -> ComposeResult:
        yield StepList()


async def laid_out(app: Steps, pilot) -> StepList:
    """The app's step list once it has its width."""
    steps = app.query_one(StepList)
    await wait_until(pilot, lambda: steps.size.width > 0, "the step list laid out")
    return steps


def noting_layout(refresh, layouts: list[bool], *regions, **kwargs):
    """``refresh``, noting in ``layouts`` whether it asked for a layout."""
    layouts.append(bool(kwargs.get("layout")))
    return refresh(*regions, **kwargs)


async def test_a_show_that_changes_nothing_is_not_drawn_again_and_a_change_is():
    app = Steps()
    async with app.run_test(size=(80, 10)) as pilot:
        steps = await laid_out(app, pilot)
        drawn: list[str] = []
        original = steps.update

        def counted(content="", **kwargs) -> None:
            drawn.append(content.plain)
            original(content, **kwargs)

        steps.update = counted  # type: ignore[method-assign]
        run = NodeRun("gpu05")
        run.apply(StepStarted(host="gpu05", step="drain"), 0.0)
        steps.show(run, 10.0)
        steps.show(run, 10.0)  # the same run at the same time: the same words
        assert drawn == [step_lines(run, 10.0, 80).plain]
        steps.show(run, 12.0)  # the tick moves the running step's time: drawn
        run.apply(StepFinished(host="gpu05", step="drain", status="ok", duration=3.0), 13.0)
        steps.show(run, 13.0)
        assert len(drawn) == 3 and drawn[1] != drawn[0] and drawn[2] != drawn[1], drawn
        await pilot.pause()
        assert steps.render().plain == step_lines(run, 13.0, max(30, steps.size.width)).plain


async def test_a_redraw_of_as_many_lines_that_fit_asks_for_no_layout_and_a_new_line_count_does():
    """A running step's time moves every tick and every event redraws the list; its height is its line count
    (``height: auto``, each line cut to the width), so a redraw of the same count of lines that fit repaints the
    list without a layout of the whole screen (each was a layout frame of the runbook, over and over)."""
    app = Steps()
    async with app.run_test(size=(80, 10)) as pilot:
        steps = await laid_out(app, pilot)
        layouts: list[bool] = []
        steps.refresh = functools.partial(noting_layout, steps.refresh, layouts)  # type: ignore[method-assign]
        run = NodeRun("gpu05")
        run.apply(StepStarted(host="gpu05", step="drain"), 0.0)
        steps.show(run, 10.0)  # the first drawing: a layout
        steps.show(run, 12.0)  # the time moved: the same lines
        steps.show(run, 14.5)
        assert layouts == [True, False, False], layouts
        await pilot.pause()
        assert steps.render().plain == step_lines(run, 14.5, max(30, steps.size.width)).plain
        assert steps.size.height == step_lines(run, 14.5, 80).plain.count("\n") + 1
