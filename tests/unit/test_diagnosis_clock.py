"""A passing smoke test makes older kernel lines stale, compared as instants: a clock that steps (DST,
NTP), a record dated after the node's own clock, or one from another boot never hides a fresh error."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.kernel import current_kernel_events, smoke_distrust
from nvls_tui.model import CommandResult, KernelEvent, SmokeResult, Verdict
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.probe import SMOKE_FILE
from tests.unit.test_diagnosis import node

BOOT = "6f1c2d3e-4a5b-4c6d-8e7f-901234567890"
OTHER_BOOT = "0a0b0c0d-1111-4222-8333-444455556666"
OUT_OF_SYNC = "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"


def epoch(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def line(at: str) -> KernelEvent:
    """The out-of-sync line as ``journalctl -k -o short-iso`` dates it (the node's zone, with its offset)."""
    return KernelEvent(OUT_OF_SYNC, f"{at} gpu01 kernel: NVRM: fabric state cached by the driver is out of sync",
                       timestamp=at)


def smoked(at: str, booted: str, *, boot_id: str = BOOT) -> SmokeResult:
    """A passing smoke record written at ``at`` on a boot that began at ``booted`` (UTC, no step since)."""
    return SmokeResult(avg_busbw=291.9, passed=True, at=at, boot_id=boot_id, uptime=epoch(at) - epoch(booted))


def polled(now: str, booted: str, *, step: float = 0.0, **changes):
    """The node polled when its clock read ``now``, ``step`` seconds off the clock it booted with."""
    return node(node_clock=epoch(now), boot_id=BOOT, uptime=epoch(now) - step - epoch(booted), **changes)


BOOTED = "2026-10-30T00:00:00+00:00"


def test_a_line_older_than_a_trusted_smoke_test_still_no_longer_counts():
    smoke = smoked("2026-11-30T08:10:00+00:00", BOOTED)
    state = polled("2026-11-30T08:20:00+00:00", BOOTED, kernel_events=(line("2026-11-30T08:00:00+0000"),),
                   smoke=smoke)
    assert smoke_distrust(state) is None
    assert diagnose(state).verdict is Verdict.HEALTHY


def test_a_fresh_error_after_a_dst_fall_back_counts_though_its_local_time_reads_earlier():
    # America/New_York falls back at 02:00 EDT on 2026-11-01: the smoke test passed at 01:50 EDT
    # (05:50Z); twenty minutes later the kernel logs at 01:10 EST (06:10Z), which reads as earlier.
    smoke = smoked("2026-11-01T01:50:00-04:00", BOOTED)
    before = line("2026-11-01T01:40:00-04:00")
    fresh = line("2026-11-01T01:10:00-05:00")
    state = polled("2026-11-01T06:20:00+00:00", BOOTED, kernel_events=(before, fresh), smoke=smoke)
    assert current_kernel_events(state) == (fresh,)
    assert diagnose(state).verdict is Verdict.BROKEN
    assert "FABRIC_OUT_OF_SYNC" in [f.code for f in diagnose(state).findings]


def test_a_fresh_error_after_an_ntp_step_back_counts_even_once_the_clock_is_past_the_smoke_record():
    # The clock ran an hour fast when the smoke test passed (12:00 on it); NTP stepped it back an hour;
    # the fault came back at 11:20 on the stepped clock; the poll reads 12:30, past the record.
    smoke = smoked("2026-11-30T12:00:00+00:00", BOOTED)
    state = polled("2026-11-30T12:30:00+00:00", BOOTED, step=-3600, kernel_events=(line("2026-11-30T11:20:00+0000"),),
                   smoke=smoke)
    assert smoke_distrust(state) == "the node's clock was stepped back since the smoke test"
    assert diagnose(state).verdict is Verdict.BROKEN


def test_a_clock_that_only_ran_on_or_forward_keeps_the_smoke_record_trusted():
    smoke = smoked("2026-11-30T12:00:00+00:00", BOOTED)
    forward = polled("2026-11-30T14:30:00+00:00", BOOTED, step=3600, smoke=smoke)
    assert smoke_distrust(forward) is None


def test_a_smoke_record_dated_after_the_node_clock_is_not_trusted():
    smoke = smoked("2026-11-30T09:00:00+00:00", BOOTED)
    state = polled("2026-11-30T08:30:00+00:00", BOOTED, kernel_events=(line("2026-11-30T08:20:00+0000"),),
                   smoke=smoke.__class__(**{**_fields(smoke), "uptime": None}))
    assert smoke_distrust(state) == "the smoke record is dated after the node's clock"
    assert diagnose(state).verdict is Verdict.BROKEN


def test_a_smoke_record_from_another_boot_is_not_trusted():
    smoke = smoked("2026-11-30T10:00:00+00:00", BOOTED, boot_id=OTHER_BOOT)
    state = polled("2026-11-30T10:30:00+00:00", BOOTED, kernel_events=(line("2026-11-30T09:50:00+0000"),),
                   smoke=smoke)
    assert smoke_distrust(state) == "the smoke record is from another boot"
    assert diagnose(state).verdict is Verdict.BROKEN


@pytest.mark.parametrize(("missing", "why"), [
    ({"boot_id": None}, "the node's boot id could not be read"),
    ({"uptime": None}, "the node's uptime could not be read"),
    ({"node_clock": None}, "the node's clock could not be read"),
])
def test_without_the_node_s_boot_uptime_or_clock_the_smoke_record_hides_nothing(missing, why):
    smoke = smoked("2026-11-30T08:10:00+00:00", BOOTED)
    state = polled("2026-11-30T08:20:00+00:00", BOOTED, kernel_events=(line("2026-11-30T08:00:00+0000"),),
                   smoke=smoke).replace(**missing)
    assert smoke_distrust(state) == why
    assert diagnose(state).verdict is Verdict.BROKEN


def test_a_kernel_line_without_an_offset_is_never_stale():
    smoke = smoked("2026-11-30T08:10:00+00:00", BOOTED)
    event = KernelEvent(OUT_OF_SYNC, "Nov 30 08:00:00 gpu01 kernel: NVRM: out of sync", timestamp="Nov 30 08:00:00")
    state = polled("2026-11-30T08:20:00+00:00", BOOTED, kernel_events=(event,), smoke=smoke)
    assert diagnose(state).verdict is Verdict.BROKEN


def _fields(smoke: SmokeResult) -> dict:
    return {name: getattr(smoke, name) for name in smoke.__slots__}


def _sections(smoke_json: str) -> dict[str, CommandResult]:
    query = ("index, pci.bus_id, name, uuid, driver_version, fabric.state, fabric.status\n"
             "0, 00000000:18:00.0, NVIDIA H100 80GB HBM3, GPU-0, 580.82.07, Completed, Success\n")
    return {
        "gpus": CommandResult(("nvidia-smi",), 0, query),
        "kernel": CommandResult(("journalctl",), 0, "2026-11-30T08:00:00+0000 gpu01 kernel: NVRM: fabric state "
                                                    "cached by the driver is out of sync\n"),
        "smoke": CommandResult(("cat", SMOKE_FILE), 0, smoke_json),
        "boot": CommandResult(("cat", "/proc/sys/kernel/random/boot_id", "/proc/uptime"), 0,
                              f"{BOOT}\n2678400.25 4000000.00\n"),
        "clock": CommandResult(("date",), 0, "2026-11-30T08:20:00Z\n"),
    }


def test_an_old_smoke_record_without_an_offset_or_boot_id_is_read_but_hides_nothing():
    # What the runbook wrote before: node-local time without an offset, and no boot id.
    old = json.dumps({"avg_busbw": 291.9, "passed": True, "at": "2026-11-30T08:10:00"})
    state = assemble_node_state("gpu01", _sections(old), simulated=False)
    assert state.smoke is not None and state.smoke.passed and state.smoke.boot_id is None
    assert state.boot_id == BOOT and state.uptime == 2678400.25
    assert smoke_distrust(state) == "the smoke record's time has no UTC offset"
    assert [e.code for e in current_kernel_events(state)] == [OUT_OF_SYNC]


def test_a_smoke_record_of_this_boot_with_an_offset_is_read_and_trusted():
    booted = epoch("2026-11-30T08:20:00+00:00") - 2678400.25
    record = json.dumps({"avg_busbw": 291.9, "passed": True, "at": "2026-11-30T08:10:00+00:00", "boot_id": BOOT,
                         "uptime": epoch("2026-11-30T08:10:00+00:00") - booted})
    state = assemble_node_state("gpu01", _sections(record), simulated=False)
    assert smoke_distrust(state) is None
    assert current_kernel_events(state) == ()


@pytest.mark.parametrize("record", [
    {"avg_busbw": 291.9, "passed": True, "at": 12, "boot_id": ["x"], "uptime": "soon"},
    {"avg_busbw": 291.9, "passed": True, "at": "not a time", "boot_id": BOOT, "uptime": 5.0},
])
def test_a_smoke_record_with_fields_of_the_wrong_kind_hides_nothing_and_does_not_crash(record):
    state = assemble_node_state("gpu01", _sections(json.dumps(record)), simulated=False)
    assert smoke_distrust(state) is not None
    assert [e.code for e in current_kernel_events(state)] == [OUT_OF_SYNC]
