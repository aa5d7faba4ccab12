"""Issue 38 item 2: ten lines of Python warnings on every real SSH target.

asyncssh, imported with cryptography 51, set off ``CryptographyDeprecationWarning: DSA is deprecated`` five
times (each with its source line) on stderr of every command that reached an SSH node, even on a usage error
whose one line came after them; ``sim:`` targets never import asyncssh, so the walkthrough never showed it.
The entry points now ignore exactly that warning category from asyncssh's modules before asyncssh is
imported. Checked here as an operator runs it: ``nvls-tui`` as a subprocess against a real sshd on loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import SshdRig, find_sshd

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]

REPO = Path(__file__).parents[2]
NVLS_TUI = [sys.executable, "-m", "nvls_tui.cli"]


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    def populate(_name: str, node_dir: Path) -> None:
        write_shims(node_dir, "healthy", "hgx01", static=True)

    started = SshdRig(tmp_path_factory.mktemp("rig"), ["hgx01"], populate).start()
    yield started
    started.stop()


def _run(rig: SshdRig, *args: str) -> subprocess.CompletedProcess:
    # No PYTHONWARNINGS of the test run's: the warnings an operator's shell gets.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run([*NVLS_TUI, *args, *rig.cli_args()], capture_output=True, text=True, timeout=120,
                          env=env, cwd=REPO, stdin=subprocess.DEVNULL)


def test_check_of_a_real_ssh_node_writes_no_warning_on_stderr(rig):
    done = _run(rig, "check", rig.target("hgx01"), "--json")
    assert done.returncode == 0, done.stderr
    assert '"verdict": "healthy"' in done.stdout  # it did reach the node over SSH
    # Anything on stderr is nvls-tui's own progress line; no Python warning and its source line.
    assert [line for line in done.stderr.splitlines() if not line.startswith("nvls-tui check: ")] == []
    assert "Warning" not in done.stderr


def test_a_usage_error_after_asyncssh_is_imported_is_exactly_one_line(rig):
    # --jump is refused once the SSH backend (and asyncssh) is loaded: before, five warnings came first.
    done = _run(rig, "check", rig.target("hgx01"), "--jump", "a;b")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("nvls-tui: refusing target 'a;b'")


def test_repair_dry_run_of_a_real_ssh_node_writes_no_warning_on_stderr(rig, tmp_path):
    done = _run(rig, "repair", rig.target("hgx01"), "--dry-run", "--audit-dir", str(tmp_path))
    assert "Warning" not in done.stderr, done.stderr
    assert "asyncssh" not in done.stderr
