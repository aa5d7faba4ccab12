"""The kernel log is read incrementally: once per boot, then from the journal cursor of the last poll.

Over a real sshd to shimmed nodes (the probe's own script and awk on the node, the simulator's
journalctl behind them), and in process. What each poll's journalctl printed is watched where it
arrives (``KernelTail.take``), so "not re-read" is about what the node printed, not what we kept.
"""

from __future__ import annotations

import asyncio

import pytest

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.model import CommandResult
from nvls_tui.poll.kernel_tail import CURSOR_LINE, KernelTail, filter_journal, kernel_argv
from nvls_tui.poll.probe import JOURNAL_ROOT_ENV
from nvls_tui.sim.commands import execute
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.shims import write_shims
from nvls_tui.sim.store import NodeStore
from tests.sshd_rig import SshdRig, backend_for, find_sshd
from tests.unit.test_probe_journal_dirs import journal_in

NEW = "NVRM: Xid (PCI:0000:5a:00): 79, pid=0, GPU has fallen off the bus."
LATER = "NVRM: Xid (PCI:0000:18:00): 48, pid=0, An uncorrectable double bit error."


class Watched:
    """A backend's KernelTail.take, recording what each poll's kernel section held as it came."""

    def __init__(self, backend) -> None:
        self.raw: list[str] = []
        self.asked: list[str | None] = []
        take = backend.kernel_tail.take

        def watching(result: CommandResult, asked: str | None) -> CommandResult:
            self.raw.append(result.stdout)
            self.asked.append(asked)
            return take(result, asked)

        backend.kernel_tail.take = watching

    def entries(self, poll: int) -> list[str]:
        """The kernel lines the node printed in poll ``poll`` (0-based)."""
        return [ln for ln in self.raw[poll].splitlines() if ln[:4].isdigit()]


def kernel_text(state) -> list[str]:
    """The kernel lines the node's state was built from (each event's line, its message part)."""
    return [e.line.split("kernel: ", 1)[-1] for e in state.kernel_events]


@pytest.fixture
def shim_node(tmp_path):
    """seed-incident gpu05 (frozen clock) behind a real sshd; yields (rig, its NodeStore)."""
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed")
    rig = SshdRig(tmp_path / "rig", ["gpu05"],
                  lambda name, d: write_shims(d, "seed-incident", name, speed=0.0)).start()
    yield rig, NodeStore(rig.nodes["gpu05"].dir)
    rig.stop()


def log(store: NodeStore, text: str, *, reboot: bool = False, vacuum: bool = False) -> None:
    """Change the node's journal between two polls, under the shims' own lock."""
    with store.locked() as (node, clock):
        now = clock.now()
        if vacuum:  # journald rotated and the archived file (every entry read so far) was vacuumed
            node.kernel = []
        if reboot:
            node.boot = now
            node.log_kernel(now, "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)")
        node.log_kernel(now, text)


async def poll(backend):
    return await backend.snapshot()


@pytest.mark.ssh
async def test_a_line_logged_between_polls_is_seen_once_and_old_lines_are_not_read_again(shim_node):
    rig, store = shim_node
    backend = backend_for(rig, "gpu05", timeout=120.0)  # a loaded CI machine is slow, never wrong
    watched = Watched(backend)
    first = await poll(backend)
    before = watched.entries(0)
    assert first.reachable and before, "seed-incident gpu05 has kernel lines this boot"
    assert watched.asked[0] is None  # the first poll reads the boot

    cursor = backend.kernel_tail.cursor
    assert cursor is not None and f"--cursor={cursor}" in backend.kernel_tail.argv()
    log(store, NEW)
    second = await poll(backend)
    assert watched.asked[1] == cursor  # the second poll started where the first one ended
    # The node printed the new line, and of the first poll's lines at most the cursor's own entry.
    assert NEW in " ".join(watched.entries(1))
    assert set(watched.entries(1)) - {before[-1]} == {ln for ln in watched.entries(1) if NEW in ln}
    # The state is that of a whole read: every old line once, the new one once, in order.
    assert kernel_text(second) == [*kernel_text(first), NEW][-len(kernel_text(second)):]
    assert kernel_text(second).count(NEW) == 1

    third = await poll(backend)  # nothing new: nothing printed but (at most) the cursor's entry
    assert [ln for ln in watched.entries(2) if NEW not in ln] == []
    assert kernel_text(third) == kernel_text(second)
    await backend.close()


@pytest.mark.ssh
async def test_a_rotated_journal_between_polls_loses_no_new_line_and_keeps_the_old(shim_node):
    rig, store = shim_node
    backend = backend_for(rig, "gpu05", timeout=120.0)  # a loaded CI machine is slow, never wrong
    first = await poll(backend)
    assert first.reachable and kernel_text(first)
    log(store, NEW, vacuum=True)  # the cursor's own entry is gone with the rest
    second = await poll(backend)
    assert kernel_text(second) == [*kernel_text(first), NEW]
    log(store, LATER)
    third = await poll(backend)
    assert kernel_text(third) == [*kernel_text(first), NEW, LATER]
    await backend.close()


@pytest.mark.ssh
async def test_a_reboot_between_polls_lets_the_old_boot_go(shim_node):
    rig, store = shim_node
    backend = backend_for(rig, "gpu05", timeout=120.0)  # a loaded CI machine is slow, never wrong
    first = await poll(backend)
    assert kernel_text(first)
    log(store, NEW, reboot=True)
    second = await poll(backend)
    assert kernel_text(second) == [NEW]  # -b: this boot's lines only, as a whole read would give
    await backend.close()


def test_in_process_the_same_holds_and_a_failed_read_starts_the_boot_again():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0.0)
    backend = SimulatedBackend(fleet, "gpu05")
    watched = Watched(backend)
    first = asyncio.run(backend.snapshot())
    node = fleet.node("gpu05")
    node.log_kernel(fleet.clock.now(), NEW)
    second = asyncio.run(backend.snapshot())
    assert kernel_text(second).count(NEW) == 1 and kernel_text(second)[:-1] == kernel_text(first)
    assert watched.asked[1] is not None
    assert set(watched.entries(1)) <= {watched.entries(0)[-1], *[ln for ln in watched.entries(1) if NEW in ln]}

    node.journal_access = "denied"  # the next read fails: unknown, never "clean", and the cursor is let go
    failed = asyncio.run(backend.snapshot())
    assert any(m.section == "kernel" for m in failed.missing) and backend.kernel_tail.cursor is None
    node.journal_access = "ok"
    again = asyncio.run(backend.snapshot())
    assert watched.asked[-1] is None and kernel_text(again) == kernel_text(second)


def test_a_cursor_from_the_node_is_never_put_on_a_command_line_unless_it_is_journalctls_own():
    tail = KernelTail()
    hostile = "s=1;$(touch /tmp/pwned);b=2"
    text = f"2026-08-15T16:00:00+00:00 gpu05 kernel: {NEW}\n{CURSOR_LINE}{hostile}\n-- nvls-tui visited 1 first 1 last 1\n"
    tail.take(CommandResult(kernel_argv(), 0, text), None)
    assert tail.cursor is None and tail.argv() == kernel_argv()
    assert kernel_argv(hostile) == kernel_argv()


def test_the_python_filter_is_the_probe_awk(tmp_path):
    """The backends that run journalctl one command at a time filter as the node's awk does."""
    import subprocess

    from nvls_tui.poll.probe_script import probe_script

    fleet = load_fleet("sim:seed-incident/gpu05", speed=0.0)
    node = fleet.node("gpu05")
    for i in range(600):  # 400 matching: more than the bound
        node.log_kernel(fleet.clock.now(), f"NVRM: line {i}" if i % 3 else f"eth0: link up {i}")
    raw = execute(node, kernel_argv(), fleet.clock.now())
    (tmp_path / "journalctl").write_text(f"#!/bin/sh\ncat {tmp_path / 'out'}\n")
    (tmp_path / "journalctl").chmod(0o755)
    (tmp_path / "out").write_text(raw.stdout)
    done = subprocess.run(["sh", "-c", probe_script(only=("kernel",))], capture_output=True, text=True,
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))}, check=True)
    body = done.stdout.split("begin kernel\n", 1)[1].rsplit("@@nvls-tui-0 end kernel", 1)[0]
    assert body == filter_journal(raw.stdout)
    assert sum(ln[:4].isdigit() for ln in body.splitlines()) == 300 and "eth0" not in body
    assert "NVRM: line 599" in body and "NVRM: line 148\n" not in body
