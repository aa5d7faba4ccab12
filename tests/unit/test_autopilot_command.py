"""Issue 40 item 4: ``nvls-tui autopilot`` on the simulator (a frozen clock: a repair takes no real time)."""

from __future__ import annotations

import json
import os
import signal

import pytest

from nvls_tui.autopilot.state import StateStore
from nvls_tui.cli import main


@pytest.fixture(autouse=True)
def frozen_sim_clock(monkeypatch):
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")


def _run(capsys, state, *args: str) -> tuple[int, list[dict], str]:
    rc = main(["autopilot", "sim:seed-incident", "--every", "0.01", "--json", "--state-dir", str(state), *args])
    out, err = capsys.readouterr()
    return rc, [json.loads(line) for line in out.splitlines()], err


def _audit(state) -> list[dict]:
    return [json.loads(line) for f in sorted((state / "audit").glob("autopilot-*.jsonl"))
            for line in f.read_text().splitlines()]


def test_auto_repairs_after_the_debounce_one_canary_first_and_every_decision_is_audited(capsys, tmp_path):
    rc, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "4", "--cooldown", "0",
                        "--breaker-percent", "100")
    assert rc == 0
    acted = [(r["round"], r["node"], r["action"], r["reason"]) for r in lines if r["node"]]
    assert acted[:2] == [(1, "gpu05", "skip", "debounce"), (1, "gpu06", "skip", "debounce")]
    # Round 2's wave: gpu05 the canary, alone; gpu06 once the canary passed (test_autopilot_waves.py).
    assert [a for a in acted if a[0] == 2] == [(2, "gpu05", "repair", "policy"), (2, "gpu06", "repair", "policy"),
                                              (2, "gpu05", "repaired", "smoke-test"), (2, "gpu06", "repaired", "smoke-test")]
    assert not [a for a in acted if a[0] >= 3]  # both healthy now: nothing to decide
    audited = [{k: r[k] for k in ("round", "node", "action", "reason")} for r in _audit(tmp_path)
               if r["event"] == "autopilot"]
    assert audited == [{k: r[k] for k in ("round", "node", "action", "reason")} for r in lines]
    repair_logs = list((tmp_path / "audit").glob("repair-*.jsonl"))
    assert repair_logs, "the repair goes through the runbook's own audited session"


@pytest.mark.parametrize(("mode", "word"), [("observe", "would-repair"), ("ask", "propose")])
def test_observe_and_ask_change_nothing_and_save_no_state(capsys, tmp_path, mode, word):
    rc, lines, _ = _run(capsys, tmp_path, "--mode", mode, "--rounds", "3", "--breaker-percent", "100")
    assert rc == 0
    assert {r["action"] for r in lines if r["node"] == "gpu05"} == {"skip", word}
    assert not (tmp_path / "autopilot-state.json").exists()
    assert not list((tmp_path / "audit").glob("repair-*.jsonl"))


def test_the_breaker_trips_at_its_bound_holds_across_a_restart_and_an_operator_closes_it(capsys, tmp_path):
    # gpu05 and gpu06 both hold their findings two rounds: the one repair the bound allows goes to gpu05,
    # and gpu06's would be past the bound, so it trips the breaker instead.
    _, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "2", "--breaker-nodes", "1")
    assert [(r["node"], r["action"]) for r in lines if r["round"] == 2 and r["node"]][:3] == [
        ("gpu05", "repair"), ("gpu06", "skip"), ("gpu05", "repaired")]
    assert any(r["action"] == "breaker-tripped" for r in lines)
    # A restart of the service: still tripped, long after it tripped.
    _, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "2", "--breaker-nodes", "1")
    assert [r["reason"] for r in lines if r["node"] == "gpu06"] == ["debounce", "breaker"]
    assert StateStore(tmp_path).load().breaker.tripped
    assert main(["autopilot", "--close-breaker", "--state-dir", str(tmp_path)]) == 0
    assert not StateStore(tmp_path).load().breaker.tripped
    assert any(r.get("action") == "breaker-closed" and r.get("reason") == "operator" for r in _audit(tmp_path))
    capsys.readouterr()
    _, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "2", "--breaker-nodes", "1")
    assert ("gpu06", "repaired") in [(r["node"], r["action"]) for r in lines]


def test_a_pause_file_stops_new_repairs_and_sigusr1_writes_it(capsys, tmp_path):
    (tmp_path / "pause").touch()
    _, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "3", "--breaker-percent", "100")
    assert {r["reason"] for r in lines if r["node"] and r["round"] >= 2} == {"paused"}
    assert not list((tmp_path / "audit").glob("repair-*.jsonl"))
    (tmp_path / "pause").unlink()
    handler = signal.getsignal(signal.SIGUSR1)
    rc = main(["autopilot", "sim:seed-incident", "--rounds", "1", "--every", "0.01", "--state-dir", str(tmp_path)])
    assert rc == 0 and signal.getsignal(signal.SIGUSR1) == handler  # put back after the run
    capsys.readouterr()


def test_sigusr1_pauses(capsys, tmp_path):
    from nvls_tui.headless import autopilot as command

    real_round = command.Pilot.round

    def round_then_signal(self):
        decisions = real_round(self)
        if self.number == 1:
            os.kill(os.getpid(), signal.SIGUSR1)
        return decisions

    command.Pilot.round = round_then_signal  # type: ignore[method-assign]
    try:
        _, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "2", "--breaker-percent", "100")
    finally:
        command.Pilot.round = real_round  # type: ignore[method-assign]
    assert (tmp_path / "pause").exists()
    assert {r["reason"] for r in lines if r["node"] and r["round"] == 2} == {"paused"}


@pytest.mark.parametrize(("args", "words"), [
    (["--max-parallel", "0"], "--max-parallel"),
    (["--breaker-percent", "150"], "--breaker-percent must be more than 0 and at most 100"),
    (["--mode", "sometimes"], "invalid choice"),
])
def test_bad_options_are_one_line_and_exit_2(capsys, tmp_path, args, words):
    assert main(["autopilot", "sim:seed-incident", "--state-dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert words in err


def test_a_policy_that_names_a_hardware_bucket_is_refused(capsys, tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('add_buckets = ["CONTACT_SUPPORT"]\n')
    assert main(["autopilot", "sim:seed-incident", "--policy", str(policy), "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CONTACT_SUPPORT" in err[0]


def test_an_unreadable_state_file_refuses_to_start(capsys, tmp_path):
    (tmp_path / "autopilot-state.json").write_text("[]")
    assert main(["autopilot", "sim:seed-incident", "--state-dir", str(tmp_path), "--rounds", "1"]) == 2
    assert "refusing to start" in capsys.readouterr().err


def test_sigterm_ends_after_the_round_in_progress_and_says_so(capsys, tmp_path):
    from nvls_tui.headless import autopilot as command

    real_round = command.Pilot.round

    def round_then_term(self):
        decisions = real_round(self)
        os.kill(os.getpid(), signal.SIGTERM)
        return decisions

    command.Pilot.round = round_then_term  # type: ignore[method-assign]
    try:
        rc, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--every", "30")
    finally:
        command.Pilot.round = real_round  # type: ignore[method-assign]
    assert rc == 0 and lines[-1]["action"] == "stopped" and lines[-1]["reason"] == "SIGTERM"
    assert max(r["round"] for r in lines) == 1


def test_a_repair_that_raises_is_a_failure_recorded_and_never_a_pass(capsys, tmp_path, monkeypatch):
    from nvls_tui.headless import autopilot as command

    def broken(settings, audit_dir):
        def repair(hosts):
            raise OSError("the audit directory is full")
        return repair

    monkeypatch.setattr(command, "_repairer", broken)
    _, lines, _ = _run(capsys, tmp_path, "--mode", "auto", "--rounds", "2", "--breaker-percent", "100")
    assert [(r["action"], r["reason"]) for r in lines if r["node"] == "gpu05" and r["round"] == 2][1:] == [
        ("repair-error", "OSError"), ("repair-failed", "smoke-test")]
    assert StateStore(tmp_path).load().repairs[0].ok is False


def test_the_systemd_unit_runs_options_the_command_has():
    import argparse
    import re
    from pathlib import Path

    from nvls_tui.cli import build_parser

    unit = (Path(__file__).parents[2] / "contrib" / "systemd" / "nvls-tui-autopilot.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*?)(?<!\\)$", unit, re.M | re.S)
    assert exec_start
    words = exec_start.group(1).replace("\\\n", " ").split()
    assert words[1] == "autopilot"
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    known = set(commands["autopilot"]._option_string_actions)
    assert [w for w in words if w.startswith("-") and w not in known] == []
    assert "StateDirectory=nvls-tui-autopilot" in unit and "--state-dir /var/lib/nvls-tui-autopilot" in exec_start.group(1)


def test_settings_take_the_limits_given_and_never_the_config_files_targets(tmp_path):
    from nvls_tui.cli import build_parser, build_settings

    config = tmp_path / "config.toml"
    config.write_text('targets = ["gpu01"]\n')
    args = build_parser().parse_args(["autopilot", "--config", str(config), "--budget", "4", "--cooldown", "0"])
    settings = build_settings(args)
    assert settings.targets == ()
    assert settings.autopilot is not None and settings.autopilot.limits == {"budget": 4, "cooldown_s": 0.0}


def test_the_autopilot_polls_and_repairs_through_public_functions_it_shares_with_check_and_repair():
    """Issue 40 item 5: a round of the autopilot is check's round, through a public function both use (a
    private name imported from another module is a seam that breaks silently when its owner changes it)."""
    import ast
    import inspect

    from nvls_tui.headless import autopilot as command
    from nvls_tui.headless import check

    private = [f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(inspect.getsource(command)))
               if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nvls_tui")
               for alias in node.names if alias.name.startswith("_")]
    assert private == []
    assert callable(check.poll_round) and "poll_round" in inspect.getsource(command)


def test_the_command_names_its_audit_log_on_stderr(capsys, tmp_path):
    """Found on a first run: `autopilot sim:seed-incident --mode auto --state-dir DIR` printed its decisions and
    never said where their audit log was (docs/autopilot.md's "When the breaker trips" starts from it); `repair`
    names its own. The path goes to stderr, once, so --json's stdout stays one record per line; --close-breaker,
    which writes a record too, names its log as well."""
    rc, lines, err = _run(capsys, tmp_path, "--mode", "observe", "--rounds", "1")
    (log,) = (tmp_path / "audit").glob("autopilot-*.jsonl")
    assert rc == 0 and lines and err.count(f"audit log: {log}") == 1
    assert main(["autopilot", "--close-breaker", "--state-dir", str(tmp_path)]) == 0
    (closing,) = set((tmp_path / "audit").glob("autopilot-*.jsonl")) - {log}
    assert f"audit log: {closing}" in capsys.readouterr().err


def test_a_fleet_record_in_text_has_no_node_placeholder(capsys, tmp_path):
    """Found reading `autopilot ... --mode auto` without --json: 'round 2 -: breaker-tripped (breaker) ...', a dash
    where a node goes. A record of the whole fleet reads 'round 2: breaker-tripped (breaker) ...'."""
    rc = main(["autopilot", "sim:seed-incident", "--every", "0.01", "--state-dir", str(tmp_path), "--mode", "auto",
               "--rounds", "2"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and out[0].startswith("round 0: started (start) limits breaker:")
    assert any(line.startswith("round 2: breaker-tripped (breaker) gpu06 would be repair 2") for line in out)
    assert any(line.startswith("round 2 gpu05: repair (policy)") for line in out)
    assert not [line for line in out if " -: " in line]


@pytest.mark.parametrize(("state", "close", "words"), [
    ("/proc/nvls-tui-no-such-dir", False, "the state directory /proc/nvls-tui-no-such-dir cannot be made: "),
    ("/proc", False, "the audit log cannot be written in /proc/audit: "),
    ("/proc", True, "the audit log cannot be written in /proc/audit: "),
])
def test_a_state_or_audit_directory_that_cannot_be_used_is_named_in_one_line(capsys, state, close, words):
    # Found by a new operator's tmux pass (tenth session): "nvls-tui: [Errno 2] No such file or directory:
    # '/proc/audit'", a path never typed, and "[Errno 13] Permission denied: ..." with no word of what it was for.
    args = ["--close-breaker"] if close else ["sim:seed-incident", "--rounds", "1"]
    assert main(["autopilot", *args, "--state-dir", state]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "[Errno" not in err[0], err


def test_observe_says_the_breaker_would_trip_not_that_it_tripped(capsys, tmp_path):
    # Found by a new operator's tmux pass (tenth session): observe printed "tripped the breaker" and a
    # breaker-tripped record, though observe changes nothing and saves no state (the next run starts closed).
    rc, lines, _ = _run(capsys, tmp_path, "--mode", "observe", "--rounds", "2")
    assert rc == 0
    (skip,) = [r for r in lines if r["node"] and r["reason"] == "breaker"]
    assert skip["message"].startswith("would trip the breaker: ")
    (trip,) = [r for r in lines if r["action"] == "breaker-tripped"]
    assert trip["message"].endswith("(observe: what auto would do; nothing is changed or saved)")
    assert not (tmp_path / "autopilot-state.json").exists()
