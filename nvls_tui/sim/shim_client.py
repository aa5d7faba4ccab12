"""The shim's client: ``python -I -S shim_client.py PKGROOT DIR CMD [ARGS...]``, one simulated command.

Starting Python and importing the simulator costs a simulated command about 0.1 s of CPU; a repair over
the loopback sshd runs some 70 of them. This client imports only built-in modules (no site, no package,
no ``socket``/``signal`` wrappers: their ``enum`` alone costs more than the rest) and hands the command
to the node's fork server (:mod:`nvls_tui.sim.shim_server`), which has the simulator imported and forks a
child that runs the same ``shim_main.main(argv)`` with this process's stdin, stdout and stderr (passed
as file descriptors), argv, environment, working directory, umask and parent PID. The child's exit status
becomes this process's (an exit code, or death by the same signal). SIGTERM, SIGHUP and SIGINT sent to
this process (a closed SSH channel, a timeout's kill of the process group) are passed on to the child;
when this process dies of SIGKILL, the server sees its socket close and kills the child, so nothing of
the command outlives it.

No server answering (the first command on a node): start one (detached, its own session, nothing of
this process's descriptors), wait for it a bounded time, and where it still does not answer, run the
command the old way (``exec python -m nvls_tui.sim.shim_main DIR CMD ...``): same behaviour, slower. A
server that exits with a failure (it cannot listen on DIR's socket: a directory in its place) will never
answer: the old way at once, not after the whole bound. One that exits 0 found another server serving
DIR: that one is waited for.

Run by path with ``-I -S``: this file must import nothing but built-in modules.
"""

import _signal
import _socket
import os
import sys
import time

SOCKET_NAME = "shim.sock"  # relative to DIR: a DIR deep in a test's tmp_path can exceed sun_path's 108 bytes
WAIT_FOR_SERVER_S = 10.0
FORWARDED = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT)


def _old_way(pkg_root: str, args: list[str]) -> None:
    """Run the command in a Python of its own (no server): never returns."""
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    os.execve(sys.executable, [sys.executable, "-m", "nvls_tui.sim.shim_main", *args], env)


def _connect(directory: str):
    """A connected socket to DIR's server, or None. Connects by a relative name from inside DIR."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir(directory)
        sock.connect(SOCKET_NAME)
        return sock
    except OSError:
        sock.close()
        return None
    finally:
        os.fchdir(here)
        os.close(here)


def _start_server(pkg_root: str, directory: str) -> int:
    """Start DIR's server detached: a session of its own, /dev/null for 0-2, no other descriptor of ours.
    Its PID (it is this process's child until this process ends)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    null = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_RDWR, 0) for fd in (0, 1, 2)]
    return os.posix_spawn(sys.executable, [sys.executable, "-m", "nvls_tui.sim.shim_server", directory], env,
                          file_actions=null, setsid=True)


def _failed(server: int) -> bool:
    """Whether the server this process started has exited with a failure: it will never answer. An exit 0
    (another server had DIR's lock) is not one: that other server answers soon."""
    try:
        pid, status = os.waitpid(server, os.WNOHANG)
    except ChildProcessError:  # reaped already: it had exited 0
        return False
    return pid == server and os.waitstatus_to_exitcode(status) != 0


def _send_signals(sock, pending: list[int]) -> None:
    """Pass the caught signals on to the server (``k<signo>``), each once."""
    while pending:
        try:
            sock.sendall(b"k%d\n" % pending.pop(0))
        except OSError:
            pass


def _request(args: list[str]) -> bytes:
    """argv, environment, umask and parent PID, NUL-separated (none of them can hold a NUL)."""
    mask = os.umask(0)
    os.umask(mask)
    env = [f"{k}={v}".encode("utf-8", "surrogateescape") for k, v in os.environ.items()]
    argv = [a.encode("utf-8", "surrogateescape") for a in args]
    fields = [b"1", str(os.getppid()).encode(), str(mask).encode(), str(len(argv)).encode(), *argv, *env]
    body = b"\0".join(fields)
    return str(len(body)).encode() + b"\n" + body


def main() -> None:
    if len(sys.argv) < 4:
        os.write(2, b"usage: shim_client.py PKGROOT DIR CMD [ARGS...]\n")
        sys.exit(2)
    pkg_root, directory, args = sys.argv[1], sys.argv[2], sys.argv[2:]
    try:
        cwd_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        _old_way(pkg_root, args)  # a working directory we cannot name: the old way keeps it as it is
    sock = _connect(directory)
    if sock is None:
        server = _start_server(pkg_root, directory)
        deadline = time.monotonic() + WAIT_FOR_SERVER_S
        while sock is None and time.monotonic() < deadline and not _failed(server):
            time.sleep(0.02)  # the server's import: bounded above, then the old way
            sock = _connect(directory)
        if sock is None:
            _old_way(pkg_root, args)
    # Caught from before the request goes: one that comes while it is in flight is sent right after it.
    pending: list[int] = []

    def forward(signo, _frame):
        pending.append(signo)
        if sent:
            _send_signals(sock, pending)

    sent = False
    for signo in FORWARDED:
        _signal.signal(signo, forward)
    sock.sendmsg([_request(args)], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _ints(0, 1, 2, cwd_fd))])
    sent = True
    os.close(cwd_fd)
    _send_signals(sock, pending)
    reply = b""
    while not reply.endswith(b"\n"):
        try:
            chunk = sock.recv(64)
        except InterruptedError:
            continue
        if not chunk:
            break
        reply += chunk
    if not reply.endswith(b"\n"):
        # The server went away without a status (killed): the command's outcome is unknown, as a tool
        # killed by SIGKILL would leave it.
        os.write(2, b"nvls-tui shim: the simulator's server went away\n")
        os._exit(137)
    kind, value = reply[:1], int(reply[1:-1])
    if kind == b"s":  # died of a signal: die of the same one
        _signal.signal(value, _signal.SIG_DFL)
        os.kill(os.getpid(), value)
        os._exit(128 + value)
    os._exit(value)


def _ints(*values: int):
    """Native ints packed for SCM_RIGHTS without the ``array``/``struct`` modules' import."""
    order = sys.byteorder
    return b"".join(v.to_bytes(4, order, signed=True) for v in values)


if __name__ == "__main__":
    main()
