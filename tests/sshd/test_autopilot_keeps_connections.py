"""The autopilot polls its rounds over connections it keeps, as ``check --watch`` and the console do.

Before, each round of the autopilot was a fresh ``check``: a new SSH connection to every node every round (a
handshake and an sshd on each node, and a bastion CPU a cold poll costs), and the whole boot's kernel log read
again each time, since a fresh connection has no journal cursor. Over a real sshd to two shimmed nodes: the
second and third rounds read the kernel log from the cursor the round before ended at, and one poller process
served the three rounds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvls_tui.sim.shims import write_shims
from nvls_tui.sim.store import NodeStore
from tests.sshd_rig import SshdRig, find_sshd
from tests.unit.test_check_watch_poller import _pollers_of, _wait_gone
from tests.waiting import scaled

REPO = Path(__file__).parents[2]
NODES = ["gpu05", "gpu06"]


@pytest.fixture
def rig(tmp_path):
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed")
    started = SshdRig(tmp_path / "rig", NODES, lambda name, d: write_shims(d, "seed-incident", name, speed=0.0)).start()
    yield started
    started.stop()


def journal_reads(rig: SshdRig, name: str) -> list[list[str]]:
    """Every ``journalctl -k`` the node ran, in order."""
    node, _ = NodeStore(rig.nodes[name].dir).load()
    return [list(argv) for _, argv in node.cmdlog if argv[:2] == ["journalctl", "-k"]]


def _wait_gone_all(pids: list[int]) -> bool:
    return all(_wait_gone(pid) for pid in pids)


def test_rounds_after_the_first_read_the_kernel_log_from_the_cursor_over_the_kept_connection(rig, tmp_path):
    argv = [sys.executable, "-m", "nvls_tui.cli", "autopilot", "--mode", "observe", "--rounds", "3", "--every", "0.1",
            "--json", "--state-dir", str(tmp_path / "autopilot"), *rig.targets(), *rig.cli_args()]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=scaled(180))
    finally:
        proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "Traceback" not in err
    assert _wait_gone_all(_pollers_of(proc.pid))  # the poller process ended with the autopilot
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert {r["node"] for r in records if r.get("node")} >= set(rig.targets())  # every node judged
    for name in NODES:
        reads = journal_reads(rig, name)
        assert len(reads) == 3, reads  # one kernel read a round
        assert not any(a.startswith("--cursor=") for a in reads[0])  # the first: the whole boot
        assert all(any(a.startswith("--cursor=") for a in r) for r in reads[1:]), reads  # then from the cursor
