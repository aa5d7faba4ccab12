"""The nccl-tests text (streaming) and JSON parsers against the real and public fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.nccl_json import parse_nccl_json, run_to_dict
from nvls_tui.parsers.nccl_tests import (
    FailureEvent,
    FooterEvent,
    HeaderEvent,
    InfoEvent,
    NcclPerf,
    NcclStreamParser,
    RowEvent,
    WarnEvent,
    parse_nccl_text,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL = FIXTURES / "real" / "h200x2-nvswitch"
PUBLIC = FIXTURES / "public" / "nccl-tests"


def read(path: Path) -> str:
    return strip_fixture_header(path.read_text())


G2_TEXT = read(REAL / "all_reduce_perf-g2.txt")
G2_JSON = read(REAL / "all_reduce_perf-g2.json")

# size, count, (oop time, algbw, busbw, wrong), (ip time, algbw, busbw, wrong): every row of the real run.
G2_ROWS = [
    (8388608, 2097152, (50.20, 167.11, 167.11, 0), (49.71, 168.74, 168.74, 0)),
    (16777216, 4194304, (79.91, 209.95, 209.95, 0), (77.60, 216.20, 216.20, 0)),
    (33554432, 8388608, (139.72, 240.16, 240.16, 0), (138.77, 241.80, 241.80, 0)),
    (67108864, 16777216, (250.51, 267.89, 267.89, 0), (250.64, 267.75, 267.75, 0)),
    (134217728, 33554432, (472.29, 284.19, 284.19, 0), (471.30, 284.78, 284.78, 0)),
]

# The incident's failure (incident-writeup.txt), as the vLLM worker logged it.
INCIDENT_BIND_FAILURE = """\
dsv4-flash-baseline-0-vllmworker-3:2736:2736 [0] NCCL INFO Check P2P Type isAllDirectP2p 1 directMode 0 isAllCudaP2p 1
dsv4-flash-baseline-0-vllmworker-3:2736:2736 [0] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to bind \
NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 802 'system not yet initialized'.
This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.
Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.
dsv4-flash-baseline-0-vllmworker-3:2736:2736 [0] NCCL INFO transport/nvls.cc:558 (ncclNvlsSetup) -> 1
(Worker pid=2730) ERROR RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)
"""

HEADER_13 = (
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw"
    "   busbw  #wrong "
)


@pytest.mark.parametrize("index,expected", list(enumerate(G2_ROWS)))
def test_every_row_of_the_real_two_gpu_run_is_read_exactly(index, expected):
    size, count, oop, ip = expected
    row = parse_nccl_text(G2_TEXT).value.rows[index]
    assert (row.size, row.count, row.type, row.redop, row.root) == (size, count, "float", "sum", -1)
    assert row.oop == NcclPerf(*oop)
    assert row.ip == NcclPerf(*ip)
    assert row.timestamp is None


def test_the_real_run_reports_its_header_footer_and_completion():
    parsed = parse_nccl_text(G2_TEXT)
    run = parsed.value
    assert len(run.rows) == 5
    assert run.avg_busbw == 234.857
    assert run.out_of_bounds == 0
    assert run.completed is True
    assert run.errors == () and run.warns == ()
    assert (run.test, run.version, run.nccl_version, run.ngpus) == ("all_reduce_perf", "2.19.6", "2.28.9", 2)
    assert run.devices == (
        "Rank 0 Group 0 Pid 1378 on vm device 0 [0000:00:06] NVIDIA H200",
        "Rank 1 Group 0 Pid 1378 on vm device 1 [0000:00:07] NVIDIA H200",
    )
    assert run.exit_hint is None
    assert run.nvls.used is False and run.nvls.channels is None and run.nvls.bind_error is None
    assert parsed.warnings == ()


def test_feeding_the_real_run_line_by_line_yields_each_row_as_its_line_arrives():
    parser = NcclStreamParser()
    seen_rows = []
    for number, line in enumerate(G2_TEXT.splitlines(keepends=True)):
        for event in parser.feed(line):
            if isinstance(event, RowEvent):
                seen_rows.append((number, event.row.size))
                # The run so far already holds the row and is not yet complete.
                assert parser.run.rows[-1] == event.row
                assert parser.run.completed is False
    assert seen_rows == [(11, 8388608), (12, 16777216), (13, 33554432), (14, 67108864), (15, 134217728)]
    assert parser.finish().completed is True


def test_streaming_reports_header_and_footer_events_in_order():
    parser = NcclStreamParser()
    events = [e for line in G2_TEXT.splitlines() for e in parser.feed(line)]
    headers = [(e.kind, e.value) for e in events if isinstance(e, HeaderEvent)]
    footers = [(e.kind, e.value) for e in events if isinstance(e, FooterEvent)]
    assert headers[:3] == [("version", "2.19.6"), ("test", "all_reduce_perf"), ("ngpus", 2)]
    assert [k for k, _ in headers].count("device") == 2
    assert headers[-1][0] == "columns" and headers[-1][1][:5] == ("size", "count", "type", "redop", "root")
    assert footers == [("out_of_bounds", 0), ("avg_busbw", 234.857), ("concluded", "all_reduce_perf")]


def test_the_json_file_holds_the_same_rows_as_the_text_run():
    text_run = parse_nccl_text(G2_TEXT).value
    parsed = parse_nccl_json(G2_JSON)
    json_run = parsed.value
    assert parsed.warnings == ()
    key = [(r.size, r.count, r.type, r.redop, r.root, r.oop.wrong, r.ip.wrong) for r in text_run.rows]
    assert [(r.size, r.count, r.type, r.redop, r.root, r.oop.wrong, r.ip.wrong) for r in json_run.rows] == key
    # A second run of the same sweep: bandwidths agree within 2 %.
    for t, j in zip(text_run.rows, json_run.rows, strict=True):
        assert j.oop.busbw == pytest.approx(t.oop.busbw, rel=0.02)
        assert j.ip.busbw == pytest.approx(t.ip.busbw, rel=0.02)
    assert json_run.avg_busbw == pytest.approx(text_run.avg_busbw, rel=0.01)


def test_the_json_file_reports_its_own_values():
    run = parse_nccl_json(G2_JSON).value
    first = run.rows[0]
    assert first.oop == NcclPerf(time_us=49.80895, algbw=168.415676, busbw=168.415676, wrong=0)
    assert first.ip == NcclPerf(time_us=49.596, algbw=169.138802, busbw=169.138802, wrong=0)
    assert run.rows[-1].oop.busbw == 283.852387
    assert (run.test, run.ngpus, run.nccl_version, run.version) == ("all_reduce_perf", 2, "2.28.9", None)
    assert (run.avg_busbw, run.out_of_bounds, run.completed, run.errors) == (235.209557, 0, True, ())
    assert run.nvls.used is False  # NCCL_NVLS_ENABLE=0 in the recorded environment
    assert run.devices == ("Rank 0 Group 0 Pid 1399 on vm device 0 [0000:00:06] NVIDIA H200",)


def test_a_cut_off_json_file_still_gives_its_complete_result_entries():
    cut = G2_JSON.index('"size": 33554432')
    parsed = parse_nccl_json(G2_JSON[:cut])
    assert [r.size for r in parsed.value.rows] == [8388608, 16777216]
    assert parsed.value.completed is False
    assert parsed.value.test == "all_reduce_perf" and parsed.value.ngpus == 2
    assert parsed.warnings


def test_run_to_dict_gives_the_contract_shape_with_numbers_as_numbers():
    data = run_to_dict(parse_nccl_text(G2_TEXT).value)
    assert json.loads(json.dumps(data)) == data
    assert data["test"] == "all_reduce_perf" and data["version"] == "2.19.6" and data["ngpus"] == 2
    assert data["rows"][0] == {
        "size": 8388608, "count": 2097152, "type": "float", "redop": "sum", "root": -1,
        "oop": {"time_us": 50.2, "algbw": 167.11, "busbw": 167.11, "wrong": 0},
        "ip": {"time_us": 49.71, "algbw": 168.74, "busbw": 168.74, "wrong": 0},
        "timestamp": None,
    }
    assert (data["avg_busbw"], data["out_of_bounds"], data["completed"], data["errors"]) == (234.857, 0, True, [])
    assert data["nvls"]["channels"] is None and data["nvls"]["multicast_available"] is None


def test_the_incident_bind_failure_is_an_error_with_cuda_error_802():
    run = parse_nccl_text(INCIDENT_BIND_FAILURE).value
    assert run.completed is False
    assert run.nvls.bind_error == 802
    assert any("CUDA error 802 'system not yet initialized'" in e for e in run.errors)
    assert any("NCCL error: unhandled cuda error" in e for e in run.errors)
    assert len(run.warns) == 1 and "nvlsAllocateMem" in run.warns[0]
    assert run.exit_hint.startswith("NVLS multicast bind failed: CUDA error 802")


def test_the_bind_failure_warn_line_gives_warn_and_failure_events():
    parser = NcclStreamParser()
    line = read(PUBLIC / "fail-nvls-bind-401-warn-line.txt").strip()
    events = parser.feed(line)
    assert [type(e) for e in events] == [WarnEvent, FailureEvent]
    run = parser.finish()
    assert run.nvls.bind_error == 401
    assert run.errors == (line,)
    assert run.completed is False
    assert "CUDA error 401 'the operation cannot be performed in the present state'" in run.exit_hint


def test_the_pytorch_ci_bind_failure_without_a_warn_prefix_is_an_error_too():
    run = parse_nccl_text(read(PUBLIC / "fail-nvls-bind-401-pytorch-ci.txt")).value
    assert run.nvls.bind_error == 401
    assert run.completed is False and run.rows == ()
    assert run.nccl_version == "2.29.3"
    assert any(e.startswith("Failed to bind NVLink SHARP") for e in run.errors)
    assert any(e.startswith("ncclUnhandledCudaError") for e in run.errors)


def test_the_unhandled_cuda_error_trailer_fails_the_run_after_an_empty_table():
    parsed = parse_nccl_text(read(PUBLIC / "fail-unhandled-cuda-error-rtx5090.txt"))
    run = parsed.value
    assert run.rows == () and run.completed is False
    assert run.ngpus == 2 and len(run.devices) == 2
    assert run.errors[0].startswith("GENOA-06: Test NCCL failure common.cu:392")
    assert run.errors[1:] == tuple(
        f".. GENOA-06 pid 5068: Test failure {where}"
        for where in ("common.cu:590", "all_reduce.cu:90", "common.cu:623", "common.cu:1078", "common.cu:891")
    )
    assert run.exit_hint == "NCCL failure: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"


def test_the_h800_debug_log_says_nvls_multicast_is_available_on_all_eight_gpus():
    parser = NcclStreamParser()
    infos = [e for line in read(PUBLIC / "h800-nvls-broadcast-debuginfo-head.txt").splitlines()
             for e in parser.feed(line) if isinstance(e, InfoEvent)]
    run = parser.finish()
    assert sum("NVLS multicast support is available" in e.line for e in infos) == 8
    assert run.nvls.multicast_available is True
    assert (run.ngpus, len(run.devices), run.nccl_version) == (8, 8, "2.18.3+cuda12.2")
    assert run.devices[0] == "Rank 0 Group 0 Pid 422771 on nf5688m7-1 device 0 [0x0f] NVIDIA H800"
    assert run.completed is False and run.exit_hint == "no nccl-tests result table was found"


@pytest.mark.parametrize(
    "line,channels,available,used",
    [
        ("h:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 0", None, False, False),
        ("h:1:2 [0] NCCL INFO NVLS comm 0x55d0 headRank 0 nHeads 8 buffSize 4194304", None, None, True),
        ("h:1:2 [0] NCCL INFO Connected NVLS tree", None, None, True),
        ("h:1:2 [0] NCCL INFO 32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels", 16, None,
         True),
        ("h:1:2 [0] NCCL INFO 24 coll channels, 0 collnet channels, 0 nvls channels, 32 p2p channels", 0, None,
         False),
        ("h:1:2 [0] NCCL INFO NCCL_ALGO set by environment to NVLS", None, None, True),
        ("h:1:2 [0] NCCL INFO NCCL_ALGO set by environment to ^NVLS", None, None, False),
    ],
)
def test_nvls_markers_set_channels_availability_and_use(line, channels, available, used):
    nvls = parse_nccl_text(line).value.nvls
    assert (nvls.channels, nvls.multicast_available, nvls.used) == (channels, available, used)


def test_one_gpu_without_multicast_makes_multicast_unavailable():
    text = "\n".join(f"h:1:2 [{d}] NCCL INFO NVLS multicast support is {'' if d else 'not '}available on dev {d}"
                     for d in range(2))
    assert parse_nccl_text(text).value.nvls.multicast_available is False


def test_info_lines_between_rows_do_not_disturb_the_table():
    lines = G2_TEXT.splitlines()
    mixed = []
    for line in lines:
        mixed.append(line)
        if line.startswith("   "):
            mixed.append("vm:1378:1390 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM")
            mixed.append("[2026-06-23 15:45:07] vm:1378:1390 [1] NCCL WARN NET/IB : Got async event")
    run = parse_nccl_text("\n".join(mixed)).value
    assert run.rows == parse_nccl_text(G2_TEXT).value.rows
    assert len(run.warns) == 5 and run.errors == ()
    assert run.completed is True  # a WARN alone is not a failure


def test_the_old_error_column_layout_without_root_is_read_from_its_header():
    text = """\
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
1073741824     268435456     float     sum    79531   13.50   26.58  2e-06    79371   13.53   26.63  2e-06
   104857600      26214400     float     sum   202872    0.52    0.69    N/A   224616    0.47    0.62    N/A
"""
    rows = parse_nccl_text(text).value.rows
    assert rows[0].root is None
    assert rows[0].oop == NcclPerf(time_us=79531.0, algbw=13.5, busbw=26.58, wrong=None, max_error=2e-06)
    assert rows[0].ip.max_error == 2e-06 and rows[0].ip.time_us == 79371.0
    assert rows[1].oop.max_error is None and rows[1].ip.busbw == 0.62


def test_the_oldest_layout_without_redop_is_read_from_its_header():
    text = """\
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
          48             1   float    57.46    0.00    0.00  0e+00    57.40    0.00    0.00  0e+00
"""
    row = parse_nccl_text(text).value.rows[0]
    assert (row.size, row.count, row.type, row.redop, row.root) == (48, 1, "float", "none", None)
    assert row.oop.time_us == 57.46 and row.ip.max_error == 0.0


def test_a_timestamp_column_lands_in_the_row_timestamp():
    text = HEADER_13 + "  timestamp\n" + (
        "     8388608       2097152     float     sum      -1    50.20  167.11  167.11       0    49.71  168.74"
        "  168.74       0  2026-06-23 15:45:07\n"
    )
    row = parse_nccl_text(text).value.rows[0]
    assert row.timestamp == "2026-06-23 15:45:07"
    assert row.ip.wrong == 0 and row.oop.busbw == 167.11


def test_large_times_without_decimals_and_na_wrong_are_read():
    text = HEADER_13 + "\n" + (
        "  8589934592    2147483648     float     sum      -1    13018  659.82  659.82     N/A  12498.7  687.29"
        "  687.29     N/A\n"
    )
    row = parse_nccl_text(text).value.rows[0]
    assert row.oop == NcclPerf(time_us=13018.0, algbw=659.82, busbw=659.82, wrong=None)
    assert row.ip.time_us == 12498.7 and row.ip.wrong is None


def test_rows_without_a_header_are_read_by_their_field_count():
    body = "\n".join(line for line in G2_TEXT.splitlines() if not line.startswith("#"))
    assert parse_nccl_text(body).value.rows == parse_nccl_text(G2_TEXT).value.rows


def test_mpirun_tagged_output_is_read_through_its_prefix():
    tagged = "\n".join(f"[1,0]<stdout>:{line}" for line in G2_TEXT.splitlines())
    run = parse_nccl_text(tagged).value
    assert [r.size for r in run.rows] == [r[0] for r in G2_ROWS]
    assert run.avg_busbw == 234.857 and run.completed is True


def test_out_of_bounds_values_fail_the_run():
    text = G2_TEXT.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    run = parse_nccl_text(text).value
    assert run.out_of_bounds == 3
    assert run.completed is False
    assert run.errors == ("# Out of bounds values : 3 FAILED",)
    assert run.exit_hint == "3 out-of-bounds values (wrong results)"


def test_a_run_cut_off_mid_table_keeps_its_rows_and_says_it_ended_early():
    cut = G2_TEXT.index("   67108864")
    parsed = parse_nccl_text(G2_TEXT[:cut])
    run = parsed.value
    assert [r.size for r in run.rows] == [8388608, 16777216, 33554432]
    assert run.completed is False and run.avg_busbw is None
    assert run.exit_hint == "the output ended before the test concluded"


def test_a_row_cut_mid_line_is_not_misread_with_another_layout():
    cut = G2_TEXT.index("  241.80       0") + 8
    parsed = parse_nccl_text(G2_TEXT[:cut])
    assert [r.size for r in parsed.value.rows] == [8388608, 16777216]
    assert parsed.warnings and "33554432" in parsed.warnings[0]


def test_pty_carriage_returns_and_colour_codes_are_ignored():
    noisy = "\r\n".join("\x1b[0m" + line for line in G2_TEXT.splitlines())
    run = parse_nccl_text(noisy).value
    assert len(run.rows) == 5 and run.avg_busbw == 234.857


def test_feeding_a_chunk_with_several_lines_reports_every_row():
    parser = NcclStreamParser()
    events = parser.feed(G2_TEXT)
    assert [e.row.size for e in events if isinstance(e, RowEvent)] == [r[0] for r in G2_ROWS]
