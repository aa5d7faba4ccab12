"""SSH connections for the SSH backend: one pooled connection per node, opened lazily and re-opened
with exponential backoff, host keys always checked against known_hosts.

Kept apart from ``ssh.py`` so the command side (run, stream, signal, snapshot) reads on its own.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import os
import socket
from dataclasses import dataclass, field

import asyncssh
from asyncssh.config import SSHClientConfig

from nvls_tui.backends.base import (
    BackendError,
    BackendOptions,
    HostKeyRejected,
    InvalidArgument,
    Unreachable,
)
from nvls_tui.backends.ssh.targets import SshTarget, parse_target

# curve25519 first, then asyncssh's defaults (``^`` = prepend), as OpenSSH itself prefers.
KEX_PREFERENCE = "^curve25519-sha256,curve25519-sha256@libssh.org"
# AES-GCM runs in OpenSSL with AES-NI; asyncssh's default chacha20-poly1305 sets up a cipher context per
# packet and cost more client CPU than anything else in a 256-node poll (bench/profile_check.py).
CIPHER_PREFERENCE = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
DEFAULT_KNOWN_HOSTS = ("~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts")
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
KEEPALIVE_INTERVAL = 15.0
KEEPALIVE_COUNT_MAX = 3


def identities(options: BackendOptions) -> list[str]:
    """The ``-i`` files (the CLI may pass one path or a list of them)."""
    value = options.identity
    if not value:
        return []
    paths = [value] if isinstance(value, str | os.PathLike) else list(value)
    return [os.path.expanduser(str(p)) for p in paths]


# Parsed known_hosts files keyed on (path, mtime, size) of each file: a fleet of 256 nodes would
# otherwise decode every key 256 times (2 s of CPU and half the peak memory, measured in bench/).
_KNOWN_HOSTS_CACHE: dict[tuple, asyncssh.SSHKnownHosts] = {}


def _read_known_hosts_cached(paths: list[str]) -> asyncssh.SSHKnownHosts:
    """asyncssh.read_known_hosts, re-read only when a file changed (so edits are still honoured)."""
    key = tuple((p, st.st_mtime_ns, st.st_size) for p in paths for st in (os.stat(p),))
    known = _KNOWN_HOSTS_CACHE.get(key)
    if known is None:
        known = asyncssh.read_known_hosts(paths if len(paths) > 1 else paths[0])
        if len(_KNOWN_HOSTS_CACHE) > 16:
            _KNOWN_HOSTS_CACHE.clear()
        _KNOWN_HOSTS_CACHE[key] = known
    return known


def config_known_hosts(options: BackendOptions, host: str) -> list[str] | None:
    """The ``UserKnownHostsFile`` list the SSH config gives ``host``, or None when it gives none.

    ``none`` and ``/dev/null`` are dropped: they would switch checking off, which nvls-tui never does.
    """
    if not options.ssh_config:
        return None
    try:
        config = SSHClientConfig.load(None, [os.path.expanduser(options.ssh_config)], False, False, False,
                                      getpass.getuser(), options.user or "", host, ())
        files = config.get("UserKnownHostsFile")
    except Exception:  # noqa: BLE001 - an unreadable config is reported by the connection itself
        return None
    if not isinstance(files, list | tuple) or not files:
        return None
    return [os.path.expanduser(str(f)) for f in files if str(f).lower() != "none" and str(f) != "/dev/null"]


def load_known_hosts(options: BackendOptions, host: str = "") -> tuple[asyncssh.SSHKnownHosts, list[str]]:
    """Read known_hosts for one connection attempt (a changed file is read again, so edits are honoured).

    The files are ``--known-hosts``, else the SSH config's ``UserKnownHostsFile`` for ``host`` (as
    OpenSSH reads it: it replaces the default files), else the defaults. Never returns "no
    checking": with no file at all the result trusts nothing, so every host key is refused. An
    ``UserKnownHostsFile none`` in the SSH config cannot switch checking off either, because the file
    list is always passed to asyncssh explicitly.

    Raises:
        HostKeyRejected: ``--known-hosts`` names a file that cannot be read.
    """
    if options.known_hosts:
        path = os.path.expanduser(options.known_hosts)
        if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would block the loop forever
            raise HostKeyRejected(f"known_hosts {path!r} is not a regular file: host keys cannot be verified")
        try:
            return _read_known_hosts_cached([path]), [path]
        except OSError as exc:
            raise HostKeyRejected(
                f"cannot read known_hosts file {path!r} ({exc.strerror or exc}): host keys cannot be verified"
            ) from None
    configured = config_known_hosts(options, host)
    candidates = configured if configured is not None else [os.path.expanduser(p) for p in DEFAULT_KNOWN_HOSTS]
    paths = [p for p in candidates if os.path.isfile(p)]
    if not paths:
        return asyncssh.import_known_hosts(""), []
    return _read_known_hosts_cached(paths), paths


def host_key_message(label: str, host: str, port: int | None, known: asyncssh.SSHKnownHosts, paths: list[str]) -> str:
    """One sentence saying whether the key is unknown or changed (both are refused)."""
    where = ", ".join(paths) if paths else "known_hosts (no file found)"
    try:
        addr = socket.gethostbyname(host)
    except OSError:
        addr = host
    try:
        trusted = asyncssh.match_known_hosts(known, host, addr, port)
    except ValueError:  # an alias that is no address (its HostName came from the SSH config)
        trusted = ([], [], [], [], [], [], [])
    if trusted[0] or trusted[1]:
        return (f"host key of {label} does not match {where}: it changed (reinstall?) or the connection is "
                f"intercepted; refusing to connect")
    return (f"host key of {label} is not in {where}: refusing to connect (check its fingerprint, "
            f"then add it, e.g. with ssh-keyscan)")


def translate_error(exc: BaseException, label: str, user: str | None, timeout: float) -> BackendError:
    """Turn an asyncssh/socket error into one typed sentence for the operator."""
    if isinstance(exc, BackendError):
        return exc
    if isinstance(exc, asyncssh.PermissionDenied):
        who = f"user {user!r}" if user else "the user"
        return Unreachable(f"{label}: authentication refused for {who} (check -i/--identity, ssh-agent and "
                           f"authorized_keys)")
    if isinstance(exc, asyncssh.KeyImportError):
        return Unreachable(f"{label}: cannot load the identity key ({exc}); encrypted keys need ssh-agent")
    if isinstance(exc, asyncssh.ConfigParseError):
        return Unreachable(f"{label}: the SSH config cannot be read ({exc})")
    if isinstance(exc, asyncssh.DisconnectError):
        return Unreachable(f"{label}: the server closed the connection ({exc.reason or type(exc).__name__})")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return Unreachable(f"{label}: no SSH answer within {timeout:g}s")
    if isinstance(exc, ConnectionRefusedError):
        return Unreachable(f"{label}: connection refused (is sshd running on that port?)")
    if isinstance(exc, socket.gaierror):
        return Unreachable(f"{label}: host name not found")
    if isinstance(exc, OSError):
        return Unreachable(f"{label}: {exc.strerror or exc}")
    if isinstance(exc, ValueError):  # asyncssh's way of saying an option is malformed
        return Unreachable(f"{label}: {exc}")
    return Unreachable(f"{label}: {type(exc).__name__}: {exc}")


class _Watcher(asyncssh.SSHClient):
    """Tells its connector the moment the link drops, so the next command reconnects at once."""

    def __init__(self, on_lost) -> None:
        self._on_lost = on_lost
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(self._conn, exc)


@functools.cache
def expanded_algorithms() -> dict[str, list[str]]:
    """``KEX_PREFERENCE`` and ``CIPHER_PREFERENCE`` as the name lists asyncssh makes of them, made once a process.

    asyncssh matches a ``^...`` string against every algorithm it knows each time it builds a connection's options
    (~95 us of a ~370 us build); the result depends on asyncssh alone, and the names select the same algorithms.
    """
    built = asyncssh.SSHClientConnectionOptions(config=[], known_hosts=None, client_keys=None,
                                                kex_algs=KEX_PREFERENCE, encryption_algs=CIPHER_PREFERENCE)
    return {"kex_algs": [name.decode("ascii") for name in built.kex_algs],
            "encryption_algs": [name.decode("ascii") for name in built.encryption_algs]}


def connect_kwargs(target: SshTarget, options: BackendOptions, known: asyncssh.SSHKnownHosts,
                   timeout: float) -> dict:
    """The asyncssh.connect arguments for one target (target fields win over options, then the config)."""
    kwargs: dict = {
        "known_hosts": known,
        **expanded_algorithms(),
        "connect_timeout": timeout,
        "keepalive_interval": KEEPALIVE_INTERVAL,
        "keepalive_count_max": KEEPALIVE_COUNT_MAX,
    }
    if options.ssh_config:
        kwargs["config"] = [os.path.expanduser(options.ssh_config)]
    user = target.user or options.user
    if user:
        kwargs["username"] = user
    keys = identities(options)
    if keys:
        kwargs["client_keys"] = keys
    return kwargs


@dataclass
class _Shared:
    """A jump-host connection shared by every node behind it (one bastion link, not one per node)."""

    conn: asyncssh.SSHClientConnection | None = None
    users: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_JUMPS: dict[tuple, _Shared] = {}


def _jump_key(options: BackendOptions) -> tuple:
    return (id(asyncio.get_running_loop()), options.jump, options.user, options.known_hosts,
            tuple(identities(options)), options.ssh_config)


class SshConnector:
    """The pooled connection to one node.

    The first command connects; later commands reuse the connection. When it drops, the next
    command reconnects at once; when connecting fails, attempts are spaced 0.5 s, 1 s, 2 s ... up
    to 30 s apart (a command whose timeout ends before the next attempt fails straight away).

    Args:
        target: the node.
        options: reach options (known_hosts, identity, user, jump, ssh config).
    """

    def __init__(self, target: SshTarget, options: BackendOptions) -> None:
        self.target = target
        self.options = options
        self.label = str(target)
        self.failures = 0
        self.last_error: str | None = None
        self.lost_reason: str | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._retry_at = 0.0
        self._lock: asyncio.Lock | None = None
        self._jump: _Shared | None = None

    @property
    def connected(self) -> bool:
        """True while a connection is open."""
        return self._conn is not None

    @property
    def current(self) -> asyncssh.SSHClientConnection | None:
        """The open connection, or None (never connects)."""
        return self._conn

    def backoff_delay(self) -> float:
        """Seconds between the last failed attempt and the next one."""
        if not self.failures:
            return 0.0
        return min(BACKOFF_FIRST * 2 ** (self.failures - 1), BACKOFF_MAX)

    def _lost(self, conn: asyncssh.SSHClientConnection | None, exc: Exception | None) -> None:
        if conn is not None and conn is self._conn:
            self._conn = None
            self.lost_reason = f"the connection to {self.label} dropped" + (f" ({exc})" if exc else "")

    def discard(self, conn: asyncssh.SSHClientConnection) -> None:
        """Forget ``conn`` (it failed under a command) so the next command reconnects."""
        if conn is self._conn:
            self._conn = None
            conn.abort()

    async def get(self, timeout: float) -> asyncssh.SSHClientConnection:
        """The open connection, connecting (after any backoff) when there is none.

        Raises:
            Unreachable, HostKeyRejected: connecting failed (typed, one sentence).
        """
        if self._conn is not None:
            return self._conn
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._conn is not None:
                return self._conn
            loop = asyncio.get_running_loop()
            wait = self._retry_at - loop.time()
            if wait > 0:
                if wait >= timeout:
                    raise Unreachable(f"{self.last_error} (next attempt in {wait:.1f}s)")
                await asyncio.sleep(wait)  # the backoff itself, bounded by the caller's timeout
            try:
                self._conn = await self._open(timeout)
            except Exception as exc:  # noqa: BLE001 - every failure becomes one typed sentence
                error = translate_error(exc, self.label, self.target.user or self.options.user, timeout)
                self.failures += 1
                self._retry_at = loop.time() + self.backoff_delay()
                self.last_error = str(error)
                raise error from None
            self.failures, self._retry_at, self.lost_reason = 0, 0.0, None
            return self._conn

    async def _open(self, timeout: float) -> asyncssh.SSHClientConnection:
        known, paths = load_known_hosts(self.options, self.target.host)
        kwargs = connect_kwargs(self.target, self.options, known, timeout)
        if self.options.jump:
            kwargs["tunnel"] = await self._jump_connection(timeout)
        try:
            return await asyncssh.connect(
                self.target.host, self.target.port or (),
                client_factory=lambda: _Watcher(self._lost), **kwargs,
            )
        except asyncssh.HostKeyNotVerifiable:
            raise HostKeyRejected(host_key_message(self.label, self.target.host, self.target.port or 22,
                                                   known, paths)) from None

    async def _jump_connection(self, timeout: float) -> asyncssh.SSHClientConnection:
        """The shared connection to ``--jump``, verified against the same known_hosts."""
        jumps = parse_target(self.options.jump or "")
        if len(jumps) != 1:
            raise InvalidArgument(f"refusing jump host {self.options.jump!r}: give exactly one host")
        jump = jumps[0]
        if self._jump is None:
            self._jump = _JUMPS.setdefault(_jump_key(self.options), _Shared())
            self._jump.users += 1
        shared = self._jump
        async with shared.lock:
            if shared.conn is not None and not shared.conn.is_closed():
                return shared.conn
            known, paths = load_known_hosts(self.options, jump.host)
            kwargs = connect_kwargs(jump, self.options, known, timeout)
            label = f"jump host {jump}"
            try:
                shared.conn = await asyncssh.connect(jump.host, jump.port or (), **kwargs)
            except asyncssh.HostKeyNotVerifiable:
                raise HostKeyRejected(host_key_message(label, jump.host, jump.port or 22, known, paths)) from None
            except Exception as exc:  # noqa: BLE001 - turned into one typed sentence
                raise translate_error(exc, label, jump.user or self.options.user, timeout) from None
            return shared.conn

    async def close(self) -> None:
        """Close the connection (and the jump link when no other node uses it)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:
                async with asyncio.timeout(5):
                    await conn.wait_closed()
            except (TimeoutError, asyncssh.Error, OSError):
                pass
        shared, self._jump = self._jump, None
        if shared is not None:
            shared.users -= 1
            if shared.users <= 0:
                for key, value in list(_JUMPS.items()):
                    if value is shared:
                        del _JUMPS[key]
                if shared.conn is not None:
                    shared.conn.close()

