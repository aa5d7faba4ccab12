"""Issue 38 item 10: the report read by a manager. A short section at the top says how long NVLS was down (from
the first evidence to the passing smoke test), what took Fabric Manager down, the impact and the follow-ups;
the long timelines go to an appendix."""

from __future__ import annotations

from pathlib import Path

from nvls_tui.report.markdown import load_audit_log, render_report

FIXTURES = Path(__file__).parents[1] / "fixtures" / "audit-v1"


def report(name: str) -> str:
    return render_report(load_audit_log(FIXTURES / f"{name}.jsonl"), f"{name}.jsonl")


def test_the_review_comes_first_with_the_down_time_the_cause_and_what_to_follow_up():
    text = report("repair-seed-incident-gpu05")
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## For the review" and sections[-1] == "## Appendix: timelines"
    review = text.split("## For the review", 1)[1].split("\n## ", 1)[0]
    # FM died at 03:37:02 UTC on 27 November (its unit's since, converted from gpu05's clock); the smoke test
    # passed at 04:01:39 UTC on 2 December.
    assert ("| gpu05 | 5 days 0 h | 2026-11-27 03:37:02 UTC (Fabric Manager went down) | 04:01:39 UTC (the smoke "
            "test passed) | Fabric Manager was killed by a signal (systemd: Result: signal) |") in review
    assert "- Impact: gpu05: 6 processes stopped with SIGTERM" in review
    assert "gpu05: find what killed Fabric Manager (systemd: Result: signal)" in review


def test_the_timelines_are_in_the_appendix_and_nowhere_else():
    text = report("repair-seed-incident-gpu05")
    body, appendix = text.split("## Appendix: timelines", 1)
    assert "### Timeline" not in body and "| time (UTC) | step | what happened |" not in body
    assert appendix.lstrip().startswith("### gpu05") and "| time (UTC) | step | what happened |" in appendix


def test_a_refused_repair_says_it_was_not_repaired():
    refused = report("repair-refused-gb200")
    review = refused.split("## For the review", 1)[1].split("\n## ", 1)[0]
    assert "not repaired (refused)" in review and "not up at the log's end" in review
