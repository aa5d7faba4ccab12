"""The backend of simulated nodes: every command runs in process against a :mod:`nvls_tui.sim` node.

It honours the same contract as the SSH backend (timeouts, streaming at the tool's pace, identity
checks before a signal), so everything above it cannot tell a simulated node from a real one except
by ``simulated = True``.
"""

from __future__ import annotations

import asyncio
import signal as _signal
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from nvls_tui.backends.base import (
    DEFAULT_MAX_OUTPUT,
    Backend,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    SignalOutcome,
    behind_fence,
    check_fence,
    identity_text,
    join_argv,
)
from nvls_tui.parsers.fuser import parse_fuser_streams
from nvls_tui.parsers.ps import parse_ps
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.evidence import TIMED_OUT_STATUS
from nvls_tui.poll.kernel_tail import KernelTail
from nvls_tui.poll.once import ProbeReading
from nvls_tui.poll.probe import (
    JOURNAL_SECTIONS,
    PICK,
    QUICK,
    SECTIONS,
    cgroup_argv,
    fm_log_no_journal,
    fm_log_not_run,
    fm_unit_absent,
    journal_absent,
    journal_hung,
    journal_not_run,
    parents_from,
    ppid_argv,
    ps_argv,
)
from nvls_tui.sim.commands import HANG, Output, execute
from nvls_tui.sim.processes import gpu_devices
from nvls_tui.sim.render_nccl import Plan
from nvls_tui.textsafe import clean_line

if TYPE_CHECKING:
    from nvls_tui.sim.fleet import SimFleet
    from nvls_tui.sim.state import Node, Proc



async def wait_out(seconds: float) -> None:
    """Wait for a hung command's timeout (real seconds; tests put a fake sleep here to count the waits)."""
    await asyncio.sleep(seconds)


class SimulatedBackend(Backend):
    """One simulated node of a :class:`~nvls_tui.sim.fleet.SimFleet`.

    Attributes:
        host: the node name.
        timeout: default per-command timeout in real seconds.
        last_exit_status: exit status of the last finished :meth:`stream` (None while running or cancelled).
    """

    simulated = True

    def __init__(self, fleet: SimFleet, name: str, *, timeout: float = 20.0,
                 max_output: int = DEFAULT_MAX_OUTPUT, read_only: bool = False) -> None:
        self._read_only = read_only
        self.fleet = fleet
        self.host = name
        self.timeout = timeout
        self.max_output = max_output
        self.last_exit_status: int | None = None
        self.kernel_tail = KernelTail()  # the node's kernel log between polls (read incrementally)
        self.last_assembly = LastAssembly()  # an unchanged node is not parsed again

    @property
    def node(self) -> Node:
        """The simulated node behind this backend."""
        return self.fleet.node(self.host)

    def _spawn_smoke(self, plan: Plan, argv: Sequence[str], now: float) -> Proc:
        # While it runs, the test holds every GPU like any CUDA application (fuser and -r see it).
        return self.node.spawn(pid=plan.pid, ppid=1, user="root", start=now, argv=list(argv),
                               cgroup="0::/user.slice/user-0.slice/session-9.scope", role="smoke",
                               devices=gpu_devices(self.node, ("/dev/nvidiactl", "/dev/nvidia-uvm")),
                               expires=now + plan.duration, access="F...m")

    def _end_smoke(self, proc: Proc) -> None:
        self.node.procs.pop(proc.pid, None)

    async def run(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        *,
        privileged: bool = False,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        fence: str | None = None,
    ) -> CommandResult:
        """Run one command in process; a command that never returns raises CommandTimeout. ``fence``: the
        node's ``sh`` runs the lock's fence first (as behind a real sshd), under the node's store."""
        argv = tuple(argv)
        limit = self.timeout if timeout is None else timeout
        began = time.monotonic()

        async def go() -> CommandResult:
            now = self.fleet.clock.now()
            result = execute(self.node, behind_fence(argv, fence), now, env=env, stdin=stdin)
            if result is HANG:
                await asyncio.Event().wait()
            if isinstance(result, Output):
                check_fence(self.host, fence, result.exit_status, result.stderr)
            if isinstance(result, Plan):
                proc = self._spawn_smoke(result, argv, now)
                try:
                    await self.fleet.clock.sleep(result.duration)
                finally:
                    self._end_smoke(proc)
                return CommandResult(argv, result.exit_status, result.text(), "", time.monotonic() - began)
            assert isinstance(result, Output)
            await asyncio.sleep(0)
            return self._capped(argv, result.exit_status, result.stdout, result.stderr, time.monotonic() - began)

        try:
            # asyncio.timeout, not wait_for: 3.11's wait_for drops a cancel that comes as the command finishes
            # (a repair's heartbeat then never stopped: tests/unit/test_cancel_is_never_lost.py).
            async with asyncio.timeout(limit):
                return await go()
        except TimeoutError as exc:
            raise CommandTimeout(f"`{join_argv(argv)}` did not finish within {limit:g} s on {self.host}") from exc

    async def stream(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        pty: bool = False,
        privileged: bool = False,
        fence: str | None = None,
    ) -> AsyncGenerator[str, None]:
        """Yield output lines (without their newline) at the simulated tool's pace (``fence``: see run)."""
        argv = tuple(argv)
        self.last_exit_status = None
        now = self.fleet.clock.now()
        result = execute(self.node, behind_fence(argv, fence), now, env=env)
        if result is HANG:
            await asyncio.Event().wait()
        if isinstance(result, Output):
            text = result.merged if result.merged is not None else CommandResult(
                argv, result.exit_status, result.stdout, result.stderr).output
            for line in text.splitlines():
                yield clean_line(line)
            self.last_exit_status = result.exit_status
            return
        assert isinstance(result, Plan)
        proc = self._spawn_smoke(result, argv, now)
        try:
            for delay, line in result.steps:
                if delay:
                    await self.fleet.clock.sleep(delay)
                yield clean_line(line)
            self.last_exit_status = result.exit_status
        finally:
            self._end_smoke(proc)

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity,
                       fence: str | None = None) -> SignalOutcome:
        """Re-read ``pid`` with ps, refuse if it changed, then ``kill -SIG pid`` (see Backend.signal); both
        behind the lock's fence of run ``fence`` where one is given."""
        seen = await self.run(ps_argv([pid]), privileged=True, fence=fence)
        entry = next(iter(parse_ps(seen.stdout).value), None)
        if not seen.ok or entry is None:
            raise ProcessGone(f"process {pid} on {self.host} is gone")
        start, command = entry.lstart, entry.args
        if identity_text(expected.start_time, "") != identity_text(start, ""):
            raise ProcessChanged(f"process {pid} on {self.host} was restarted (started {start}, "
                                 f"expected {expected.start_time}): not signalled")
        if identity_text("", expected.command) != identity_text("", command):
            raise ProcessChanged(f"process {pid} on {self.host} now runs `{command}`, not "
                                 f"`{expected.command}`: not signalled")
        name = _signal.Signals(sig).name.removeprefix("SIG") if sig in _signal.Signals._value2member_map_ else str(sig)
        done = await self.run(("kill", f"-{name}", str(pid)), privileged=True, fence=fence)
        if not done.ok:
            if "No such process" in done.stderr:
                raise ProcessGone(f"process {pid} on {self.host} is gone")
            raise CommandFailed(f"kill -{name} {pid} failed on {self.host}: {done.stderr.strip()}", done)
        return SignalOutcome(pid=pid, signalled=True)

    async def _quick(self, argv_of: Callable[[list[int], str], tuple[str, ...]], pids: list[int]) -> CommandResult:
        """A ps read of ``pids`` as the script does it: ``-q``, and ``-p`` where ps refuses that."""
        result = await self._section(argv_of(pids, QUICK), False)
        return result if result.ok or result.exit_status == TIMED_OUT_STATUS else await self._section(
            argv_of(pids, PICK), False)

    async def _section(self, argv: Sequence[str], privileged: bool) -> CommandResult:
        """One probe command with stderr merged into stdout, as the remote script's ``2>&1`` does."""
        argv = tuple(argv)
        self._begin(argv)
        began = time.monotonic()
        try:
            result = execute(self.node, argv, self.fleet.clock.now())
        except Exception as exc:  # noqa: BLE001 - a simulator bug reads as a failed command, not a crash
            return CommandResult(argv, 1, f"simulator error: {exc!r}\n")
        await asyncio.sleep(0)
        if result is HANG:
            await wait_out(self.timeout)  # a wedged tool costs the poll its whole timeout, as on a node
            return CommandResult(argv, TIMED_OUT_STATUS, f"`{join_argv(argv)}` did not finish within {self.timeout:g} s\n", "",
                                 float(self.timeout))
        if not isinstance(result, Output):
            return CommandResult(argv, 1, "", "")
        merged = result.merged if result.merged is not None else CommandResult(
            argv, result.exit_status, result.stdout, result.stderr).output
        return self._capped(argv, result.exit_status, merged, "", time.monotonic() - began)

    def _capped(self, argv: tuple[str, ...], status: int, out: str, err: str, took: float) -> CommandResult:
        """The result as the SSH and local backends would give it: past the cap, cut and marked."""
        if len(out) > self.max_output or len(err) > self.max_output:
            return CommandResult(argv, -1, out[: self.max_output], err[: self.max_output], took, truncated=True)
        return CommandResult(argv, status, out, err, took)

    async def read_probe(self) -> ProbeReading:
        """Run the read-only probe as the remote script does, one command at a time.

        While it runs, :attr:`activity` names the command in flight (a wedged nvidia-smi, say).
        """
        return ProbeReading(await self.read_sections(), simulated=True)

    async def read_sections(self) -> dict[str, CommandResult]:
        """The probe's sections, read one command at a time as the remote script runs them."""
        sections: dict[str, CommandResult] = {}
        for section in SECTIONS:
            if section.name in JOURNAL_SECTIONS and (hung := journal_hung(sections)) is not None:
                sections[section.name] = journal_not_run(section.name, hung)  # as the script: not asked again
                continue
            if section.name == "fm_log" and fm_unit_absent(sections.get("units")):
                sections[section.name] = fm_log_not_run()  # as the script: no FM unit, no journal to read
                continue
            if section.name == "fm_log" and journal_absent(sections):
                sections[section.name] = fm_log_no_journal()  # as the script: the node has no journal at all
                continue
            asked = self.kernel_tail.cursor
            argv = self.kernel_tail.argv() if section.name == "kernel" else section.argv
            result = await self._section(argv, section.privileged)
            # After a timeout the fallback is not tried: the same tool would hang again (the remote
            # script's section is ended whole), and the poll would wait out a second timeout.
            if not result.ok and result.exit_status != TIMED_OUT_STATUS and section.fallback:
                result = await self._section(section.fallback, section.privileged)
            if section.name == "kernel":
                # The remote script filters this section on the node (awk); do the same here.
                result = self.kernel_tail.take_unfiltered(result, asked)
            sections[section.name] = result
        # The script's derived reads: identities and cgroups of the holders and of their parents.
        pids = sorted({h.pid for h in parse_fuser_streams(sections["holders"].stdout).value})
        if pids:
            parents = await self._quick(ppid_argv, pids)
            ppids = parents_from(parents.stdout, pids)
            sections["processes"] = await self._quick(ps_argv, pids + ppids)
            sections["cgroups"] = await self._quick(cgroup_argv, pids + ppids)
        else:
            sections["processes"] = sections["cgroups"] = CommandResult(("ps",), 0, "")
        return sections

    async def close(self) -> None:
        """Nothing to release: the node lives in the fleet."""


def sim_backends(fleet: SimFleet, **kwargs) -> list[SimulatedBackend]:
    """One :class:`SimulatedBackend` per selected node of ``fleet``, in order."""
    return [SimulatedBackend(fleet, name, **kwargs) for name in fleet.names]
