"""The poller process's memory while its consumer reads nothing (issue 34, item 8).

Starts a real poller process on a simulated fleet (the console's way: ``PollerClient``), lets it
poll, then blocks this consumer's event loop (a console stuck writing to a stalled terminal) for
``--stall`` seconds while the process keeps polling every ``--interval`` seconds, and prints the
process's resident memory every ``--every`` seconds, its growth rate, what it held for the consumer
(``wire.Backlog``) and the memory once the consumer reads again::

    python -m bench.poller_backlog [--target sim:fleet-256] [--interval 1] [--stall 60] [--every 10]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from nvls_tui.poll.client import PollerClient
from nvls_tui.poller.process import PollerSpec
from nvls_tui.settings import Settings


def rss_mb(pid: int) -> float:
    """The process's resident memory now (VmRSS), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run(target: str, interval: float, stall: float, every: float) -> None:
    client = PollerClient(PollerSpec(Settings(command="console", targets=(target,)), interval, 60.0))
    polls: list[int] = []
    await client.start(lambda results: polls.append(len(results)))
    assert client.pid is not None
    try:
        while sum(polls) < len(client.hosts):  # the first round in, read
            await asyncio.sleep(0.1)
        await asyncio.sleep(interval * 2)
        start = rss_mb(client.pid)
        before = (await client.backlog()).polls
        print(f"{target}: {len(client.hosts)} nodes polled every {interval:g} s; "
              f"the consumer stops reading at {start:.1f} MB")
        t0 = time.monotonic()
        while (elapsed := time.monotonic() - t0) < stall:
            time.sleep(min(every, stall - elapsed))  # the whole loop blocked: nothing is read
            print(f"  {time.monotonic() - t0:5.0f} s unread: {rss_mb(client.pid):7.1f} MB", flush=True)
        stalled = rss_mb(client.pid)
        seconds = time.monotonic() - t0
        backlog = await client.backlog()  # answered once the consumer reads again
        print(f"  grew {stalled - start:.1f} MB in {seconds:.0f} s ({(stalled - start) / seconds:.3f} MB/s); "
              f"{backlog.polls - before} polls meanwhile, {backlog.coalesced} replaced unread; held at most "
              f"{backlog.peak_queued} queued polls, {backlog.peak_writing} updates and "
              f"{backlog.peak_buffered / 1e6:.2f} MB written ahead")
        await asyncio.sleep(interval * 2)
        print(f"  reading again: {rss_mb(client.pid):.1f} MB, peak {client.peak_rss_mb():.1f} MB")
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sim:fleet-256")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--stall", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(run(args.target, args.interval, args.stall, args.every))


if __name__ == "__main__":
    main()
