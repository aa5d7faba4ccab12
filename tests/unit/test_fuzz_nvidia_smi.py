"""Property tests: the nvidia-smi, reset and lspci parsers never raise, whatever is done to real outputs.

Every example starts from a real or public fixture and damages it: a cut at a random point, dropped,
reordered or duplicated lines, injected garbage, random bytes decoded with replacement characters,
numbers swapped for huge values or NaN. For cuts, what stood wholly before the cut is still read.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvls_tui.model import GpuState
from nvls_tui.parsers.base import Parsed, strip_fixture_header
from nvls_tui.parsers.lspci import LspciDevice, parse_lspci
from nvls_tui.parsers.nvidia_smi_csv import (
    QueryCsv,
    driver_from_query,
    gpus_from_query,
    parse_help_query,
    parse_query_csv,
)
from nvls_tui.parsers.nvidia_smi_q import SmiReport, parse_nvidia_smi_q
from nvls_tui.parsers.nvidia_smi_reset import (
    ResetResult,
    parse_persistence,
    parse_reset,
)
from nvls_tui.parsers.nvidia_smi_xml import parse_nvidia_smi_xml

FIXTURES = Path(__file__).parents[1] / "fixtures"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read(relative: str) -> str:
    return strip_fixture_header((FIXTURES / relative).read_text(encoding="utf-8"))


Q_TEXT = read("real/h200x2-nvswitch/nvidia-smi-q.txt")
XML = read("real/h200x2-nvswitch/nvidia-smi-q-x.xml")
XML_PROCS = read("real/h200x2-nvswitch/nvidia-smi-q-x-with-processes.xml")
CSV_FABRIC = read("real/h200x2-nvswitch/query-gpu-fabric.csv")
CSV_APPS = read("real/h200x2-nvswitch/query-compute-apps.csv")
LSPCI = read("public/nvlink-topo/lspci-iommu-h200-hgx-nvswitch-22a3.txt")
RESET_OK = "".join(f"GPU 00000000:{b}:00.0 was successfully reset.\n" for b in ("0F", "1A", "3A", "5D", "8A", "AB",
                                                                                  "BA", "D8"))
RESET_OK += ("Note: The operation has successfully reset all GPUs and NVSwitches. If the services, such as "
             "nvidia-fabricmanager, which manage or monitor NVSwitches are running, they might have been affected "
             "by this operation. Please refer respective service status or logs for details.\nAll done.\n")
ALL = [
    Q_TEXT, XML, XML_PROCS, CSV_FABRIC, CSV_APPS, LSPCI, RESET_OK,
    read("public/nvidia-smi-q/h100-590-q-load-with-processes.txt"),
    read("public/nvidia-smi-csv/h100-590-query-gpu-all-fields.txt"),
    read("public/nvidia-smi-csv/h100-590-help-query-gpu.txt")[:6000],
    read("public/gpu-reset/fail-in-use-by-another-client-nvsentinel.txt"),
    read("public/gpu-reset/success-after-pm0-nvsentinel.txt"),
]
WEIRD_NUMBERS = ["9" * 5000, "nan", "NaN", "inf", "-inf", "1e999", "-1e309", "18446744073709551617", "-0",
                 "0x" + "f" * 400, "1" * 19, "٣", "²"]


def run_every_parser(text: str) -> None:
    """Run each parser on ``text`` and check the shape of what comes back (none may raise)."""
    q = parse_nvidia_smi_q(text)
    x = parse_nvidia_smi_xml(text)
    for parsed in (q, x):
        assert isinstance(parsed, Parsed) and isinstance(parsed.value, SmiReport)
        assert all(isinstance(g, GpuState) and isinstance(g.index, int) for g in parsed.value.gpus)
        assert all(isinstance(w, str) for w in parsed.warnings)
    csv = parse_query_csv(text)
    assert isinstance(csv.value, QueryCsv)
    assert all(isinstance(g, GpuState) for g in gpus_from_query(csv.value))
    driver = driver_from_query(csv.value)
    assert driver is None or isinstance(driver, str)
    assert all(isinstance(f, str) for f in parse_help_query(text).value)
    reset = parse_reset(text, 1)
    assert isinstance(reset.value, ResetResult) and reset.value.exit_status == 1
    assert all(isinstance(v, bool) for v in parse_persistence(text).value.values())
    assert all(isinstance(d, LspciDevice) for d in parse_lspci(text).value)


def ends_of(text: str, pattern: str) -> list[int]:
    """Where each match of ``pattern`` ends."""
    return [m.end() for m in re.finditer(pattern, text, re.MULTILINE)]


# --- truncation: nothing raises, and what came before the cut is still read ---------------------


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(Q_TEXT)))
def test_a_cut_q_text_still_reads_every_gpu_whose_block_ended_before_the_cut(cut):
    full = parse_nvidia_smi_q(Q_TEXT).value.gpus
    starts = [m.start() for m in re.finditer(r"^GPU 0", Q_TEXT, re.MULTILINE)][1:] + [len(Q_TEXT)]
    complete = sum(1 for end in starts if end <= cut)
    parsed = parse_nvidia_smi_q(Q_TEXT[:cut])
    assert parsed.value.gpus[:complete] == full[:complete]
    run_every_parser(Q_TEXT[:cut])


@SETTINGS
@given(source=st.sampled_from([XML, XML_PROCS]), fraction=st.floats(min_value=0, max_value=1))
def test_a_cut_xml_still_reads_every_gpu_element_closed_before_the_cut(source, fraction):
    cut = int(len(source) * fraction)
    full = parse_nvidia_smi_xml(source).value
    complete = sum(1 for end in ends_of(source, r"</gpu>") if end <= cut)
    parsed = parse_nvidia_smi_xml(source[:cut]).value
    assert parsed.gpus[:complete] == full.gpus[:complete]
    done = {g.bus_id for g in full.gpus[:complete]}
    assert [p for p in parsed.processes if p.gpu_bus_id in done] == [p for p in full.processes if p.gpu_bus_id in done]
    if complete:
        assert parsed.driver == "580.159.04"
    run_every_parser(source[:cut])


@SETTINGS
@given(source=st.sampled_from([CSV_FABRIC, CSV_APPS]), data=st.data())
def test_a_cut_csv_still_reads_every_row_that_was_whole(source, data):
    cut = data.draw(st.integers(min_value=0, max_value=len(source)))
    full = parse_query_csv(source).value
    line_ends = [m.start() for m in re.finditer(r"\n", source)]  # each line's end, before its newline
    complete_rows = max(0, sum(1 for end in line_ends if end <= cut) - 1)  # minus the header
    parsed = parse_query_csv(source[:cut]).value
    assert parsed.rows[:complete_rows] == full.rows[:complete_rows]
    run_every_parser(source[:cut])


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(RESET_OK)))
def test_a_cut_reset_output_still_lists_every_gpu_reset_before_the_cut(cut):
    full = parse_reset(RESET_OK).value.reset
    complete = sum(1 for end in ends_of(RESET_OK, r"was successfully reset\.") if end <= cut)
    assert parse_reset(RESET_OK[:cut]).value.reset[:complete] == full[:complete]


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(LSPCI)))
def test_a_cut_lspci_listing_still_reads_every_device_line_that_was_whole(cut):
    full = parse_lspci(LSPCI).value
    complete = sum(1 for end in ends_of(LSPCI, r"\(driver: [^)]*\)$") if end <= cut)
    assert parse_lspci(LSPCI[:cut]).value[:complete] == full[:complete]


# --- damage to lines, garbage, bytes and numbers: nothing raises ----------------------------------


@st.composite
def damaged_lines(draw) -> str:
    """A fixture with lines dropped, reordered or duplicated."""
    lines = draw(st.sampled_from(ALL)).splitlines()
    how = draw(st.sampled_from(["drop", "reorder", "duplicate", "all"]))
    if how in ("drop", "all") and lines:
        dropped = draw(st.sets(st.integers(0, len(lines) - 1), max_size=max(1, len(lines) // 3)))
        lines = [line for i, line in enumerate(lines) if i not in dropped]
    if how in ("reorder", "all"):
        lines = draw(st.permutations(lines))
    if how in ("duplicate", "all") and lines:
        for i in draw(st.lists(st.integers(0, len(lines) - 1), max_size=20)):
            lines.insert(i, lines[i])
    return "\n".join(lines)


@SETTINGS
@given(text=damaged_lines())
def test_dropped_reordered_or_duplicated_lines_never_make_a_parser_raise(text):
    run_every_parser(text)


@SETTINGS
@given(source=st.sampled_from(ALL), data=st.data(),
       garbage=st.one_of(st.text(max_size=200), st.sampled_from(["<!ENTITY x 'y'>", "]]>", "<gpu id=", " : ",
                                                                  "GPU 00000000:00:06.0\n", "Fabric\n", "\x00",
                                                                  "&undefined;", ",,,,\n", "\r\n\t"])))
def test_garbage_injected_anywhere_never_makes_a_parser_raise(source, data, garbage):
    at = data.draw(st.integers(min_value=0, max_value=len(source)))
    run_every_parser(source[:at] + garbage + source[at:])


@SETTINGS
@given(blob=st.binary(max_size=3000))
def test_random_bytes_decoded_with_replacement_never_make_a_parser_raise(blob):
    run_every_parser(blob.decode("utf-8", "replace"))


@SETTINGS
@given(source=st.sampled_from(ALL), blob=st.binary(min_size=1, max_size=300), data=st.data())
def test_non_utf8_bytes_inside_a_real_output_never_make_a_parser_raise(source, blob, data):
    at = data.draw(st.integers(min_value=0, max_value=len(source)))
    run_every_parser(source[:at] + blob.decode("utf-8", "replace") + source[at:])


@SETTINGS
@given(source=st.sampled_from(ALL), data=st.data(), weird=st.sampled_from(WEIRD_NUMBERS))
def test_numbers_replaced_by_huge_values_or_nan_never_make_a_parser_raise(source, data, weird):
    numbers = list(re.finditer(r"\d+(?:\.\d+)?", source))
    picks = data.draw(st.sets(st.integers(0, len(numbers) - 1), min_size=1, max_size=8)) if numbers else set()
    text = source
    for i in sorted(picks, reverse=True):
        m = numbers[i]
        text = text[: m.start()] + weird + text[m.end():]
    run_every_parser(text)


def test_a_minor_number_of_five_thousand_digits_falls_back_to_the_order():
    text = Q_TEXT.replace("Minor Number                                       : 1", "Minor Number : " + "9" * 5000)
    parsed = parse_nvidia_smi_q(text)
    assert [g.index for g in parsed.value.gpus] == [0, 1]
    assert any("minor number" in w for w in parsed.warnings)


def test_a_lone_surrogate_in_the_xml_costs_one_character_not_the_document():
    parsed = parse_nvidia_smi_xml(XML.replace("<driver_version>", "<driver_version>\ud800"))
    assert parsed.value.driver == "\ufffd580.159.04"
    assert [g.bus_id for g in parsed.value.gpus] == ["00000000:00:06.0", "00000000:00:07.0"]
    run_every_parser(Q_TEXT.replace("NVIDIA H200", "\udfffH200"))
