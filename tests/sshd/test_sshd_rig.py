"""The test rig itself: every port it hands out is served by its own sshd, never by a stranger.

CI once saw a rig node answer with another rig's host key: the port the kernel had handed out was
taken (by a parallel worker's sshd) before this rig's sshd bound it, sshd started on its other
ports, and the stranger's banner on that port passed for ours.
"""

from __future__ import annotations

import asyncio
import socket
import threading

import asyncssh
import psutil
import pytest

from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import LOOPBACK, SshdRig, find_sshd, fork_servers
from tests.waiting import scaled, until

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")]


class Impostor:
    """A listener on one loopback port that greets like an SSH server and then hangs up."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((LOOPBACK, port))
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-impostor\r\n")

    def close(self) -> None:
        self.sock.close()


def host_keys(rig: SshdRig) -> dict[str, str]:
    """What each rig port presents as its host key (OpenSSH's public-key line)."""
    async def one(port: int) -> str:
        key = await asyncssh.get_server_host_key(LOOPBACK, port, config=[str(rig.ssh_config)])
        return key.export_public_key().decode().strip() if key else ""

    async def every() -> dict[str, str]:
        keys = await asyncio.gather(*(one(n.port) for n in rig.nodes.values()))
        return dict(zip(rig.nodes, keys, strict=True))

    return asyncio.run(every())


def test_a_port_taken_before_sshd_binds_it_is_given_up_for_a_fresh_one(tmp_path):
    rig = SshdRig(tmp_path / "rig", ["gpu01", "gpu02", "gpu03"])
    rig.prepare()
    taken = rig.nodes["gpu02"].port
    impostor = Impostor(taken)
    try:
        rig.start()
        try:
            keys = host_keys(rig)
            assert rig.nodes["gpu02"].port != taken
            assert keys == {name: rig.host_public for name in rig.nodes}
            assert f"]:{rig.nodes['gpu02'].port} " in rig.known_hosts.read_text()
        finally:
            rig.stop()
    finally:
        impostor.close()


def test_restart_on_a_port_someone_took_meanwhile_fails_naming_the_port(tmp_path):
    rig = SshdRig(tmp_path / "rig", ["gpu01"]).start()
    port = rig.nodes["gpu01"].port
    rig.stop()
    impostor = Impostor(port)
    try:
        with pytest.raises(RuntimeError, match=f"port {port} .*another process"):
            rig.start(repick=False)
    finally:
        impostor.close()
        rig.stop()


def test_a_real_node_whose_port_was_taken_boots_again_on_fresh_ones(tmp_path, monkeypatch):
    from tests import realnode, sshd_rig

    if (why := realnode.available()) is not None:
        pytest.skip(why)
    impostor = Impostor(0)
    taken = impostor.sock.getsockname()[1]
    handed = []
    real_free_ports = sshd_rig._free_ports

    def first_one_taken(count: int) -> list[int]:
        # The first hand-out gives the port the impostor holds: as if it took it a moment later.
        ports = [taken] if not handed else real_free_ports(count)
        handed.append(ports)
        return ports

    monkeypatch.setattr(sshd_rig, "_free_ports", first_one_taken)
    try:
        node = realnode.RealNode(tmp_path / "node", {"full": set()}).start()
        try:
            assert len(handed) == 2 and node.rig.nodes["full"].port != taken
            assert host_keys(node.rig) == {"full": node.rig.host_public}
        finally:
            node.stop()
    finally:
        impostor.close()


async def test_a_stopped_rig_leaves_no_fork_server_and_a_running_one_shows_its_nodes_commands(tmp_path):
    """Each simulated command runs in a child of its node's fork server, outside the SSH session: the
    rig lists those children as the node's commands, and stopping the rig ends the servers at once."""
    rig = SshdRig(tmp_path / "rig", ["hgx01"],
                  lambda name, node_dir: write_shims(node_dir, "healthy", name, speed=1)).start()
    try:
        async with asyncssh.connect(LOOPBACK, rig.nodes["hgx01"].port, known_hosts=str(rig.known_hosts),
                                    client_keys=[str(rig.client_key)], username=rig.user) as conn:
            async with conn.create_process("NCCL_NVLS_ENABLE=1 all_reduce_perf -b 8M -e 8G -f 2 -g 8") as proc:
                while not (await proc.stdout.readline()).strip()[:1].isdigit():
                    pass
                assert [p.name() for p in rig.simulated_commands()] == ["all_reduce_perf"]
                proc.terminate()
        [server] = fork_servers([rig.nodes["hgx01"].dir])
    finally:
        rig.stop()
    await until(lambda: not fork_servers([rig.nodes["hgx01"].dir]), scaled(10), "the rig's stop ended the server")
    assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE


async def test_a_stopped_rig_leaves_no_process_of_a_session_that_outlived_its_connection(tmp_path):
    # Found after a CI run (tenth session): test_slow_shell's stuck node (a ~/.bashrc that sleeps an hour) left its
    # login shell and sleep behind for the hour, reparented to init, once the connection had ended: the rig killed
    # only the sessions it could still find below its sshd, or in their session ids.
    from tests.sshd_rig import backend_for

    rig = SshdRig(tmp_path / "rig", ["gpu05"], lambda name, d: write_shims(d, "seed-incident", name)).start()
    try:
        backend = backend_for(rig, "gpu05")
        try:
            # A process of its own session, detached from the connection: it outlives it.
            await backend.run(["sh", "-c", "setsid sleep 3600 </dev/null >/dev/null 2>&1 &"])
        finally:
            await backend.close()

        def stray() -> list[psutil.Process]:
            return [p for p in psutil.process_iter(["cmdline", "environ"])
                    if (p.info["cmdline"] or [])[:2] == ["sleep", "3600"]
                    and str(rig.root) in ((p.info["environ"] or {}).get("PATH", ""))]

        await until(lambda: stray(), scaled(30), "the detached sleep to start")
    finally:
        rig.stop()
    assert stray() == []
