"""Issue 28 item 13: a long repair's end rings the bell and raises a desktop notification (OSC 9 and
OSC 777), unless ``notify = false`` in config.toml or ``--no-notify``."""

from __future__ import annotations

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import build_parser, build_settings
from nvls_tui.config import ConfigError, parse_config
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.messages import RepairFinished
from nvls_tui.console.notify import Notifier, desktop_sequence
from nvls_tui.settings import settings_from
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_sequence_is_a_bell_and_both_oscs_and_a_host_cannot_end_or_split_them():
    seq = desktop_sequence("nvls-tui: repair finished", "gpu05\x07\x1b]0;owned\x1b\\;evil: repaired")
    assert seq.startswith("\a\x1b]9;nvls-tui: repair finished: gpu05")
    assert seq.count("\a") == 3  # the bell and the two terminators: nothing from the host ends a sequence
    assert seq.count("\x1b") == 2  # the two OSC introducers, no other escape
    title, body = seq.split("\x1b]777;notify;", 1)[1].rstrip("\a").split(";", 1)
    assert title == "nvls-tui: repair finished" and body.endswith("evil: repaired")


def test_only_a_long_repair_notifies_and_never_when_turned_off():
    clock, written = _Clock(), []
    notifier = Notifier(True, written.append, clock, long_s=60)
    notifier.repair_started()
    clock.now += 20
    assert notifier.repair_ended(["gpu05"], True, "gpu05 repaired") is False and written == []  # it was watched
    notifier.repair_started()
    clock.now += 300
    assert notifier.repair_ended(["gpu05", "gpu06"], False, "gpu05 failed") is True
    assert written == [desktop_sequence("nvls-tui: repair needs you", "gpu05 gpu06: gpu05 failed")]
    off = Notifier(False, written.append, clock, long_s=60)
    off.repair_started()
    clock.now += 300
    assert off.repair_ended(["gpu05"], True, "gpu05 repaired") is False and len(written) == 1


def test_the_setting_comes_from_the_command_line_then_the_config_file_then_on():
    parser = build_parser()
    assert build_settings(parser.parse_args(["console", "--demo"])).notify is True
    assert settings_from(parser.parse_args(["console", "--demo"]), parse_config({"notify": False})).notify is False
    args = parser.parse_args(["console", "--demo", "--notify"])
    assert settings_from(args, parse_config({"notify": False})).notify is True  # the command line wins
    assert build_settings(parser.parse_args(["console", "--demo", "--no-notify"])).notify is False
    with pytest.raises(ConfigError, match="notify"):
        parse_config({"notify": "no"})


async def test_the_console_notifies_when_a_long_repair_ends_and_not_with_no_notify():
    for enabled in (True, False):
        app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock, notify=enabled)
        async with app.run_test(size=(120, 40)) as pilot:
            await first_poll(app)
            clock, written = _Clock(), []
            app.notifier.clock, app.notifier.write = clock, written.append
            app.notifier.repair_started()
            clock.now += 600  # a ten-minute FM registration wait
            app.post_message(RepairFinished(["gpu05"], []))
            await pilot.pause()
            await pilot.pause()
            assert written == ([desktop_sequence("nvls-tui: repair finished", "gpu05: ended")] if enabled else [])
