"""The nvidia-smi, reset and lspci parsers against every real and public fixture they read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nvls_tui.model import FabricHealth, FabricInfo, GpuState
from nvls_tui.model.node import ZERO_UUID
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.lspci import canonical_bus_id, parse_lspci
from nvls_tui.parsers.nvidia_smi_csv import (
    convert_cell,
    driver_from_query,
    gpus_from_query,
    gpus_from_query_parsed,
    parse_help_query,
    parse_query_csv,
)
from nvls_tui.parsers.nvidia_smi_q import SmiProcess, parse_nvidia_smi_q
from nvls_tui.parsers.nvidia_smi_reset import parse_persistence, parse_reset
from nvls_tui.parsers.nvidia_smi_xml import parse_nvidia_smi_xml

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL = FIXTURES / "real" / "h200x2-nvswitch"
PUBLIC = FIXTURES / "public"

BUS0, BUS1 = "00000000:00:06.0", "00000000:00:07.0"
UUID0, UUID1 = "GPU-60ca8147-127f-46f0-9366-eba40a41b09d", "GPU-0a3df10b-faf5-5512-4744-8c9f8b5bb5da"
ALL_NA_HEALTH = FabricHealth()  # every field printed as N/A (or, for Partition Assigned on 590, absent)
HEALTHY_FABRIC = FabricInfo("Completed", "Success", "0", ZERO_UUID, ALL_NA_HEALTH)


def read(path: Path) -> str:
    """A fixture's text without its ``# source:`` header."""
    return strip_fixture_header(path.read_text(encoding="utf-8"))


def real_gpus() -> tuple[GpuState, ...]:
    """The two H200s of the real capture, as every view of that machine must report them."""
    return (
        # nvidia-smi -q's "GPU Recovery Action : None" (NVML's recovery action), read since issue 35's catalogues.
        GpuState(0, BUS0, "NVIDIA H200", UUID0, HEALTHY_FABRIC, "Enabled", recovery_action="None"),
        GpuState(1, BUS1, "NVIDIA H200", UUID1, HEALTHY_FABRIC, "Enabled", recovery_action="None"),
    )


# --- nvidia-smi -q (text) -----------------------------------------------------------------------


def test_real_q_text_reads_driver_cuda_and_both_h200s_with_their_fabric_block():
    parsed = parse_nvidia_smi_q(read(REAL / "nvidia-smi-q.txt"))
    assert parsed.warnings == ()
    assert parsed.value.driver == "580.159.04"
    assert parsed.value.cuda == "13.0"
    assert parsed.value.gpus == real_gpus()
    assert parsed.value.processes == ()


def test_real_q_text_health_block_printed_all_na_is_present_with_none_fields():
    gpu = parse_nvidia_smi_q(read(REAL / "nvidia-smi-q.txt")).value.gpus[0]
    assert gpu.fabric.health is not None
    assert gpu.fabric.health.summary is None
    assert gpu.fabric.completed_ok


def test_text_and_xml_of_the_same_machine_give_equal_gpu_states():
    text = parse_nvidia_smi_q(read(REAL / "nvidia-smi-q.txt")).value
    xml = parse_nvidia_smi_xml(read(REAL / "nvidia-smi-q-x.xml")).value
    assert text.gpus == xml.gpus
    assert (text.driver, text.cuda) == (xml.driver, xml.cuda) == ("580.159.04", "13.0")


@pytest.mark.parametrize(
    ("name", "bus_id", "product"),
    [
        ("h100-590-q-idle.txt", "00000000:00:09.0", "NVIDIA H100 80GB HBM3"),
        ("h100-590-q-load-with-processes.txt", "00000000:00:09.0", "NVIDIA H100 80GB HBM3"),
        ("h200-590-q-idle.txt", "00000000:83:00.0", "NVIDIA H200"),
    ],
)
def test_public_590_q_text_reads_one_gpu_completed_with_six_health_rows(name, bus_id, product):
    parsed = parse_nvidia_smi_q(read(PUBLIC / "nvidia-smi-q" / name))
    assert parsed.warnings == ()
    assert parsed.value.driver == "590.48.01"
    assert parsed.value.cuda == "13.1"
    (gpu,) = parsed.value.gpus
    assert (gpu.index, gpu.bus_id, gpu.name) == (0, bus_id, product)
    assert gpu.uuid == "GPU-00000000-0000-0000-0000-000000000000"  # masked by the collector
    assert gpu.persistence_mode == "Enabled"
    # 590 prints Health without Partition Assigned: the block exists, that field stays None.
    assert gpu.fabric == FabricInfo("Completed", "Success", "0", ZERO_UUID, FabricHealth())


def test_public_q_text_under_load_lists_the_three_processes_of_the_gpu():
    parsed = parse_nvidia_smi_q(read(PUBLIC / "nvidia-smi-q" / "h100-590-q-load-with-processes.txt"))
    assert parsed.value.processes == (
        SmiProcess("00000000:00:09.0", 11327, "/root/tools/memhog", "C", 2566),
        SmiProcess("00000000:00:09.0", 11328, "/root/tools/memhog", "C", 1542),
        SmiProcess("00000000:00:09.0", 11345, "./gpu_burn", "C", 15690),
    )


def test_idle_public_q_text_has_no_processes():
    parsed = parse_nvidia_smi_q(read(PUBLIC / "nvidia-smi-q" / "h200-590-q-idle.txt"))
    assert parsed.value.processes == ()


def test_labels_are_split_on_the_first_spaced_colon_whatever_the_column():
    text = (
        "Driver Version : 535.104.05\n"
        "GPU 00000000:0F:00.0\n"
        "    Product Name   : NVIDIA H100 80GB HBM3\n"
        "    GPU UUID                    : GPU-abc\n"
        "    Minor Number : 3\n"
        "    Fabric\n"
        "        State  : In Progress\n"
        "        Status : N/A\n"
    )
    parsed = parse_nvidia_smi_q(text)
    (gpu,) = parsed.value.gpus
    assert parsed.value.driver == "535.104.05"
    assert (gpu.index, gpu.bus_id, gpu.name, gpu.uuid) == (3, "00000000:0F:00.0", "NVIDIA H100 80GB HBM3", "GPU-abc")
    # Older drivers print only State and Status: no clique, no health block.
    assert gpu.fabric == FabricInfo("In Progress", "N/A", None, None, None)


def test_missing_minor_number_falls_back_to_the_order_of_the_gpus():
    text = "GPU 00000000:0F:00.0\n    Product Name : A\nGPU 00000000:D8:00.0\n    Product Name : B\n"
    gpus = parse_nvidia_smi_q(text).value.gpus
    assert [(g.index, g.bus_id, g.name) for g in gpus] == [(0, "00000000:0F:00.0", "A"), (1, "00000000:D8:00.0", "B")]


def test_the_incidents_flattened_grep_output_gives_one_gpu_per_fabric_block():
    # From the incident write-up: `nvidia-smi -q | grep -i -A 2 Fabric`, indentation lost in the paste.
    text = (
        "GPU Fabric GUID : N/A\nInforom Version\nImage Version : G520.0200.00.05\n--\n"
        "# ...\n--\n"
        "GPU Fabric GUID : N/A\nInforom Version\nImage Version : G520.0200.00.05\n--\n"
        "Fabric\nState : Completed\nStatus : Success\n--\n"
        "Fabric\nState : Completed\nStatus : Success\n"
    )
    parsed = parse_nvidia_smi_q(text)
    assert [(g.index, g.bus_id, g.fabric.state, g.fabric.status) for g in parsed.value.gpus] == [
        (0, "", "Completed", "Success"),
        (1, "", "Completed", "Success"),
    ]
    assert any("grep" in w for w in parsed.warnings)


def test_indented_grep_output_of_the_real_capture_reads_both_fabric_blocks():
    lines = read(REAL / "nvidia-smi-q.txt").splitlines()
    excerpt = []
    for i, line in enumerate(lines):
        if "fabric" in line.lower():
            excerpt += lines[i:i + 3] + ["--"]
    gpus = parse_nvidia_smi_q("\n".join(excerpt)).value.gpus
    assert [(g.fabric.state, g.fabric.status) for g in gpus] == [("Completed", "Success")] * 2


def test_q_text_that_is_not_text_is_a_warning_not_an_exception():
    parsed = parse_nvidia_smi_q(None)  # type: ignore[arg-type]
    assert parsed.value.gpus == ()
    assert parsed.warnings == ("Expected text, got NoneType.",)


# --- nvidia-smi -q -x (XML) ---------------------------------------------------------------------


def test_real_xml_reads_both_h200s_with_its_nvidia_doctype_accepted():
    text = read(REAL / "nvidia-smi-q-x.xml")
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">' in text
    parsed = parse_nvidia_smi_xml(text)
    assert parsed.warnings == ()
    assert parsed.value.gpus == real_gpus()
    assert parsed.value.processes == ()


def test_real_xml_with_processes_lists_pids_560_and_561_per_gpu():
    parsed = parse_nvidia_smi_xml(read(REAL / "nvidia-smi-q-x-with-processes.xml"))
    assert [g.uuid for g in parsed.value.gpus] == [
        "GPU-ce732b18-fa64-fafe-809d-f96d95e09ad1",
        "GPU-a4c06bd9-4798-29ea-c3c4-112c3cf8b8af",
    ]
    assert [g.bus_id for g in parsed.value.gpus] == [BUS0, BUS1]
    assert parsed.value.processes == (
        SmiProcess(BUS0, 560, "python3", "C", 1542),
        SmiProcess(BUS1, 560, "python3", "C", 1030),
        SmiProcess(BUS1, 561, "python3", "C", 538),
    )


def test_xml_processes_agree_with_the_compute_apps_query_taken_at_the_same_time():
    xml = parse_nvidia_smi_xml(read(REAL / "nvidia-smi-q-x-with-processes.xml")).value
    q = parse_query_csv(read(REAL / "query-compute-apps.csv")).value
    from_csv = {(q.get(r, "pid"), q.get(r, "gpu_bus_id"), q.get(r, "used_gpu_memory")) for r in q.rows}
    assert from_csv == {(p.pid, p.gpu_bus_id, p.used_memory) for p in xml.processes}


def test_truncated_xml_keeps_the_first_gpu_and_warns():
    text = read(REAL / "nvidia-smi-q-x.xml")
    cut = text[: text.index('<gpu id="00000000:00:07.0">') + 200]
    parsed = parse_nvidia_smi_xml(cut)
    assert parsed.value.gpus[0] == real_gpus()[0]
    assert parsed.value.driver == "580.159.04"
    assert any("cut short" in w for w in parsed.warnings)


def test_xml_with_entity_declarations_is_refused_before_parsing():
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n'
        "<nvidia_smi_log><driver_version>&lol2;</driver_version></nvidia_smi_log>"
    )
    parsed = parse_nvidia_smi_xml(bomb)
    assert parsed.value.driver is None
    assert parsed.value.gpus == ()
    assert parsed.warnings == ("Refused XML with a DOCTYPE internal subset or ENTITY declarations.",)


def test_xml_without_fabric_element_gives_the_default_fabric_words():
    text = ('<nvidia_smi_log><driver_version>535.54.03</driver_version><gpu id="00000000:0F:00.0">'
            "<product_name>NVIDIA H100</product_name><uuid>GPU-x</uuid><minor_number>5</minor_number>"
            "</gpu></nvidia_smi_log>")
    (gpu,) = parse_nvidia_smi_xml(text).value.gpus
    assert gpu == GpuState(5, "00000000:0F:00.0", "NVIDIA H100", "GPU-x", FabricInfo("N/A", "N/A"), None)


def test_garbage_is_not_xml_and_says_so():
    parsed = parse_nvidia_smi_xml("this is not xml")
    assert parsed.value.gpus == ()
    assert len(parsed.warnings) == 1 and "damaged" in parsed.warnings[0]


# --- --query-gpu / --query-compute-apps CSV -----------------------------------------------------


def test_real_fabric_query_csv_keeps_header_names_and_converts_numbers():
    parsed = parse_query_csv(read(REAL / "query-gpu-fabric.csv"))
    q = parsed.value
    assert parsed.warnings == ()
    assert q.header == ("index", "pci.bus_id", "name", "uuid", "driver_version", "fabric.state",
                        "fabric.status", "fabric.cliqueId", "fabric.clusterUuid")
    assert q.rows[0] == {
        "index": 0, "pci.bus_id": BUS0, "name": "NVIDIA H200", "uuid": UUID0, "driver_version": "580.159.04",
        "fabric.state": "Completed", "fabric.status": "Success", "fabric.cliqueId": 0,
        "fabric.clusterUuid": ZERO_UUID,
    }
    assert q.rows[1]["pci.bus_id"] == BUS1
    assert q.rows[1]["uuid"] == UUID1


def test_real_fabric_query_gives_the_same_gpus_as_the_q_text_minus_unqueried_columns():
    q = parse_query_csv(read(REAL / "query-gpu-fabric.csv")).value
    # The query has no persistence_mode, no fabric.health.* and no recovery action column.
    expected = tuple(
        dataclasses.replace(g, persistence_mode=None, fabric=dataclasses.replace(g.fabric, health=None),
                            recovery_action=None)
        for g in real_gpus()
    )
    assert gpus_from_query(q) == expected
    assert driver_from_query(q) == "580.159.04"


def test_real_compute_apps_csv_keys_the_memory_column_with_its_unit():
    q = parse_query_csv(read(REAL / "query-compute-apps.csv")).value
    assert q.header == ("pid", "process_name", "used_gpu_memory [MiB]", "gpu_bus_id")
    assert [(r["pid"], r["process_name"], r["used_gpu_memory [MiB]"], r["gpu_bus_id"]) for r in q.rows] == [
        (560, "python3", 1542, BUS0),
        (561, "python3", 538, BUS1),
        (560, "python3", 1030, BUS1),
    ]
    assert q.key("used_gpu_memory") == "used_gpu_memory [MiB]"


def test_public_all_fields_query_reads_212_columns_with_units_words_and_nulls():
    parsed = parse_query_csv(read(PUBLIC / "nvidia-smi-csv" / "h100-590-query-gpu-all-fields.txt"))
    q = parsed.value
    (row,) = q.rows
    assert parsed.warnings == ()
    assert len(q.header) == 212
    assert row["driver_version"] == "590.48.01"
    assert row["serial"] == "0000000000000"  # leading zeros: an identifier, not the number 0
    assert row["pci.device_id"] == "0x233010DE"
    assert row["memory.total [MiB]"] == 81559
    assert row["power.draw [W]"] == 69.85
    assert row["utilization.gpu [%]"] == 0
    assert row["compute_cap"] == 9.0
    assert row["fan.speed [%]"] is None  # [N/A]
    assert row["platform.chassis_serial_number"] is None  # printed empty
    assert row["platform.peer_type"] == "Direct Connected"
    assert row["display_mode"] == "[Requested functionality has been deprecated]"
    assert (row["fabric.state"], row["fabric.status"], row["fabric.cliqueId"]) == ("Completed", "Success", 0)
    assert row["fabric.health.summary"] is None
    assert "fabric.health.partition_assigned" not in row


def test_public_all_fields_query_builds_one_h100_with_a_health_block():
    q = parse_query_csv(read(PUBLIC / "nvidia-smi-csv" / "h100-590-query-gpu-all-fields.txt")).value
    assert gpus_from_query(q) == (
        GpuState(0, "00000000:00:09.0", "NVIDIA H100 80GB HBM3", "GPU-00000000-0000-0000-0000-000000000000",
                 FabricInfo("Completed", "Success", "0", ZERO_UUID, FabricHealth()), "Enabled",
                 mig_current="Disabled", mig_pending="Disabled",  # the capture's mig.mode.* columns
                 recovery_action="None"),  # and its gpu_recovery_action column (NVML's "None")
    )
    assert driver_from_query(q) == "590.48.01"


def test_public_help_query_lists_the_fabric_fields_this_driver_supports():
    parsed = parse_help_query(read(PUBLIC / "nvidia-smi-csv" / "h100-590-help-query-gpu.txt"))
    fields = parsed.value
    assert parsed.warnings == ()
    assert fields[:4] == ("timestamp", "driver_version", "vgpu_driver_capability.heterogenous_multivGPU", "count")
    assert ("pci.bus_id" in fields) and ("gpu_bus_id" in fields)
    assert [f for f in fields if f.startswith("fabric.")] == [
        "fabric.state", "fabric.status", "fabric.cliqueId", "fabric.clusterUuid", "fabric.health.summary",
        "fabric.health.bandwidth", "fabric.health.route_recovery_in_progress", "fabric.health.route_unhealthy",
        "fabric.health.access_timeout_recovery", "fabric.health.incorrect_configuration",
    ]
    assert fields[-1] == "hostname"


def test_noheader_csv_is_keyed_by_the_fields_the_caller_queried():
    q = parse_query_csv("0, 00000000:0F:00.0, In Progress, N/A\n", fields=["index", "pci.bus_id", "fabric.state",
                                                                         "fabric.status"]).value
    assert q.rows == ({"index": 0, "pci.bus_id": "00000000:0F:00.0", "fabric.state": "In Progress",
                       "fabric.status": None},)
    assert gpus_from_query(q)[0].fabric == FabricInfo("In Progress", "N/A")


def test_noheader_csv_without_field_names_is_keyed_by_position_with_a_warning():
    parsed = parse_query_csv("Completed\nNot Supported\n")
    assert parsed.value.rows == ({"0": "Completed"}, {"0": "Not Supported"})
    assert parsed.warnings == ("No header line and no field names given: columns are keyed by position.",)


def test_a_comma_inside_the_name_is_joined_back_with_a_warning():
    parsed = parse_query_csv("index, name, uuid\n0, Acme, Inc GPU, GPU-1\n")
    assert parsed.value.rows == ({"index": 0, "name": "Acme, Inc GPU", "uuid": "GPU-1"},)
    assert parsed.warnings == ("Line 2 has 1 field(s) more than the header; joined them into 'name'.",)


def test_a_short_row_fills_missing_fields_with_none_and_warns():
    parsed = parse_query_csv("index, pci.bus_id, fabric.state\n0, 00000000:0F:00.0\n")
    assert parsed.value.rows == ({"index": 0, "pci.bus_id": "00000000:0F:00.0", "fabric.state": None},)
    assert parsed.warnings == ("Line 2 has 1 field(s) fewer than the header; they are None.",)


def test_an_invalid_field_error_is_reported_as_the_sentence_nvidia_smi_printed():
    parsed = parse_query_csv('Field "fabric.health.partition_assigned" is not a valid field to query.\n\n')
    assert parsed.value.rows == ()
    assert parsed.warnings == ('Field "fabric.health.partition_assigned" is not a valid field to query.',)


@pytest.mark.parametrize(
    ("raw", "unit", "value"),
    [
        ("N/A", None, None), ("[N/A]", None, None), ("[Not Supported]", None, None), ("", None, None),
        ("Not Supported", None, "Not Supported"), ("1542 MiB", "MiB", 1542), ("100.00 %", "%", 100.0),
        ("0x1F", None, "0x1F"), ("580.159.04", None, "580.159.04"), ("007", None, "007"), ("0", None, 0),
        ("1e999", None, "1e999"), ("nan", None, "nan"), ("12 parsecs", None, "12 parsecs"),
    ],
)
def test_a_csv_cell_becomes_a_number_none_or_the_word_as_printed(raw, unit, value):
    assert convert_cell(raw, unit) == value


def test_a_bad_index_column_falls_back_to_the_row_order_with_a_warning():
    q = parse_query_csv("index, name\nN/A, A\n7, B\n").value
    parsed = gpus_from_query_parsed(q)
    assert [(g.index, g.name) for g in parsed.value] == [(0, "A"), (7, "B")]
    assert len(parsed.warnings) == 1


# --- nvidia-smi -r / -pm ------------------------------------------------------------------------


def test_public_reset_refusal_names_the_gpu_the_reason_and_one_device_in_use():
    parsed = parse_reset(read(PUBLIC / "gpu-reset" / "fail-in-use-by-another-client-nvsentinel.txt"), 255)
    r = parsed.value
    assert r.reset == ()
    assert r.failed == (("00000000:1A:00.0", "In use by another client"),)
    assert r.in_use_devices == 1
    assert r.message.startswith("1 device is currently being used by one or more other processes (e.g. Fabric "
                                "Manager, CUDA application,")
    assert r.message.endswith("all compute applications running in the system.")
    assert (r.nvswitches_reset, r.all_done, r.exit_status, r.succeeded) == (False, False, 255, False)
    assert parsed.warnings == ()


def test_public_reset_success_after_pm0_reads_the_reset_not_the_pm_commands_all_done():
    parsed = parse_reset(read(PUBLIC / "gpu-reset" / "success-after-pm0-nvsentinel.txt"), 0)
    r = parsed.value
    assert r.reset == ("00000000:1A:00.0",)
    assert r.failed == ()
    assert r.all_done is False  # the only "All done." belongs to `nvidia-smi -pm 0`
    assert r.succeeded
    assert parsed.warnings == ()


def test_public_pm0_transcript_is_read_as_persistence_output_without_a_bus_id():
    parsed = parse_persistence(read(PUBLIC / "gpu-reset" / "success-after-pm0-nvsentinel.txt"))
    assert parsed.value == {}  # the reporter redacted the target (-i <uuid>); nvidia-smi named no GPU
    assert parsed.warnings == ()


def test_the_incidents_reset_of_all_gpus_and_nvswitches_is_a_success():
    text = (
        "GPU 00000000:0F:00.0 was successfully reset.\n"
        "GPU 00000000:D8:00.0 was successfully reset.\n"
        "Note: The operation has successfully reset all GPUs and NVSwitches. If the services, such as "
        "nvidia-fabricmanager, which manage or monitor NVSwitches are running, they might have been affected by "
        "this operation. Please refer respective service status or logs for details.\n"
        "All done.\n"
        "GPU reset exit code: 0\n"
    )
    r = parse_reset(text, 0).value
    assert r.reset == ("00000000:0F:00.0", "00000000:D8:00.0")
    assert (r.nvswitches_reset, r.all_done, r.succeeded) == (True, True, True)
    assert r.message.startswith("Note: The operation has successfully reset all GPUs and NVSwitches.")
    assert r.message.endswith("logs for details.")


def test_a_refusal_of_eight_devices_on_one_line_counts_them():
    text = ("8 devices are currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
            "application, graphics application such as an X server, or a monitoring application such as another "
            "instance of nvidia-smi). Please first kill all processes using these devices and all compute "
            "applications running in the system.\n")
    r = parse_reset(text, 255).value
    assert (r.in_use_devices, r.failed, r.succeeded) == (8, (), False)


def test_a_refusal_listing_four_gpus_keeps_each_bus_id_and_reason():
    text = ("The following GPUs could not be reset:\n"
            "  GPU 00000000:01:00.0: In use by another client\n  GPU 00000000:47:00.0: In use by another client\n"
            "  GPU 00000000:81:00.0: In use by another client\n  GPU 00000000:C2:00.0: In use by another client\n\n"
            "4 devices are currently being used by one or more other processes (e.g., Fabric Manager, ...).\n")
    r = parse_reset(text).value
    assert [b for b, _ in r.failed] == ["00000000:01:00.0", "00000000:47:00.0", "00000000:81:00.0",
                                        "00000000:C2:00.0"]
    assert {why for _, why in r.failed} == {"In use by another client"}
    assert r.in_use_devices == 4


def test_the_older_in_use_by_another_process_line_is_a_failure():
    r = parse_reset("GPU 00000000:C1:00.0 is currently in use by another process.\n").value
    assert r.failed == (("00000000:C1:00.0", "In use by another process"),)


def test_a_nonzero_exit_without_a_named_gpu_warns():
    parsed = parse_reset("Insufficient Permissions\n", 4)
    assert parsed.value.succeeded is False
    assert "exited with status 4" in parsed.warnings[0]


def test_persistence_output_maps_each_gpu_to_its_mode_afterwards():
    text = ("Persistence mode is already Enabled for GPU 00000000:0F:00.0.\n"
            "Disabled persistence mode for GPU 00000000:D8:00.0.\n"
            "Enabled Legacy persistence mode for GPU 00000000:1A:00.0.\n"
            "All done.\n")
    parsed = parse_persistence(text)
    assert parsed.value == {"00000000:0F:00.0": True, "00000000:D8:00.0": False, "00000000:1A:00.0": True}
    assert parsed.warnings == ()


# --- lspci --------------------------------------------------------------------------------------


def test_public_iommu_listing_reads_eight_h200s_and_two_nvswitch_bridges():
    parsed = parse_lspci(read(PUBLIC / "nvlink-topo" / "lspci-iommu-h200-hgx-nvswitch-22a3.txt"))
    devices = parsed.value
    assert parsed.warnings == ("Skipped 1 line(s) that are not lspci device lines.",)  # "GPU IOMMU Group List"
    gpus = [d for d in devices if d.vendor_device == "10de:2335"]
    switches = [d for d in devices if d.is_nvswitch]
    assert [d.bus_id for d in gpus] == ["5d:00.0", "3a:00.0", "2a:00.0", "18:00.0", "db:00.0", "ba:00.0",
                                        "ab:00.0", "9a:00.0"]
    assert {(d.cls, d.class_code, d.description, d.driver) for d in gpus} == {
        ("3D controller", "0302", "NVIDIA Corporation GH100 [H200 SXM 141GB]", "nvidia")}
    assert [(d.bus_id, d.cls, d.class_code, d.vendor_device, d.revision, d.driver) for d in switches] == [
        ("05:00.0", "Bridge", "0680", "10de:22a3", "a1", "nvidia-nvswitch"),
        ("06:00.0", "Bridge", "0680", "10de:22a3", "a1", "nvidia-nvswitch"),
    ]
    assert switches[0].description == "NVIDIA Corporation GH100 [H100 NVSwitch]"
    assert switches[0].canonical_bus_id == "00000000:05:00.0"


def test_lspci_dash_d_lines_of_a_board_give_four_nvswitches_by_name():
    text = "".join(f"0000:{b}:00.0 Bridge: NVIDIA Corporation GH100 [H100 NVSwitch] (rev a1)\n"
                   for b in ("05", "06", "07", "08"))
    devices = parse_lspci(text).value
    assert [d.bus_id for d in devices] == ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
    assert all(d.is_nvswitch and d.vendor_device is None and d.cls == "Bridge" for d in devices)


def test_lspci_numeric_lines_and_verbose_detail_lines():
    devices = parse_lspci("05:00.0 0680: 10de:22a3 (rev a1)\n\tSubsystem: NVIDIA Corporation Device 1796\n").value
    assert [(d.bus_id, d.class_code, d.vendor_device, d.revision, d.is_nvswitch) for d in devices] == [
        ("05:00.0", "0680", "10de:22a3", "a1", True)]


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("05:00.0", "00000000:05:00.0"), ("0000:5d:00.0", "00000000:5D:00.0"),
     ("00000000:0F:00.0", "00000000:0F:00.0"), ("not a bus id", None)],
)
def test_any_pci_address_form_has_one_canonical_nvidia_smi_spelling(given, canonical):
    assert canonical_bus_id(given) == canonical
