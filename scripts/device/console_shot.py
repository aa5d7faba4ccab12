"""A Pilot screenshot of the console on this machine, read-only: ``local`` and the same machine over SSH.

    python3 scripts/device/console_shot.py OUT_PREFIX SSH_TARGET KNOWN_HOSTS KEY SSH_CONFIG

Writes OUT_PREFIX-fleet.svg and OUT_PREFIX-node.svg (the first node's screen). Nothing is changed on the
node: the console is started with --read-only semantics and only polls.
"""

from __future__ import annotations

import asyncio
import sys

from nvls_tui.backends.base import BackendOptions
from nvls_tui.backends.local import LocalBackend
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.node import NodeScreen


async def main(prefix: str, target: str, known_hosts: str, key: str, ssh_config: str) -> None:
    (ssh_target,) = parse_target(target)
    options = BackendOptions(read_only=True, known_hosts=known_hosts, identity=key, ssh_config=ssh_config)
    app = NvlsApp([LocalBackend(BackendOptions(read_only=True)), SshBackend(ssh_target, options)],
                  read_only=True, poll_interval=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_for_first_poll(timeout=60)
        await pilot.pause(0.5)
        open(f"{prefix}-fleet.svg", "w").write(app.export_screenshot(title="nvls-tui on nvidia-h200"))
        app.open_node(next(iter(app.backends)))
        for _ in range(100):
            if isinstance(app.screen, NodeScreen):
                break
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        open(f"{prefix}-node.svg", "w").write(app.export_screenshot(title="nvls-tui node screen on nvidia-h200"))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
