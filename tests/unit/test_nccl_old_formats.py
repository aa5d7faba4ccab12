"""Issue 35 item 1: nccl-tests in the forms its first builds printed or a paste left are read as nccl-tests: a
failure line with no table ("NCCL failure all_reduce.cu:95 '...'"), the first builds' header (``bytes N type op
... res``), a header that lost its "#", rows with no header, the ``#wrong`` counts of a table cut before its
footer. Lines are the corpus's real ones (tests/corpus/nccl-tests/, each file's source line says where)."""

from __future__ import annotations

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.parsers.nccl_tests import parse_nccl_text


def _read(text: str) -> tuple[str, list[tuple[str, str]]]:
    entry = analyze_text(text, "paste")
    found = entry["findings"] or [f for p in entry.get("parts") or [] for f in p["findings"]]
    return entry["kind"], [(f["code"], f["severity"]) for f in found]


def test_a_failure_line_with_no_table_is_a_failed_run():
    for line in ("NCCL failure common.cu:908 'unhandled cuda error'.\n",
                 "Test CUDA failure common.cu:730 'unknown error'\n"):
        assert _read(line) == ("nccl-tests", [("NVLS_SMOKE_FAILED", "error")])


def test_a_prompt_before_all_reduce_perf_says_its_output_is_nccl_tests():
    text = "$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4\nNCCL failure common.cu:908 'unhandled cuda error'.\n"
    kind, found = _read(text)
    assert kind == "nccl-tests" and ("NVLS_SMOKE_FAILED", "error") in found


def test_the_first_builds_header_is_read_into_columns():
    text = ("nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
            "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
            "           8             2   float     sum    47.60    0.00    0.00  2e-07    47.54    0.00    0.00  2e-07\n")
    parsed = parse_nccl_text(text)
    assert not parsed.warnings or "unrecognised" not in " ".join(parsed.warnings)
    (row,) = parsed.value.rows
    assert row.size == 8 and row.redop == "sum" and row.oop.max_error == 2e-07
    assert parsed.value.ngpus == 8


def test_a_header_without_its_hash_and_a_cut_table_is_a_run_that_did_not_end():
    text = (" nThread 1 nGpus 1 minBytes 8 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 5 validation: 1\n"
            " Using devices\n"
            "  Rank  0 Group  0 Pid    127 on worker-0 device  0 [0x00] NVIDIA A10G\n"
            "       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n")
    assert _read(text) == ("nccl-tests", [("NVLS_SMOKE_FAILED", "warning")])
    assert parse_nccl_text(text).value.devices


def test_rows_without_a_header_cut_before_the_footer_are_a_warning():
    text = ("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
            "           8             2     float     sum      -1    17.08    0.00    0.00      0    16.76    0.00    0.00      0\n")
    assert _read(text) == ("nccl-tests", [("NVLS_SMOKE_FAILED", "warning")])


def test_a_passing_tail_ending_with_the_out_of_bounds_line_is_quiet():
    text = ("    67108864       8388608   float   1568.3   21.40   21.40  0e+00   1560.9   21.50   21.50  0e+00\n"
            "   134217728      16777216   float   3298.6   20.34   20.34  0e+00   3070.3   21.86   21.86  0e+00\n"
            "# Out of bounds values : 0 OK\n")
    assert _read(text) == ("nccl-tests", [])


def test_wrong_counts_in_a_table_cut_before_its_footer_are_wrong_results():
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n"
            "      524288        131072     float     sum      -1    663.1    0.79    0.79  237858    569.4    0.92    "
            "0.92  238038\n")
    kind, found = _read(text)
    assert kind == "nccl-tests" and ("NVLS_SMOKE_FAILED", "error") in found
