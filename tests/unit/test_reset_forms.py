"""``nvidia-smi -r`` however its words reach the operator: in journal lines (a real journal file read back
with the real journalctl), in mig-parted's logs (escaped newlines, its own level tags), in a transcript
of several runs, and shortened by hand (the GPU list cut, only the summary line kept).

The texts are real public captures (tests/fixtures/reset/, tests/fixtures/public/gpu-reset/) or nvidia-smi's
own lines as those captures print them; the shortened forms are cut from them here, as an operator does.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.detect import detect_kind
from nvls_tui.parsers.nvidia_smi_reset import parse_reset

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
RESET = FIXTURES / "reset"
JOURNAL_REMOTE = pathlib.Path("/lib/systemd/systemd-journal-remote")


def text(path: pathlib.Path) -> str:
    return strip_fixture_header(path.read_text())


def codes(entry: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in entry["findings"]]


# ---- mig-parted's logs -----------------------------------------------------------------------------

def test_mig_parted_s_escaped_line_reads_as_the_refusal_it_carries():
    body = text(RESET / "mig-parted-escaped-refusal-magic-castle-387.txt")
    for parsed in (parse_reset(body).value, ):  # the parser itself, without analyze's unwrapping
        assert parsed.failed == (("00000000:00:06.0", "In use by another client"),)
        assert parsed.in_use_devices == 1
    entry = analyze_text(body, "mig-manager.log")
    assert entry["kind"] == "nvidia-smi-reset"
    assert codes(entry) == [("RESET_REFUSED", "error")]
    assert entry["data"]["refused"] == 1


def test_mig_parted_s_level_tags_around_the_refusal_are_not_nvidia_smi_s():
    entry = analyze_text((RESET / "mig-parted-erro-four-gpus-mig-parted-181.txt").read_text(), "f")
    assert [f["bus_id"] for f in entry["data"]["failed"]] == ["00000000:01:00.0", "00000000:47:00.0",
                                                            "00000000:81:00.0", "00000000:C2:00.0"]
    assert entry["data"]["in_use_devices"] == entry["data"]["refused"] == 4
    assert entry["warnings"] == []
    assert entry["findings"][0]["message"] == ("the reset was refused: 4 devices in use (00000000:01:00.0, "
                                               "00000000:47:00.0, 00000000:81:00.0, 00000000:C2:00.0): stop every "
                                               "holder of /dev/nvidia* first (`nvls-tui check` names them)")


# ---- several runs in one transcript -----------------------------------------------------------------

def test_a_transcript_s_last_reset_decides_and_the_earlier_refusal_is_said():
    # Split at its prompts (issue 35, item 1): each run is a part; the refusal is said, superseded.
    entry = analyze_text((RESET / "refused-then-reset-after-killall-gpu-operator-118.txt").read_text(), "f")
    assert entry["kind"] == "nvidia-smi-reset"
    assert entry["data"]["reset"] == ["00000000:C1:00.0"]  # the part that stands
    assert entry["data"]["failed"] == [] and entry["data"]["in_use_devices"] is None
    assert codes(entry) == [("RESET_REFUSED", "info")]  # the GPU was reset in the end
    assert entry["findings"][0]["message"].endswith("superseded by the reset at line 13")
    assert [(p["kind"], p["lines"]) for p in entry["parts"] if p["kind"] != "unknown"] == [
        ("nvidia-smi-reset", [6, 9]), ("nvidia-smi-reset", [13, 13])]


def test_the_public_success_transcript_still_reads_as_a_success():
    entry = analyze_text((FIXTURES / "public" / "gpu-reset" / "success-after-pm0-nvsentinel.txt").read_text(), "f")
    assert entry["data"]["reset"] == ["00000000:1A:00.0"] and codes(entry) == []


# ---- shortened by hand -------------------------------------------------------------------------------

def test_a_cut_gpu_list_is_counted_from_the_summary_line():
    lines = text(RESET / "mig-parted-erro-four-gpus-mig-parted-181.txt").splitlines()
    cut = "\n".join(lines[1:4] + ["  ..."] + lines[6:8])  # two of the four GPUs, then the summary
    parsed = parse_reset(cut)
    assert len(parsed.value.failed) == 2 and parsed.value.in_use_devices == 4
    assert "nvidia-smi named 2 of the 4 devices it could not reset" in parsed.warnings
    entry = analyze_text(cut, "f")
    assert entry["data"]["refused"] == 4
    assert entry["findings"][0]["message"].startswith("the reset was refused: 4 devices in use (00000000:01:00.0, "
                                                      "00000000:47:00.0 and 2 not listed)")


def test_only_the_summary_line_after_an_ellipsis_is_still_a_refusal():
    summary = text(RESET / "mig-parted-erro-four-gpus-mig-parted-181.txt").splitlines()[7]
    for cut in (f"... {summary[:80]}", f"…{summary[:80]}", f"[...]\n{summary[:66]}"):
        assert detect_kind(cut) == "nvidia-smi-reset", cut
        entry = analyze_text(cut, "f")
        assert entry["data"]["in_use_devices"] == 4 and entry["data"]["refused"] == 4, cut
        assert codes(entry) == [("RESET_REFUSED", "error")]


def test_all_done_alone_is_not_a_reset_and_nothing_read_is_not_a_success():
    parsed = parse_reset("All done.\n")
    assert not parsed.value.succeeded
    assert parse_reset("nothing here\n").warnings == ("No nvidia-smi -r output was recognised.",)


# ---- journal lines, from a real journal file ---------------------------------------------------------

def _field(name: str, value: str) -> bytes:
    return name.encode() + b"=" + value.encode() + b"\n"


def _entry(i: int, message: str) -> bytes:
    fields = [("__REALTIME_TIMESTAMP", str(1764666828_500000 + i * 1000)), ("__MONOTONIC_TIMESTAMP",
              str(301_500000 + i * 1000)), ("_BOOT_ID", "0f3c1a2b4d5e6f708192a3b4c5d6e7f8"),
              ("_TRANSPORT", "stdout"), ("_HOSTNAME", "gpu05"), ("SYSLOG_IDENTIFIER", "nvidia-smi"), ("_PID", "4242"),
              ("_SYSTEMD_UNIT", "gpu-reset.service"), ("PRIORITY", "6"), ("MESSAGE", message)]
    return b"".join(_field(k, v) for k, v in fields) + b"\n"


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> pathlib.Path:
    """A oneshot unit's nvidia-smi -r, refused, as its stdout lines reach the journal (one entry a line;
    stdout's empty lines are entries too). The lines are the public NVSentinel capture's."""
    if not JOURNAL_REMOTE.exists() or shutil.which("journalctl") is None:
        pytest.skip("systemd-journal-remote and journalctl are needed (scripts/system-deps.sh installs them)")
    lines = text(FIXTURES / "public" / "gpu-reset" / "fail-in-use-by-another-client-nvsentinel.txt").splitlines()
    lines = [line for line in lines if not line.startswith("exit=")]  # the reporter's, not nvidia-smi's
    folder = tmp_path_factory.mktemp("journal")
    export = folder / "in.export"
    export.write_bytes(b"".join(_entry(i, line) for i, line in enumerate(lines)))
    out = folder / "out.journal"
    subprocess.run([str(JOURNAL_REMOTE), "-o", str(out), str(export)], capture_output=True, check=True, timeout=60)
    return out


@pytest.mark.parametrize("mode", ["short", "short-iso", "short-precise", "short-monotonic", "cat"])
def test_a_refusal_logged_by_a_unit_reads_in_every_journal_mode(journal, mode):
    printed = subprocess.run(["journalctl", "--file", str(journal), "--no-pager", "-o", mode], capture_output=True,
                             text=True, check=True, timeout=30).stdout
    assert "gpu05 nvidia-smi[4242]: " in printed or mode == "cat"
    parsed = parse_reset(printed)
    assert parsed.value.failed == (("00000000:1A:00.0", "In use by another client"),)
    assert parsed.value.in_use_devices == 1
    entry = analyze_text(printed, f"journal-{mode}")
    assert entry["kind"] == "nvidia-smi-reset"
    assert codes(entry) == [("RESET_REFUSED", "error")]
