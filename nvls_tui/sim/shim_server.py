"""A simulated node's fork server: ``python -m nvls_tui.sim.shim_server DIR``.

Each simulated command behind the loopback sshd used to start Python and import the simulator (about
0.1 s of CPU; some 70 commands a repair). This server imports it once per node and forks a child per
command; the shim's client (:mod:`nvls_tui.sim.shim_client`) passes its stdin, stdout, stderr and
working directory as file descriptors (SCM_RIGHTS), and its argv, environment, umask and parent PID.
The child takes them all on and runs the same :func:`nvls_tui.sim.shim_main.main`, so the node does what
it did: the same state file and lock, the same streaming writes, the same exit statuses. The server
reports the child's status to the client (``x<code>`` or ``s<signal>``), passes on the signals the
client forwards (``k<signal>``), and kills the child with SIGKILL when the client's socket closes first
(the client was killed: a timeout's SIGKILL of the process group, so the command must end with it).

One server per DIR (an ``flock`` on ``DIR/shim-server.lock``; a second one exits at once). It listens on
``DIR/shim.sock`` (0600, the owner's connections only) and exits when its socket or ``DIR/state.json``
goes away (its DIR was removed) or after ``IDLE_S`` without a command. On exit it appends its own and its
children's CPU seconds to ``DIR/shim-server.cpu`` (what it cost, for docs/performance.md).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
import selectors
import signal
import socket
import sys
import time
import traceback

LOCK_NAME = "shim-server.lock"
SOCKET_NAME = "shim.sock"  # the client's SOCKET_NAME
CPU_LOG = "shim-server.cpu"
IDLE_S = 60.0
TICK_S = 1.0
MAX_REQUEST = 4 << 20
_PR_SET_NAME = 15
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


class _Gone(Exception):
    """The server's DIR, socket or time is up."""


def _read_request(conn: socket.socket) -> tuple[list[int], bytes]:
    """The descriptors and the NUL-separated body of one request (``LEN\\nBODY``)."""
    conn.settimeout(10)
    fds: list[int] = []
    data = b""
    while True:
        msg, anc, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += [int.from_bytes(payload[i:i + 4], sys.byteorder, signed=True)
                        for i in range(0, len(payload) - len(payload) % 4, 4)]
        if not msg:
            raise ConnectionError("the client closed before its request was whole")
        data += msg
        head, sep, body = data.partition(b"\n")
        if sep:
            size = int(head)
            if size > MAX_REQUEST:
                raise ConnectionError("request too large")
            if len(body) >= size:
                conn.settimeout(None)
                return fds, body[:size]


def _run_child(fds: list[int], body: bytes, keep_closed, server: int) -> None:
    """In the forked child: become the client's command, run it, and exit with its status. Never returns."""
    code = 1
    try:
        # Die with the server (a rig's kill of a session can take it): an orphan would hold the client's
        # pipes, and a hung command would never end.
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server:
            os._exit(137)
        keep_closed()
        for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signo, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        fields = body.split(b"\0")
        _version, ppid, mask, argc = fields[:4]
        argv = [a.decode("utf-8", "surrogateescape") for a in fields[4:4 + int(argc)]]
        # The tool's name where ps shows a process's name (its command line stays the server's).
        _LIBC.prctl(_PR_SET_NAME, argv[1].encode()[:15] if len(argv) > 1 else b"shim", 0, 0, 0)
        env = {}
        for entry in fields[4 + int(argc):]:
            key, _, value = entry.decode("utf-8", "surrogateescape").partition("=")
            env[key] = value
        os.environ.clear()
        os.environ.update(env)
        os.umask(int(mask))
        for target, fd in zip((0, 1, 2), fds[:3], strict=True):
            os.dup2(fd, target)
        os.fchdir(fds[3])
        for fd in fds:
            os.close(fd)
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", errors="strict", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1,  # noqa: SIM115
                          closefd=False)
        sys.argv = ["shim_main", *argv]
        from nvls_tui.sim import shim_main

        shim_main.PARENT_PID = int(ppid)  # the shell that ran the shim, as os.getppid() was before
        try:
            code = _exit_code(shim_main.main(argv))
        except SystemExit as exit_:
            code = _exit_code(exit_.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            _flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)  # as Python itself ends on an uncaught Ctrl-C
        except BaseException:
            traceback.print_exc()
            code = 1
        if not _flush():
            code = 120  # as Python exits when flushing its stdout fails
    finally:
        os._exit(code)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _flush() -> bool:
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            ok = False
    return ok


class Server:
    """The accept loop: one selector over the listening socket, each client's socket and each child."""

    def __init__(self, directory: str, listener: socket.socket, lock: int) -> None:
        self.dir = directory
        self.listener = listener
        self.lock = lock
        self.sock_inode = os.stat(SOCKET_NAME).st_ino
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, ("accept", None))
        self.children: dict[int, tuple[socket.socket, int]] = {}  # pid -> (client socket, pidfd)
        self.last = time.monotonic()

    def serve(self) -> None:
        while True:
            for key, _mask in self.selector.select(TICK_S):
                kind, pid = key.data
                if kind == "accept":
                    self._accept()
                elif kind == "client":
                    self._from_client(pid)
                else:
                    self._reap(pid)
            if self.children:
                self.last = time.monotonic()
            self._check_alive()

    def _check_alive(self) -> None:
        try:
            if os.stat(SOCKET_NAME).st_ino != self.sock_inode or not os.path.exists("state.json"):
                raise _Gone
        except OSError:
            raise _Gone from None
        if not self.children and time.monotonic() - self.last > IDLE_S:
            raise _Gone

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        uid = int.from_bytes(creds[4:8], sys.byteorder)
        fds: list[int] = []
        try:
            if uid != os.getuid():
                raise ConnectionError("another user's client")
            fds, body = _read_request(conn)
            if len(fds) != 4:
                raise ConnectionError("a request without its four descriptors")
        except (OSError, ValueError):
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            _run_child(fds, body, lambda: self._close_all(conn), server)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (conn, pidfd)
        self.selector.register(conn, selectors.EVENT_READ, ("client", pid))
        self.selector.register(pidfd, selectors.EVENT_READ, ("child", pid))
        self.last = time.monotonic()

    def _close_all(self, conn: socket.socket) -> None:
        """In a child: none of the server's descriptors (nor its lock: it dies with the server)."""
        conn.close()
        self.selector.close()
        self.listener.close()
        os.close(self.lock)
        for conn, pidfd in self.children.values():
            conn.close()
            os.close(pidfd)

    def _from_client(self, pid: int) -> None:
        conn, _pidfd = self.children[pid]
        try:
            data = conn.recv(256)
        except OSError:
            data = b""
        if not data:  # the client is gone: so is its command
            self.selector.unregister(conn)
            _kill(pid, signal.SIGKILL)
            return
        for line in data.split(b"\n"):
            if line.startswith(b"k") and line[1:].isdigit():
                _kill(pid, int(line[1:]))

    def _reap(self, pid: int) -> None:
        conn, pidfd = self.children.pop(pid)
        _, status = os.waitpid(pid, 0)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        reply = b"s%d\n" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else b"x%d\n" % os.WEXITSTATUS(status)
        try:
            conn.sendall(reply)
        except OSError:
            pass
        try:
            self.selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    def stop(self) -> None:
        for pid in list(self.children):
            _kill(pid, signal.SIGKILL)
        for pid in list(self.children):
            os.waitpid(pid, 0)


def _kill(pid: int, signo: int) -> None:
    try:
        os.kill(pid, signo)
    except ProcessLookupError:
        pass


def _log_cpu() -> None:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        with open(CPU_LOG, "a") as log:
            log.write(f"{os.getpid()} {own.ru_utime + kids.ru_utime:.3f} {own.ru_stime + kids.ru_stime:.3f}\n")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Serve DIR until it goes, or idles; 0 also when another server already serves it."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m nvls_tui.sim.shim_server DIR", file=sys.stderr)
        return 2
    os.closerange(3, 1 << 16)  # nothing of the client that started us (an SSH channel would never close)
    os.chdir(args[0])
    lock = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server has DIR
    try:
        os.unlink(SOCKET_NAME)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    listener.bind(SOCKET_NAME)
    os.umask(old)
    listener.listen(64)
    from nvls_tui.sim import shim_main  # noqa: F401  (what every child runs: imported once, here)

    server = Server(args[0], listener, lock)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        server.serve()
    except (_Gone, SystemExit):
        pass
    finally:
        try:
            if os.stat(SOCKET_NAME).st_ino == server.sock_inode:
                os.unlink(SOCKET_NAME)
        except OSError:
            pass
        server.stop()
        _log_cpu()
    return 0


if __name__ == "__main__":
    sys.exit(main())
