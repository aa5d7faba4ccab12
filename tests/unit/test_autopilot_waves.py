"""Issue 40: a wave of repairs (the canary, then the rest, at most --max-parallel at once) reads the pause
before each node's repair starts: a pause written while the canary runs stops the rest of that wave.

Run on the simulator through the command (its real poll, its real repair through the runbook), with a
frozen simulated clock; the operator's pause is written from inside the canary's repair.
"""

from __future__ import annotations

import json

import pytest

from nvls_tui.cli import main


@pytest.fixture(autouse=True)
def frozen_sim_clock(monkeypatch):
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")


def _run(capsys, state, *args: str) -> list[tuple]:
    rc = main(["autopilot", "sim:seed-incident", "--every", "0.01", "--json", "--state-dir", str(state), "--mode",
               "auto", "--cooldown", "0", "--breaker-percent", "100", "--max-parallel", "2", *args])
    assert rc == 0
    return [(r["round"], r["node"], r["action"], r["reason"]) for r in map(json.loads, capsys.readouterr().out.splitlines())
            if r["node"]]


@pytest.fixture
def repairs(monkeypatch):
    """Each call of the command's repairer (the hosts of one batch of a wave), and a hook run inside it."""
    from nvls_tui.headless import autopilot as command

    real = command._repairer
    calls: list[list[str]] = []
    during: list = []

    def repairer(settings, audit_dir):
        repair = real(settings, audit_dir)

        def watched(hosts):
            calls.append(list(hosts))
            for hook in during:
                hook(hosts)
            return repair(hosts)

        return watched

    monkeypatch.setattr(command, "_repairer", repairer)
    return calls, during


def test_the_canary_runs_alone_then_the_rest_of_its_wave(capsys, tmp_path, repairs):
    calls, _ = repairs
    acted = _run(capsys, tmp_path, "--rounds", "2")
    assert calls == [["gpu05"], ["gpu06"]]  # the canary alone; the rest once it passed
    assert acted[-4:] == [(2, "gpu05", "repair", "policy"), (2, "gpu06", "repair", "policy"),
                          (2, "gpu05", "repaired", "smoke-test"), (2, "gpu06", "repaired", "smoke-test")]


def test_a_pause_written_while_the_canary_runs_stops_the_rest_of_its_wave(capsys, tmp_path, repairs):
    calls, during = repairs
    during.append(lambda hosts: (tmp_path / "pause").touch())  # the operator pauses while the canary runs
    acted = _run(capsys, tmp_path, "--rounds", "3")
    assert calls == [["gpu05"]]
    assert [a for a in acted if a[0] == 2] == [(2, "gpu05", "repair", "policy"), (2, "gpu06", "repair", "policy"),
                                              (2, "gpu05", "repaired", "smoke-test"), (2, "gpu06", "skip", "paused")]
    assert (3, "gpu06", "skip", "paused") in acted
    audit = [json.loads(line) for f in (tmp_path / "audit").glob("autopilot-*.jsonl") for line in f.read_text().splitlines()]
    assert any(r.get("node") == "gpu06" and r.get("reason") == "paused" and "canary" not in r["message"] for r in audit)
    # Removed: the rest of the wave is repaired at the next round.
    (tmp_path / "pause").unlink()
    during.clear()
    assert (2, "gpu06", "repaired", "smoke-test") in _run(capsys, tmp_path, "--rounds", "2")


def test_a_canary_that_fails_stops_the_rest_of_its_wave(capsys, tmp_path, monkeypatch):
    from nvls_tui.headless import autopilot as command

    calls: list[list[str]] = []

    def failing(settings, audit_dir):
        def repair(hosts):
            calls.append(list(hosts))
            return dict.fromkeys(hosts, False)  # the smoke test did not pass
        return repair

    monkeypatch.setattr(command, "_repairer", failing)
    acted = _run(capsys, tmp_path, "--rounds", "2")
    assert calls == [["gpu05"]]
    assert [a for a in acted if a[0] == 2][-2:] == [(2, "gpu05", "repair-failed", "smoke-test"),
                                                    (2, "gpu06", "skip", "canary")]
