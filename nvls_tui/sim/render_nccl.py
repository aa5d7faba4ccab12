"""``all_reduce_perf`` (nccl-tests 2.19.6, NCCL 2.28.9) as a timed plan of output lines.

The plan is decided when the test starts (that is when NCCL binds its NVLS multicast memory), then
its lines are replayed at a realistic pace: rows 0.1 to 1.7 s apart, as observed on a real H200 VM.
Column layout is copied from tests/fixtures/real/h200x2-nvswitch/all_reduce_perf-g2.txt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nvls_tui.sim import fabric
from nvls_tui.sim.state import Node, digest

# Bus bandwidth (GB/s) of an 8x H100 HGX for 8M..128M: with NVLS the sweep averages ~292 (write-up).
NVLS_CURVE = (238.5, 272.1, 295.6, 317.4, 336.2)
RING_CURVE = (158.3, 187.9, 212.4, 229.8, 240.6)
ROW_DELAYS = (0.25, 0.35, 0.55, 0.9, 1.6)
INIT_TIME = 1.5
HEADER_RIGHT = "#                                                              out-of-place                       in-place          "
HEADER_COLS = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong "
HEADER_UNITS = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         "


@dataclass
class Plan:
    """What one all_reduce_perf run prints: ``(sim seconds to wait first, line)`` and the exit status."""

    steps: list[tuple[float, str]] = field(default_factory=list)
    exit_status: int = 0
    pid: int = 0
    error: bool = False

    @property
    def duration(self) -> float:
        """Simulated seconds the whole run takes."""
        return sum(d for d, _ in self.steps)

    def text(self) -> str:
        """Everything the run prints (stdout and stderr merged, as with ``2>&1``)."""
        return "".join(line + "\n" for _, line in self.steps)


def parse_size(text: str) -> int | None:
    """``8M`` -> 8388608 (nccl-tests' K/M/G suffixes are powers of 1024)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if mult != 1 else text
    return int(digits) * mult if digits.isdecimal() else None


def _time_str(us: float) -> str:
    if us >= 100000:
        return f"{us:7.0f}"
    if us >= 10000:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def _jitter(node: Node, *parts: object) -> float:
    return 1.0 + (int(digest(node.name, *parts)[:6], 16) / 0xFFFFFF - 0.5) * 0.012


def all_reduce_perf(node: Node, args: list[str], env: dict[str, str], now: float) -> Plan:
    """Decide and lay out one run (this logs to the kernel when an NVLS bind fails)."""
    opts = {"-b": "8M", "-e": "128M", "-f": "2", "-g": "1", "-c": "1", "-n": "20", "-w": "1"}
    i = 0
    while i < len(args):
        key = args[i]
        if key in opts and i + 1 < len(args):
            opts[key] = args[i + 1]
            i += 2
            continue
        return Plan([(0.0, f"{args[0] if args else ''}: invalid option -- '{key.lstrip('-')}'"),
                     (0.0, "USAGE: all_reduce_perf")], exit_status=1, error=True)
    lo, hi = parse_size(opts["-b"]), parse_size(opts["-e"])
    factor, ngpus = int(opts["-f"]) if opts["-f"].isdecimal() else 2, int(opts["-g"]) if opts["-g"].isdecimal() else 1
    if lo is None or hi is None or factor < 2 or ngpus < 1:
        return Plan([(0.0, "Error: invalid size or factor")], exit_status=1, error=True)
    pid = node.alloc_pid()
    host = node.name
    debug = env.get("NCCL_DEBUG", "").upper()
    info = debug in ("INFO", "TRACE")
    warn = info or debug == "WARN"
    use_nvls = (env.get("NCCL_NVLS_ENABLE", "1") != "0" and ngpus > 1
                and ("NVLS" in env.get("NCCL_ALGO", "NVLS").upper() or "NCCL_ALGO" not in env))
    plan = Plan(pid=pid)
    add = plan.steps.append
    add((0.0, "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809"))
    add((0.0, "# Collective test starting: all_reduce_perf"))
    add((0.0, f"# nThread 1 nGpus {ngpus} minBytes {lo} maxBytes {hi} step: {factor}(factor) warmup iters: "
              f"{opts['-w']} iters: {opts['-n']} agg iters: 1 validation: {opts['-c']} graph: 0 unalign: 0"))
    add((0.0, "#"))
    add((0.0, "# Using devices"))
    gpus = node.gpus[:ngpus]
    for rank, gpu in enumerate(gpus):
        bus_hex = gpu.bus_id.split(":")[1].lower()
        add((0.0, f"#  Rank {rank:>2} Group  0 Pid {pid:>6} on {host:>10} device {rank:>2} [0000:{bus_hex}:00] "
                  f"{gpu.name}"))
    add((0.0, "#"))
    if len(gpus) < ngpus:
        add((0.3, f"{host}: Test CUDA failure common.cu:1012 'invalid device ordinal'"))
        add((0.0, f" .. {host} pid {pid}: Test failure common.cu:893"))
        plan.exit_status, plan.error = 2, True
        return plan
    tid = pid + 21
    prefix = f"{host}:{pid}:{pid}"
    if info:
        add((0.2, f"{prefix} [0] NCCL INFO Bootstrap: Using eth0:10.42.0.{5 + sum(map(ord, host)) % 200}<0>"))
        add((0.0, f"{prefix} [0] NCCL INFO cudaDriverVersion 13000"))
        add((0.0, "NCCL version 2.28.9+cuda13.0"))
        for key in ("NCCL_NVLS_ENABLE", "NCCL_ALGO"):
            if key in env:
                add((0.0, f"{prefix} [0] NCCL INFO {key} set by environment to {env[key]}"))
        for rank, gpu in enumerate(gpus):
            bus = int(gpu.bus_id.split(":")[1], 16) << 12
            add((0.05, f"{host}:{pid}:{tid + rank} [{rank}] NCCL INFO comm 0x55d0c{rank:03x}a0 rank {rank} nranks "
                       f"{ngpus} cudaDev {rank} nvmlDev {rank} busId {bus:x} commId 0x{digest(host, pid)[:16]} - Init START"))
        add((0.1, f"{host}:{pid}:{tid} [0] NCCL INFO Bootstrap timings total 0.117246 (create 0.000016, send "
                  f"0.000134, recv 0.020848, ring 0.095836, delay 0.000000)"))
        for rank, gpu in enumerate(gpus):
            bus = int(gpu.bus_id.split(":")[1], 16) << 12
            registered = {"Completed": 3, "In Progress": 2, "Not Started": 1}.get(gpu.fabric_state, 0)
            add((0.02, f"{host}:{pid}:{tid + rank} [{rank}] NCCL INFO MNNVL busId 0x{bus:x} fabric UUID 0.0 "
                       f"cliqueId 0x0 state {registered} healthMask 0x0"))
        if use_nvls:
            for rank in range(ngpus):
                add((0.02, f"{host}:{pid}:{tid + rank} [{rank}] NCCL INFO NVLS multicast support is available on "
                           f"dev {rank} (NVLS_NCHANNELS 16)"))
    if use_nvls:
        ok = fabric.nvls_attempt(node, now + INIT_TIME)
        if not ok:
            plan.error, plan.exit_status = True, 3
            bad = 0
            if warn:
                add((0.4, f"{host}:{pid}:{tid} [{bad}] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to "
                          f"bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 802 'system not "
                          f"yet initialized'."))
                add((0.0, "This is usually caused by a system or configuration error in the Fabric Manager or "
                          "NVSwitches."))
                add((0.0, "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future."))
            if info:
                for where in ("transport/nvls.cc:558 (ncclNvlsSetup)", "init.cc:1558 (initTransportsRank)",
                              "init.cc:1921 (ncclCommInitRankFunc)"):
                    add((0.0, f"{host}:{pid}:{tid} [{bad}] NCCL INFO {where} -> 1"))
            add((0.1, f"{host}: Test NCCL failure common.cu:1177 'unhandled cuda error (run with NCCL_DEBUG=INFO "
                      f"for details) / '"))
            add((0.0, f" .. {host} pid {pid}: Test failure common.cu:893"))
            return plan
    if info:
        channels = 16 if use_nvls else 0
        add((0.1, f"{host}:{pid}:{tid} [0] NCCL INFO comm 0x55d0c000a0 rank 0 nRanks {ngpus} nNodes 1 localRanks "
                  f"{ngpus} localRank 0 MNNVL 0"))
        if use_nvls:
            add((0.05, f"{host}:{pid}:{tid} [0] NCCL INFO NVLS comm 0x55d0c000a0 headRank 0 nHeads {ngpus} nvlsRanks "
                       f"{ngpus} buffSize 1048576 nvlsPerRankSize 201326592 nvlsTotalSize 1610612736"))
            add((0.05, f"{host}:{pid}:{tid} [0] NCCL INFO Connected NVLS tree"))
        add((0.0, f"{host}:{pid}:{tid} [0] NCCL INFO {ngpus * 4} coll channels, {channels} collnet channels, "
                  f"{channels} nvls channels, 32 p2p channels, 32 p2p channels per peer"))
        for rank in range(ngpus):
            add((0.01, f"{host}:{pid}:{tid + rank} [{rank}] NCCL INFO ncclCommInitAll comm 0x55d0c{rank:03x}a0 rank "
                       f"{rank} nranks {ngpus} cudaDev {rank} nvmlDev {rank} - Init COMPLETE"))
    add((0.2 if info else INIT_TIME, HEADER_RIGHT))
    add((0.0, HEADER_COLS))
    add((0.0, HEADER_UNITS))
    curve = NVLS_CURVE if use_nvls else RING_CURVE
    factor_bus = 2 * (ngpus - 1) / ngpus if ngpus > 1 else 1.0
    total, count, size, k = 0.0, 0, lo, 0
    run = node.smoke_runs
    while size <= hi:
        base = curve[min(k, len(curve) - 1)] * (1.0 if ngpus > 1 else 0.0) if ngpus > 1 else 0.0
        cells = []
        for place in ("oop", "ip"):
            busbw = base * _jitter(node, run, size, place)
            algbw = busbw / factor_bus if ngpus > 1 else size / 1e3 / 5.0
            us = size / (algbw * 1e3) if algbw else 5.0
            busbw = algbw * factor_bus if ngpus > 1 else 0.0
            cells.append(f"  {_time_str(us)}  {algbw:6.2f}  {busbw:6.2f}  {0 if opts['-c'] != '0' else 'N/A':>6}")
            total += busbw
            count += 1
        add((ROW_DELAYS[min(k, len(ROW_DELAYS) - 1)],
             f"{size:12d}  {size // 4:12d}  {'float':>8}  {'sum':>6}  {-1:6d}" + "".join(cells)))
        size *= factor
        k += 1
    avg = total / count if count else 0.0
    add((0.05, "# Out of bounds values : 0 OK"))
    add((0.0, f"# Avg bus bandwidth    : {avg:.3f} "))
    add((0.0, "#"))
    add((0.0, "# Collective test concluded: all_reduce_perf"))
    add((0.0, "#"))
    add((0.0, ""))
    return plan
