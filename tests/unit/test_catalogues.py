"""NVIDIA's catalogues as data (issue 35, item 3): every Xid is read through NVIDIA's Xid catalogue.

Severity and the next move come from the catalogue's immediate-action bucket: RESTART_APP is the application's
fault (a warning at most), RESET_GPU / DRAIN_AND_RESET are errors whose move is the reset, CONTACT_SUPPORT /
CHECK_MECHANICALS errors whose move is a hardware ticket (a reset will not fix them). A driver line that itself
orders an action (Xid 154's "Drain and Reset", an uncontained error's "RST: Yes") is never a warning.
"""

from __future__ import annotations

import pytest

from nvls_tui import catalogues
from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis import kernel_findings
from nvls_tui.model import NodeState, Severity
from nvls_tui.parsers.kernel_log import FM_NOT_PRESENT, OUT_OF_SYNC, parse_kernel_log


def xid_findings(text: str):
    state = NodeState(host="gpu05", kernel_events=parse_kernel_log(text).value)
    return [f for f in kernel_findings(state) if f.code == "XID"]


# ---- the data files -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", catalogues.FILES)
def test_each_catalogue_names_its_source_and_version(name):
    header = " ".join(catalogues.source(name))
    assert "source:" in header and "version:" in header and "https://" in header


def test_the_xid_catalogue_holds_nvidias_rows():
    xids = catalogues.xids()
    assert sorted(xids) == list(range(1, 173))
    assert xids[95].mnemonic == "ROBUST_CHANNEL_UNCONTAINED_ERROR" and xids[95].immediate == "RESET_GPU"
    assert xids[13].immediate == "RESTART_APP" and xids[54].immediate == "CHECK_MECHANICALS"
    assert xids[79].immediate == "RESTART_BM" and xids[74].applies_to("H100") and not xids[74].applies_to("B100")
    assert xids[136].applies_to("H200") and not xids[136].applies_to("A100")  # H200 reads H100's column


def test_every_bucket_the_catalogue_uses_has_a_reading():
    used = {e.immediate for e in catalogues.xids().values()} | {a.bucket for a in catalogues.recovery_actions()}
    assert used - {""} <= set(catalogues.BUCKETS)


def test_the_driver_status_codes_are_the_parser_s():
    assert catalogues.nv_status(OUT_OF_SYNC).code == 0x87
    assert catalogues.nv_status(FM_NOT_PRESENT).code == 0x7A
    assert catalogues.nv_status(0x87).name == OUT_OF_SYNC
    assert catalogues.nv_status("NV_ERR_NOT_A_CODE") is None


def test_recovery_actions_are_read_from_the_driver_s_words():
    assert catalogues.action_named_in("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)").bucket \
        == "DRAIN_AND_RESET"
    assert catalogues.action_named_in("GPU recovery action changed from 0x4 (Drain and Reset) to 0x0 (None)").name \
        == "NONE"
    assert catalogues.action_named_in("95, pid=7062, Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No").bucket \
        == "RESET_GPU"
    assert catalogues.action_named_in("13, pid=1, Graphics Exception") is None


# ---- acceptance: every Xid NVIDIA marks for H100 or H200 is a finding with NVIDIA's immediate action ------------
HOPPER = sorted(code for code, e in catalogues.xids().items() if e.applies_to("H100") or e.applies_to("H200"))


@pytest.mark.parametrize("code", HOPPER)
def test_every_hopper_xid_is_a_finding_with_nvidia_s_immediate_action(code):
    entry = catalogues.xid(code)
    words = "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" if code == 154 else "pid=1, x"
    (finding,) = xid_findings(f"kernel: NVRM: Xid (PCI:0000:5a:00): {code}, {words}\n")
    expected = "RESET_GPU" if entry.immediate == "XID_154" else entry.immediate
    reading = catalogues.bucket(expected)
    assert finding.action == (expected or None)
    assert finding.severity is Severity(reading.severity)
    assert finding.next_move == reading.move
    assert finding.message.startswith(f"Xid {code} on 0000:5a:00") and entry.mnemonic in finding.message


# ---- the buckets, one by one -------------------------------------------------------------------------------
def test_a_restart_app_xid_is_the_application_s_fault_a_warning():
    (finding,) = xid_findings("kernel: NVRM: Xid (PCI:0000:cb:00): 13, pid=1, name=python, Graphics SM Warp Exception\n")
    assert finding.severity is Severity.WARNING and finding.action == "RESTART_APP"
    assert "application" in finding.message and "not the fabric" in finding.message


def test_an_ignore_xid_is_information():
    (finding,) = xid_findings("kernel: NVRM: Xid (PCI:0000:cb:00): 43, pid=1, name=python, Ch 00000010\n")
    assert finding.severity is Severity.INFO and finding.action == "IGNORE"


@pytest.mark.parametrize(("code", "bucket"), [(54, "CHECK_MECHANICALS"), (93, "IGNORE"), (46, "RESET_GPU"), (79, "RESTART_BM")])
def test_hardware_buckets_name_their_move(code, bucket):
    (finding,) = xid_findings(f"kernel: NVRM: Xid (PCI:0000:cb:00): {code}, pid=1, x\n")
    assert finding.action == bucket


def test_contact_support_is_an_error_whose_move_is_a_ticket_not_a_reset():
    (finding,) = xid_findings("kernel: NVRM: Xid (PCI:0000:cb:00): 54, pid=1, Auxiliary power is not connected\n")
    assert finding.severity is Severity.ERROR
    assert "hardware ticket" in finding.next_move and "reset will not fix" in finding.next_move


# The line the issue cites: an uncontained ECC error (Xid 95, NVIDIA: RESET_GPU) read as a warning. The line is the
# driver's own format, quoted in open-gpu-kernel-modules (src/nvidia/src/kernel/gpu/... error containment comment).
UNCONTAINED = "kernel: NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No\n"
# Xid 154 naming Drain and Reset (the catalogue's Xid 154 row gives this form of the line).
DRAIN = "kernel: NVRM: Xid (PCI:0000:97:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)\n"


def test_an_uncontained_ecc_error_is_an_error_with_the_reset_as_next_move():
    (finding,) = xid_findings(UNCONTAINED)
    assert finding.severity is Severity.ERROR and finding.action == "RESET_GPU"
    assert "ROBUST_CHANNEL_UNCONTAINED_ERROR" in finding.message and "reset" in finding.next_move


def test_a_line_that_orders_drain_and_reset_is_never_a_warning():
    (finding,) = xid_findings(DRAIN)
    assert finding.severity is Severity.ERROR and finding.action == "DRAIN_AND_RESET"
    assert "Drain and Reset" in finding.message


def test_the_driver_s_order_outranks_a_milder_bucket():
    # Xid 13 is RESTART_APP in the catalogue; a line of it that orders a drain and reset is an error all the same.
    (finding,) = xid_findings("kernel: NVRM: Xid (PCI:0000:cb:00): 13, pid=1, Graphics Exception. RST: Yes, D-RST: Yes\n")
    assert finding.severity is Severity.ERROR and finding.action == "DRAIN_AND_RESET"


def test_xid_154_back_to_none_is_information():
    (finding,) = xid_findings(
        "kernel: NVRM: Xid (PCI:0000:97:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x0 (None)\n")
    assert finding.severity is Severity.INFO and finding.action == "IGNORE"


def test_an_xid_the_catalogue_does_not_list_is_still_a_finding_with_its_number_and_words():
    (finding,) = xid_findings("kernel: NVRM: Xid (PCI:0000:cb:00): 999, pid=1, Something new from a later driver\n")
    assert finding.severity is Severity.WARNING and finding.action is None
    assert "Xid 999" in finding.message and "Something new from a later driver" in finding.message
    assert "not in NVIDIA's Xid catalogue" in finding.message


def test_analyze_gives_the_action_in_its_json():
    result = analyze_text(UNCONTAINED + DRAIN, "paste.txt")
    xids = [f for f in result["findings"] if f["code"] == "XID"]
    assert [(f["severity"], f["action"]) for f in xids] == [("error", "RESET_GPU"), ("error", "DRAIN_AND_RESET")]
    assert all(f["next_move"] for f in xids)


def test_the_story_line_says_nvidia_s_move_not_check_the_nvlink():
    from nvls_tui.diagnosis import diagnose
    from nvls_tui.diagnosis.story import node_story

    state = NodeState(host="gpu05", kernel_events=parse_kernel_log(UNCONTAINED).value)
    story = node_story(state, diagnose(state)).text.partition(" (+")[0]  # the bare state also misses sections
    assert story == "Xid 95 on 0000:01:00: reset the GPU (the repair's reset)"
    ticket = NodeState(host="gpu05", kernel_events=parse_kernel_log(
        "kernel: NVRM: Xid (PCI:0000:cb:00): 54, pid=1, Auxiliary power is not connected\n").value)
    assert node_story(ticket, diagnose(ticket)).text.partition(" (+")[0].endswith(
        "open a hardware ticket: a GPU reset will not fix it")


# An NVSwitch SXid says itself whether it is fatal. Lines as a public dataset of H100 HGX kernel logs quotes them
# (LHRS-UM-FERI/MENTHOS-dataset-rootcause on Hugging Face); the non-fatal one is the shared capture's 22013.
SXID_FATAL = ("[  912.110000] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Fatal, Link 28 LTSSM Fault Up\n"
              "[  912.110100] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Severity 1 Engine instance 28 "
              "Sub-engine instance 00\n")
SXID_NON_FATAL = "[   25.948274] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 Minion Link DLREQ interrupt\n"


def test_a_fatal_sxid_is_an_error_whose_move_is_the_repair_and_a_non_fatal_one_a_warning():
    (fatal,) = xid_findings(SXID_FATAL)  # the "Severity 1 Engine ..." line after it is the same event
    assert fatal.severity is Severity.ERROR and fatal.message.startswith("SXid 20034 on 0000:c2:00.0 (2 lines)")
    assert "reset every GPU and NVSwitch" in fatal.next_move
    (non_fatal,) = xid_findings(SXID_NON_FATAL)
    assert non_fatal.severity is Severity.WARNING


def test_an_xid_line_without_the_pci_word_is_read_through_the_catalogue_too():
    # The form NVIDIA's Xid catalogue itself gives as an example ("NVRM: Xid (0000:03:00): 14, Channel 00000001").
    (finding,) = xid_findings("NVRM: Xid (0000:03:00): 14, Channel 00000001\n")
    assert finding.message.startswith("Xid 14 on 0000:03:00 — ROBUST_CHANNEL_FAKE_ERROR") and finding.action == "IGNORE"


# ---- the SXid catalogue (issue 35 item 3/7) -------------------------------------------------------------
def test_the_sxid_catalogue_holds_the_driver_enum_codes_and_names():
    assert "sxid.csv" in catalogues.FILES
    sxids = catalogues.sxids()
    assert sxids[22013].name == "MINION_NONFATAL" and sxids[22013].unit.startswith("MINION")
    assert sxids[12028].name == "NPORT_EGRESS_PRIVRSPERR"
    assert sxids[10001].name == "HOST_PRIV_ERROR"
    assert catalogues.sxid(99999) is None and catalogues.sxid(None) is None


def test_a_listed_sxid_is_read_with_its_name_and_the_lines_word():
    (non_fatal,) = xid_findings(SXID_NON_FATAL)
    assert non_fatal.severity is Severity.WARNING
    assert "MINION_NONFATAL" in non_fatal.message and "Non-fatal" in non_fatal.message


def test_a_correctable_sxid_is_info_and_a_fatal_one_an_error_naming_it():
    line = "[   30.1] nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Correctable, Link 04 egress non-posted PRIV error\n"
    (finding,) = xid_findings(line)
    assert finding.severity is Severity.INFO and "NPORT_EGRESS_PRIVRSPERR" in finding.message
    (fatal,) = xid_findings(SXID_FATAL)
    assert "Fatal" in fatal.message


def test_an_sxid_the_catalogue_does_not_list_is_still_a_finding_with_its_number_and_words():
    line = "nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 41234, Non-fatal, Link 02 something new\n"
    (finding,) = xid_findings(line)
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("SXid 41234 on 0000:07:00.0")
    assert "not in the SXid catalogue" in finding.message and "something new" in finding.message
    fatal = line.replace("Non-fatal", "Fatal")
    (finding,) = xid_findings(fatal)
    assert finding.severity is Severity.ERROR


# ---- the Fabric Manager guide's SXid tables (issue 35 item 3) ---------------------------------------------
def test_the_sxid_catalogue_holds_the_fm_guides_table_and_recovery_with_its_source():
    sxids = catalogues.sxids()
    assert (sxids[12028].fm_guide, sxids[12028].fm_recovery) == ("non-fatal", "reset")
    assert (sxids[20034].fm_guide, sxids[20034].fm_recovery) == ("fatal", "reset")
    assert (sxids[23001].fm_guide, sxids[23001].fm_recovery) == ("always-fatal", "reboot")
    assert (sxids[22013].fm_guide, sxids[22013].fm_recovery) == ("non-fatal", "none")
    assert sxids[10000].fm_guide == ""  # the guide lists no such code
    assert any("DU-09883-001_v1.3" in line for line in catalogues.source("sxid.csv"))


def test_an_sxid_line_without_its_weight_word_is_weighed_by_the_fm_guides_table():
    # gpud's dmesg -x sample (tests/corpus/kernel/sxid-12028-dmesg-x-iso-gpud-338.txt): a Data line, no word.
    data = "nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a, 0x00000500}\n"
    (finding,) = xid_findings(data)
    assert finding.severity is Severity.ERROR and "reset every GPU and NVSwitch" in finding.next_move
    assert "Fabric Manager guide lists it non-fatal" in finding.message
    # A code whose guide recovery is none stays a warning; the line's own word still comes first.
    (ecc,) = xid_findings(data.replace("12028", "12021"))
    assert ecc.severity is Severity.WARNING
    (correctable,) = xid_findings(data.replace("Data", "Correctable, Data"))
    assert correctable.severity is Severity.INFO
