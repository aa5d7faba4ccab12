"""The benchmark's floor does the remote work nvls-tui does, on nodes like the ones it stands for.

``make bench`` divides nvls-tui's re-poll by the floor's (bare asyncssh sending the probe again from
the journal cursor of its first answer). That is a floor only if nvls-tui's second poll sends the same
script; and the rig's nodes stand for real nodes that have been up for days, whose persistent journal
reaches back to their boot. Padding a node's kernel log before the boot's first line made every bench
node's journal look rotated: nvls-tui then read the whole boot and the ring buffer at every poll while
the floor read from its cursor, and the re-poll ratio measured that difference, not the client.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import asyncssh
import pytest

from bench import nvls_repoll
from bench.bare_asyncssh import _again, _connect, _probe
from bench.rig import BenchRig
from bench.tools import _nvls_args
from nvls_tui.backends.ssh import backend as ssh_backend
from nvls_tui.poll.kernel_tail import BOOT_WORDS
from tests.sshd_rig import find_sshd

NONCE = re.compile(r"@@nvls-tui-[0-9a-z]+")
pytestmark = pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")


@pytest.fixture(scope="module")
def bench_rig(tmp_path_factory):
    """One padded bench node behind a real sshd."""
    rig = BenchRig(1, root=tmp_path_factory.mktemp("bench-rig")).start()
    try:
        yield rig
    finally:
        rig.stop()


def _nvls_lines(rig: BenchRig, work: Path, monkeypatch) -> list[str]:
    """Every command line nvls-tui's bench re-poll sent (its first poll, then its second)."""
    sent: list[str] = []
    execute = ssh_backend.SshBackend._execute

    async def recording(self, argv, line, *args, **kwargs):
        sent.append(line)
        return await execute(self, argv, line, *args, **kwargs)

    monkeypatch.setattr(ssh_backend.SshBackend, "_execute", recording)
    monkeypatch.setattr(sys, "stdout", open(work / "repoll.out", "w"))  # its per-node lines
    try:
        assert asyncio.run(nvls_repoll.main(_nvls_args(rig, 1, work))) == 0
    finally:
        sys.stdout.close()
    return sent


def _first_answer(rig: BenchRig) -> str:
    """What the rig's node prints for the probe over SSH (the floor's first round)."""
    async def answer() -> str:
        known = asyncssh.read_known_hosts(str(rig.rig.known_hosts))
        conn = await _connect("127.0.0.1", rig.port("gpu001"), str(rig.rig.client_key), known)
        try:
            return await _probe(conn, rig.probe_file().read_text())
        finally:
            conn.close()

    return asyncio.run(answer())


def _floor_lines(rig: BenchRig) -> tuple[str, str]:
    """The floor's first and second command lines for the rig's node (the second from its first answer)."""
    return rig.probe_file().read_text(), _again(_first_answer(rig))


def _script(line: str) -> str:
    """The probe script of a command line, without its nonce and nvls-tui's process-group marker."""
    return NONCE.sub("@@nvls-tui-N", line[line.index("sh -c "):])


def test_a_bench_node_s_journal_reaches_back_to_its_boot(bench_rig):
    journal = next((bench_rig.rig.nodes["gpu001"].dir / "static").glob("journalctl.*.out")).read_text()
    first = journal.splitlines()[0]
    assert f"kernel: {BOOT_WORDS}" in first
    assert len(journal.splitlines()) > 250  # padded towards the 300-line tail a node up for days fills


def test_the_probe_size_the_rig_reports_is_what_its_node_sends_over_ssh(bench_rig):
    """The rig measures each node's probe locally; the node's sshd gives it its journal, so must the measure."""
    answer = _first_answer(bench_rig)
    sent = len(answer.encode())
    assert "-- cursor: " in answer  # the node's journalctl ran
    assert abs(bench_rig.sizes["gpu001"] - sent) < 200  # the nonce and the clock differ, nothing else
    assert bench_rig.sizes["gpu001"] > 40_000  # padded to PROBE_BYTES (48 KB), not the 13 KB without the journal


def test_the_floor_s_second_round_sends_nvls_tui_s_second_poll(bench_rig, tmp_path, monkeypatch):
    nvls_first, nvls_second = _nvls_lines(bench_rig, tmp_path, monkeypatch)
    floor_first, floor_second = _floor_lines(bench_rig)
    assert _script(nvls_first) == _script(floor_first)
    # The second poll starts at the journal cursor (not the whole boot, not the ring buffer) in both.
    assert "--cursor=s=" in nvls_second and "whole=0" in nvls_second
    assert _script(nvls_second) == _script(floor_second)
