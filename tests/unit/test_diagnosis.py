"""Diagnosis: node states -> findings and verdicts, table-driven (contract.md codes)."""

from __future__ import annotations

import pytest

from nvls_tui.diagnosis import DiagnosisOptions, carry_fabric_since, diagnose
from nvls_tui.model import (
    FabricInfo,
    GpuState,
    Holder,
    HolderKind,
    KernelEvent,
    NodeState,
    Platform,
    ServiceState,
    Severity,
    SmokeResult,
    Verdict,
)
from nvls_tui.model.node import ZERO_UUID

DRIVER = "580.82.07"


def gpus(state="Completed", status="Success", n=8, clique="0", cluster=ZERO_UUID):
    return tuple(GpuState(i, f"00000000:{0x18 + i:02X}:00.0", "NVIDIA H100 80GB HBM3", f"GPU-{i}",
                          FabricInfo(state, status, clique, cluster)) for i in range(n))


def node(**changes) -> NodeState:
    base = NodeState(
        host="gpu01", platform=Platform.HGX_H100, driver=DRIVER, fm_version=DRIVER, gpus=gpus(),
        services=(ServiceState("nvidia-fabricmanager.service", "active", "running", "loaded", 1234, "success"),),
    )
    return base.replace(**changes)


def codes(state: NodeState, **kw) -> list[tuple[str, Severity]]:
    return [(f.code, f.severity) for f in diagnose(state, **kw).findings]


def test_a_healthy_single_node_board_with_clique_zero_and_zero_cluster_uuid_is_healthy():
    result = diagnose(node())
    assert result.verdict is Verdict.HEALTHY
    assert result.findings == ()


def test_a_failed_fabric_manager_unit_is_broken_and_says_what_a_start_needs():
    # Real systemd starts a failed unit (the lab's golden comparison): reset-failed is not the point.
    fm = ServiceState("nvidia-fabricmanager.service", "failed", "failed", "loaded", None, "signal")
    result = diagnose(node(services=(fm,)))
    assert result.verdict is Verdict.BROKEN
    assert result.findings[0].code == "FM_NOT_RUNNING"
    message = result.findings[0].message
    assert "reset-failed" not in message and "signal" in message and "need a reset" in message


def test_completed_success_with_an_out_of_sync_kernel_line_is_broken():
    line = "NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync"
    state = node(kernel_events=(KernelEvent("NV_ERR_FABRIC_STATE_OUT_OF_SYNC", line),))
    assert ("FABRIC_OUT_OF_SYNC", Severity.ERROR) in codes(state)
    assert diagnose(state).verdict is Verdict.BROKEN


def test_an_out_of_sync_line_older_than_a_passing_smoke_test_no_longer_counts():
    # The record of this boot (its id and uptime: tests/unit/test_diagnosis_clock.py), read at 08:20 on the node.
    event = KernelEvent("NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "out of sync", timestamp="2026-11-30T08:00:00+0000")
    polled = node(kernel_events=(event,), boot_id="6f1c2d3e-4a5b-4c6d-8e7f-901234567890", uptime=3600.0,
                  node_clock=1796026800.0)
    smoke = SmokeResult(avg_busbw=291.9, passed=True, at="2026-11-30T08:10:00+0000", boot_id=polled.boot_id,
                        uptime=3000.0)
    assert diagnose(polled.replace(smoke=smoke)).verdict is Verdict.HEALTHY
    later = SmokeResult(avg_busbw=291.9, passed=True, at="2026-11-30T07:50:00+0000", boot_id=polled.boot_id,
                        uptime=1800.0)
    assert diagnose(polled.replace(smoke=later)).verdict is Verdict.BROKEN


def test_fm_not_present_in_the_kernel_log_is_its_own_error():
    state = node(kernel_events=(KernelEvent("NV_ERR_FABRIC_MANAGER_NOT_PRESENT", "Fabric Manager is not loaded"),))
    assert ("FABRIC_MANAGER_NOT_PRESENT", Severity.ERROR) in codes(state)


def test_in_progress_is_a_warning_while_young_and_an_error_once_it_has_lasted():
    young = node(gpus=gpus("In Progress", "N/A"), fabric_since=10.0)
    old = node(gpus=gpus("In Progress", "N/A"), fabric_since=400.0)
    assert diagnose(young).verdict is Verdict.DEGRADED
    assert set(codes(young)) == {("FABRIC_NOT_COMPLETED", Severity.WARNING)}
    assert diagnose(old).verdict is Verdict.BROKEN
    assert diagnose(old, DiagnosisOptions(in_progress_grace=1000)).verdict is Verdict.DEGRADED


def test_completed_with_insufficient_resources_is_a_status_error_for_escalation():
    state = node(gpus=gpus("Completed", "Insufficient Resources"))
    found = diagnose(state).findings
    assert {f.code for f in found} == {"FABRIC_STATUS_ERROR"}
    assert "escalate" in found[0].message
    assert len(found) == 1 and found[0].message.startswith("GPUs 0-7: fabric is Completed with status")


def test_version_mismatch_between_fm_and_driver_is_an_error():
    assert ("FM_VERSION_MISMATCH", Severity.ERROR) in codes(node(fm_version="570.172.08"))


def test_holders_are_information_not_a_fault():
    holder = Holder(37538, "root", "/usr/bin/dcgm-exporter", HolderKind.DCGM_EXPORTER, ("/dev/nvidia0",))
    result = diagnose(node(holders=(holder,)))
    assert result.verdict is Verdict.HEALTHY
    assert codes(node(holders=(holder,))) == []  # normal on a healthy node: named only when a repair is due
    broken = node(holders=(holder,), gpus=gpus("Not Started", "N/A"))
    assert ("HOLDERS_PRESENT", Severity.INFO) in codes(broken) and diagnose(broken).verdict is Verdict.BROKEN


@pytest.mark.parametrize(("xid", "severity"), [(149, Severity.ERROR), (74, Severity.ERROR), (13, Severity.WARNING)])
def test_nvlink_xids_are_errors_and_other_xids_warnings(xid, severity):
    event = KernelEvent("XID", f"NVRM: Xid (PCI:0000:01:00): {xid}, ...", xid=xid, pci="0000:01:00")
    assert codes(node(kernel_events=(event,))) == [("XID", severity)]


def test_a_gb200_node_is_unsupported_not_broken_for_lacking_a_host_fm():
    state = node(platform=Platform.GB200_NVL, services=(), fm_version=None,
                 gpus=gpus(clique="32766", cluster="f2b1a4c3-0000-4000-8000-000000000001"))
    result = diagnose(state)
    assert [(f.code, f.severity) for f in result.findings] == [("PLATFORM_UNSUPPORTED", Severity.WARNING)]
    assert "IMEX" in result.findings[0].message
    assert result.verdict is Verdict.DEGRADED


def test_an_unreachable_node_has_one_finding_with_the_reason():
    result = diagnose(NodeState(host="gpu09", reachable=False, error="connection refused"))
    assert result.verdict is Verdict.UNREACHABLE
    assert [(f.code, f.message) for f in result.findings] == [("UNREACHABLE", "connection refused")]


def test_an_interrupted_repair_record_tells_how_to_restore():
    state = node(repair_record={"started": "2026-11-30T08:00:00", "operator": "alice"})
    finding = diagnose(state).findings[0]
    assert finding.code == "INTERRUPTED_REPAIR"
    assert "nvls-tui repair --restore gpu01" in finding.message and "alice" in finding.message


def test_a_failed_smoke_test_is_an_error_with_its_bandwidth():
    state = node(smoke=SmokeResult(avg_busbw=120.5, passed=False))
    finding = diagnose(state).findings[0]
    assert finding.code == "NVLS_SMOKE_FAILED" and "120.5 GB/s" in finding.message


def test_findings_come_most_severe_first():
    holder = Holder(1, "root", "nvidia-smi", HolderKind.NVIDIA_SMI)
    state = node(holders=(holder,), fm_version="570.1", gpus=gpus("In Progress", "N/A"))
    severities = [f.severity for f in diagnose(state).findings]
    assert severities == sorted(severities, key=[Severity.ERROR, Severity.WARNING, Severity.INFO].index)


def test_in_progress_time_accumulates_across_polls_and_resets_when_completed():
    first = carry_fabric_since(None, node(gpus=gpus("In Progress", "N/A")), 2.0)
    assert first.fabric_since == 0.0
    second = carry_fabric_since(first, node(gpus=gpus("In Progress", "N/A")), 30.0)
    assert second.fabric_since == 30.0
    third = carry_fabric_since(second, node(gpus=gpus("In Progress", "N/A")), 30.0)
    assert third.fabric_since == 60.0
    assert carry_fabric_since(third, node(), 30.0).fabric_since is None
