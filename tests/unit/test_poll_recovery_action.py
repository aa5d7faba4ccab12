"""Issue 35 item 4: ``check`` reads the GPU recovery action (GPU_RECOVERY_ACTION, as ``analyze`` reads it in
``nvidia-smi -q``) from the poll's own query, ``gpu_recovery_action`` (driver 580.159 knows it: the real capture in
tests/fixtures/real/h100-1gpu-vm/), and fails closed where the driver does not know the field (the fallback query
leaves it out, and the action stays unread: None, never "None")."""

from __future__ import annotations

import pathlib

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.parsers.nvidia_smi_csv import gpus_from_query, parse_query_csv
from nvls_tui.poll.probe import QUERY_FIELDS, SECTIONS

REAL = pathlib.Path(__file__).parents[1] / "fixtures" / "real" / "h100-1gpu-vm" / "query-gpu-recovery-action.csv"


def test_the_poll_asks_for_the_recovery_action_and_its_fallback_does_not():
    assert "gpu_recovery_action" in QUERY_FIELDS
    gpus = next(s for s in SECTIONS if s.name == "gpus")
    assert "gpu_recovery_action" in gpus.argv[1]
    assert gpus.fallback is not None and "gpu_recovery_action" not in gpus.fallback[1]


def test_the_real_query_reads_nvmls_none():
    (gpu,) = gpus_from_query(parse_query_csv(REAL.read_text()).value)
    assert gpu.recovery_action == "None"


def test_a_query_without_the_field_leaves_it_unread():
    text = "index, name, fabric.state\n0, NVIDIA H100 80GB HBM3, Completed\n"
    (gpu,) = gpus_from_query(parse_query_csv(text).value)
    assert gpu.recovery_action is None


def test_check_gives_gpu_recovery_action_from_the_polls_query():
    text = REAL.read_text().replace(", None\n", ", Drain and Reset\n")
    gpus = gpus_from_query(parse_query_csv(text).value)
    findings = [f for f in diagnose(NodeState(host="gpu05", gpus=gpus)).findings if f.code == "GPU_RECOVERY_ACTION"]
    assert [(f.severity.value, f.action) for f in findings] == [("error", "DRAIN_AND_RESET")]
