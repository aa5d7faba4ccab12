"""What reading a paste costs in memory: ``analyze``'s unwrapping and the whole ``analyze_text`` (issue 34, 9b).

For pastes of several shapes (a logger's line with its newlines escaped, short or kernel-sized; short
lines never escaped), prints the peak memory tracemalloc saw while each was read, as MiB and as a
multiple of the paste, and the seconds it took (tracemalloc slows allocation down: the time is for
comparison only)::

    python -m bench.paste_memory [--mib 4]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.parsers.unwrap import unwrap

XID = "NVRM: Xid (PCI:0000:97:00): 45, pid=4242, name=python, Ch 00000008"
SHAPES = {
    "escaped, 1-char lines": "x\\n",
    "escaped CRLF, 2-char lines": "ab\\r\\n",
    "escaped, kernel lines": f"{XID}\\n",
    "1-char lines": "x\n",
    "kernel lines": f"[ 1234.567890] {XID}\n",
}


def measure(read, text: str) -> tuple[float, float]:
    """(peak MiB above what was held before, seconds) of ``read(text)``."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        read(text)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / 2**20, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=4.0, help="size of each paste")
    args = parser.parse_args()
    size = int(args.mib * 2**20)
    print(f"{'paste':28} {'reader':8} {'peak MiB':>9} {'x paste':>8} {'s':>6}")
    for name, unit in SHAPES.items():
        text = XID + "\n" + unit * (size // len(unit))
        for reader, read in (("unwrap", unwrap), ("analyze", lambda t: analyze_text(t, "paste.txt"))):
            peak, seconds = measure(read, text)
            print(f"{name:28} {reader:8} {peak:9.1f} {peak * 2**20 / len(text):8.1f} {seconds:6.1f}", flush=True)


if __name__ == "__main__":
    main()
