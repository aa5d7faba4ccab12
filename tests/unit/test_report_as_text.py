"""Issue 38 item 9: the logs screen's "past repairs" tab showed the report's raw Markdown (`## Summary`,
`| --- |`, `**gpu05: repaired**`, `FM\\_NOT\\_RUNNING`). It now shows it as text to read: headings as headings,
tables with their columns lined up, no Markdown marks, every word kept."""

from __future__ import annotations

from pathlib import Path

from nvls_tui.console.screens.logs import report_lines
from nvls_tui.views.report_text import readable_lines

FIXTURE = Path(__file__).parents[1] / "fixtures" / "audit-v1" / "repair-seed-incident-gpu05.jsonl"


def test_the_past_repairs_tab_reads_the_report_as_text():
    lines = report_lines(FIXTURE)
    texts = [text for text, _ in lines]
    assert ("NVLS repair incident report", "heading") in lines and ("Summary", "heading") in lines
    assert not any(t.startswith("#") or "**" in t or "`" in t or "\\_" in t or t.startswith("| ---") for t in texts)
    assert "gpu05: repaired (04:01:28 to 04:01:39 UTC)" in texts
    assert any("FM_NOT_RUNNING, FABRIC_MANAGER_NOT_PRESENT, HOLDERS_PRESENT" in t for t in texts)
    holders = [t for t in texts if t.startswith("870000") or t.startswith("pid ")]
    assert len(holders) == 2 and holders[0].index("kind") == holders[1].index("watch")  # columns lined up


def test_a_table_is_lined_up_and_a_list_keeps_its_bullets():
    md = "| a | long header |\n| --- | ---: |\n| x | 1 |\n| longer cell | 22 |\n\n- one `code` item\n"
    assert readable_lines(md) == [
        ("a            long header", "table-head"),
        ("x                      1", "table"),
        ("longer cell           22", "table"),
        ("", "text"),
        ("• one code item", "text"),
    ]
