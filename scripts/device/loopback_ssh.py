"""A minimal SSH server on 127.0.0.1 for read-only checks on a lent GPU machine that has no sshd.

Each exec request runs under a real ``/bin/sh -c`` in a new session (as sshd does, so the session is a
process-group leader and nvls-tui's process-group clean-up works); stdout, stderr and the exit status
travel separately. Host and client keys are generated into DIR, with a known_hosts file for the client.

    python3 scripts/device/loopback_ssh.py DIR PORT     # serves until killed
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncssh


async def _handle(process: asyncssh.SSHServerProcess) -> None:
    command = process.command or "exec sh"
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    await process.redirect(stdin=proc.stdin, stdout=proc.stdout, stderr=proc.stderr)
    status = await proc.wait()
    process.exit(status if status >= 0 else 128 - status)


async def main(directory: str, port: int) -> None:
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    host = asyncssh.generate_private_key("ssh-ed25519")
    client = asyncssh.generate_private_key("ssh-ed25519")
    host.write_private_key(str(root / "host_key"))
    client.write_private_key(str(root / "client_key"))
    (root / "client_key").chmod(0o600)
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {host.export_public_key().decode().strip()}\n")
    (root / "ssh_config").write_text("")
    server = await asyncssh.create_server(
        None, "127.0.0.1", port, server_host_keys=[host], authorized_client_keys=asyncssh.import_authorized_keys(
            client.export_public_key().decode()), process_factory=_handle, encoding=None)
    (root / "ready").write_text("ready\n")
    async with server:
        await server.wait_closed()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
