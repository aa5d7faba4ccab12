"""This machine: GPUs through NVML (pynvml), holders by scanning /proc, the rest by running the probe.

NVML and /proc scans block, so they run in a thread (``asyncio.to_thread``): the event loop never waits.
"""

from __future__ import annotations

import asyncio
import codecs
import ctypes
import dataclasses
import glob
import os
import signal as signals
import socket
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

import psutil

from nvls_tui.backends.base import (
    Backend,
    BackendOptions,
    CappedText,
    CommandResult,
    CommandTimeout,
    LineSplitter,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    SignalOutcome,
    Unreachable,
    behind_fence,
    check_fence,
    identity_text,
)
from nvls_tui.model import FabricInfo, GpuState, MissingEvidence
from nvls_tui.parsers.fuser import FuserHolder
from nvls_tui.parsers.holders import build_holders
from nvls_tui.parsers.nvml import fabric_from_nvml
from nvls_tui.parsers.ps import PsEntry, cgroup_column
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.evidence import PERMISSION, TIMED_OUT_STATUS
from nvls_tui.poll.fm_journal import over_bound
from nvls_tui.poll.kernel_tail import KernelTail
from nvls_tui.poll.once import ProbeReading
from nvls_tui.poll.probe import (
    JOURNAL_SECTIONS,
    SECTIONS,
    fm_log_no_journal,
    fm_log_not_run,
    fm_unit_absent,
    journal_absent,
    journal_hung,
    journal_not_run,
)
from nvls_tui.textsafe import clean, clean_line


def lstart(create_time: float) -> str:
    """A process start time in ``ps -o lstart`` form (the identity text used everywhere)."""
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(create_time))


def _fabric(pynvml, handle) -> FabricInfo:
    """Fabric info through the V API with a v3 struct by reference (v2 on older drivers).

    The deprecated v1 call misreads the driver's answer (state 0 on a Completed GPU) and passing the
    struct by value crashed a process on a real machine (fixtures README): never do either.
    """
    for struct_name in ("c_nvmlGpuFabricInfo_v3_t", "c_nvmlGpuFabricInfo_v2_t"):
        struct = getattr(pynvml, struct_name, None)
        if struct is None:
            continue
        info = struct()
        try:
            pynvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
        except pynvml.NVMLError:
            continue
        return fabric_from_nvml(int(info.state), int(info.status), int(info.cliqueId), bytes(info.clusterUuid),
                                health_summary=getattr(info, "healthSummary", None),
                                error_string=lambda code: str(pynvml.nvmlErrorString(code)))
    return FabricInfo(state="N/A", status="N/A")


def read_nvml() -> tuple[str, tuple[GpuState, ...]]:
    """Driver version and every GPU, read through NVML (blocking; run it in a thread).

    Raises:
        RuntimeError: NVML is not available (no driver or no GPU), with NVML's own words.
    """
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise RuntimeError(f"no NVIDIA GPU can be read on this machine (NVML: {exc})") from None
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            pci = pynvml.nvmlDeviceGetPciInfo(handle)
            bus = pci.busId.decode() if isinstance(pci.busId, bytes) else str(pci.busId)
            try:
                pm = "Enabled" if pynvml.nvmlDeviceGetPersistenceMode(handle) else "Disabled"
            except pynvml.NVMLError:
                pm = None
            gpus.append(GpuState(index=index, bus_id=bus, name=clean(str(pynvml.nvmlDeviceGetName(handle))),
                                 uuid=clean(str(pynvml.nvmlDeviceGetUUID(handle))), fabric=_fabric(pynvml, handle),
                                 persistence_mode=pm))
        return str(driver), tuple(gpus)
    finally:
        pynvml.nvmlShutdown()


def scan_holders(root: bool) -> tuple[tuple[FuserHolder, ...], tuple[PsEntry, ...], MissingEvidence | None]:
    """Every process with a ``/dev/nvidia*`` file open, read from /proc as fuser and ps would print it
    (blocking; run it in a thread).

    NVML's process list misses holders without a CUDA context (nvidia-smi, DCGM, watch loops), so the
    file descriptors are the only complete answer. Only files directly in /dev count, as the probe's
    ``/dev/nvidia*`` glob does (not ``/dev/nvidia-caps/*``). The parents of holders are returned too:
    :func:`~nvls_tui.parsers.holders.build_holders` turns a ``watch nvidia-smi`` parent into a holder.

    Returns:
        (holders as fuser lists them, their identities and parents' as ps prints them, why the scan
        is incomplete or None).
    """
    held: list[FuserHolder] = []
    entries: dict[int, PsEntry] = {}
    hidden: list[int] = []
    for proc in psutil.process_iter(["pid", "ppid", "username", "cmdline", "create_time", "name"]):
        devices = set()
        try:
            for entry in os.scandir(f"/proc/{proc.pid}/fd"):
                try:
                    target = os.readlink(entry.path)
                except OSError:
                    continue
                if target.startswith("/dev/nvidia") and "/" not in target[len("/dev/"):]:
                    devices.add(target)
        except PermissionError:
            hidden.append(proc.pid)
            continue
        except (FileNotFoundError, ProcessLookupError):
            continue
        if devices:
            held.append(FuserHolder(proc.pid, clean(proc.info["username"] or "?"), "F....",
                                    clean(proc.info["name"] or "?"), tuple(sorted(devices))))
    wanted = {h.pid for h in held}
    wanted |= {ppid for pid in list(wanted) if (ppid := _ppid(pid)) and ppid > 1}
    for pid in sorted(wanted):
        found = _ps_entry(pid)
        if found is not None:
            entries[pid] = found
    why = None
    if not root:
        why = MissingEvidence("holders", PERMISSION, "the processes holding /dev/nvidia* could not be read: "
                              "nvls-tui does not run as root, so other users' open files are invisible")
    elif hidden:
        why = MissingEvidence("holders", PERMISSION, f"the processes holding /dev/nvidia* could not be read: the "
                              f"open files of PID {hidden[0]} cannot be read" + (f" (and {len(hidden) - 1} more)"
                                                                                  if len(hidden) > 1 else ""))
    return tuple(sorted(held, key=lambda h: h.pid)), tuple(entries.values()), why


def _ppid(pid: int) -> int | None:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def _ps_entry(pid: int) -> PsEntry | None:
    """One process as ``ps -o pid=,ppid=,user:32=,lstart=,args=`` and ``-o cgroup=`` would print it."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            # A command line is anybody's text: cleaned like everything else read from the node.
            args = clean(" ".join(proc.cmdline()) or f"[{proc.name()}]")
            entry = PsEntry(pid=pid, ppid=proc.ppid(), user=clean(proc.username() or "?"),
                            lstart=" ".join(lstart(proc.create_time()).split()), cgroup=None, args=args)
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
            cgroup = cgroup_column(fh.read())
    except (psutil.Error, OSError):
        return None
    return dataclasses.replace(entry, cgroup=None if cgroup == "-" else cgroup)


CHUNK = 64 * 1024


async def _drain(stream) -> None:
    """Read a pipe to its end, dropping what comes (bounded by the process's end)."""
    if stream is not None:
        while await stream.read(CHUNK):
            pass


async def _reap(proc: asyncio.subprocess.Process, reading: asyncio.Future | None = None) -> None:
    """After a kill: let the readers see the pipes close and the exit be reported (bounded)."""
    try:
        async with asyncio.timeout(5):
            if reading is not None:
                await asyncio.gather(reading, return_exceptions=True)
            await proc.wait()
    except TimeoutError:
        pass


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL a command started in a session of its own, and everything it started."""
    try:
        os.killpg(proc.pid, signals.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class LocalBackend(Backend):
    """The machine nvls-tui runs on (target ``local``)."""

    simulated = False

    def __init__(self, options: BackendOptions | None = None) -> None:
        self.options = options or BackendOptions()
        self.host = socket.gethostname() or "local"
        self.last_exit_status: int | None = None
        self.kernel_tail = KernelTail()  # the node's kernel log between polls (read incrementally)
        self.last_assembly = LastAssembly()  # an unchanged node is not parsed again
        self._nvml: asyncio.Future | None = None  # the NVML read in flight (one at a time, see _read_nvml)

    def _argv(self, argv: Sequence[str], privileged: bool) -> list[str]:
        out = [a for arg in argv for a in (sorted(glob.glob(arg)) or [arg] if arg == "/dev/nvidia*" else [arg])]
        return (["sudo", "-n", *out] if privileged and self.options.sudo else out)

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env: Mapping[str, str] | None = None, stdin: str | None = None,
                  fence: str | None = None) -> CommandResult:
        """Run a local command without a shell; past ``options.max_output`` it is stopped (truncated).
        ``fence``: behind the lock's fence (``sh`` reads the owner file, then execs the command)."""
        started = time.monotonic()
        limit = timeout or self.options.timeout
        full = self._argv(behind_fence(argv, fence), privileged)
        try:
            # A session of its own: a stopped `sudo journalctl` takes its child with it.
            proc = await asyncio.create_subprocess_exec(
                *full, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **(env or {})}, start_new_session=True)
        except FileNotFoundError:
            return CommandResult(tuple(argv), 127, "", f"{argv[0]}: command not found\n")
        out, err = CappedText(self.options.max_output), CappedText(self.options.max_output)
        over_cap = asyncio.Event()

        async def pump(stream, sink: CappedText) -> None:
            # Read to the end whatever happens: past the cap the rest is dropped, but a pipe that is no
            # longer read is never seen to close, and the process's exit would never be reported.
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character may span chunks
            kept = True
            while chunk := await stream.read(CHUNK):
                if kept and not sink.add(decoder.decode(chunk)):
                    kept = False
                    over_cap.set()
            if kept:
                sink.add(decoder.decode(b"", final=True))

        async def feed() -> None:
            if stdin is not None and proc.stdin is not None:
                proc.stdin.write(stdin.encode())
                await proc.stdin.drain()
                proc.stdin.close()

        reading: asyncio.Future[Any] = asyncio.ensure_future(
            asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err), feed()))
        capped = asyncio.ensure_future(over_cap.wait())
        try:
            async with asyncio.timeout(limit):
                await asyncio.wait([reading, capped], return_when=asyncio.FIRST_COMPLETED)
                over = over_cap.is_set()
                if over:
                    _kill_group(proc)  # past the cap: stopped, not read to its end
                await reading
                await proc.wait()
        except TimeoutError:
            _kill_group(proc)
            await _reap(proc, reading)
            raise CommandTimeout(f"{argv[0]} did not finish within {limit:.0f} s") from None
        except asyncio.CancelledError:
            _kill_group(proc)  # its own session: nothing else would stop it
            raise
        finally:
            capped.cancel()
        if over:
            return CommandResult(tuple(argv), -1, out.text(), err.text(), time.monotonic() - started, truncated=True)
        check_fence(self.host, fence, proc.returncode, err.text())
        return CommandResult(tuple(argv), proc.returncode if proc.returncode is not None else -1, out.text(),
                             err.text(), time.monotonic() - started)

    async def stream(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, pty: bool = False,
                     privileged: bool = False, fence: str | None = None) -> AsyncGenerator[str, None]:
        """Yield output lines as they arrive; closing the iterator terminates the process."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(behind_fence(argv, fence), privileged), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, **(env or {})})
        except FileNotFoundError:
            self.last_exit_status = 127
            yield f"{argv[0]}: command not found"
            return
        splitter = LineSplitter(self.options.max_output)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            assert proc.stdout is not None
            while raw := await proc.stdout.read(CHUNK):
                for line in splitter.feed(decoder.decode(raw)):
                    yield clean_line(line)
            for line in splitter.finish():
                yield clean_line(line)
            self.last_exit_status = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.terminate()
                # Drain what is left, or the pipe (no longer read) would never be seen to close.
                drain = asyncio.ensure_future(_drain(proc.stdout))
                try:
                    async with asyncio.timeout(5):
                        await proc.wait()
                except TimeoutError:
                    proc.kill()
                    await _reap(proc)
                await asyncio.gather(drain, return_exceptions=True)

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity,
                       fence: str | None = None) -> SignalOutcome:
        """Re-read the PID's start time and command line (psutil), then signal it (see Backend.signal).

        This machine is the node: the lock's fence is a real ``sh`` run right before the signal (the owner
        file read there, as on any node); the window between the two is this process's own.
        """
        if fence:
            await self.run(("true",), fence=fence)  # raises Fenced when the lock does not name the run
        try:
            proc = psutil.Process(pid)
            start = lstart(proc.create_time())
            command = clean(" ".join(proc.cmdline()) or f"[{proc.name()}]")
        except psutil.NoSuchProcess:
            raise ProcessGone(f"PID {pid} has already exited") from None
        if identity_text(start, command) != identity_text(expected.start_time, expected.command):
            raise ProcessChanged(f"PID {pid} is now another process ({command[:60]}): not signalled")
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            raise ProcessGone(f"PID {pid} has already exited") from None
        return SignalOutcome(pid, True)

    async def _read_nvml(self) -> tuple[str, tuple[GpuState, ...]] | None:
        """Driver and GPUs through NVML, or None when NVML did not answer within ``options.timeout``.

        A thread stuck in the driver cannot be stopped: it is left to finish, and no other read is
        started while it is stuck (each poll would otherwise leave one more thread behind).

        Raises:
            Unreachable: NVML cannot read this machine's GPUs (no driver, no GPU).
        """
        if self._nvml is None or self._nvml.done():
            self._nvml = asyncio.ensure_future(asyncio.to_thread(read_nvml))
        done, _ = await asyncio.wait({self._nvml}, timeout=self.options.timeout)
        if not done:
            return None
        try:
            return self._nvml.result()
        except RuntimeError as exc:
            raise Unreachable(str(exc)) from None

    async def read_probe(self) -> ProbeReading:
        """NVML for the GPUs, /proc for holders, the probe's other commands for units and logs.

        While it runs, :attr:`activity` names the step in flight (NVML can hang in the driver).

        Raises:
            Unreachable: NVML cannot read this machine's GPUs (no driver, no GPU).
        """
        polled = time.time()
        self._begin(phase="reading the GPUs through NVML")
        sections: dict[str, CommandResult] = {}
        nvml = await self._read_nvml()
        if nvml is None:  # NVML hung, as a wedged nvidia-smi does: the GPUs timed out, the rest is read
            driver, gpus = None, None
            sections["gpus"] = CommandResult(("NVML",), TIMED_OUT_STATUS, "",
                                             f"NVML did not answer within {self.options.timeout:g} s")
        else:
            driver, gpus = nvml
        self._begin(phase="scanning /proc for /dev/nvidia* holders")
        fuser, entries, incomplete = await asyncio.to_thread(scan_holders, os.geteuid() == 0)
        holders = build_holders(fuser, entries)
        for section in SECTIONS:
            if section.name in ("gpus", "holders"):
                continue
            if section.name in JOURNAL_SECTIONS and (hung := journal_hung(sections)) is not None:
                # A journalctl of this poll timed out: the next would wait out another --timeout (issue 25).
                sections[section.name] = journal_not_run(section.name, hung)
                continue
            if section.name == "fm_log" and fm_unit_absent(sections.get("units")):
                sections[section.name] = fm_log_not_run()  # as the remote script: systemd has no FM unit
                continue
            if section.name == "fm_log" and journal_absent(sections):
                sections[section.name] = fm_log_no_journal()  # as the remote script: no journal at all
                continue
            asked = self.kernel_tail.cursor
            argv = self.kernel_tail.argv() if section.name == "kernel" else section.argv
            try:
                self._begin(argv)
                result = await self.run(argv, privileged=section.privileged)
                if not result.ok and section.fallback:
                    self._begin(section.fallback)
                    result = await self.run(section.fallback, privileged=section.privileged)
                if section.name == "kernel":
                    # What the remote script's awk does on the node: filter, bound, note the cursor.
                    result = self.kernel_tail.take_unfiltered(result, asked)
                elif section.name == "fm_log":
                    # Past FM_LOG_BYTES nothing is kept (what assembling any transport's reading does).
                    result = over_bound(result) or result
                sections[section.name] = result
            except CommandTimeout as exc:
                sections[section.name] = CommandResult(section.argv, TIMED_OUT_STATUS, "", str(exc))
        return ProbeReading(sections, sudo=self.options.sudo, polled_at=polled, gpus=gpus, driver=driver,
                            holders=holders, missing=(incomplete,) if incomplete else ())
