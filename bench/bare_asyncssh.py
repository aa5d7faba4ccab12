"""The floor: bare asyncssh, ``gather`` of connect + run of the probe on every node.

Nothing but asyncssh: no parsing, no diagnosis, no per-node options. Host keys are verified against
the rig's known_hosts, and curve25519 is preferred like nvls-tui does.

Usage::

    python bench/bare_asyncssh.py PORTS_FILE KEY KNOWN_HOSTS PROBE_FILE [--repoll]

PORTS_FILE has ``host port`` per line; PROBE_FILE the remote command line. Prints, per node, the
probe's byte count on stdout. With ``--repoll`` the connections stay open and the probe runs a
second time; that second round alone is reported (``BENCH {...}`` on stderr).
"""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
import time

import asyncssh

KEX = "^curve25519-sha256,curve25519-sha256@libssh.org"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


async def _connect(host: str, port: int, key: str, known: asyncssh.SSHKnownHosts) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(host, port, username=getpass.getuser(), client_keys=[key], known_hosts=known,
                                  kex_algs=KEX, config=[], connect_timeout=60)


async def _probe(conn: asyncssh.SSHClientConnection, command: str) -> int:
    result = await conn.run(command, stdin=asyncssh.DEVNULL, timeout=60)
    return len(str(result.stdout or "").encode())


async def main(ports_file: str, key: str, known_hosts: str, probe_file: str, repoll: bool) -> int:
    nodes = [(h, int(p)) for h, p in (line.split() for line in open(ports_file) if line.strip())]
    command = open(probe_file).read()
    known = asyncssh.read_known_hosts(known_hosts)

    async def cold(host: str, port: int) -> tuple[asyncssh.SSHClientConnection, int]:
        conn = await _connect(host, port, key, known)
        return conn, await _probe(conn, command)

    results = await asyncio.gather(*(cold(h, p) for h, p in nodes))
    conns = [c for c, _ in results]
    sizes = [s for _, s in results]
    if repoll:
        cpu0, t0 = _cpu(), time.perf_counter()
        sizes = await asyncio.gather(*(_probe(c, command) for c in conns))
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        sys.stderr.write(f'BENCH {{"wall": {wall:.4f}, "cpu": {cpu:.4f}, "phase": "repoll"}}\n')
    for conn in conns:
        conn.close()
    await asyncio.gather(*(c.wait_closed() for c in conns))
    sys.stdout.write("".join(f"{s}\n" for s in sizes))
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--repoll"]
    if len(args) != 4:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(*args, repoll="--repoll" in sys.argv)))
