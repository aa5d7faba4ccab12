"""Output without bounds: a node that prints without end costs the bastion a capped amount, the command
is stopped, and only its own section becomes EVIDENCE_MISSING (over the size cap).

Before the cap, one broken ``lspci`` that printed without end grew the bastion to 1.5 GB in 10 s. Here
real tools print without end behind a real sshd (``yes``, an endless line from ``/dev/zero``), and the
test measures the bastion's peak RSS while 16 such nodes are polled at once.
"""

from __future__ import annotations

import asyncio
import resource
import time

import pytest

from nvls_tui.backends.base import BackendOptions, LineSplitter, OutputTooLarge
from nvls_tui.backends.local import LocalBackend
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import Severity, Verdict
from nvls_tui.poll.probe_output import SectionReader
from nvls_tui.runbook.preflight import refusal
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import SshdRig, backend_for, find_sshd

CAP = 256 * 1024
NODES = 16
FLOOD = {
    # lines without end: the shape of a broken lspci
    "yes": "#!/bin/sh\nexec yes '0000:05:00.0 Bridge: NVIDIA Corporation GH100 [H100 NVSwitch] (rev a1)'\n",
    # one line without end (no newline ever)
    "line": "#!/bin/sh\nexec tr '\\000' x < /dev/zero\n",
}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_the_section_reader_keeps_at_most_the_cap_of_an_endless_section_and_nothing_after_it():
    reader = SectionReader("n0", cap=1000)
    assert reader.feed("junk before\n@@nvls-tui-n0 begin gpus\nindex, name\n0, H100\n@@nvls-tui-n0 end gpus 0\n")
    assert reader.feed("@@nvls-tui-n0 begin nvswitches\n")
    went_on = True
    for _ in range(100):  # 100 x 500 characters: far past the cap
        went_on = reader.feed("0000:05:00.0 Bridge\n" * 25)
        if not went_on:
            break
    assert not went_on and reader.overflow == "nvswitches"
    assert not reader.feed("@@nvls-tui-n0 begin kernel\nline\n@@nvls-tui-n0 end kernel 0\n")  # stopped: ignored
    sections = reader.finish()
    assert sections["gpus"] == (0, "index, name\n0, H100\n")
    status, text = sections["nvswitches"]
    assert status is None and len(text) <= 1000
    assert "kernel" not in sections


def test_one_endless_line_also_stops_at_the_cap():
    reader = SectionReader("n0", cap=1000)
    reader.feed("@@nvls-tui-n0 begin nvswitches\n")
    assert not reader.feed("x" * 5000)
    assert reader.overflow == "nvswitches" and len(reader.finish()["nvswitches"][1]) <= 1000


def test_a_marker_with_another_nonce_is_text_not_a_section_end():
    reader = SectionReader("n0", cap=10_000)
    reader.feed("@@nvls-tui-n0 begin holders\n@@nvls-tui-evil end holders 0\nroot 42 F.... x\n"
                "@@nvls-tui-n0 end holders 0\n")
    assert reader.finish()["holders"] == (0, "@@nvls-tui-evil end holders 0\nroot 42 F.... x\n")


def test_a_stream_splitter_cuts_long_lines_and_stops_past_its_total():
    splitter = LineSplitter(total_cap=100, line_cap=10)
    assert splitter.feed("abc\n" + "x" * 25) == ["abc", "x" * 10, "x" * 10]
    assert splitter.finish() == ["xxxxx"]
    with pytest.raises(OutputTooLarge):
        splitter.feed("y" * 200)


async def test_the_local_backend_stops_a_command_past_the_cap_and_marks_it_truncated():
    backend = LocalBackend(BackendOptions(max_output=CAP, timeout=30))
    started = time.monotonic()
    result = await backend.run(["yes"])
    assert result.truncated and result.exit_status == -1 and len(result.stdout) == CAP
    assert time.monotonic() - started < 25  # stopped at the cap, not at the timeout
    with pytest.raises(OutputTooLarge):
        async for _line in backend.stream(["yes"]):
            pass


@pytest.fixture(scope="module")
def flooding_rig(tmp_path_factory):
    """16 simulated gpu05 nodes behind a real sshd whose lspci prints without end (both kinds)."""
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed (scripts/test.sh installs it)")
    names = [f"gpu{i:02d}" for i in range(1, NODES + 1)]

    def populate(name, node_dir):
        write_shims(node_dir, "seed-incident", "gpu05", static=True)
        lspci = node_dir / "bin" / "lspci"
        lspci.write_text(FLOOD["yes" if int(name[3:]) % 2 else "line"])
        lspci.chmod(0o755)

    rig = SshdRig(tmp_path_factory.mktemp("flood"), names, populate).start()
    yield rig
    rig.stop()


async def test_a_node_whose_lspci_prints_without_end_loses_only_that_section(flooding_rig):
    backend = backend_for(flooding_rig, "gpu01", max_output=CAP, timeout=30)
    try:
        started = time.monotonic()
        state = await backend.snapshot()
    finally:
        await backend.close()
    assert time.monotonic() - started < 25  # stopped at the cap, not at the timeout
    assert state.reachable
    missing = {m.section: m.reason for m in state.missing}
    assert missing == {"nvswitches": "over the size cap"}
    assert state.holders and state.kernel_events and state.services  # the sections after it were read
    codes = {(f.code, f.section) for f in diagnose(state).findings}
    assert ("EVIDENCE_MISSING", "nvswitches") in codes and ("FM_NOT_RUNNING", None) in codes


async def test_sixteen_flooding_nodes_at_once_keep_the_bastion_memory_flat(flooding_rig):
    backends = [backend_for(flooding_rig, name, max_output=CAP, timeout=60) for name in flooding_rig.nodes]
    before = peak_rss_mb()
    try:
        states = await asyncio.gather(*(b.snapshot() for b in backends))
    finally:
        await asyncio.gather(*(b.close() for b in backends))
    grown = peak_rss_mb() - before
    assert all(s.reachable and s.missing_section("nvswitches").reason == "over the size cap" for s in states)
    # 16 nodes x 256 KiB cap, plus asyncssh's per-channel windows: tens of MB at most, not gigabytes.
    assert grown < 150, f"the bastion grew by {grown:.0f} MB"


@pytest.fixture(scope="module")
def held_flood_rig(tmp_path_factory):
    """Two simulated nodes whose fuser (gpu01) or nvidia-smi (gpu02) print without end: the probe holds
    both sections in shell variables, so only a cap on the node keeps its ``sh`` bounded."""
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed (scripts/test.sh installs it)")

    def populate(name, node_dir):
        write_shims(node_dir, "seed-incident", "gpu05", static=True)
        tool, flood = (("fuser", "exec yes '/dev/nvidia0:         root       4242 F...m x' >&2") if name == "gpu01"
                       else ("nvidia-smi", "exec yes '0, 00000000:19:00.0, NVIDIA H100 80GB HBM3'"))
        (node_dir / "bin" / tool).write_text(f"#!/bin/sh\n{flood}\n")
        (node_dir / "bin" / tool).chmod(0o755)

    rig = SshdRig(tmp_path_factory.mktemp("held-flood"), ["gpu01", "gpu02"], populate).start()
    yield rig
    rig.stop()


async def test_an_endless_fuser_is_cut_on_the_node_and_the_node_is_read_without_its_holders(held_flood_rig):
    # Before the cap on the node, the poll's sh held fuser's output until the timeout: unreachable.
    backend = backend_for(held_flood_rig, "gpu01", max_output=CAP, timeout=8)
    try:
        states = [await backend.snapshot() for _ in range(2)]  # and it stays reachable, poll after poll
    finally:
        await backend.close()
    for state in states:
        assert state.reachable, state.error
        assert {m.section: m.reason for m in state.missing} == {"holders": "over the size cap"}
        assert state.holders == () and state.kernel_events and state.services and state.gpus
    codes = {(f.code, f.section) for f in diagnose(states[-1]).findings}
    assert ("EVIDENCE_MISSING", "holders") in codes and diagnose(states[-1]).verdict is not Verdict.HEALTHY


async def test_an_endless_nvidia_smi_is_cut_on_the_node_and_the_node_is_read_without_its_gpus(held_flood_rig):
    backend = backend_for(held_flood_rig, "gpu02", max_output=CAP, timeout=8)
    try:
        sections = await backend.read_sections()
        state = await backend.snapshot()
    finally:
        await backend.close()
    assert sections["gpus"].truncated and sections["gpus"].stdout == ""
    assert all(not r.truncated and r.exit_status != -1 for name, r in sections.items() if name != "gpus")
    assert {"holders", "processes", "kernel", "units", "clock"} <= set(sections)
    # The node answered every other section: it is reachable, its GPUs unknown over the cap (not 0, not
    # "unreachable"), and everything else was read.
    assert state.reachable, state.error
    assert {m.section: m.reason for m in state.missing} == {"gpus": "over the size cap"}
    assert state.gpus == () and state.holders and state.kernel_events and state.services
    diagnosis = diagnose(state)
    (finding,) = [f for f in diagnosis.findings if f.code == "EVIDENCE_MISSING"]
    assert (finding.section, finding.reason, finding.severity) == ("gpus", "over the size cap", Severity.ERROR)
    assert "more than the byte cap" in finding.message and diagnosis.verdict is Verdict.BROKEN
    # The repair's preflight cannot see the board: it refuses, naming the GPUs.
    assert "the GPUs and their fabric state could not be read" in (refusal(state) or "")
