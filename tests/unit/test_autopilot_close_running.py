"""An operator closes a tripped breaker while the autopilot service runs (issue 40: "stays tripped until an
operator closes it").

Found by the lab's bastion (tests/lab/test_lab_autopilot_service.py's branch): with the service running,
``nvls-tui autopilot --close-breaker`` wrote a closed breaker to the state file, yet the running autopilot kept
skipping every repair by the breaker it had read at its start, and its next save wrote the tripped breaker back
over the closing. A running autopilot now reads the breaker from its state file before it decides each round.

On the simulator through the command, with a frozen simulated clock; the operator's closing is the real
``--close-breaker`` command, run while the autopilot polls its second round.
"""

from __future__ import annotations

import json

import pytest

from nvls_tui.autopilot.state import Breaker, State, StateStore
from nvls_tui.cli import main


@pytest.fixture(autouse=True)
def frozen_sim_clock(monkeypatch):
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")


def test_a_breaker_closed_while_the_autopilot_runs_is_taken_and_never_written_back(capsys, tmp_path, monkeypatch):
    from nvls_tui.headless import autopilot as command

    store = StateStore(tmp_path)
    store.save(State(breaker=Breaker(tripped=True, since=1.0, reason="planted: 5 repairs in the window")))
    real = command._poller
    rounds: list[int] = []

    class Closing:
        """The autopilot's own rounds; the breaker closed from another shell as the second one is polled."""

        def __init__(self, settings):
            self.poll = real(settings)

        def __call__(self):
            rounds.append(len(rounds) + 1)
            if len(rounds) == 2:  # another shell, while the service polls its second round
                assert main(["autopilot", "--close-breaker", "--state-dir", str(tmp_path)]) == 0
            return self.poll()

        def close(self):
            self.poll.close()

    def poller(settings):
        return Closing(settings)

    monkeypatch.setattr(command, "_poller", poller)
    rc = main(["autopilot", "sim:seed-incident", "--every", "0.01", "--json", "--state-dir", str(tmp_path),
               "--mode", "auto", "--cooldown", "0", "--breaker-percent", "100", "--rounds", "3"])
    assert rc == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    by_round = {n: [(r["node"], r["action"], r["reason"]) for r in records if r["round"] == n and r["node"]]
                for n in (1, 2, 3)}
    assert ("gpu05", "skip", "debounce") in by_round[1]  # seen once: the breaker is weighed from round 2 on
    assert not any(reason == "breaker" for _, _, reason in by_round[2] + by_round[3])
    read = [r for r in records if r["action"] == "state-read"]
    assert [(r["round"], r["reason"]) for r in read] == [(2, "changed-on-disk")]
    assert ("gpu05", "repaired", "smoke-test") in by_round[2] + by_round[3]
    assert not store.load().breaker.tripped  # the closing stands on disk
