"""The console's pure parts: binding table, config file, poll scheduling, cell rendering."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from nvls_tui.config import ConfigError, default_path, load_config
from nvls_tui.console.bindings import (
    SPECS,
    bindings_for,
    current_key,
    destructive_actions,
    keymap_problem,
    specs_for,
)
from nvls_tui.console.screens.fleet import FleetScreen, matches
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.widgets import cells
from nvls_tui.console.widgets.node_text import compact_devices
from nvls_tui.model import FabricInfo, NodeState, Verdict
from nvls_tui.poll.poller import NodePoller, backoff_delay
from nvls_tui.settings import COMMAND_LINE, settings_from
from tests.test_console_fakes import FakeBackend, fixed_clock, make_node


def test_every_binding_id_is_unique_and_names_an_existing_action_method():
    ids = [s.id for s in SPECS]
    assert len(ids) == len(set(ids))
    owners = {"fleet": FleetScreen, "node": NodeScreen}
    for s in SPECS:
        if s.scope in owners:
            assert hasattr(owners[s.scope], f"action_{s.action}"), s.id
        assert s.description and s.tooltip, s.id


def test_only_node_changing_actions_are_destructive():
    # approve (ask mode): approving the autopilot's proposal runs the repair, as r's typed names do.
    assert destructive_actions() == frozenset({"sigterm", "stop_unit", "start_unit", "repair", "reset_gpus",
                                               "restart_fm", "smoke_test", "sigterm_holders",
                                               "restore_repair", "approve"})
    assert destructive_actions("fleet") == frozenset({"repair", "approve"})
    assert destructive_actions("runbook") == frozenset({"sigterm_holders"})


def test_bindings_carry_id_description_and_tooltip_from_the_table():
    node = {b.id: b for b in bindings_for("node")}
    assert node["node.sigterm"].key == "t"
    assert node["node.sigterm"].action == "sigterm"
    assert "re-checked" in node["node.sigterm"].tooltip
    assert [s.id for s in specs_for("fleet")][0] == "fleet.open"


def test_a_keymap_of_known_ids_and_free_keys_applies_and_anything_else_is_named():
    accepted = {"node.sigterm": "k", "fleet.sort": "o"}
    assert keymap_problem(accepted) is None
    assert current_key("node.sigterm", accepted) == "k"
    assert current_key("fleet.poll", accepted) == "p"
    assert "unknown binding id 'node.nuke'" in (keymap_problem({"node.nuke": "x"}) or "")
    assert "'fleet.filter' needs a key name" in (keymap_problem({"fleet.filter": " "}) or "")


def test_the_default_keys_collide_nowhere_and_a_swap_of_two_keys_is_no_collision():
    assert keymap_problem({}) is None
    assert keymap_problem({"fleet.sort": "p", "fleet.poll": "v"}) is None


@pytest.mark.parametrize(("keymap", "both"), [
    ({"fleet.sort": "q"}, ("app.quit", "fleet.sort")),  # a screen's key shadows the app's
    ({"app.quit": "t"}, ("app.quit", "node.sigterm")),  # and the other way round, on the node screen
    ({"node.poll": "s"}, ("node.unit_stop", "node.poll")),
    ({"fleet.repair": "home"}, ("fleet.top", "fleet.repair")),  # one key of a binding's several
])
def test_a_key_two_bindings_would_answer_to_on_one_screen_names_both(keymap, both):
    problem = keymap_problem(keymap) or ""
    assert all(binding_id in problem for binding_id in both), problem


def test_config_is_read_from_the_xdg_directory(tmp_path, monkeypatch):
    path = tmp_path / "nvls-tui" / "config.toml"
    path.parent.mkdir()
    path.write_text('poll_interval = 2\ntargets = ["gpu[01-02]"]\n[ssh]\nuser = "ops"\nidentity = "~/.ssh/k"\n'
                    '[keymap]\n"node.sigterm" = "k"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", "/nonexistent")
    assert default_path() == path
    config = load_config()
    assert config.poll_interval == 2.0
    assert config.targets == ("gpu[01-02]",)
    assert config.ssh == {"user": "ops", "identity": ["~/.ssh/k"]}
    assert config.keymap == {"node.sigterm": "k"}


def test_a_missing_default_config_is_fine_but_a_missing_explicit_one_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_config().poll_interval == 5.0
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize("text, words", [
    ("poll_interval = true", "poll_interval must be"),
    ("poll_interval = 0", "more than 0"),
    ("[ssh]\npassword = 'x'", "unknown [ssh] option"),
    ("targets = [1]", "targets[] must be"),
    ("not toml = = 1", "not valid TOML"),
])
def test_a_bad_config_value_is_one_clear_sentence(tmp_path, text, words):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_config(path)


def test_the_command_line_wins_over_the_config_file_and_each_value_says_where_it_came_from(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('poll_interval = 9\ntargets = ["gpu01"]\n[ssh]\nuser = "ops"\n')
    args = argparse.Namespace(command="console", targets=["gpu07"], demo=False, poll=None, timeout=20.0,
                              read_only=False, user="me", sudo=False)
    merged = settings_from(args, load_config(path))
    assert (merged.targets, merged.poll_interval, merged.ssh.user) == (("gpu07",), 9.0, "me")
    assert merged.source("poll_interval") == f"config file {path}"
    assert merged.source("ssh.user") == merged.source("targets") == COMMAND_LINE
    assert merged.source("ssh.jump") == "default"
    bare = settings_from(argparse.Namespace(command="console", targets=[], demo=False, poll=1.0, user=None),
                         load_config(path))
    assert (bare.targets, bare.poll_interval, bare.ssh.user) == (("gpu01",), 1.0, "ops")
    assert bare.named("ssh.user", "--user") == f"ssh.user in config file {path}"
    assert bare.named("poll_interval", "--poll") == "--poll"


def test_a_repair_never_takes_its_targets_from_the_config_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('targets = ["gpu01"]\n')
    settings = settings_from(argparse.Namespace(command="repair", targets=[], demo=False), load_config(path))
    assert settings.targets == ()


def test_backoff_doubles_after_failures_and_is_capped():
    assert backoff_delay(5.0, 0) == 5.0
    assert backoff_delay(5.0, 1) == 10.0
    assert backoff_delay(5.0, 3) == 40.0
    assert backoff_delay(5.0, 10) == 60.0


async def test_a_wedged_poll_times_out_and_keeps_the_last_known_state():
    backend = FakeBackend(make_node("gpu03"))
    poller = NodePoller(backend, interval=None, timeout=0.05, clock=fixed_clock)
    first = await poller.poll_once()
    assert first.ok and first.state.polled_at == fixed_clock()
    backend.hang = True
    second = await poller.poll_once()
    assert not second.ok
    assert second.diagnosis.verdict is Verdict.UNREACHABLE
    assert second.state.error.startswith("no answer within 0.05 s")
    assert len(second.state.holders) == 2  # last known holders kept, greyed by the screens
    assert poller.failures == 1


async def test_a_node_is_never_polled_twice_at_once():
    backend = FakeBackend(make_node("gpu03"))
    gate = asyncio.Event()
    original = backend.snapshot

    async def slow_snapshot():
        await gate.wait()
        return await original()

    backend.snapshot = slow_snapshot
    poller = NodePoller(backend, interval=None, timeout=5, clock=fixed_clock)
    first = asyncio.create_task(poller.poll_once())
    second = asyncio.create_task(poller.poll_once())
    await asyncio.sleep(0)
    assert poller.busy
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(first, second), 2)
    assert backend.snapshots == 1
    assert all(r.ok for r in results)


def test_gpu_cells_show_state_in_a_glyph_and_in_colour():
    assert cells.fabric_glyph(FabricInfo("Completed", "Success")) == ("✔", "ok")
    assert cells.fabric_glyph(FabricInfo("In Progress", "N/A")) == ("…", "warn")
    assert cells.fabric_glyph(FabricInfo("Not Started", "N/A")) == ("○", "bad")
    assert cells.fabric_glyph(FabricInfo("Completed", "Insufficient Resources")) == ("✖", "bad")
    assert cells.fabric_words(FabricInfo("Completed", "Success")).plain == "✔ Completed/Success"
    assert cells.verdict_text(Verdict.BROKEN).plain == "✖ broken"
    assert cells.verdict_text(None).plain == "… polling"


def test_a_version_mismatch_is_marked_with_a_sign():
    driver, fm = cells.version_texts(NodeState("g", driver="580.82.07", fm_version="580.65.06"))
    assert fm.plain == "≠580.65.06"


def test_device_lists_are_compacted_for_the_holders_table():
    devices = tuple(f"/dev/nvidia{i}" for i in range(8)) + ("/dev/nvidiactl", "/dev/nvidia-uvm")
    assert compact_devices(devices) == "gpu0-7 ctl uvm"
    assert compact_devices(("/dev/nvidia3", "/dev/nvidia5")) == "gpu3,5"


def test_the_filter_matches_host_verdict_and_finding_codes():
    assert matches("gpu05", "gpu05", Verdict.BROKEN, [])
    assert matches("broken", "gpu05", Verdict.BROKEN, [])
    assert matches("out_of sync", "gpu06", Verdict.BROKEN, ["FABRIC_OUT_OF_SYNC"])
    assert not matches("gpu05", "gpu06", Verdict.HEALTHY, [])


def test_an_explicit_default_value_on_the_command_line_still_beats_the_config_file(tmp_path, monkeypatch):
    """--no-sudo, --timeout 20 and --concurrency 64 are the built-in defaults, yet said on purpose."""
    from nvls_tui.cli import build_parser

    path = tmp_path / "c.toml"
    path.write_text('timeout = 5\n[ssh]\nsudo = true\nconcurrency = 8\n')
    explicit = build_parser().parse_args(["check", "gpu01", "--no-sudo", "--timeout", "20", "--concurrency", "64"])
    merged = settings_from(explicit, load_config(path))
    assert (merged.sudo, merged.timeout, merged.ssh.concurrency) == (False, 20.0, 64)
    unset = settings_from(build_parser().parse_args(["check", "gpu01"]), load_config(path))
    assert (unset.sudo, unset.timeout, unset.ssh.concurrency) == (True, 5.0, 8)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing-here"))
    no_file = load_config(None)
    neither = settings_from(build_parser().parse_args(["check", "gpu01"]), no_file)
    assert (neither.sudo, neither.timeout, neither.ssh.concurrency) == (False, 20.0, 64)
    assert {neither.source(n) for n in ("sudo", "timeout", "ssh.concurrency")} == {"default"}
