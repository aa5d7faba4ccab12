"""``analyze`` on mutated real outputs: nothing escapes, the JSON always parses, and what can be read is read.

The parsers' own fuzz tests (test_fuzz_parsers.py, test_fuzz_nvidia_smi.py) call the parsers; these go
one level up, through recognition (``analyze_text``) and through the command itself (``nvls-tui
analyze FILE --json``, in-process), with bytes that are not UTF-8 written to real files.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
SOURCES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".txt", ".xml", ".csv", ".json"))
RAW = {p.name: p.read_bytes() for p in SOURCES}
NAMES = sorted(RAW)
NCCL = (FIXTURES / "real" / "h200x2-nvswitch" / "all_reduce_perf-g2.txt").read_text()
SMI_Q = (FIXTURES / "real" / "h200x2-nvswitch" / "nvidia-smi-q.txt").read_text()
SMI_XML = (FIXTURES / "real" / "h200x2-nvswitch" / "nvidia-smi-q-x.xml").read_text()
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INFO_LINES = [
    "vm:1378:1390 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read",
    "gpu05:951:951 [0] NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
    "gpu05:951:951 [0] NCCL INFO NCCL_ALGO set by environment to NVLS",
]
WEIRD = ["nan", "NaN", "-nan", "inf", "-inf", "1e400", "9" * 300, "-1", "N/A", "1.2.3", "", "\u00b2"]
# An integer too large for a float (310+ digits) in a perf column: see the test at the end.
HUGE_INT = "9" * 4000
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_TMP = tempfile.TemporaryDirectory(prefix="nvls-fuzz-analyze-")  # hypothesis and function fixtures do not mix


def _strict_json(text: str):
    """json.loads that refuses NaN and Infinity (not JSON: jq and browsers reject them)."""
    def refuse(word: str):
        raise AssertionError(f"{word} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def mutate(raw: bytes, data) -> bytes:
    """Apply a few random mutations of the kinds real captures suffer (cut, lost, shuffled, mixed-in)."""
    lines = raw.split(b"\n")
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        how = data.draw(st.sampled_from(["truncate", "drop", "swap-columns", "inject-info", "weird-number",
                                         "non-utf8", "duplicate"]), label="how")
        if not lines:
            break
        at = data.draw(st.integers(0, max(0, len(lines) - 1)), label="line")
        if how == "truncate":
            text = b"\n".join(lines)
            lines = text[:data.draw(st.integers(0, len(text)), label="cut")].split(b"\n")
        elif how == "drop":
            del lines[at]
        elif how == "swap-columns":
            words = lines[at].split()
            if len(words) > 1:
                i, j = data.draw(st.permutations(range(len(words))), label="order")[:2]
                words[i], words[j] = words[j], words[i]
                lines[at] = b"  ".join(words)
        elif how == "inject-info":
            lines.insert(at, data.draw(st.sampled_from(INFO_LINES)).encode())
        elif how == "weird-number":
            weird = data.draw(st.sampled_from(WEIRD), label="weird").encode()
            lines[at] = re.sub(rb"\d+(?:\.\d+)?", lambda m, weird=weird: weird, lines[at], count=1)
        elif how == "non-utf8":
            blob = data.draw(st.binary(min_size=1, max_size=8), label="blob")
            col = data.draw(st.integers(0, len(lines[at])), label="col")
            lines[at] = lines[at][:col] + b"\xff\xfe" + blob + lines[at][col:]
        else:
            lines.insert(at, lines[at])
    return b"\n".join(lines)


def check_entry(entry: dict, name: str) -> None:
    """The shape contract.md promises for one analyzed file, whatever the input."""
    assert entry["file"] == name
    assert isinstance(entry["kind"], str) and isinstance(entry["data"], dict)
    assert isinstance(entry["findings"], list)
    for finding in entry["findings"]:
        assert finding["severity"] in ("error", "warning", "info") and finding["code"] and finding["message"]
    if entry["kind"] == "unknown":
        assert entry["error"]
    _strict_json(json.dumps(entry))


@FUZZ
@given(name=st.sampled_from(NAMES), data=st.data())
def test_analyze_text_never_raises_on_mutated_fixtures_and_its_entry_is_strict_json(name, data):
    raw = mutate(RAW[name], data)
    entry = analyze_text(raw.decode("utf-8", errors="replace"), name)
    check_entry(entry, name)
    assert "error" not in entry or entry["kind"] == "unknown", entry.get("error")  # no parser crashed


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``nvls-tui ARGV`` in-process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@FEW
@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), data=st.data())
def test_the_analyze_command_on_mutated_files_exits_0_1_or_2_and_always_prints_json(names, data):
    paths = []
    for index, name in enumerate(names):
        path = Path(_TMP.name) / f"{index}-{name}"
        path.write_bytes(mutate(RAW[name], data))
        paths.append(str(path))
    code, out, err = run_cli("analyze", *paths, "--json")
    assert code in (0, 1, 2)
    entries = _strict_json(out)
    assert [e["file"] for e in entries] == paths
    for entry, path in zip(entries, paths, strict=True):
        check_entry(entry, path)
    assert "Traceback" not in err and "internal error" not in err


def test_a_file_that_cannot_be_opened_exits_2_with_one_line_and_the_others_still_print(tmp_path):
    good = tmp_path / "nccl.txt"
    good.write_text(NCCL)
    code, out, err = run_cli("analyze", str(tmp_path / "missing.txt"), str(good), "--json")
    assert code == 2
    assert [e["kind"] for e in _strict_json(out)] == ["nccl-tests"]
    assert err.count("\n") == 1 and "cannot read" in err and "missing.txt" in err


def _row_ends(text: str) -> list[int]:
    """Where each nccl-tests data row ends (after its newline)."""
    return [m.end() for m in re.finditer(r"^\s+\d+\s+\d+\s+\w+\s+\w+.*\n", text, re.MULTILINE)]


@FUZZ
@given(data=st.data())
def test_an_nccl_log_cut_after_its_third_row_still_gives_every_whole_row(data):
    ends = _row_ends(NCCL)
    cut = data.draw(st.integers(ends[2], len(NCCL)), label="cut")
    noise = data.draw(st.sampled_from(["", "\n" + INFO_LINES[0] + "\n", "\xff\xfe garbage"]), label="noise")
    entry = analyze_text(NCCL[:cut] + noise, "cut.txt")
    whole = sum(1 for end in ends if end <= cut)
    assert entry["kind"] == "nccl-tests"
    rows = entry["data"]["rows"]
    assert len(rows) >= whole >= 3
    assert [r["size"] for r in rows[:3]] == [8388608, 16777216, 33554432]
    assert rows[0]["oop"]["busbw"] == 167.11
    if cut < len(NCCL.rstrip()):
        assert entry["data"]["completed"] is False or whole == len(ends)


@FUZZ
@given(data=st.data())
def test_an_nccl_log_with_info_lines_between_rows_keeps_every_row(data):
    lines = NCCL.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 6), label="how many")):
        at = data.draw(st.integers(0, len(lines)), label="where")
        lines.insert(at, data.draw(st.sampled_from(INFO_LINES)) + "\n")
    entry = analyze_text("".join(lines), "info.txt")
    assert entry["kind"] == "nccl-tests"
    assert [r["size"] for r in entry["data"]["rows"]] == [8388608 * 2**i for i in range(5)]
    assert entry["data"]["avg_busbw"] == 234.857


@FUZZ
@given(data=st.data())
def test_nvidia_smi_q_cut_after_gpu_0s_block_still_gives_gpu_0(data):
    second = [m.start() for m in re.finditer(r"^GPU 0", SMI_Q, re.MULTILINE)][1]
    cut = data.draw(st.integers(second, len(SMI_Q)), label="cut")
    entry = analyze_text(SMI_Q[:cut], "q.txt")
    assert entry["kind"] == "nvidia-smi-q"
    gpu0 = entry["data"]["gpus"][0]
    assert gpu0["bus_id"] == "00000000:00:06.0" and gpu0["name"] == "NVIDIA H200"
    assert gpu0["fabric"]["state"] == "Completed"


@FUZZ
@given(data=st.data())
def test_nvidia_smi_xml_cut_after_the_first_gpu_element_still_gives_gpu_0(data):
    first_close = SMI_XML.index("</gpu>") + len("</gpu>")
    cut = data.draw(st.integers(first_close, len(SMI_XML)), label="cut")
    entry = analyze_text(SMI_XML[:cut], "q.xml")
    assert entry["kind"] == "nvidia-smi-q-xml"
    assert entry["data"]["gpus"][0]["bus_id"] == "00000000:00:06.0"


@FEW
@given(weird=st.sampled_from(WEIRD), data=st.data())
def test_huge_or_nan_bandwidths_never_reach_the_json_as_nan_or_infinity(weird, data):
    lines = NCCL.splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if re.match(r"^\s+\d+\s+\d+\s+float", line)]
    at = data.draw(st.sampled_from(rows), label="row")
    words = lines[at].split()
    column = data.draw(st.integers(5, len(words) - 1), label="column")
    words[column] = weird
    lines[at] = "  ".join(words) + "\n"
    entry = analyze_text("".join(lines), "weird.txt")
    check_entry(entry, "weird.txt")
    assert entry["kind"] == "nccl-tests" and len(entry["data"]["rows"]) >= 4


def test_a_bandwidth_with_four_thousand_digits_loses_that_value_not_the_whole_file():
    lines = NCCL.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if re.match(r"^\s+\d+\s+\d+\s+float", line))
    words = lines[at].split()
    words[7] = HUGE_INT  # the out-of-place busbw of the first row
    lines[at] = "  ".join(words) + "\n"
    entry = analyze_text("".join(lines), "huge.txt")
    assert "error" not in entry, entry.get("error")
    assert [r["size"] for r in entry["data"]["rows"]][1:] == [16777216, 33554432, 67108864, 134217728]


def test_a_superscript_digit_where_a_number_goes_is_no_crash():
    """hypothesis found it (the suite branch's runs): '²' is a digit to str.isdigit but no number to int(), so a
    probe output with it in an end marker's status raised ValueError. Numbers are read with isdecimal now."""
    fixture = Path(__file__).parents[1] / "fixtures" / "real" / "nvidia-h200" / "probe-output-2026-12-02.txt"
    text = fixture.read_text().replace("@@nvls-tui-device end gpus 0", "@@nvls-tui-device end gpus ²", 1)
    assert "@@nvls-tui-device end gpus ²" in text
    entry = analyze_text(text, "probe.txt")
    assert entry["kind"] == "nvls-tui-probe" and "error" not in entry
    assert any(m["section"] == "gpus" for m in entry["data"].get("missing") or [])  # its status unread: unknown
