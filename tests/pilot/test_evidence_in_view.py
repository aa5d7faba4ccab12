"""Issue 28 items 1 and 7: the evidence in view on the node screen, and codes never glued to their words.

Pilot at the sizes the issue names (80x24, 120x40, 160x48) on the simulated seed incident; the
screen's text is read as the terminal would show it (the compositor's lines).
"""

from __future__ import annotations

import re

import pytest
from textual.style import Style
from textual.visual import RenderOptions

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets import cells
from nvls_tui.console.widgets.hanging import Hanging, hang
from nvls_tui.console.widgets.node_text import compact_devices
from nvls_tui.model import Finding, Severity, Verdict
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, open_node_screen


def sim_app(spec: str = "sim:seed-incident", **kwargs) -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet(spec, speed=0)), poll_interval=None, **kwargs)


def screen_lines(app) -> list[str]:
    """What the terminal shows, line by line."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def column_labels(table) -> list[str]:
    return [c.label.plain for c in table.columns.values()]


# ---- item 1: findings get the width they need ----------------------------------------------------
async def test_at_120x40_every_finding_of_gpu05_is_on_screen():
    app = sim_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        shown = "\n".join(screen_lines(app))
        for code in ("FM_NOT_RUNNING", "FABRIC_MANAGER_NOT_PRESENT", "HOLDERS_PRESENT"):
            assert code in shown, code
        assert "(a reset would be refused)" in shown  # the last finding whole, not cut


async def test_findings_that_cannot_fit_scroll_with_a_visible_scrollbar_at_80x24():
    app = sim_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        box = screen.query_one("#findings-box")
        assert box.max_scroll_y > 0  # gpu05's findings are taller than the box at 80x24
        assert box.show_vertical_scrollbar and box.scrollbar_size_vertical >= 1
        assert "↓" in str(box.border_subtitle)  # and the border says more lies below


async def test_at_80x24_the_focused_holders_table_is_on_the_first_screen_below_the_findings():
    app = sim_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        holders, findings = screen.query_one("#holders"), screen.query_one("#findings-box")
        assert screen.focused is holders
        body = screen.query_one("#node-body").region
        assert body.y <= findings.region.y < holders.region.y
        assert holders.region.y + 3 <= body.bottom  # its header and first rows are in view
        assert "nvidia-mig-manager" in "\n".join(screen_lines(app))


async def test_the_holders_command_comes_before_compressed_devices_at_160x48():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu06")
        table = screen.query_one("#holders")
        labels = column_labels(table)
        assert labels.index("command") < labels.index("devices")
        fm = next(r.value for r in table.rows if table.get_cell(r.value, list(table.columns)[labels.index("kind")]).plain
                  == "fabric-manager")
        devices = table.get_cell(fm, list(table.columns)[labels.index("devices")]).plain
        assert devices == "nvswitch0-3,ctl ctl"
        command = table.get_cell(fm, list(table.columns)[labels.index("command")]).plain
        assert command.startswith("/usr/bin/nv-fabricmanager")
        assert command in "\n".join(screen_lines(app))  # the whole command, not /usr/bin/nv-fabr


def test_device_lists_are_compressed_by_family():
    nv = "/dev/nvidia"
    assert compact_devices(tuple(f"{nv}{i}" for i in range(8)) + (f"{nv}ctl", f"{nv}-uvm")) == "gpu0-7 ctl uvm"
    switches = tuple(f"{nv}-nvswitch{i}" for i in range(4)) + (f"{nv}-nvswitchctl", f"{nv}ctl")
    assert compact_devices(switches) == "nvswitch0-3,ctl ctl"
    assert compact_devices((f"{nv}-nvswitch0", f"{nv}-nvswitch2")) == "nvswitch0,2"
    assert compact_devices((f"{nv}0", f"{nv}2", f"{nv}3")) == "gpu0,2,3"


# ---- item 7: code and words never run together; a cut ends in … ------------------------------------
PLATFORM = Finding("PLATFORM_UNSUPPORTED", Severity.INFO, "no NVSwitch device on this node: NVLS cannot run here")


@pytest.mark.parametrize("width", range(24, 90))
def test_a_wrapped_finding_starts_its_words_under_them_at_every_width(width):
    text = hang(cells.findings_text([PLATFORM]), width)
    lines = text.plain.split("\n")
    assert all(len(line) <= width for line in lines)
    assert all(line.startswith(" " * 8) for line in lines[1:])  # continued under the words, never at column 0
    assert "PLATFORM_UNSUPPORTEDno" not in text.plain.replace("\n", "")
    assert "PLATFORM_UNSUPPORTED" in lines[0] or lines[0].strip() == "info"


def test_the_header_separates_the_verdict_from_the_platform():
    text = cells.verdict_text(Verdict.DEGRADED)
    from nvls_tui.console.widgets.node_text import header_text

    state = next(iter(_polled("sim:gb200-no-fm").values()))
    plain = header_text(state, None, 1.0).plain
    assert " · " + state.platform.value in plain
    assert text.plain  # the verdict's words themselves unchanged


def _polled(spec: str):
    import asyncio

    return {b.host: asyncio.run(b.snapshot()) for b in sim_backends(load_fleet(spec, speed=0))}


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 48)])
async def test_at_every_size_the_node_header_keeps_a_separator_after_the_verdict(size):
    app = sim_app("sim:gb200-no-fm")
    async with app.run_test(size=size) as pilot:
        await open_node_screen(app, pilot, "gb200-n01")
        head = " ".join(line.strip() for line in screen_lines(app)[:3])
        assert re.search(r"(broken|degraded|healthy|unreachable) · gb200", head), head


def test_a_height_that_cuts_a_finding_ends_its_last_line_in_an_ellipsis():
    text = cells.findings_text([PLATFORM, Finding("HOLDERS_PRESENT", Severity.INFO,
                                                  "7 processes hold /dev/nvidia* (a reset would be refused)")])
    visual = Hanging(text)
    whole = visual.render_strips(40, None, Style(), RenderOptions(lambda s: s, {}))
    cut = visual.render_strips(40, 3, Style(), RenderOptions(lambda s: s, {}))
    assert len(whole) > 3 and len(cut) == 3
    assert cut[-1].text.rstrip().endswith("…")
    assert not whole[2].text.rstrip().endswith("…")
    assert [s.text for s in cut[:2]] == [s.text for s in whole[:2]]


async def test_read_only_the_node_screen_does_not_advertise_what_it_refuses():
    app = sim_app(read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        assert screen.query_one("#units").border_title == "Units"
        title = str(screen.query_one("#holders-box").border_title)
        assert "SIGTERM" not in title and "space select" not in title
        shown = "\n".join(screen_lines(app))
        assert "s stop" not in shown and "t SIGTERM" not in shown


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 48)])
async def test_the_fleets_findings_panel_continues_a_finding_under_its_words(size):
    app = sim_app("sim:gb200-no-fm")
    async with app.run_test(size=size) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        preview = app.screen.query_one("#preview")
        inner = preview.region.shrink(preview.styles.gutter)
        lines = [line[inner.x:inner.right] for line in screen_lines(app)[inner.y:inner.bottom]]
        at = next(i for i, line in enumerate(lines) if "PLATFORM_UNSUPPORTED" in line)
        # The message is longer than any of these widths leave after the code: it wraps, under its words.
        assert lines[at + 1].startswith(" " * 8) and lines[at + 1].strip(), lines[at:at + 2]


# ---- item 6: noise and wording ---------------------------------------------------------------------
async def test_the_node_screens_footer_at_80x24_ends_with_the_palette_key_and_nothing_after_it():
    app = sim_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        footer = screen_lines(app)[-1]
        assert footer.rstrip().endswith("^p palette"), repr(footer)


async def test_the_simulated_bar_fits_80_columns_on_one_line():
    app = sim_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        banner = app.screen.query_one("#banner")
        assert banner.region.height == 1
        line = screen_lines(app)[banner.region.y]
        assert "SIMULATED" in line and "nothing here touches real hardware" in line
