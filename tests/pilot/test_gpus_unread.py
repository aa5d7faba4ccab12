"""A node whose GPUs could not be read, while it answered everything else (issue item 6 and after).

An nvidia-smi that printed without end is cut on the node and reads as over the size cap; one that is
missing, denied or failing answered too. The node is reachable then, its GPUs unknown: the diagnosis
calls that an error (never healthy: the platform itself is unknown without them), the repair's
preflight refuses, and the console shows ``?`` where GPU counts and fabric states would be. A wedged
nvidia-smi (timed out) reads the same: every transport cuts off only the hung command and reads the rest
(tests/sshd/test_hung_section.py). A poll that ended before nvidia-smi ran is unreachable.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import CommandResult, NodeState, Severity, Verdict
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.preflight import refusal
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, open_node_screen

FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)
SMI = ("nvidia-smi", "--query-gpu=index", "--format=csv")
# What nvidia-smi answers when it cannot read the GPUs (its own words and exit statuses).
GPUS_UNREAD = {
    "over the cap": (CommandResult(SMI, -1, "0, 00000000:19:00.0, NVIDIA H100 80GB HBM3\n" * 50, truncated=True),
                     "over the size cap", "more than the byte cap"),
    "cut on the node": (CommandResult(SMI, -1, "", truncated=True), "over the size cap", "more than the byte cap"),
    "not installed": (CommandResult(SMI, 127, "sh: 1: nvidia-smi: not found\n"), "tool missing", "not installed"),
    "no driver": (CommandResult(SMI, 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                        "driver. Make sure that the latest NVIDIA driver is installed and running.\n"),
                  "failed", "couldn't communicate with the NVIDIA driver"),
    "no devices": (CommandResult(SMI, 6, "No devices were found\n"), "failed", "No devices were found"),
    "denied": (CommandResult(SMI, 126, "sh: 1: nvidia-smi: Permission denied\n"), "permission denied",
               "Permission denied"),
    "no gpu listed": (CommandResult(SMI, 0, "index, pci.bus_id, name\n"), "unparseable", "listed no GPU"),
}


def sections_of(spec: str, **faults) -> tuple[str, dict[str, CommandResult]]:
    """One simulated node's probe sections, as its poll read them."""
    fleet = load_fleet(spec, speed=0)
    backend = sim_backends(fleet)[0]
    for key, value in faults.items():
        setattr(fleet.node(backend.host), key, value)
    return backend.host, asyncio.run(backend.read_sections())


def without_gpus(spec: str, gpus: CommandResult) -> NodeState:
    host, sections = sections_of(spec)
    return assemble_node_state(host, {**sections, "gpus": gpus}, simulated=True)


@pytest.mark.parametrize("case", list(GPUS_UNREAD))
def test_a_healthy_node_whose_gpus_cannot_be_read_is_reachable_and_broken_with_every_other_section_read(case):
    result, reason, words = GPUS_UNREAD[case]
    healthy = without_gpus("sim:healthy/hgx01", sections_of("sim:healthy/hgx01")[1]["gpus"])
    assert diagnose(healthy).verdict is Verdict.HEALTHY  # the control: the same node, its GPUs read
    state = without_gpus("sim:healthy/hgx01", result)
    assert state.reachable, state.error
    assert [(m.section, m.reason) for m in state.missing] == [("gpus", reason)]
    assert words in state.missing[0].detail
    assert state.gpus == () and state.driver is None  # unknown, not a node without GPUs
    assert state.services and state.holders and state.nvswitches  # everything else was read
    diagnosis = diagnose(state)
    assert diagnosis.verdict is Verdict.BROKEN
    (finding,) = [f for f in diagnosis.findings if f.code == "EVIDENCE_MISSING"]
    assert (finding.section, finding.reason, finding.severity) == ("gpus", reason, Severity.ERROR)
    # The board is unknown, not unsupported: the finding that says why is the missing GPUs.
    assert "PLATFORM_UNSUPPORTED" not in {f.code for f in diagnosis.findings}


def test_the_other_sections_of_an_out_of_sync_node_still_speak_when_its_gpus_cannot_be_read():
    state = without_gpus("sim:seed-incident/gpu06", GPUS_UNREAD["over the cap"][0])
    codes = {f.code for f in diagnose(state).findings}
    assert state.reachable and "FABRIC_OUT_OF_SYNC" in codes and "EVIDENCE_MISSING" in codes


def test_without_the_gpus_every_section_a_guard_needs_is_an_error_as_on_an_hgx_board():
    host, sections = sections_of("sim:healthy/hgx01", missing_tools=["nv-fabricmanager", "lspci"])
    state = assemble_node_state(host, {**sections, "gpus": GPUS_UNREAD["not installed"][0]}, simulated=True)
    severities = {f.section: f.severity for f in diagnose(state).findings if f.code == "EVIDENCE_MISSING"}
    # The platform is unknown without the GPUs: an unread FM version is not dropped as "no host FM here".
    assert severities == {"gpus": Severity.ERROR, "fm_version": Severity.ERROR, "nvswitches": Severity.ERROR}


def test_a_wedged_nvidia_smi_leaves_the_node_reachable_with_its_gpus_timed_out_and_the_rest_read():
    wedged = CommandResult(SMI, 124, "`nvidia-smi --query-gpu=index --format=csv` did not finish within 1 s\n")
    state = without_gpus("sim:healthy/hgx01", wedged)
    assert state.reachable, state.error
    assert [(m.section, m.reason) for m in state.missing] == [("gpus", "timed out")]
    assert state.service("nvidia-fabricmanager") is not None and state.nvswitches
    assert diagnose(state).verdict is Verdict.BROKEN


def test_a_poll_that_ended_before_nvidia_smi_ran_is_unreachable():
    host, sections = sections_of("sim:healthy/hgx01")
    del sections["gpus"]
    state = assemble_node_state(host, sections, simulated=True)
    assert not state.reachable and "the poll ended before it ran" in (state.error or "")


def test_a_poll_where_nothing_else_answered_either_is_unreachable_with_nvidia_smis_words():
    host, sections = sections_of("sim:healthy/hgx01")
    dead = {name: dataclasses.replace(r, exit_status=127, stdout="sh: 1: not found\n", stderr="")
            for name, r in sections.items()}
    dead["gpus"] = GPUS_UNREAD["no driver"][0]
    state = assemble_node_state(host, dead, simulated=True)
    assert not state.reachable and "couldn't communicate with the NVIDIA driver" in (state.error or "")


@pytest.mark.parametrize("case", ["over the cap", "no driver"])
def test_preflight_refuses_a_node_whose_gpus_cannot_be_read_naming_them(case):
    state = without_gpus("sim:seed-incident/gpu05", GPUS_UNREAD[case][0])
    reason = refusal(state) or ""
    assert reason.startswith("the GPUs and their fabric state could not be read")
    assert GPUS_UNREAD[case][1] in reason and "nothing was changed" in reason


def test_a_repair_of_a_node_without_nvidia_smi_is_refused_before_anything_changes():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    fleet.node("gpu05").missing_tools = ["nvidia-smi"]
    outcome = asyncio.run(Runbook(sim_backends(fleet)[0], FAST).run())
    assert outcome.result == "refused"
    assert "the GPUs and their fabric state could not be read" in outcome.message and "tool missing" in outcome.message
    changed = [argv for _t, argv in fleet.node("gpu05").cmdlog
               if argv[-1:] == ["-r"] or any(w in argv for w in ("stop", "start", "kill", "mkdir", "tee"))]
    assert changed == []
    assert fleet.node("gpu05").units["nvidia-dcgm.service"].active == "active"  # nothing stopped


async def test_the_console_shows_unread_gpus_as_unknown_never_as_no_gpus():
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.widgets.fleet_grid import FleetGrid
    from tests.test_console_fakes import fixed_clock

    fleet = load_fleet("sim:healthy/hgx01", speed=0)
    fleet.node("hgx01").missing_tools = ["nvidia-smi"]
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        assert grid.get_cell("hgx01", "verdict").plain == "✖ broken"
        assert grid.get_cell("hgx01", "gpus").plain == "?" * 8  # one "?" per GPU column folded in, not blanks
        # The sections that were read are still shown.
        assert grid.get_cell("hgx01", "holders").plain == str(len(app.fleet.get("hgx01").holders)) != "0"
        await open_node_screen(app, pilot, "hgx01")
        await pilot.pause()
        assert app.screen.query_one("#gpus").border_subtitle == "? GPUs: unknown: tool missing"  # not "0/0"


def test_plain_check_shows_unread_gpus_as_unknown(capsys):
    from nvls_tui.headless.check import _print_table

    state = without_gpus("sim:healthy/hgx01", GPUS_UNREAD["over the cap"][0])
    _print_table([(state, diagnose(state))])
    row = next(line for line in capsys.readouterr().out.splitlines() if "hgx01" in line and "broken" in line)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[3:5] == ["?", "?"]  # driver and fabric: unknown, not "-"
