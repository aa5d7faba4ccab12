"""Fail closed: what could not be read is unknown, and unknown is never healthy (issue: fail closed).

Each case takes one piece of evidence away from a node that is otherwise healthy (or broken in a way
only that evidence shows) and checks that the node is not ``healthy``, that the finding names the
section and why, and that every guard that needs the evidence refuses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nvls_tui.backends.base import CommandResult
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import Severity, Verdict
from nvls_tui.parsers.nvidia_smi_csv import gpus_from_query, parse_query_csv
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.probe import section_argv
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.events import StepStarted
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, open_node_screen

REAL = Path(__file__).parents[1] / "fixtures" / "real"
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)


def poll(spec: str, **faults):
    fleet = load_fleet(spec, speed=2000.0)
    backend = sim_backends(fleet)[0]
    node = fleet.node(backend.host)
    for key, value in faults.items():
        setattr(node, key, value)
    state = asyncio.run(backend.snapshot())
    return state, diagnose(state)


def evidence(diag, section: str):
    return [f for f in diag.findings if f.code == "EVIDENCE_MISSING" and f.section == section]


@pytest.mark.parametrize(("tool", "section"), [
    ("journalctl", "kernel"),
    ("fuser", "holders"),
    ("lspci", "nvswitches"),
    ("systemctl", "units"),
    ("nv-fabricmanager", "fm_version"),
    ("ps", "processes"),
])
def test_a_healthy_node_with_a_tool_missing_is_not_healthy_and_names_the_section(tool, section):
    healthy, diag = poll("sim:healthy/hgx01")
    assert diag.verdict is Verdict.HEALTHY and not healthy.missing  # the control: all evidence read
    # Without journalctl the ring buffer is read instead: the kernel log is missing only without both.
    state, diag = poll("sim:healthy/hgx01", missing_tools=[tool, *(["dmesg"] if tool == "journalctl" else [])])
    assert diag.verdict is not Verdict.HEALTHY
    (finding,) = evidence(diag, section)
    assert finding.reason == "tool missing" and f"`{tool}`" in finding.message
    assert finding.severity is Severity.ERROR  # on an HGX board a repair's guard needs every one of these


@pytest.mark.parametrize("access", ["hint", "denied"])
def test_an_unreadable_journal_hides_the_out_of_sync_node_and_says_so(access):
    # gpu06 of the incident: FM active, every GPU Completed/Success; only the kernel line tells.
    _, seen = poll("sim:seed-incident/gpu06")
    assert "FABRIC_OUT_OF_SYNC" in {f.code for f in seen.findings}
    state, diag = poll("sim:seed-incident/gpu06", journal_access=access)
    assert "FABRIC_OUT_OF_SYNC" not in {f.code for f in diag.findings}  # the line cannot be seen...
    (finding,) = evidence(diag, "kernel")  # ...and the node says it cannot see
    assert finding.reason == "permission denied" and finding.severity is Severity.ERROR
    assert diag.verdict is Verdict.BROKEN


def probe_sections(text: str) -> dict[str, CommandResult]:
    return {name: CommandResult(section_argv(name), -1 if status is None else status, body)
            for name, (status, body) in split_probe_output(text, "x").items()}


PROBE = """@@nvls-tui-x begin identity
{uid}
@@nvls-tui-x end identity 0
@@nvls-tui-x begin gpus
index, pci.bus_id, name, uuid, driver_version, persistence_mode, fabric.state, fabric.status
0, 00000000:0F:00.0, NVIDIA H100 80GB HBM3, GPU-1, 580.82.07, Enabled, Completed, Success
@@nvls-tui-x end gpus 0
@@nvls-tui-x begin holders
@@nvls-tui-x end holders 1
@@nvls-tui-x begin kernel
@@nvls-tui-x end kernel 0
"""


def test_a_non_root_probe_without_sudo_cannot_vouch_for_the_holders():
    as_root = assemble_node_state("n", probe_sections(PROBE.format(uid=0)), simulated=False)
    assert as_root.was_read("holders")
    state = assemble_node_state("n", probe_sections(PROBE.format(uid=1000)), simulated=False)
    missing = state.missing_section("holders")
    assert missing is not None and missing.reason == "permission denied" and "--sudo" in missing.detail
    with_sudo = assemble_node_state("n", probe_sections(PROBE.format(uid=1000)), simulated=False, sudo=True)
    assert with_sudo.was_read("holders")


def test_a_driver_warning_before_the_csv_header_does_not_make_phantom_gpus():
    text = ("WARNING: infoROM is corrupted at gpu 0000:4C:00.0\n"
            + (REAL / "h200x2-nvswitch" / "query-gpu-fabric.csv").read_text())
    parsed = parse_query_csv(text)
    gpus = gpus_from_query(parsed.value)
    assert [g.bus_id for g in gpus] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert any("infoROM is corrupted" in w for w in parsed.warnings)  # kept, as a warning


def test_a_warning_line_between_the_rows_is_not_a_gpu_either():
    lines = (REAL / "h200x2-nvswitch" / "query-gpu-fabric.csv").read_text().splitlines()
    text = "\n".join([lines[0], lines[1], "WARNING: infoROM is corrupted at gpu 0000:07:00.0", *lines[2:]]) + "\n"
    assert len(gpus_from_query(parse_query_csv(text).value)) == 2


def commands_run(fleet, name: str) -> list[list[str]]:
    return [argv for _t, argv in fleet.node(name).cmdlog]


def resets(fleet, name: str) -> int:
    return sum(1 for argv in commands_run(fleet, name) if argv[-2:] == ["nvidia-smi", "-r"] or argv[-1:] == ["-r"])


def test_no_reset_runs_when_fuser_is_missing_from_the_start():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    fleet.node("gpu05").missing_tools = ["fuser"]
    outcome = asyncio.run(Runbook(sim_backends(fleet)[0], FAST).run())
    assert outcome.result == "refused"
    assert "holding /dev/nvidia*" in outcome.message and "tool missing" in outcome.message
    assert resets(fleet, "gpu05") == 0


def test_no_reset_runs_when_fuser_goes_missing_after_preflight():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    node = fleet.node("gpu05")

    def sink(event):
        if isinstance(event, StepStarted) and event.step == "quiesce":
            node.missing_tools = ["fuser"]

    outcome = asyncio.run(Runbook(sim_backends(fleet)[0], FAST, on_event=sink).run())
    assert outcome.result == "failed"
    failed = {s.name: s for s in outcome.steps}
    assert failed["quiesce"].status == "failed" and "cannot prove" in failed["quiesce"].message
    assert failed["reset"].status == "skipped"
    assert resets(fleet, "gpu05") == 0
    assert outcome.step("restore").status == "ok"  # what quiesce stopped is back


def test_verify_fabric_fails_when_the_kernel_log_cannot_be_read():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    node = fleet.node("gpu05")

    def sink(event):
        if isinstance(event, StepStarted) and event.step == "verify-fabric":
            node.journal_access = "hint"

    outcome = asyncio.run(Runbook(sim_backends(fleet)[0], FAST, on_event=sink).run())
    step = outcome.step("verify-fabric")
    assert step.status == "failed" and "cannot verify" in step.message
    assert outcome.result == "failed"


async def test_the_console_shows_what_it_could_not_read_as_unknown_never_as_none_or_zero():
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.widgets.fleet_grid import FleetGrid
    from tests.test_console_fakes import fixed_clock

    fleet = load_fleet("sim:healthy/hgx01", speed=0)
    fleet.node("hgx01").missing_tools = ["fuser", "journalctl", "dmesg", "lspci"]
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        assert grid.get_cell("hgx01", "verdict").plain != "✔ healthy"
        assert grid.get_cell("hgx01", "holders").plain == "?" and grid.get_cell("hgx01", "kernel").plain == "?"
        assert grid.get_cell("hgx01", "switches").plain == "????"  # one "?" per NVSwitch column folded in
        await open_node_screen(app, pilot, "hgx01")
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#holders-box").border_subtitle == "unknown: tool missing"  # not "none: ..."
        assert screen.query_one("#kernel").border_subtitle == "unknown: tool missing"
        assert screen.query_one("#switches").border_subtitle == "unknown: tool missing"
