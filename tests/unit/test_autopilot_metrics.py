"""Issue 40: every decision of the autopilot is a metric as well as an audit record.

``autopilot --metrics-textfile FILE`` / ``--metrics-listen [ADDR:]PORT`` (as ``check`` has them) publish the
decisions counted by action and reason, the breaker (tripped, repairs in its window, its bound), each node's
budget left, and whether the autopilot is paused; the names are data in ``nvls_tui/metrics/names.py``.
"""

from __future__ import annotations

import re
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nvls_tui.cli import main
from nvls_tui.metrics.autopilot import AutopilotRound, autopilot_families


@pytest.fixture(autouse=True)
def frozen_sim_clock(monkeypatch):
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_the_textfile_counts_decisions_by_action_and_reason_and_shows_the_breaker_budgets_and_pause(
        capsys, tmp_path):
    prom = tmp_path / "autopilot.prom"
    rc = main(["autopilot", "sim:seed-incident", "--every", "0.01", "--state-dir", str(tmp_path), "--mode", "auto",
               "--rounds", "2", "--breaker-nodes", "1", "--metrics-textfile", str(prom)])
    assert rc == 0
    capsys.readouterr()
    got = samples(prom.read_text())
    decided = {dict(labels)["action"] + "/" + dict(labels)["reason"]: v for (name, labels), v in got.items()
               if name == "nvls_autopilot_decisions_total"}
    # Round 1: both nodes debounced; round 2: gpu05 repaired (the one the bound allows), gpu06 trips it.
    assert decided["skip/debounce"] == 2 and decided["repair/policy"] == 1 and decided["skip/breaker"] == 1
    assert decided["repaired/smoke-test"] == 1 and decided["breaker-tripped/breaker"] == 1
    assert got[("nvls_autopilot_breaker_tripped", ())] == 1
    assert got[("nvls_autopilot_breaker_repairs_in_window", ())] == 1
    assert got[("nvls_autopilot_breaker_bound", ())] == 1
    assert got[("nvls_autopilot_paused", ())] == 0
    assert got[("nvls_autopilot_budget_left", (("hostname", "gpu05"),))] == 2
    assert got[("nvls_autopilot_budget_left", (("hostname", "gpu06"),))] == 3
    assert got[("nvls_autopilot_round_end_timestamp_seconds", ())] > 0


def test_the_endpoint_serves_them_while_it_runs_and_a_pause_shows(capsys, tmp_path):
    from nvls_tui.headless import autopilot as command

    real_round = command.Pilot.round
    scraped: list[str] = []

    def round_then_scrape(self):
        decisions = real_round(self)
        if self.number == 1:
            (tmp_path / "pause").touch()
        if self.number == 2:
            url = re.search(r"metrics on (http://\S+/metrics)", capsys.readouterr().err).group(1)
            with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback, this test's
                scraped.append(response.read().decode())
        return decisions

    command.Pilot.round = round_then_scrape  # type: ignore[method-assign]
    try:
        rc = main(["autopilot", "sim:seed-incident", "--every", "0.01", "--state-dir", str(tmp_path), "--mode",
                   "observe", "--rounds", "2", "--metrics-listen", "127.0.0.1:0"])
    finally:
        command.Pilot.round = real_round  # type: ignore[method-assign]
    assert rc == 0 and scraped
    got = samples(scraped[0])
    assert got[("nvls_autopilot_paused", ())] == 1
    assert got[("nvls_autopilot_breaker_tripped", ())] == 0
    assert got[("nvls_autopilot_decisions_total", (("action", "skip"), ("reason", "paused")))] == 2


def test_odd_words_fold_into_one_other_series_and_a_spent_budget_reads_zero_never_below():
    r = AutopilotRound(decided={("repair-error", "Some Error"): 1, ("repair-error", "x\x1b[31m"): 2,
                                ("skip", "debounce"): 3},
                       tripped=True, in_window=6, bound=5, budget_left={"gpu01": -1, "GPU02": 3}, paused=False,
                       escalated=frozenset({"gpu01"}), ended=1.0)
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in autopilot_families(r) for s in f.samples}
    assert got[("nvls_autopilot_decisions_total", (("action", "repair-error"), ("reason", "other")))] == 3
    assert got[("nvls_autopilot_decisions_total", (("action", "skip"), ("reason", "debounce")))] == 3
    assert got[("nvls_autopilot_budget_left", (("hostname", "gpu01"),))] == 0
    assert got[("nvls_autopilot_budget_left", (("hostname", "gpu02"),))] == 3
    assert got[("nvls_autopilot_escalated", (("hostname", "gpu01"),))] == 1
    assert got[("nvls_autopilot_breaker_tripped", ())] == 1 and got[("nvls_autopilot_breaker_repairs_in_window", ())] == 6
