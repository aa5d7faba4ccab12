"""The autopilot's rounds over one poller process: which targets use it, and a process that ended.

A round that finds the process gone is read by a new one (that round polls afresh); gone again, the round
raises (the command then ends with one line, exit 2): a round is never made up of what was not read. The
process is ended with the autopilot. tests/sshd/test_autopilot_keeps_connections.py runs it over a real sshd.
"""

from __future__ import annotations

import dataclasses

import pytest

from nvls_tui.headless import autopilot as command
from nvls_tui.headless import polled_rounds
from nvls_tui.poll.client import PollerGone
from nvls_tui.settings import Settings


class FakeRounds:
    """Stands in for :class:`PolledRounds`; ``gone`` says which of the processes made end at their first round."""

    made: list[FakeRounds] = []
    gone: set[int] = set()

    def __init__(self, settings, slurm, after) -> None:
        self.number = len(FakeRounds.made)
        self.closed = False
        self.after = after
        FakeRounds.made.append(self)

    async def start(self) -> None:
        pass

    async def next(self, progress) -> list:
        if self.number in FakeRounds.gone:
            raise PollerGone("the poller process was killed")
        return [("state", f"round of process {self.number}")]

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    FakeRounds.made, FakeRounds.gone = [], set()
    monkeypatch.setattr(polled_rounds, "PolledRounds", FakeRounds)
    return FakeRounds


def test_ssh_targets_are_polled_over_one_process_simulated_and_srun_ones_here():
    assert isinstance(command._poller(Settings()), command._KeptRounds)
    assert isinstance(command._poller(dataclasses.replace(Settings(), via="slurm")), command._RoundsHere)
    assert isinstance(command._poller(dataclasses.replace(Settings(), connect=lambda s: [])), command._RoundsHere)


def test_rounds_go_over_the_same_process_and_it_ends_with_the_autopilot(fake):
    kept = command._KeptRounds(Settings(), None)
    assert kept() == [("state", "round of process 0")]
    assert kept() == [("state", "round of process 0")]
    assert len(fake.made) == 1 and not fake.made[0].closed
    kept.close()
    assert fake.made[0].closed


def test_a_round_that_finds_the_process_gone_is_read_by_a_new_one(fake, capsys):
    fake.gone = {0}
    kept = command._KeptRounds(Settings(), None)
    assert kept() == [("state", "round of process 1")]
    assert [r.closed for r in fake.made] == [True, False]
    assert fake.made[1].after is kept.after  # the views and the diagnosis go on where they were
    assert "the poller process ended (the poller process was killed)" in capsys.readouterr().err
    kept.close()
    assert fake.made[1].closed


def test_a_process_gone_twice_in_one_round_fails_the_round(fake):
    fake.gone = {0, 1}
    kept = command._KeptRounds(Settings(), None)
    with pytest.raises(PollerGone):
        kept()
    kept.close()
    assert all(r.closed for r in fake.made)
