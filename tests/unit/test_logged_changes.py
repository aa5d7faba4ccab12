"""Issue 36 item 1: the report reads what a logged command changed as a typed change, read back from its argv once,
at the edge (runbook/logged_changes, onto each command's LogEntry), never by the command's words in report/."""

from __future__ import annotations

import pytest

from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook.changes import (
    Change,
    DrainNode,
    EvictPod,
    ReleaseLock,
    SetPersistence,
    TakeLock,
    UnitChange,
    record_remove,
)
from nvls_tui.runbook.events import CommandFinished
from nvls_tui.runbook.log_entries import read_entry
from nvls_tui.runbook.logged_changes import change_made

KUBECTL = ("kubectl", "--context", "prod")


@pytest.mark.parametrize("change", [
    UnitChange("stop", "nvidia-dcgm.service"), UnitChange("start", "nvidia-fabricmanager.service"),
    SetPersistence(False), SetPersistence(True, 3), record_remove(), ReleaseLock(), DrainNode("gpu05", "nvls-tui:r1"),
    EvictPod("inference", "vllm-0", KUBECTL)], ids=repr)
def test_each_change_reads_back_from_the_command_that_made_it(change: Change):
    assert change_made(change.argvs()[-1]) == change


def test_the_records_rename_is_the_record_written_and_the_locks_directory_the_lock():
    written = change_made(("mv", "-f", f"{RECORD_FILE}.tmp", RECORD_FILE))
    assert getattr(written, "path", None) == RECORD_FILE
    # The lock's directory is made by a take and a take-over alike: the lock is made.
    assert isinstance(change_made(TakeLock().argvs()[-1]), TakeLock)


@pytest.mark.parametrize("argv", [("fuser", "-v", "/dev/nvidia0"), ("nvidia-smi", "-r"), ("date",), ()])
def test_a_read_or_a_change_the_report_does_not_tell_reads_back_as_none(argv):
    assert change_made(argv) is None


def test_a_commands_entry_carries_the_change_it_made():
    argv = UnitChange("stop", "kubelet.service").argv()
    entry = read_entry(CommandFinished(host="gpu05", step="quiesce", argv=argv, exit_status=0).to_record())
    assert entry.change == UnitChange("stop", "kubelet.service")
