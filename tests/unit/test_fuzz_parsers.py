"""Mutated real outputs: no parser raises, and what came before a cut is still read."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.fabricmanager_log import parse_fm_log, parse_fm_version
from nvls_tui.parsers.fuser import parse_fuser_streams, parse_fuser_terse, parse_fuser_v
from nvls_tui.parsers.holders import build_holders, classify, unit_and_pod
from nvls_tui.parsers.kernel_log import parse_kernel_log
from nvls_tui.parsers.nccl_json import parse_nccl_json, run_to_dict
from nvls_tui.parsers.nccl_tests import NcclStreamParser, parse_nccl_text
from nvls_tui.parsers.ps import parse_proc_stat, parse_ps, parse_ps_cgroups
from nvls_tui.parsers.systemctl import parse_show, parse_status_details

FIXTURES = Path(__file__).parents[1] / "fixtures"
FILES = sorted(
    [
        *(FIXTURES / "real" / "h200x2-nvswitch").glob("all_reduce_perf-g2.*"),
        *(FIXTURES / "real" / "h200x2-nvswitch").glob("fuser-*"),
        FIXTURES / "real" / "h200x2-nvswitch" / "proc-pid-stat.txt",
        *(FIXTURES / "public" / "nccl-tests").glob("*.txt"),
        *(FIXTURES / "public" / "fabricmanager").glob("*.txt"),
        *(FIXTURES / "public" / "device-holders").glob("*.txt"),
        *(FIXTURES / "public" / "kernel-log").glob("*.txt"),
    ]
)
TEXTS = [strip_fixture_header(p.read_text()) for p in FILES]
G2_TEXT = strip_fixture_header((FIXTURES / "real" / "h200x2-nvswitch" / "all_reduce_perf-g2.txt").read_text())
G2_JSON = (FIXTURES / "real" / "h200x2-nvswitch" / "all_reduce_perf-g2.json").read_text()
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ODD_NUMBERS = ["nan", "NaN", "-nan", "inf", "-inf", "1e400", "9" * 5000, "-1", "0x1f", "N/A", "1.2.3", "", "²"]
INFO_LINE = "vm:1378:1390 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read"


def run_every_parser(text: str) -> None:
    """Call every parser of this suite on ``text``; each must return, never raise."""
    nccl = parse_nccl_text(text)
    json.dumps(run_to_dict(nccl.value))
    parsed_json = parse_nccl_json(text)
    json.dumps(run_to_dict(parsed_json.value))
    parser = NcclStreamParser()
    for line in text.splitlines():
        parser.feed(line)
        assert parser.run.rows == tuple(parser.run.rows)
    parser.finish()
    parse_status_details(text)
    parse_show(text)
    fuser = parse_fuser_v(text)
    parse_fuser_terse(text, text)
    parse_fuser_streams(text, text)
    parse_fuser_streams(" ".join(str(n) for n in range(2000)) + " x", text)  # linear time, even when it fails
    ps = parse_ps(text)
    parse_ps_cgroups(text)
    parse_proc_stat(text)
    parse_kernel_log(text)
    parse_fm_log(text)
    parse_fm_version(text)
    build_holders(fuser.value, ps.value)
    for line in text.splitlines()[:50]:
        classify(line)
        unit_and_pod(line)


@st.composite
def mutated(draw) -> str:
    """A real fixture put through a few random edits."""
    lines = draw(st.sampled_from(TEXTS)).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["drop", "reorder", "duplicate", "swap", "inject", "number", "garbage", "bytes"]))
        if not lines:
            lines = [""]
        at = draw(st.integers(0, len(lines) - 1))
        if op == "drop":
            del lines[at]
        elif op == "reorder":
            lines = draw(st.permutations(lines))
        elif op == "duplicate":
            lines.insert(at, lines[at])
        elif op == "swap":
            words = lines[at].split()
            if len(words) >= 2:
                i, j = draw(st.integers(0, len(words) - 1)), draw(st.integers(0, len(words) - 1))
                words[i], words[j] = words[j], words[i]
                lines[at] = "  ".join(words)
        elif op == "inject":
            lines.insert(at, INFO_LINE)
        elif op == "number":
            odd = draw(st.sampled_from(ODD_NUMBERS))
            lines[at] = re.sub(r"\d+(?:\.\d+)?", lambda m, odd=odd: odd if draw(st.booleans()) else m.group(0), lines[at])
        elif op == "garbage":
            lines.insert(at, draw(st.text(max_size=200)))
        else:
            raw = draw(st.binary(max_size=200))
            lines.insert(at, raw.decode("utf-8", errors="replace"))
    text = "\n".join(lines)
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


@FUZZ
@given(mutated())
def test_no_parser_raises_on_mutated_real_outputs(text):
    run_every_parser(text)


@FUZZ
@given(st.text(max_size=2000))
def test_no_parser_raises_on_random_text(text):
    run_every_parser(text)


@FUZZ
@given(st.binary(max_size=2000))
def test_no_parser_raises_on_non_utf8_bytes_decoded_with_replace(raw):
    run_every_parser(raw.decode("utf-8", errors="replace"))


FULL_ROWS = parse_nccl_text(G2_TEXT).value.rows
ROW_ENDS = [m.end() for m in re.finditer(r"^ +\d+ .*\n", G2_TEXT, re.M)]


@FUZZ
@given(st.integers(0, len(G2_TEXT)))
def test_rows_before_a_truncation_point_are_still_read(cut):
    complete = sum(1 for end in ROW_ENDS if end <= cut)
    rows = parse_nccl_text(G2_TEXT[:cut]).value.rows
    assert rows[:complete] == FULL_ROWS[:complete]
    # A row whose newline was cut but whose last field is whole may be read too; nothing more.
    assert len(rows) in (complete, complete + 1)


FULL_JSON_ROWS = parse_nccl_json(G2_JSON).value.rows
RESULT_ENDS = [m.end() for m in re.finditer(r'"experiment_name": ""\n  }', G2_JSON)]


@FUZZ
@given(st.integers(0, len(G2_JSON)))
def test_json_results_before_a_truncation_point_are_still_read(cut):
    complete = sum(1 for end in RESULT_ENDS if end <= cut)
    rows = parse_nccl_json(G2_JSON[:cut]).value.rows
    assert rows == FULL_JSON_ROWS[:complete]


@FUZZ
@given(st.lists(st.sampled_from([INFO_LINE, "garbage ###", "", "h:1:2 [0] NCCL WARN something"]), max_size=20),
       st.data())
def test_lines_injected_between_rows_leave_every_row_intact(extra, data):
    lines = G2_TEXT.splitlines()
    for line in extra:
        lines.insert(data.draw(st.integers(0, len(lines))), line)
    assert parse_nccl_text("\n".join(lines)).value.rows == FULL_ROWS
