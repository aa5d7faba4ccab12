"""One long line is read in one pass: detection never tries a pattern from every position of a word.

An operator pasted a 200 KB line of brackets (a JSON logger's single line): `analyze` took 221 s,
because NCCL's ``host:pid:tid [dev]`` rule let ``\\S+`` start anywhere inside a word.
"""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.parsers.detect import _RULES, detect_kind

# A bound for a hang, not a latency expectation: the old rule took minutes on these inputs.
BOUND_S = 60
# The rule as it was, to hold the new one to the same answers on short texts.
OLD_NCCL_LOG = re.compile(r"\S+:\d+:\d+ \[\d+\] (?:\S+ )?(?:\(\w+\) )?NCCL (?:WARN|INFO) ", re.M)
NEW_NCCL_LOG = re.compile(r"(?<!\S)\S+:\d+:\d+ \[\d+\] (?:\S+ )?(?:\(\w+\) )?NCCL (?:WARN|INFO) ", re.M)


def test_analyze_reads_a_200_kb_line_of_one_word_within_a_bound(tmp_path):
    words = tmp_path / "one-word.txt"
    words.write_text("A" * 200_000 + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    try:
        done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "analyze", "--json", str(words)],
                              capture_output=True, text=True, timeout=BOUND_S, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"analyze of one long line did not end within {BOUND_S} s") from None
    assert done.returncode == 1 and '"kind": "unknown"' in done.stdout, done.stderr[-2000:]


def test_the_nccl_rule_in_detect_is_the_anchored_one():
    nccl = next(p for k, p in _RULES if k == "nccl-tests").pattern  # the first: later ones read old forms
    assert NEW_NCCL_LOG.pattern in nccl and OLD_NCCL_LOG.pattern not in nccl.replace(NEW_NCCL_LOG.pattern, "")


def test_a_real_nccl_log_line_behind_a_rank_tag_is_still_nccl():
    assert detect_kind("[rank3]: gpu05:12345:12400 [3] NCCL INFO NVLS multicast support is available\n") == "nccl-tests"
    assert detect_kind("[rank3]:gpu05:12345:12400 [3] NCCL WARN Failed\n") == "nccl-tests"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "gpu05", ":12", ":1", " ", "[0]", "[rank1]:", "NCCL", " WARN ", " INFO ",
                                  "(x) ", "\n", "\t", "-"]), max_size=24).map("".join))
def test_the_anchored_rule_finds_a_line_exactly_when_the_old_one_did(text):
    # A match of \S+ from inside a word is also a match from the word's start: the answers are the same.
    assert bool(NEW_NCCL_LOG.search(text)) == bool(OLD_NCCL_LOG.search(text))
