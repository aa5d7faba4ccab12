"""This machine: GPUs through NVML (pynvml), holders by scanning /proc, the rest by running the probe.

NVML and /proc scans block, so they run in a thread (``asyncio.to_thread``): the event loop never waits.
"""

from __future__ import annotations

import asyncio
import ctypes
import glob
import os
import signal as signals
import socket
import time
from collections.abc import AsyncIterator, Mapping, Sequence

import psutil

from nvls_tui.assemble import assemble_node_state
from nvls_tui.backends.base import (
    Backend,
    BackendOptions,
    CommandResult,
    CommandTimeout,
    InvalidArgument,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    SignalOutcome,
    validate_pid,
)
from nvls_tui.model import FabricInfo, GpuState, Holder, NodeState
from nvls_tui.parsers.holders import classify, unit_and_pod
from nvls_tui.probe import SECTIONS

FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}


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
        state = FABRIC_STATES.get(int(info.state), "N/A")
        status = "N/A"
        if state == "Completed":
            # status is an NVML return code; nvidia-smi prints its words (e.g. "Insufficient Resources").
            code = int(info.status)
            status = "Success" if code == 0 else str(pynvml.nvmlErrorString(code))
        uuid_hex = bytes(info.clusterUuid).hex()
        cluster = f"{uuid_hex[:8]}-{uuid_hex[8:12]}-{uuid_hex[12:16]}-{uuid_hex[16:20]}-{uuid_hex[20:32]}"
        return FabricInfo(state=state, status=status, clique_id=str(int(info.cliqueId)), cluster_uuid=cluster)
    return FabricInfo(state="Not Supported", status="N/A")


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
            gpus.append(GpuState(index=index, bus_id=bus, name=str(pynvml.nvmlDeviceGetName(handle)),
                                 uuid=str(pynvml.nvmlDeviceGetUUID(handle)), fabric=_fabric(pynvml, handle),
                                 persistence_mode=pm))
        return str(driver), tuple(gpus)
    finally:
        pynvml.nvmlShutdown()


def scan_holders() -> tuple[Holder, ...]:
    """Every process with a /dev/nvidia* file open, from /proc/PID/fd (blocking; run in a thread).

    NVML's process list misses holders without a CUDA context (nvidia-smi, DCGM, watch loops), so the
    file descriptors are the only complete answer.
    """
    holders = []
    for proc in psutil.process_iter(["pid", "ppid", "username", "cmdline", "create_time", "name"]):
        devices = set()
        try:
            for entry in os.scandir(f"/proc/{proc.pid}/fd"):
                try:
                    target = os.readlink(entry.path)
                except OSError:
                    continue
                if target.startswith("/dev/nvidia"):
                    devices.add(target)
            cgroup = open(f"/proc/{proc.pid}/cgroup").read().splitlines()[-1] if devices else None
        except (PermissionError, FileNotFoundError, ProcessLookupError):
            continue
        if not devices:
            continue
        info = proc.info
        command = " ".join(info["cmdline"] or []) or f"[{info['name']}]"
        unit, pod = unit_and_pod(cgroup)
        holders.append(Holder(pid=info["pid"], user=info["username"] or "?", command=command,
                              kind=classify(command), devices=tuple(sorted(devices)), unit=unit, pod=pod,
                              start_time=lstart(info["create_time"]), ppid=info["ppid"]))
    return tuple(sorted(holders, key=lambda h: h.pid))


class LocalBackend(Backend):
    """The machine nvls-tui runs on (target ``local``)."""

    simulated = False

    def __init__(self, options: BackendOptions | None = None) -> None:
        self.options = options or BackendOptions()
        self.host = socket.gethostname() or "local"
        self.last_exit_status: int | None = None

    def _argv(self, argv: Sequence[str], privileged: bool) -> list[str]:
        out = [a for arg in argv for a in (sorted(glob.glob(arg)) or [arg] if arg == "/dev/nvidia*" else [arg])]
        return (["sudo", "-n", *out] if privileged and self.options.sudo else out)

    async def run(self, argv: Sequence[str], timeout: float | None = None, *, privileged: bool = False,
                  env: Mapping[str, str] | None = None, stdin: str | None = None) -> CommandResult:
        """Run a local command without a shell."""
        started = time.monotonic()
        full = self._argv(argv, privileged)
        try:
            proc = await asyncio.create_subprocess_exec(
                *full, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **(env or {})})
        except FileNotFoundError:
            return CommandResult(tuple(argv), 127, "", f"{argv[0]}: command not found\n")
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None),
                                              timeout or self.options.timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise CommandTimeout(f"{argv[0]} did not finish within {timeout or self.options.timeout:.0f} s") from None
        return CommandResult(tuple(argv), proc.returncode or 0, out.decode(errors="replace"),
                             err.decode(errors="replace"), time.monotonic() - started)

    async def stream(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, pty: bool = False,
                     privileged: bool = False) -> AsyncIterator[str]:
        """Yield output lines as they arrive; closing the iterator terminates the process."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(argv, privileged), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, **(env or {})})
        except FileNotFoundError:
            self.last_exit_status = 127
            yield f"{argv[0]}: command not found"
            return
        try:
            assert proc.stdout is not None
            async for raw in proc.stdout:
                yield raw.decode(errors="replace").rstrip("\n")
            self.last_exit_status = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except TimeoutError:
                    proc.kill()

    async def signal(self, pid: int, sig: int, expected: ProcessIdentity) -> SignalOutcome:
        """Signal ``pid`` after re-reading its start time and command line (psutil)."""
        pid = validate_pid(pid)
        if sig == signals.SIGKILL and expected.pid != pid:
            raise InvalidArgument("SIGKILL needs the exact PID the operator selected")
        try:
            proc = psutil.Process(pid)
            start = lstart(proc.create_time())
            command = " ".join(proc.cmdline()) or f"[{proc.name()}]"
        except psutil.NoSuchProcess:
            raise ProcessGone(f"PID {pid} has already exited") from None
        if (expected.start_time and start != expected.start_time) or command != expected.command:
            raise ProcessChanged(f"PID {pid} is now another process ({command[:60]}): not signalled")
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            raise ProcessGone(f"PID {pid} has already exited") from None
        return SignalOutcome(pid, True)

    async def snapshot(self) -> NodeState:
        """NVML for the GPUs, /proc for holders, the probe's other commands for units and logs."""
        polled = time.time()
        try:
            driver, gpus = await asyncio.to_thread(read_nvml)
        except RuntimeError as exc:
            return NodeState(host=self.host, reachable=False, error=str(exc), polled_at=polled)
        holders = await asyncio.to_thread(scan_holders)
        sections = {}
        for section in SECTIONS:
            if section.name in ("gpus", "holders"):
                continue
            try:
                result = await self.run(section.argv, privileged=section.privileged)
                if not result.ok and section.fallback:
                    result = await self.run(section.fallback, privileged=section.privileged)
                sections[section.name] = result
            except CommandTimeout as exc:
                sections[section.name] = CommandResult(section.argv, 124, "", str(exc))
        return assemble_node_state(self.host, sections, simulated=False, polled_at=polled,
                                   gpus=gpus, driver=driver, holders=holders)
