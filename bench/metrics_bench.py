"""What the metrics cost at a fleet's size (issue 39's acceptance): the textfile's write after a round, and
the series per node.

Polls a simulated fleet once (``sim:fleet-1024`` by default: 1,024 8-GPU nodes, four faulty), diagnoses
it, then publishes the round as ``check --watch --metrics-textfile`` does (the audit directory read,
the families built, the file written to a temporary name and renamed), several times, and prints how long
each publish took from the round's end, the file's size, and the series per node (min, median, max)::

    python -m bench.metrics_bench [--fleet sim:fleet-1024] [--reps 5] [--dir DIR]

``--dir`` should be on the disk node_exporter's textfile folder is on (the default is a temporary one).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose_guarded
from nvls_tui.headless.check import poll_all
from nvls_tui.headless.metrics_out import MetricsOut
from nvls_tui.settings import Settings
from nvls_tui.sim.fleet import load_fleet


def series_per_node(text: str) -> Counter[str]:
    """hostname -> how many samples carry it."""
    return Counter(s.labels["hostname"] for f in text_string_to_metric_families(text) for s in f.samples
                   if "hostname" in s.labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fleet", default="sim:fleet-1024")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the textfile goes (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.dir or scratch)
        target = folder / "nvls.prom"
        began = time.perf_counter()
        states = asyncio.run(poll_all(sim_backends(load_fleet(args.fleet)), 60.0))
        results = [(s, diagnose_guarded(s)) for s in states]
        round_s = time.perf_counter() - began
        out = MetricsOut(replace(Settings(), metrics_textfile=str(target), audit_dir=str(Path(scratch) / "audit")))
        publish, cpu = [], []
        for _ in range(args.reps):
            t0, c0 = time.perf_counter(), time.process_time()
            out.publish(results, round_s)  # what check --watch does right after a round ends
            publish.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        text = target.read_text()
        per_node = series_per_node(text)
        counts = sorted(per_node.values())
        gpus = max(len(s.gpus) for s, _ in results)
        load = os.getloadavg()[0]
        print(f"metrics bench: {args.fleet}, {len(results)} nodes ({gpus} GPUs each at most), round {round_s:.1f} s, "
              f"load {load:.1f} on {os.cpu_count()} cores")
        print(f"  textfile published after the round (read audit dir, build, write, rename): "
              f"median {statistics.median(publish) * 1000:.0f} ms, max {max(publish) * 1000:.0f} ms "
              f"over {args.reps}; of which the write itself (last) {(out.write_seconds or 0) * 1000:.0f} ms")
        # CPU seconds do not grow with other processes' load (wall time on a busy machine does).
        print(f"  CPU time per publish: median {statistics.median(cpu) * 1000:.0f} ms, max {max(cpu) * 1000:.0f} ms")
        print(f"  textfile {target.stat().st_size / 1e6:.2f} MB, {sum(counts)} node series + fleet series")
        print(f"  series per node: min {counts[0]}, median {statistics.median(counts):.0f}, max {counts[-1]} "
              f"({max(per_node, key=lambda h: per_node[h])})")
        out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
