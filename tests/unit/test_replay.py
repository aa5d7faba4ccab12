"""A recorded node: captured probe output replayed through the one poll every transport goes through.

The capture is the real H200's (tests/fixtures/real/nvidia-h200, the form ``analyze`` reads); replayed
as ``replay:FILE`` it must read as that machine's live ``check`` over SSH did, field for field. A
recording runs nothing, and a section whose end never came (the command hung) reads timed out, as
on every transport.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvls_tui.backends.base import InvalidArgument, ProcessIdentity
from nvls_tui.backends.recorded import RecordedBackend
from nvls_tui.diagnosis import diagnose
from nvls_tui.model.jsonout import node_json
from nvls_tui.poll.evidence import TIMED_OUT
from nvls_tui.poll.once import poll_once

REPO = Path(__file__).parents[2]
REAL = REPO / "tests" / "fixtures" / "real" / "nvidia-h200"
# The newest capture: the probe run by hand on the real H200 VM on 2026-12-02, with that day's
# `check --json` over SSH beside it (tests/fixtures/README.md).
CAPTURE = REAL / "probe-output-2026-12-02.txt"
LIVE = REAL / "check-ssh-2026-12-02.json"
# An older capture (2026-12-01), from before the probe's ``boot``, ``needrestart``, ``apt`` and
# ``fm_log`` sections existed.
OLD_CAPTURE = REAL / "probe-output-after-fix.txt"
LATER_SECTIONS = ("boot", "needrestart", "apt", "fm_log")


def facts(node: dict) -> dict:
    """What a check says of a node, apart from its name (the fields tests/unit/test_backends_agree.py compares)."""
    return {"verdict": node["verdict"], "platform": node["platform"], "driver": node["driver"],
            "findings": sorted((f["code"], f["severity"], f.get("section")) for f in node["findings"]),
            # recovery_action came after the live capture (null in check: the poll does not ask for it yet).
            "gpus": [{k: v for k, v in g.items() if k != "recovery_action"} for g in node["gpus"]],
            "services": node["services"],
            "holders": [(h["pid"], h["ppid"], h["user"], " ".join(h["start_time"].split()), h["command"], h["kind"],
                         h["devices"]) for h in node["holders"]],
            "missing": sorted((m["section"], m["reason"]) for m in node["missing"]),
            "kernel_coverage": node.get("kernel_coverage")}


def _check_replay(capture: Path) -> tuple[dict, subprocess.CompletedProcess]:
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "check", f"replay:{capture}", "--json"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
                          stdin=subprocess.DEVNULL)
    (node,) = json.loads(done.stdout)["nodes"]
    return node, done


def test_check_of_a_replayed_capture_reads_as_the_real_machines_check_over_ssh():
    node, done = _check_replay(CAPTURE)
    (live,) = json.loads(LIVE.read_text())["nodes"]
    assert node["host"] == f"replay:{CAPTURE}" and node["reachable"] is True
    assert facts(node) == facts(live)
    assert node["verdict"] == "degraded" and node["platform"] == "no-nvswitch"
    assert done.returncode == 0 and done.stderr == ""  # degraded: warnings only


def test_an_older_capture_reads_the_sections_it_predates_as_not_run():
    node, done = _check_replay(OLD_CAPTURE)
    assert sorted((m["section"], m["reason"]) for m in node["missing"] if m["section"] in LATER_SECTIONS) == [
        ("apt", "not run"), ("boot", "not run"), ("fm_log", "not run"), ("needrestart", "not run")]
    assert node["verdict"] == "degraded"  # unknown is never healthy
    assert done.returncode == 0 and done.stderr == ""


async def test_a_section_whose_end_never_came_reads_timed_out_and_the_rest_is_read():
    text = CAPTURE.read_text()
    # The capture as a poll cut off inside nvidia-smi would leave it: no end marker for the GPUs.
    hung = "".join(line for line in text.splitlines(keepends=True) if line != "@@nvls-tui-device end gpus 0\n")
    state = await poll_once(RecordedBackend("gpu05", hung), deadline=5)
    assert state.reachable, state.error
    assert ("gpus", TIMED_OUT) in [(m.section, m.reason) for m in state.missing]
    assert [h.pid for h in state.holders] == [541]  # the holders after it were read (the CUDA process of that capture)
    assert diagnose(state).verdict.value == "broken"


async def test_the_same_recording_polled_twice_reads_the_same_and_is_not_parsed_again():
    recording = RecordedBackend("gpu05", CAPTURE.read_text())
    first, second = await recording.snapshot(), await recording.snapshot()
    assert node_json(first, diagnose(first)) == node_json(second, diagnose(second))
    assert recording.last_assembly.hits == 1


async def test_a_file_without_probe_output_is_unreachable_saying_so():
    state = await poll_once(RecordedBackend("notes", "just some text\n"), deadline=5)
    assert not state.reachable and "holds no probe output" in (state.error or "")


async def test_a_recording_runs_no_command_and_signals_nothing():
    recording = RecordedBackend("gpu05", CAPTURE.read_text())
    with pytest.raises(InvalidArgument, match="is a recording"):
        await recording.run(["nvidia-smi", "-r"])
    with pytest.raises(InvalidArgument, match="is a recording"):
        async for _ in recording.stream(["journalctl", "-f"]):
            pass
    with pytest.raises(InvalidArgument):
        await recording.signal(515, 15, ProcessIdentity(515, "Tue Dec  1 09:46:13 2026", "python3"))


def test_replay_of_a_missing_file_is_refused_with_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "check", f"replay:{tmp_path / 'none.txt'}"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert "replay: needs a file of captured probe output" in done.stderr and "Traceback" not in done.stderr
