"""parallel-ssh anchor: ``ParallelSSHClient.run_command`` of the probe on every node.

Runs in the anchors venv (bench/.venv-anchors), so it imports nothing from nvls-tui. parallel-ssh
(libssh2) has no known_hosts verification in its client API, so host keys are not checked here:
the only anchor that skips them (said in docs/performance.md).

Usage::

    python bench/pssh_run.py PORTS_FILE KEY PROBE_FILE [--repoll]
"""

from __future__ import annotations

import getpass
import os
import sys
import time

from pssh.clients import ParallelSSHClient
from pssh.config import HostConfig


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _round(client: ParallelSSHClient, command: str) -> list[int]:
    output = client.run_command(command, stop_on_errors=False)
    client.join(output)
    sizes = []
    for host_out in output:
        text = "\n".join(host_out.stdout or []) + "\n" if host_out.exception is None else ""
        sizes.append(len(text.encode()))
    return sizes


def main(ports_file: str, key: str, probe_file: str, repoll: bool) -> int:
    nodes = [(h, int(p)) for h, p in (line.split() for line in open(ports_file) if line.strip())]
    command = open(probe_file).read()
    user = getpass.getuser()
    client = ParallelSSHClient(
        [h for h, _ in nodes],
        host_config=[HostConfig(port=p, user=user, private_key=key) for _, p in nodes],
        pool_size=len(nodes), timeout=60, num_retries=1,
    )
    sizes = _round(client, command)
    if repoll:
        cpu0, t0 = _cpu(), time.perf_counter()
        sizes = _round(client, command)
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        sys.stderr.write(f'BENCH {{"wall": {wall:.4f}, "cpu": {cpu:.4f}, "phase": "repoll"}}\n')
    sys.stdout.write("".join(f"{s}\n" for s in sizes))
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--repoll"]
    if len(args) != 3:
        sys.exit(__doc__)
    sys.exit(main(*args, repoll="--repoll" in sys.argv))
