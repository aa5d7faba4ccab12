"""The report of a repair on a node someone else had cordoned says the node is still cordoned.

sim:k8s-incident's gpu05 was cordoned before the repair (not by nvls-tui): the repair leaves that cordon, so
after a passing repair the node is healthy but takes no pods. The report's Left line said only "healthy; no
finding remains", which reads as "back in service".
"""

from __future__ import annotations

import json

import pytest

from nvls_tui.cli import main
from nvls_tui.report.markdown import report_from_file


@pytest.fixture(autouse=True)
def _frozen_clock(monkeypatch):
    """The simulated fleet's clock frozen: the repair's waits (FM's start, the smoke test, the operands' pods)
    move it on instead of passing in real time (they took 11 s a repair at the default real-time speed)."""
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")


def left_line(report: str, host: str) -> str:
    """The Left bullet of ``host``'s summary."""
    at = report.index(f"**{host}: ")
    return next(line for line in report[at:].splitlines() if line.startswith("- Left:"))


def test_a_cordon_that_was_there_before_the_repair_is_left_and_said(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["repair", "sim:k8s-incident/gpu05", "--yes", "--json"]) == 0
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["result"] == "repaired", node["message"]
    left = left_line(report_from_file(node["audit_log"]), "gpu05")
    assert ("`gpu05` stays cordoned in Kubernetes: it was cordoned before the repair, not by nvls-tui; "
            "`kubectl uncordon gpu05` once whoever cordoned it agrees") in left


def test_a_cordon_the_repair_set_and_lifted_is_not_said_to_stay(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["repair", "sim:k8s-incident/gpu06", "--yes", "--json"]) == 0
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert "stays cordoned" not in left_line(report_from_file(node["audit_log"]), "gpu06")
