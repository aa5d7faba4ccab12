"""Pure pieces of the runbook: preflight guards, the quiesce order, restore actions, the smoke verdict,
the on-node record, and the dry-run plan built from a hand-made node state."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nvls_tui.model import (
    FabricInfo,
    GpuState,
    Holder,
    HolderKind,
    KernelEvent,
    NodeState,
    Platform,
    ServiceState,
)
from nvls_tui.model.node import SwitchState
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.nccl_tests import NcclStreamParser
from nvls_tui.runbook import STEPS, RepairRecord, plan_commands
from nvls_tui.runbook.preflight import (
    escalation,
    fabric_looks_healthy,
    record_refusal,
    refusal,
)
from nvls_tui.runbook.program import RECHECK_WORDS
from nvls_tui.runbook.quiesce import quiesce_actions
from nvls_tui.runbook.restore import restore_actions
from nvls_tui.runbook.smoke import judge
from nvls_tui.runbook.steps import devices_of, threshold_for

FIXTURES = Path(__file__).parents[1] / "fixtures"


def gpu(i: int, state: str = "Completed", status: str = "Success", pm: str = "Enabled") -> GpuState:
    return GpuState(index=i, bus_id=f"00000000:{i:02X}:00.0", name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{i}",
                    fabric=FabricInfo(state=state, status=status), persistence_mode=pm)


def incident_node(**changes) -> NodeState:
    """gpu05 of the write-up: FM failed, holders everywhere, persistence mode on."""
    services = (
        ServiceState("nvidia-fabricmanager.service", "failed", "failed", "loaded", result="signal"),
        ServiceState("kubelet.service", "active", "running", "loaded"),
        ServiceState("nvidia-snapshot.timer", "active", "waiting", "loaded"),
        ServiceState("nvidia-snapshot.service", "inactive", "dead", "loaded"),
        ServiceState("nvidia-dcgm.service", "active", "running", "loaded"),
        ServiceState("nvidia-persistenced.service", "active", "running", "loaded"),
    )
    holders = (
        Holder(37538, "root", "/usr/bin/dcgm-exporter", HolderKind.DCGM_EXPORTER, ("/dev/nvidia0",),
               start_time="Mon Aug 10 06:41:31 2026"),
        Holder(924303, "root", "/snap/dcgm/62/usr/bin/nv-hostengine -n", HolderKind.NV_HOSTENGINE, ("/dev/nvidia0",)),
        Holder(50001, "ubuntu", "nvidia-smi", HolderKind.NVIDIA_SMI, ("/dev/nvidiactl",), ppid=50000),
        Holder(61000, "ubuntu", "python3 train.py", HolderKind.CUDA_APP, ("/dev/nvidia3",)),
    )
    state = NodeState(
        host="gpu05", platform=Platform.HGX_H100, driver="580.82.07", fm_version="580.82.07",
        gpus=tuple(gpu(i) for i in range(8)),
        nvswitches=tuple(SwitchState(f"/dev/nvidia-nvswitch{i}") for i in range(4)),
        services=services, holders=holders,
        kernel_events=(KernelEvent("NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "NVRM: ... out of sync"),),
    )
    return state.replace(**changes)


class TestPreflightGuards:
    def test_the_incident_node_is_allowed(self):
        assert refusal(incident_node()) is None
        assert escalation(incident_node()) is None

    def test_a_version_mismatch_is_refused_naming_both_versions(self):
        reason = refusal(incident_node(fm_version="570.86.15"))
        assert "570.86.15" in reason and "580.82.07" in reason

    @pytest.mark.parametrize("platform, word", [(Platform.GB200_NVL, "IMEX"), (Platform.HGX_B200, "NVLSM"),
                                                (Platform.NO_NVSWITCH, "no NVSwitch")])
    def test_an_unsupported_platform_is_refused_with_the_reason(self, platform, word):
        reason = refusal(incident_node(platform=platform))
        assert "unsupported platform" in reason and word in reason

    def test_a_masked_fabric_manager_is_refused(self):
        services = (ServiceState("nvidia-fabricmanager.service", "inactive", "dead", "masked"),)
        assert "masked" in refusal(incident_node(services=services))

    def test_a_record_of_an_interrupted_repair_is_refused_until_restored(self):
        reason = record_refusal(incident_node(repair_record={"started": "2026-08-16T10:00:00", "operator": "kim"}))
        assert "repair --restore gpu05" in reason and "kim" in reason

    def test_insufficient_resources_is_an_escalation_not_a_repair(self):
        state = incident_node(gpus=tuple(gpu(i, status="Insufficient Resources") for i in range(8)))
        assert "escalate" in escalation(state) and "Insufficient Resources" in escalation(state)

    def test_the_out_of_sync_line_means_the_fabric_does_not_look_healthy(self):
        fm_up = tuple(ServiceState(s.name, "active" if "fabric" in s.name else s.active, load="loaded")
                      for s in incident_node().services)
        assert not fabric_looks_healthy(incident_node(services=fm_up))
        assert fabric_looks_healthy(incident_node(services=fm_up, kernel_events=()))


class TestQuiesceOrder:
    def test_quiesce_stops_clients_first_and_fabric_manager_last_then_signals_management_holders(self):
        actions = [a.display for a in quiesce_actions(incident_node())]
        assert actions[:2] == ["systemctl stop nvidia-snapshot.timer", "systemctl stop nvidia-snapshot.service"]
        assert actions[2].startswith("ps -ww -e")  # every watch loop is looked for
        assert actions[3].startswith("kill -TERM 50000")  # the watch loop, before DCGM
        # Its nvidia-smi ends with it: the run never signals it (tests/unit/test_plan_is_the_run.py), nor the plan.
        assert not any(a.startswith("kill -TERM 50001") for a in actions)
        units = [a for a in actions if a.startswith(("systemctl", "nvidia-smi"))]
        assert units[2:] == ["systemctl stop nvidia-dcgm.service", "systemctl stop nvidia-persistenced.service",
                             "nvidia-smi -pm 0", "systemctl stop kubelet.service"]
        assert any(a.startswith("kill -TERM 37538") for a in actions)
        assert any(a.startswith("kill -TERM 924303") for a in actions)  # no unit known: signalled

    def test_a_cuda_workload_is_never_signalled_by_quiesce(self):
        assert not any("61000" in a.display for a in quiesce_actions(incident_node()))

    def test_a_failed_fabric_manager_is_not_stopped_but_an_active_one_is(self):
        displays = [a.display for a in quiesce_actions(incident_node())]
        assert "systemctl stop nvidia-fabricmanager.service" not in displays
        services = (ServiceState("nvidia-fabricmanager.service", "active", "running", "loaded"),)
        assert [a.display for a in quiesce_actions(incident_node(services=services, holders=()))][-2:] == [
            "nvidia-smi -pm 0", "systemctl stop nvidia-fabricmanager.service"]

    def test_fuser_names_every_device_file_so_no_glob_is_needed_over_ssh(self):
        devices = devices_of(incident_node())
        assert "/dev/nvidia7" in devices and "/dev/nvidiactl" in devices and "/dev/nvidia-nvswitch3" in devices
        assert not any("*" in d for d in devices)


class TestRestoreActions:
    def test_restore_starts_exactly_what_ran_before_fabric_manager_first(self):
        prior = {"nvidia-fabricmanager.service": "active", "kubelet.service": "active",
                 "nvidia-snapshot.timer": "active", "nvidia-dcgm.service": "inactive"}
        now = {u: "inactive" for u in prior}
        argvs = [" ".join(a.argv()) for a in restore_actions(prior, {}, now, {})]
        assert argvs == ["systemctl start nvidia-fabricmanager.service", "systemctl start kubelet.service",
                         "systemctl start nvidia-snapshot.timer"]

    def test_a_unit_that_failed_meanwhile_gets_reset_failed_before_its_start(self):
        argvs = [a.argv() for a in restore_actions({"kubelet.service": "active"}, {}, {"kubelet.service": "failed"}, {})]
        assert argvs == [("systemctl", "reset-failed", "kubelet.service"), ("systemctl", "start", "kubelet.service")]

    def test_persistence_mode_comes_back_only_on_the_gpus_that_had_it(self):
        argvs = [a.argv() for a in restore_actions({}, {0: "Enabled", 1: "Disabled"}, {}, {0: "Disabled", 1: "Disabled"})]
        assert argvs == [("nvidia-smi", "-pm", "1", "-i", "0")]
        every = [a.argv() for a in restore_actions({}, {0: "Enabled", 1: "Enabled"}, {}, {})]
        assert every == [("nvidia-smi", "-pm", "1")]

    def test_with_the_node_unreadable_every_prior_unit_is_started_blindly(self):
        argvs = [a.argv() for a in restore_actions({"kubelet.service": "active"}, {}, None, None)]
        assert argvs == [("systemctl", "start", "kubelet.service")]


class TestSmokeVerdict:
    def _run(self, name: str):
        parser = NcclStreamParser()
        text = strip_fixture_header((FIXTURES / name).read_text())
        for line in text.splitlines():
            parser.feed(line)
        return parser.finish()

    def test_the_real_h200_run_without_nvls_does_not_pass_even_though_it_completed(self):
        smoke = judge(self._run("real/h200x2-nvswitch/all_reduce_perf-g2.txt"), 0, 250.0, "2026-08-16T10:00:00")
        assert smoke.completed and smoke.out_of_bounds == 0 and smoke.avg_busbw == pytest.approx(234.857)
        assert not smoke.passed
        assert any("below the 250 GB/s threshold" in e for e in smoke.errors)

    def test_the_nvls_bind_failure_fails_the_smoke_test(self):
        smoke = judge(self._run("public/nccl-tests/fail-nvls-bind-401-pytorch-ci.txt"), 1, 250.0)
        assert not smoke.passed and smoke.errors

    def test_the_threshold_is_per_model_and_an_override_wins(self):
        h200 = (GpuState(0, "b", "NVIDIA H200", "u"),)
        assert threshold_for(h200, {"H100": 250.0, "H200": 270.0}, None) == 270.0
        assert threshold_for(h200, {"H200": 270.0}, 100.0) == 100.0


class TestRecord:
    def test_the_record_round_trips_through_json(self):
        record = RepairRecord(run_id="r1", host="gpu05", operator="kim", started="2026-08-16T10:00:00+00:00",
                              t0="2026-08-16 10:00:00", units={"kubelet.service": "active"},
                              persistence={0: "Enabled"}, tool_pid=42)
        again = RepairRecord.from_json(record.to_json())
        assert again == record

    @pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"persistence": {"x": 1}}'])
    def test_a_damaged_record_reads_as_nothing_or_as_empty_fields(self, text):
        record = RepairRecord.from_json(text)
        assert record is None or (record.persistence == {} and record.units == {})


class TestPlan:
    def test_the_plan_lists_every_step_in_contract_order_with_the_write_up_commands(self):
        # MIG off and nothing pending, as the poll reads it: the reset commits nothing else, so it is one line
        # (an unread MIG mode adds a note: tests/unit/test_mig_pending.py).
        read = tuple(dataclasses.replace(g, mig_current="Disabled", mig_pending="Disabled")
                     for g in incident_node().gpus)
        plan = plan_commands(incident_node(gpus=read))
        assert tuple(plan) == STEPS
        assert plan["reset"] == ["nvidia-smi -r"]
        assert plan_commands(incident_node())["reset"][0] == "nvidia-smi -r"
        # FM starts after nothing is proven to hold a device again (the listing, fuser, and the decision's words).
        assert plan["fabric-manager"][:3] == plan["verify-no-holders"][:3]
        assert plan["fabric-manager"][2].startswith("# while a process holds one")
        assert plan["fabric-manager"][3:5] == ["systemctl reset-failed nvidia-fabricmanager.service",
                                              "systemctl start nvidia-fabricmanager.service"]
        assert plan["smoke-test"][0] == ("NCCL_NVLS_ENABLE=1 NCCL_ALGO=NVLS NCCL_DEBUG=INFO "
                                         "all_reduce_perf -b 8M -e 128M -f 2 -g 8")
        assert plan["preflight"][:2] == ["mkdir -p /var/lib/nvls-tui", "mkdir /var/lib/nvls-tui/lock"]
        assert plan["preflight"][2:4] == ["tee /var/lib/nvls-tui/lock/owner.json.tmp",
                                          "mv -f /var/lib/nvls-tui/lock/owner.json.tmp /var/lib/nvls-tui/lock/owner.json"]
        assert plan["restore"][-5:] == ["cat /var/lib/nvls-tui/repair.json", "rm -f /var/lib/nvls-tui/repair.json",
                                        "cat /var/lib/nvls-tui/lock/owner.json",
                                        "rm -f /var/lib/nvls-tui/lock/owner.json /var/lib/nvls-tui/lock/owner.json.tmp",
                                        "rmdir /var/lib/nvls-tui/lock"]
        assert "systemctl start kubelet.service" in plan["restore"]
        assert "nvidia-smi -pm 1" in plan["restore"]

    def test_the_plan_lists_the_device_files_on_the_node_before_fuser_names_them(self):
        # The runbook names only the files the node has (a real H200 lacks three shared ones): the dry run
        # shows the listing, and no fuser line names a file the node may not have.
        plan = plan_commands(incident_node())
        for step in ("verify-no-holders", "fabric-manager"):
            assert plan[step][0] == "find /dev -maxdepth 1 -name 'nvidia*' '!' -type d"
            assert plan[step][1].startswith("fuser -v ")
            assert "/dev/nvidia-nvlink" not in plan[step][1]

    def test_the_record_is_written_atomically_before_quiesce(self):
        pre = plan_commands(incident_node())["preflight"]
        assert pre[-3:] == ["mkdir -p /var/lib/nvls-tui", "tee /var/lib/nvls-tui/repair.json.tmp",
                            "mv -f /var/lib/nvls-tui/repair.json.tmp /var/lib/nvls-tui/repair.json"]

    def test_a_healthy_looking_fabric_is_re_checked_with_the_smoke_test_first(self):
        fm_up = tuple(ServiceState(s.name, "active", load="loaded") for s in incident_node().services)
        pre = plan_commands(incident_node(services=fm_up, kernel_events=()))["preflight"]
        assert any("all_reduce_perf" in c for c in pre)
        # The decision it makes is said after the test (runbook/program.py RECHECK), before the record is written.
        said = pre.index(RECHECK_WORDS)
        assert said < pre.index("tee /var/lib/nvls-tui/repair.json.tmp")
        assert "all_reduce_perf" in " ".join(pre[:said])
