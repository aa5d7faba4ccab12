"""UI benchmarks of the console under Textual's Pilot (issue 8, part 2).

Each scenario runs in a child process of its own, so its peak RSS is the console's alone:

- ``startup``: time from building the app to the first full grid of the demo fleet
  (sim:seed-incident, every node polled and shown with a verdict), and the whole process's wall time
  (Python start-up and imports included).
- ``keys``: key-press latency (p50/p99) while sim:fleet-256 polls every 2 s and one more node
  (sim:wedged's gpu-wedged01) hangs in nvidia-smi. Latency is measured like
  tests/pilot/test_console_sim.py does: from ``simulate_key("v")`` until the fleet screen's sort toggled
  (the action ran). Also the time to the first full grid of 256 nodes and the console's peak RSS.
- ``stream``: lines per second the output pane (widgets/output_pane.OutputPane, the RichLog with
  ``max_lines`` that the runbook column uses) absorbs from a fast stream, while the same 256 nodes
  keep polling; key latency during the stream and the polls folded meanwhile show the grid stays live.
- ``fleet`` (issues 16 and 30): sim:fleet-1024 polling every 5 s, the console as ``NvlsApp.from_settings``
  builds it (polls and simulator in its poller process): when the last node first answered, the first
  full grid, cursor-key latency (p50/p99), filter-key latency (typing ``gpu00``, then Esc), the
  console's and the poller's peak RSS, the load average.
- ``fleet-inprocess``: the same with the pollers and the simulator on the console's loop (before issue 30).
- ``fleet-thread``: the same poller (worker, pipe, client) on a thread of the console's own process.
- ``fleet-replay``: nodes answering from their first state (``ReplayBackend``, in process), so
  the numbers are the console's own, without any simulator.
- ``fleet-ssh`` / ``fleet-ssh-inprocess``: ``BENCH_UI_SSH_NODES`` (default 64) nodes of the real-sshd rig
  (``bench.rig``: static shims, 48 KB probes) polling every 5 s, through the poller process or with
  asyncssh on the console's loop; the same measures (the filter types ``127.0``).

Usage::

    python -m bench.ui_bench [--seconds 8] [--out bench/results]
    python -m bench.ui_bench --child SCENARIO   (one scenario; prints BENCH {...})
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench.measure import Sample, run_child, self_report
from bench.tools import ROOT, VENV, base_env
from nvls_tui.backends.simulated import SimulatedBackend, sim_backends
from nvls_tui.model import NodeState

SIZE = (160, 48)
POLL_INTERVAL = 2.0
FLEET_POLL_INTERVAL = 5.0  # issue 16: 1,024 nodes polling every 5 s
FULL_GRID_TIMEOUT = 90.0
KEY_TIMEOUT = 5.0
SCENARIOS = ("startup", "keys", "stream", "fleet", "fleet-replay", "fleet-inprocess", "fleet-thread", "fleet-ssh",
             "fleet-ssh-inprocess")
NCCL_LINE = ("   {size:>10}   {count:>10}     float     sum      -1   {t:>7.1f}  {alg:>6.2f}  {bus:>6.2f}      0"
             "   {t:>7.1f}  {alg:>6.2f}  {bus:>6.2f}      0")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _until(condition, timeout: float, what: str) -> float:
    """Wait (bounded) for ``condition()``; returns the seconds it took."""
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"gave up after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.005)
    return time.perf_counter() - started


def _full_grid(app, hosts) -> bool:
    from nvls_tui.console.widgets.fleet_grid import FleetGrid

    try:
        grid = app.screen.query_one(FleetGrid)
    except Exception:  # noqa: BLE001 - the fleet screen is not mounted yet
        return False
    return grid.row_count >= len(hosts) and all(app.verdict(h) is not None for h in hosts)


async def _press_and_time(app, presses: int, gap: float) -> list[float]:
    """``presses`` cursor moves (down, then up), ``gap`` seconds apart; latencies in ms.

    The key an operator presses most is a cursor move; its latency is the time until the grid's
    action for it runs, which is what a slow poll, a redraw or a hung node would stretch. (Timed at
    the action, not at the cursor row: a reorder of the rows may move the cursor back meanwhile.)
    """
    from nvls_tui.console.widgets.fleet_grid import FleetGrid

    grid = app.screen.query_one(FleetGrid)
    grid.focus()
    answered: list[int] = []
    for name in ("action_cursor_down", "action_cursor_up"):
        original = getattr(grid, name)

        def wrapped(original=original) -> None:
            answered.append(1)
            original()

        setattr(grid, name, wrapped)
    latencies = []
    for i in range(presses):
        before = len(answered)
        key = "down" if i % 2 == 0 else "up"
        started = time.perf_counter()
        app.simulate_key(key)
        try:
            await _until(lambda b=before: len(answered) > b, KEY_TIMEOUT, "the key to be answered")
        except TimeoutError:
            pass  # counted at KEY_TIMEOUT: a key never answered is the worst latency, not a crash
        latencies.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(gap)  # pacing between presses, like an operator typing (not a wait for state)
    return latencies


def _fleet_256_plus_wedged():
    from nvls_tui.sim.fleet import load_fleet

    return sim_backends(load_fleet("sim:fleet-256")) + sim_backends(load_fleet("sim:wedged/gpu-wedged01"))


async def scenario_startup() -> dict:
    """Build the console on the demo fleet and time the first full grid."""
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.sim.fleet import load_fleet

    started = time.perf_counter()
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident")), poll_interval=5.0)
    hosts = list(app.pollers)
    async with app.run_test(size=SIZE):
        await _until(lambda: _full_grid(app, hosts), FULL_GRID_TIMEOUT, "the first full grid")
        first_grid = time.perf_counter() - started
    return {"first_full_grid_s": round(first_grid, 3), "nodes": len(hosts)}


async def scenario_keys(seconds: float) -> dict:
    """Key latency while 256 nodes poll every 2 s and one node hangs."""
    from nvls_tui.console.app import NvlsApp

    started = time.perf_counter()
    app = NvlsApp(_fleet_256_plus_wedged(), poll_interval=POLL_INTERVAL, timeout=5.0)
    healthy = [h for h in app.pollers if h != "gpu-wedged01"]
    async with app.run_test(size=SIZE):
        await _until(lambda: _full_grid(app, healthy), FULL_GRID_TIMEOUT, "256 nodes on the grid")
        first_grid = time.perf_counter() - started
        polls0 = sum(p.polls for p in app.pollers.values())
        gap = 0.05
        t0 = time.perf_counter()
        latencies = await _press_and_time(app, max(20, int(seconds / (gap + 0.01))), gap)
        window = time.perf_counter() - t0
        polls = sum(p.polls for p in app.pollers.values()) - polls0
        wedged = app.verdict("gpu-wedged01")
    return {
        "first_full_grid_256_s": round(first_grid, 3), "presses": len(latencies),
        "p50_ms": round(statistics.median(latencies), 2), "p99_ms": round(_percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2), "window_s": round(window, 2), "polls_in_window": polls,
        "polls_per_s": round(polls / window, 1), "wedged_verdict": str(wedged),
    }


async def _type_filter(app, text: str) -> list[float]:
    """Open the filter, type ``text`` a key at a time, then clear it with Esc; per key, ms until the
    grid was refiltered (Esc brings every row back: the most the grid adds at once).

    Timed at the fleet screen's ``refresh_grid`` that ran with the new filter text (the handler
    of the key refilters and redraws the 1,024 rows in one go).
    """
    screen = app.screen
    seen: list[str] = []
    original = screen.refresh_grid

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        seen.append(screen.filter_text)
        return result

    screen.refresh_grid = wrapped
    app.simulate_key("slash")
    await _until(lambda: screen.query_one("#filter").has_focus, KEY_TIMEOUT, "the filter box")
    latencies = []
    keys = [(char, text[: i + 1]) for i, char in enumerate(text)] + [("escape", "")]
    for key, want in keys:
        started = time.perf_counter()
        app.simulate_key(key)
        try:
            await _until(lambda w=want: bool(seen) and seen[-1] == w, KEY_TIMEOUT, "the grid to be refiltered")
        except TimeoutError:
            pass  # counted at KEY_TIMEOUT, the worst latency
        latencies.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0.1)  # an operator's typing pace
    return latencies


class ReplayBackend(SimulatedBackend):
    """A simulated node read once, then answered from that state (a fresh copy, as a poll gives).

    With it the console's own cost (messages, diagnosis, the grid) is measured without the
    in-process simulator's, which runs every node's commands on the console's event loop (an SSH
    node costs the bastion its share of ``bench.run``'s "bastion CPU per node-poll" instead).
    """

    _state: NodeState | None = None

    async def snapshot(self) -> NodeState:
        if self._state is None:
            self._state = await super().snapshot()
        await asyncio.sleep(0)
        return dataclasses.replace(self._state, polled_at=time.time())


def _own_peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _polls(app) -> int:
    """Polls the console has folded so far (its poller process's, or its in-process pollers')."""
    if app.poller is not None:
        return app.poller.polls
    return sum(p.polls for p in app.pollers.values())


def _all_answered(app, hosts) -> bool:
    if app.poller is not None:
        return len(app.poller.seq) >= len(hosts)
    return all(p.last_good is not None or p.failures for p in app.pollers.values())


def thread_poller_app(settings):
    """The console with its poller on a thread of the console's process instead of a process of its own.

    The same worker, pipe and client as the poller process (``poll.worker``, ``poll.client``); only where
    it runs differs: its own event loop on a second thread, sharing the console's GIL. For measuring the
    choice of a process (issue 30: "threads were tried and made it worse: measure before choosing").
    """
    import threading

    from nvls_tui.backends.via_poller import PollerHeldBackend
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.poll.client import PollerClient
    from nvls_tui.poll.once import poll_deadline
    from nvls_tui.poller.process import console_poller, serve
    from nvls_tui.targets import resolve_backends

    class ThreadPoller(PollerClient):
        def _spawn(self) -> tuple[int, int]:
            to_r, to_w = os.pipe()
            from_r, from_w = os.pipe()
            threading.Thread(target=lambda: asyncio.run(serve(to_r, from_w)), daemon=True, name="poller").start()
            return from_r, to_w

    backends, client = console_poller(settings, resolve_backends(settings), interval=settings.poll_interval,
                                      poll_timeout=poll_deadline(settings.timeout))
    client = ThreadPoller(client.spec)
    for backend in backends:
        if isinstance(backend, PollerHeldBackend):
            backend.requests = client
    return NvlsApp(backends, poll_interval=settings.poll_interval, timeout=settings.timeout, poller=client)


async def scenario_fleet(seconds: float, replay: bool = False, in_process: bool = False,
                         targets: tuple[str, ...] = ("sim:fleet-1024",), settings_extra: dict | None = None,
                         filter_text: str = "gpu00", thread: bool = False) -> dict:
    """Issue 16 and 30: 1,024 nodes polling every 5 s: first full grid, cursor and filter key latency.

    By default the console as the operator starts it (``NvlsApp.from_settings``): the nodes are polled,
    and simulated, in its poller process. ``in_process``: the pollers and the simulator on the console's
    own loop (before issue 30). ``replay``: the nodes answer from their first state
    (:class:`ReplayBackend`), in process: the console alone.
    """
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.settings import Settings
    from nvls_tui.sim.fleet import load_fleet

    started = time.perf_counter()
    if replay:
        fleet = load_fleet(targets[0])
        app = NvlsApp([ReplayBackend(fleet, name) for name in fleet.names], poll_interval=FLEET_POLL_INTERVAL,
                      timeout=5.0)
    else:
        settings = Settings(command="console", targets=targets, poll_interval=FLEET_POLL_INTERVAL, timeout=5.0,
                            **(settings_extra or {}))
        app = thread_poller_app(settings) if thread else NvlsApp.from_settings(settings, poll_process=not in_process)
    hosts = list(app.backends)
    answered = grid = None
    poller_rss = None
    async with app.run_test(size=SIZE):
        while grid is None:
            now = time.perf_counter() - started
            if answered is None and _all_answered(app, hosts):
                answered = now
            if _full_grid(app, hosts):
                grid = now
                answered = now if answered is None else answered
            elif now > FULL_GRID_TIMEOUT:
                raise TimeoutError(f"{len(hosts)} nodes never filled the grid")
            await asyncio.sleep(0.005)
        polls0 = _polls(app)
        t0 = time.perf_counter()
        cursor = await _press_and_time(app, max(20, int(seconds / 0.06)), 0.05)
        typed = await _type_filter(app, filter_text)
        window = time.perf_counter() - t0
        polls = _polls(app) - polls0
        if app.poller is not None:
            poller_rss = app.poller.peak_rss_mb()
    both = cursor + typed
    console_rss = _own_peak_rss_mb()
    return {
        "poll_process": app.poller is not None, "console_rss_mb": round(console_rss, 1),
        "poller_rss_mb": round(poller_rss, 1) if poller_rss is not None else None,
        "rss_sum_mb": round(console_rss + (poller_rss or 0.0), 1), "load_average": list(os.getloadavg()),
        "nodes": len(hosts), "last_answer_s": round(answered, 3), "first_full_grid_s": round(grid, 3),
        "grid_after_last_answer_s": round(grid - answered, 3), "presses": len(cursor), "filter_keys": len(typed),
        "cursor_p50_ms": round(statistics.median(cursor), 2), "cursor_p99_ms": round(_percentile(cursor, 0.99), 2),
        "filter_p50_ms": round(statistics.median(typed), 2), "filter_max_ms": round(max(typed), 2),
        "filter_ms": [round(t, 1) for t in typed],
        "p99_ms": round(_percentile(both, 0.99), 2), "window_s": round(window, 2),
        "polls_per_s": round(polls / window, 1),
    }


async def scenario_stream(seconds: float) -> dict:
    """Lines per second into the output pane while 256 nodes poll; key latency meanwhile."""
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.console.widgets.output_pane import OutputPane
    from nvls_tui.views.runbook import PaneLine

    app = NvlsApp(_fleet_256_plus_wedged(), poll_interval=POLL_INTERVAL, timeout=5.0)
    healthy = [h for h in app.pollers if h != "gpu-wedged01"]
    lines = [PaneLine(NCCL_LINE.format(size=8 << i, count=2 << i, t=100.0 + i, alg=i * 1.5, bus=i * 2.6))
             for i in range(20)]
    async with app.run_test(size=SIZE):
        await _until(lambda: _full_grid(app, healthy), FULL_GRID_TIMEOUT, "256 nodes on the grid")
        pane = OutputPane(id="bench-pane")
        await app.screen.mount(pane)
        polls0 = sum(p.polls for p in app.pollers.values())
        stop = asyncio.Event()

        async def feed() -> int:
            written = 0
            # A fast stream arrives in chunks (an SSH read returns many lines): 50 lines per chunk,
            # yielding to the event loop between chunks as the stream worker does between reads.
            while not stop.is_set():
                pane.add(lines[i % len(lines)] for i in range(written, written + 50))
                written += 50
                await asyncio.sleep(0)
            return written

        t0 = time.perf_counter()
        feeder = asyncio.create_task(feed())
        latencies = await _press_and_time(app, max(10, int(seconds / 0.2)), 0.15)
        stop.set()
        written = await feeder
        window = time.perf_counter() - t0
        polls = sum(p.polls for p in app.pollers.values()) - polls0
        kept = len(pane.lines)
    return {
        "lines": written, "lines_per_s": round(written / window), "window_s": round(window, 2),
        "pane_lines_kept": kept, "polls_in_window": polls, "polls_per_s": round(polls / window, 1),
        "key_p50_ms": round(statistics.median(latencies), 2), "key_p99_ms": round(_percentile(latencies, 0.99), 2),
    }


async def scenario_fleet_ssh(seconds: float, in_process: bool = False) -> dict:
    """Issue 30: N nodes of the real-sshd rig (static shims, 48 KB probes) polling every 5 s, the
    console as the operator starts it (its poller process holds the SSH connections) or, with
    ``in_process``, asyncssh on the console's own loop. N: ``BENCH_UI_SSH_NODES`` (default 64)."""
    from bench.rig import BenchRig
    from nvls_tui.settings import SshSettings

    n = int(os.environ.get("BENCH_UI_SSH_NODES", "64"))
    with BenchRig(n) as rig:
        ssh = SshSettings(identity=(str(rig.rig.client_key),), known_hosts=str(rig.rig.known_hosts),
                          ssh_config=str(rig.rig.ssh_config), concurrency=n)
        result = await scenario_fleet(seconds, in_process=in_process, targets=tuple(rig.targets(n)),
                                      settings_extra={"ssh": ssh}, filter_text="127.0")
    result["ssh_nodes"] = n
    return result


def child(name: str, seconds: float) -> int:
    """Run one scenario in this process and report it (``BENCH {...}`` on stderr)."""
    t = time.perf_counter()
    if name == "startup":
        result = asyncio.run(scenario_startup())
    elif name == "keys":
        result = asyncio.run(scenario_keys(seconds))
    elif name == "fleet":
        result = asyncio.run(scenario_fleet(seconds))
    elif name == "fleet-replay":
        result = asyncio.run(scenario_fleet(seconds, replay=True))
    elif name == "fleet-inprocess":
        result = asyncio.run(scenario_fleet(seconds, in_process=True))
    elif name == "fleet-thread":
        result = asyncio.run(scenario_fleet(seconds, thread=True))
    elif name == "fleet-ssh":
        result = asyncio.run(scenario_fleet_ssh(seconds))
    elif name == "fleet-ssh-inprocess":
        result = asyncio.run(scenario_fleet_ssh(seconds, in_process=True))
    else:
        result = asyncio.run(scenario_stream(seconds))
    result["scenario"] = name
    result["scenario_s"] = round(time.perf_counter() - t, 2)
    print(json.dumps(result))
    self_report(**{"ui": result})
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run every scenario in its own child process and print the numbers."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", choices=SCENARIOS)
    p.add_argument("--seconds", type=float, default=float(os.environ.get("BENCH_UI_SECONDS", "8")))
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    if args.child:
        return child(args.child, args.seconds)
    env = base_env()
    results: dict[str, dict] = {}
    samples: list[Sample] = []
    for name in SCENARIOS:
        sample, stdout, stderr = run_child(f"ui {name}", 0, [str(VENV / "python"), "-m", "bench.ui_bench",
                                                             "--child", name, "--seconds", str(args.seconds)],
                                           env=env, timeout=240.0, cwd=str(ROOT))
        samples.append(sample)
        result = sample.extra.get("ui")
        if result is None:
            print(f"ui {name}: failed (status {sample.status}): {stderr[-800:]}", file=sys.stderr)
            continue
        result["process_wall_s"] = round(sample.wall, 2)
        result["peak_rss_mb"] = round(sample.rss_mb, 1)
        results[name] = result
    print(report(results))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"ui-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "cpus": os.cpu_count(),
                                "results": results}, indent=1))
    print(f"raw numbers: {path}")
    keys = results.get("keys", {})
    ok = len(results) == len(SCENARIOS) and keys.get("p99_ms", 1e9) <= 100 and keys.get("peak_rss_mb", 1e9) < 200
    fleet = results.get("fleet", {})
    ok = ok and fleet_targets_met(fleet)
    return 0 if ok else 1


def fleet_targets_met(fleet: dict) -> bool:
    """Issue 30's targets for the fleet scenario: cursor p99 < 100 ms, filter key max < 150 ms, first full
    grid < 5 s after the last answer, the console's RSS plus its poller's < 300 MB."""
    return (fleet.get("cursor_p99_ms", 1e9) < 100 and fleet.get("filter_max_ms", 1e9) < 150
            and fleet.get("grid_after_last_answer_s", 1e9) < 5 and fleet.get("rss_sum_mb", 1e9) < 300)


def _fleet_row(label: str, f: dict) -> tuple[str, str, str]:
    """One fleet scenario's keys, grid and memory in one row."""
    if not f:
        return (label, "-", "")
    rss = f"console {f.get('console_rss_mb', '-')} MB" + (
        f" + poller {f['poller_rss_mb']} MB" if f.get("poller_rss_mb") is not None else "")
    load = ", ".join(f"{x:.2f}" for x in f.get("load_average", [])[:1])
    return (label, f"cursor p50 / p99 {f.get('cursor_p50_ms', '-')} / {f.get('cursor_p99_ms', '-')} ms, "
                   f"filter p50 / max {f.get('filter_p50_ms', '-')} / {f.get('filter_max_ms', '-')} ms, "
                   f"grid {f.get('grid_after_last_answer_s', '-')} s after the last answer, {rss}, "
                   f"{f.get('polls_per_s', '-')} polls/s folded, load {load or '-'}",
            "issue 30: " + ("MET" if fleet_targets_met(f) else "MISSED"))


def report(results: dict[str, dict]) -> str:
    """The UI numbers as a Markdown table, with the issue-8 and issue-16 targets."""
    s, k, st = results.get("startup", {}), results.get("keys", {}), results.get("stream", {})
    f, r = results.get("fleet", {}), results.get("fleet-replay", {})
    fleet_rows = [
        _fleet_row("fleet-1024 every 5 s, poller process (the console as started)", f),
        _fleet_row("fleet-1024, pollers and simulator on the console's loop (before issue 30)",
                   results.get("fleet-inprocess", {})),
        _fleet_row("fleet-1024, the same poller on a thread of the console's process (the GIL shared)",
                   results.get("fleet-thread", {})),
        _fleet_row(f"{results.get('fleet-ssh', {}).get('ssh_nodes', 'N')} SSH nodes of the rig every 5 s, "
                   "poller process", results.get("fleet-ssh", {})),
        _fleet_row(f"{results.get('fleet-ssh-inprocess', {}).get('ssh_nodes', 'N')} SSH nodes, asyncssh on the "
                   "console's loop", results.get("fleet-ssh-inprocess", {})),
    ]
    rows = [
        ("demo fleet (8 nodes): build to first full grid", f"{s.get('first_full_grid_s', '-')} s", ""),
        ("demo fleet: whole process (imports, first grid, exit)", f"{s.get('process_wall_s', '-')} s", ""),
        ("fleet-256 + wedged node: build to first full grid", f"{k.get('first_full_grid_256_s', '-')} s", ""),
        ("key latency p50 / p99 / max, 256 polling every 2 s + 1 hung",
         f"{k.get('p50_ms', '-')} / {k.get('p99_ms', '-')} / {k.get('max_ms', '-')} ms "
         f"({k.get('presses', 0)} presses, {k.get('polls_per_s', '-')} polls/s folded)",
         "p99 <= 100 ms: " + ("MET" if k.get("p99_ms", 1e9) <= 100 else "MISSED")),
        ("console peak RSS with 256 nodes (keys scenario)", f"{k.get('peak_rss_mb', '-')} MB",
         "< 200 MB: " + ("MET" if k.get("peak_rss_mb", 1e9) < 200 else "MISSED")),
        ("output pane: lines/s absorbed while 256 nodes poll", f"{st.get('lines_per_s', '-')} lines/s "
         f"({st.get('polls_per_s', '-')} polls/s folded meanwhile, key p50/p99 "
         f"{st.get('key_p50_ms', '-')}/{st.get('key_p99_ms', '-')} ms)", ""),
        ("console peak RSS, stream scenario", f"{st.get('peak_rss_mb', '-')} MB", ""),
        ("fleet-1024 polling every 5 s: last node's first answer / first full grid",
         f"{f.get('last_answer_s', '-')} s / {f.get('first_full_grid_s', '-')} s",
         "grid < 5 s after the last answer: " + ("MET" if f.get("grid_after_last_answer_s", 1e9) < 5 else "MISSED")),
        ("fleet-1024: cursor p50 / p99, filter key p50 / max",
         f"{f.get('cursor_p50_ms', '-')} / {f.get('cursor_p99_ms', '-')} ms, {f.get('filter_p50_ms', '-')} / "
         f"{f.get('filter_max_ms', '-')} ms ({f.get('presses', 0)} + {f.get('filter_keys', 0)} keys, "
         f"{f.get('polls_per_s', '-')} polls/s folded)",
         "p99 < 100 ms: " + ("MET" if f.get("p99_ms", 1e9) < 100 else "MISSED")),
        ("fleet-1024, nodes answering from their first state (the console alone): cursor p50 / p99, "
         "filter key p50 / max",
         f"{r.get('cursor_p50_ms', '-')} / {r.get('cursor_p99_ms', '-')} ms, {r.get('filter_p50_ms', '-')} / "
         f"{r.get('filter_max_ms', '-')} ms ({r.get('presses', 0)} + {r.get('filter_keys', 0)} keys, "
         f"{r.get('polls_per_s', '-')} polls/s folded)",
         "p99 < 100 ms: " + ("MET" if r.get("p99_ms", 1e9) < 100 else "MISSED")),
        ("console + poller process peak RSS with 1,024 nodes", f"{f.get('rss_sum_mb', '-')} MB",
         "< 300 MB: " + ("MET" if f.get("rss_sum_mb", 1e9) < 300 else "MISSED")),
    ]
    lines = ["| UI measure | value | target |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows + fleet_rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
