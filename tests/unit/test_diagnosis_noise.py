"""Findings an operator can act on (issue 14, items 4 and 6): no holder noise on healthy nodes, one
finding for eight GPUs that say the same, and advice that follows from the cause."""

from __future__ import annotations

import dataclasses

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import Holder, HolderKind, ServiceState, Verdict
from tests.unit.test_diagnosis import DRIVER, gpus, node

DCGM = Holder(pid=924303, user="root", command="/usr/bin/nv-hostengine -n", kind=HolderKind.NV_HOSTENGINE,
              devices=("/dev/nvidia0",), unit="nvidia-dcgm.service", start_time="Mon Aug 10 15:00:00 2026", ppid=1)


def test_a_healthy_node_whose_gpus_dcgm_holds_has_no_finding():
    result = diagnose(node(holders=(DCGM,)))
    assert result.verdict is Verdict.HEALTHY
    assert result.findings == ()


def test_a_broken_node_still_names_its_holders_a_reset_would_meet():
    failed = ServiceState("nvidia-fabricmanager.service", "failed", "failed", "loaded", None, "signal")
    result = diagnose(node(services=(failed,), holders=(DCGM,)))
    assert "HOLDERS_PRESENT" in [f.code for f in result.findings]
    assert "1 process holds /dev/nvidia*" in next(f.message for f in result.findings if f.code == "HOLDERS_PRESENT")


def test_eight_gpus_saying_the_same_are_one_finding_naming_them():
    result = diagnose(node(gpus=gpus(state="Not Started", status="N/A")))
    fabric = [f for f in result.findings if f.code == "FABRIC_NOT_COMPLETED"]
    assert len(fabric) == 1
    assert fabric[0].message == "GPUs 0-7: fabric state is Not Started, not Completed"


def test_a_fm_that_cannot_start_for_its_version_says_so_first_not_a_reset():
    failed = ServiceState("nvidia-fabricmanager.service", "failed", "failed", "loaded", None, "exit-code")
    result = diagnose(node(services=(failed,), fm_version="570.172.08"))
    first = result.findings[0]
    assert first.code == "FM_VERSION_MISMATCH"
    fm = next(f for f in result.findings if f.code == "FM_NOT_RUNNING")
    assert "reset" not in fm.message and "version" in fm.message
    assert DRIVER in first.message


def test_the_gpu_caption_says_registered_but_unusable_when_out_of_sync_and_no_fabric_without_one():
    from nvls_tui.console.widgets.node_text import gpu_summary, header_text
    from nvls_tui.model import FabricInfo, KernelEvent, Platform

    line = "NVRM: ... NVLink fabric state cached by the driver is out of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC]"
    out_of_sync = node(kernel_events=(KernelEvent("NV_ERR_FABRIC_STATE_OUT_OF_SYNC", line),))
    assert gpu_summary(out_of_sync, diagnose(out_of_sync)).startswith("✔ 8/8 registered, ✖ NVLS unusable")
    assert gpu_summary(node(), diagnose(node())) == "8/8 Completed/Success"
    h200 = node(platform=Platform.NO_NVSWITCH, fm_version=None, services=(),
                gpus=tuple(dataclasses.replace(g, fabric=FabricInfo("N/A", "N/A")) for g in gpus(n=1)))
    assert gpu_summary(h200, diagnose(h200)) == "1 GPU: no NVLink fabric (no-nvswitch)"
    header = header_text(h200, diagnose(h200), 3.0).plain
    assert "no host Fabric Manager" in header and "FM –" not in header
