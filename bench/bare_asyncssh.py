"""The floor: bare asyncssh, ``gather`` of connect + run of the probe on every node.

Nothing but asyncssh: no parsing, no diagnosis, no per-node options. Host keys are verified against
the rig's known_hosts, and curve25519 is preferred like nvls-tui does.

Usage::

    python bench/bare_asyncssh.py PORTS_FILE KEY KNOWN_HOSTS PROBE_FILE [--repoll]

PORTS_FILE has ``host port`` per line; PROBE_FILE the remote command line. Prints, per node, the
probe's byte count on stdout. With ``--repoll`` the connections stay open and the probe runs a
second time; that second round alone is reported (``BENCH {...}`` on stderr). The second round
sends what nvls-tui's second poll sends: the probe whose kernel section starts at the journal
cursor the node's first answer ended at (the same remote work, so the floor stays a floor).
"""

from __future__ import annotations

import asyncio
import getpass
import os
import shlex
import sys
import time
from pathlib import Path

import asyncssh

if __package__ in (None, ""):  # run as a file: the checkout's packages first
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nvls_tui.poll.kernel_tail import last_cursor
from nvls_tui.poll.probe import CONFIG_STAMP
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script

KEX = "^curve25519-sha256,curve25519-sha256@libssh.org"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


async def _connect(host: str, port: int, key: str, known: asyncssh.SSHKnownHosts) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(host, port, username=getpass.getuser(), client_keys=[key], known_hosts=known,
                                  kex_algs=KEX, config=[], connect_timeout=60)


async def _probe(conn: asyncssh.SSHClientConnection, command: str) -> str:
    result = await conn.run(command, stdin=asyncssh.DEVNULL, timeout=60)
    return str(result.stdout or "")


def _again(first: str) -> str:
    """The second poll's command: the probe from the kernel cursor of the first answer, with the stamp of
    needrestart's and apt's files it printed (as nvls-tui's second poll sends them)."""
    status, printed = split_probe_output(first).get(CONFIG_STAMP, (None, ""))
    stamp = printed[:-1] if printed.endswith("\n") else printed
    return shlex.join(["sh", "-c", probe_script(kernel_cursor=last_cursor(first),
                                                config_stamp=stamp if status == 0 and stamp else None)])


async def main(ports_file: str, key: str, known_hosts: str, probe_file: str, repoll: bool) -> int:
    nodes = [(h, int(p)) for h, p in (line.split() for line in open(ports_file) if line.strip())]
    command = open(probe_file).read()
    known = asyncssh.read_known_hosts(known_hosts)

    async def cold(host: str, port: int) -> tuple[asyncssh.SSHClientConnection, int]:
        conn = await _connect(host, port, key, known)
        return conn, await _probe(conn, command)

    results = await asyncio.gather(*(cold(h, p) for h, p in nodes))
    conns = [c for c, _ in results]
    outputs = [s for _, s in results]
    if repoll:
        again = [_again(out) for out in outputs]
        cpu0, t0 = _cpu(), time.perf_counter()
        outputs = await asyncio.gather(*(_probe(c, cmd) for c, cmd in zip(conns, again, strict=True)))
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        sys.stderr.write(f'BENCH {{"wall": {wall:.4f}, "cpu": {cpu:.4f}, "phase": "repoll"}}\n')
    for conn in conns:
        conn.close()
    await asyncio.gather(*(c.wait_closed() for c in conns))
    sys.stdout.write("".join(f"{len(out.encode())}\n" for out in outputs))
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--repoll"]
    if len(args) != 4:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(*args, repoll="--repoll" in sys.argv)))
