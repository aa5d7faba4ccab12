"""contrib/prometheus (issue 39 item 3): the alert rules pass ``promtool check rules`` and their
``promtool test rules`` series, every metric they and the dashboard query is one nvls-tui exports, and
each dashboard expression parses (``promtool check rules`` on a recording rule per panel expression)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nvls_tui.metrics.names import METRICS
from tests.metrics_rig import PROMTOOL, promtool

CONTRIB = Path(__file__).parents[2] / "contrib" / "prometheus"
RULES = CONTRIB / "nvls-alerts.yml"
DASHBOARD = CONTRIB / "nvls-dashboard.json"
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian's prometheus package)")
# The list: FM down, fabric not Completed, out of sync since the last passing smoke test, a node
# unknown for 15 minutes, FM flapping, a repair that failed or left a node cordoned/drained.
ALERTS = {"NvlsFabricManagerDown", "NvlsFabricNotCompleted", "NvlsFabricOutOfSync", "NvlsNodeUnknown",
          "NvlsFabricManagerFlapping", "NvlsRepairFailed", "NvlsRepairLeftOutOfService", "NvlsMetricsStale",
          "NvlsMetricsAbsent", "NvlsAutopilotBreakerTripped"}


def dashboard_exprs() -> list[str]:
    """Every PromQL expression of the dashboard's panels."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p["targets"]]


def _names_in(text: str) -> set[str]:
    return set(re.findall(r"\bnvls_[a-z_]+\b", text))


def test_rules_and_dashboard_query_only_exported_metrics():
    exported = {m.exposed for m in METRICS}
    rules = RULES.read_text()
    assert set(re.findall(r"alert: (\w+)", rules)) == ALERTS
    assert _names_in(rules) <= exported, _names_in(rules) - exported
    exprs = dashboard_exprs()
    assert len(exprs) >= 8
    assert set().union(*map(_names_in, exprs)) <= exported


# The 20 days of the field's case are a file of their own, evaluated hourly (each minute they were 15 s of CPU).
RULE_TESTS = ["nvls-alerts.test.yml", "nvls-alerts-20d.test.yml"]


def test_every_alert_is_seen_firing_in_the_rule_tests():
    tests = "".join((CONTRIB / "tests" / name).read_text() for name in RULE_TESTS)
    fired = set(re.findall(r"alertname: (\w+)\n\s+exp_alerts:\n\s+- exp_labels", tests))
    assert fired == ALERTS
    assert sorted(path.name for path in (CONTRIB / "tests").glob("*.test.yml")) == sorted(RULE_TESTS)  # none left out


@needs_promtool
def test_promtool_checks_the_rules():
    run = promtool("check", "rules", str(RULES))
    assert run.returncode == 0 and "SUCCESS: 10 rules found" in run.stdout, run.stdout + run.stderr


@needs_promtool
def test_promtool_rule_tests_pass():
    """The 20-day dead FM fires; a healthy fleet fires nothing; an unknown node and a stopped watch page."""
    run = promtool("test", "rules", *RULE_TESTS, cwd=str(CONTRIB / "tests"))
    assert run.returncode == 0 and run.stdout.count("SUCCESS") == len(RULE_TESTS), run.stdout + run.stderr


@needs_promtool
def test_every_dashboard_expression_parses(tmp_path):
    rules = {"groups": [{"name": "nvls-dashboard", "rules": [
        {"record": f"nvls:dashboard:expr{i}", "expr": expr} for i, expr in enumerate(dashboard_exprs())]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    run = promtool("check", "rules", str(path))
    assert run.returncode == 0 and f"SUCCESS: {len(dashboard_exprs())} rules found" in run.stdout, run.stdout + run.stderr
