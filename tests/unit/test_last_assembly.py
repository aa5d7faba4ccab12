"""LastAssembly: an unchanged node is not parsed again, and the state is always what a fresh parse gives.

The sections are the simulator's probe outputs of seed-incident (broken nodes with holders that come
and go, healthy nodes), read three times: the first poll reads the whole boot's kernel log, the
second and third start at its cursor, 5 s of the node's clock apart.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.model import CommandResult
from nvls_tui.poll import assemble
from nvls_tui.poll.assemble import LastAssembly, assemble_node_state
from nvls_tui.sim.fleet import load_fleet

QUIET = ("gpu02", "gpu03", "gpu04", "gpu07", "gpu08")  # nothing but their clock moves in 5 s
BUSY = ("gpu01", "gpu05", "gpu06")  # a timer's nvidia-smi comes and goes between polls


async def _three_polls(spec: str) -> list[tuple[str, dict, dict]]:
    """(host, second poll, third poll) of every node; the first poll only sets the kernel cursor."""
    fleet = load_fleet(spec, speed=0)
    out = []
    for backend in sim_backends(fleet):
        await backend.read_sections()
        second = await backend.read_sections()
        fleet.clock.advance(5.0)
        out.append((backend.host, second, await backend.read_sections()))
    return out


@pytest.fixture(scope="module")
def polls():
    import asyncio

    return asyncio.run(_three_polls("sim:seed-incident"))


def _count_parses(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = assemble.assemble_node_state

    def counting(host, sections, **options):
        calls.append(host)
        return real(host, sections, **options)

    monkeypatch.setattr(assemble, "assemble_node_state", counting)
    return calls


def test_a_node_whose_only_change_is_its_clock_is_not_parsed_again_and_gets_the_new_clock(polls, monkeypatch):
    calls = _count_parses(monkeypatch)
    quiet = [p for p in polls if p[0] in QUIET]
    for host, first, second in quiet:
        assert first["clock"].stdout != second["clock"].stdout  # the clock did move
        memo = LastAssembly()
        before = memo.assemble(host, first, simulated=True)
        after = memo.assemble(host, second, simulated=True, polled_at=1234.0)
        assert after == assemble_node_state(host, second, simulated=True, polled_at=1234.0)
        assert after.node_clock == before.node_clock + 5.0
        assert after.uptime == before.uptime + 5.0  # it ticks too, and is read afresh
        assert memo.hits == 1
    assert calls == list(QUIET)  # once per node: the second poll of each was not parsed


def test_a_node_whose_holders_changed_between_polls_is_parsed_afresh(polls):
    for host, first, second in (p for p in polls if p[0] in BUSY):
        memo = LastAssembly()
        before = memo.assemble(host, first, simulated=True)
        after = memo.assemble(host, second, simulated=True)
        assert memo.hits == 0
        assert after == assemble_node_state(host, second, simulated=True)
        assert {h.pid for h in after.holders} != {h.pid for h in before.holders}


def _changed(result: CommandResult, **changes) -> CommandResult:
    return dataclasses.replace(result, **changes)


@pytest.mark.parametrize("section, change", [
    ("holders", {"stdout": ""}),                       # fuser's table gone: no holders
    ("holders", {"exit_status": 127}),                 # fuser missing: the holders are unknown
    ("kernel", {"truncated": True}),                   # cut at the cap: unknown
    ("units", {"stdout": ""}),                         # the services' states vanish
    ("identity", {"stdout": "1000\n"}),                # not root any more: fuser cannot vouch
    ("gpus", {"exit_status": 9}),                      # nvidia-smi failed: the GPUs are unknown
    ("boot", {"stdout": "0a0b0c0d-1111-4222-8333-444455556666\n5.00 1.00\n"}),  # rebooted: another boot id
    ("boot", {"exit_status": 1}),                      # /proc unreadable: the boot is unknown
])
def test_any_other_change_is_parsed_afresh(polls, section, change):
    host, first, second = next(p for p in polls if p[0] == "gpu03")
    memo = LastAssembly()
    memo.assemble(host, first, simulated=True)
    altered = {**second, section: _changed(second[section], **change)}
    got = memo.assemble(host, altered, simulated=True)
    assert memo.hits == 0
    assert got == assemble_node_state(host, altered, simulated=True)
    assert got != assemble_node_state(host, second, simulated=True)  # the change mattered


def test_other_options_are_part_of_what_must_match(polls):
    host, first, _ = next(p for p in polls if p[0] == "gpu03")
    memo = LastAssembly()
    plain = memo.assemble(host, first, simulated=False)
    with_sudo = memo.assemble(host, first, simulated=False, sudo=True)
    assert memo.hits == 0
    assert with_sudo == assemble_node_state(host, first, simulated=False, sudo=True)
    assert plain.simulated == with_sudo.simulated  # the node's marker still says simulated


def test_an_unreachable_node_is_not_kept(polls):
    host, first, _ = polls[0]
    # A poll that ended before nvidia-smi ran: the node is unreachable (one whose nvidia-smi answered
    # with an error, or hung, is read without GPUs).
    gone = {name: result for name, result in first.items() if name != "gpus"}
    memo = LastAssembly()
    a = memo.assemble(host, gone, simulated=True)
    b = memo.assemble(host, gone, simulated=True)
    assert not a.reachable and a == b == assemble_node_state(host, gone, simulated=True)
    assert memo.hits == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whatever_order_the_polls_come_in_the_state_is_a_fresh_parse(polls, data):
    """Sections drawn from several nodes and polls, one section swapped now and then."""
    pool = [s for _, first, second in polls for s in (first, second)]
    memo = LastAssembly()
    for _ in range(data.draw(st.integers(1, 8))):
        sections = dict(data.draw(st.sampled_from(pool)))
        if data.draw(st.booleans()):
            name = data.draw(st.sampled_from(sorted(sections)))
            other = data.draw(st.sampled_from(pool))
            if name in other:
                sections[name] = other[name]
        assert memo.assemble("n", sections, simulated=True) == assemble_node_state("n", sections, simulated=True)


async def test_the_first_poll_from_the_kernel_cursor_is_not_parsed_again_either():
    """The kernel section from a cursor answers what the whole-boot read did, under the same command."""
    fleet = load_fleet("sim:seed-incident/gpu[02-03]", speed=0)
    for backend in sim_backends(fleet):
        whole = await backend.snapshot()
        assert backend.kernel_tail.cursor is not None  # the next poll starts at the cursor
        again = await backend.snapshot()
        assert backend.last_assembly.hits == 1
        assert again.kernel_events == whole.kernel_events and again == whole
