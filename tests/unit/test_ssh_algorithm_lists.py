"""The algorithm preferences reach asyncssh as the lists it would make of them, expanded once a process.

asyncssh matches a ``^...`` preference string against every algorithm it knows each time it builds a connection's
options (about a quarter of that build, ~95 us a connection; docs/performance.md). The expansion depends on
asyncssh alone, so nvls-tui makes it once and hands over the names: the same algorithms, in the same order.
"""

from __future__ import annotations

import asyncssh

from nvls_tui.backends.base import BackendOptions
from nvls_tui.backends.ssh import pool
from nvls_tui.backends.ssh.targets import SshTarget


def _options(**kwargs) -> asyncssh.SSHClientConnectionOptions:
    return asyncssh.SSHClientConnectionOptions(host="gpu01", config=[], known_hosts=None, client_keys=None, **kwargs)


def test_the_names_handed_to_asyncssh_are_the_lists_it_makes_of_the_preferences():
    kwargs = pool.connect_kwargs(SshTarget(host="gpu01"), BackendOptions(), asyncssh.SSHKnownHosts(), 5.0)
    assert isinstance(kwargs["kex_algs"], list) and isinstance(kwargs["encryption_algs"], list)
    given = _options(kex_algs=kwargs["kex_algs"], encryption_algs=kwargs["encryption_algs"])
    preferred = _options(kex_algs=pool.KEX_PREFERENCE, encryption_algs=pool.CIPHER_PREFERENCE)
    assert given.kex_algs == preferred.kex_algs and given.encryption_algs == preferred.encryption_algs
    assert given.kex_algs[:2] == [b"curve25519-sha256", b"curve25519-sha256@libssh.org"]
    assert given.encryption_algs[:2] == [b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com"]


def test_the_expansion_is_made_once_a_process():
    first = pool.connect_kwargs(SshTarget(host="a"), BackendOptions(), asyncssh.SSHKnownHosts(), 5.0)
    second = pool.connect_kwargs(SshTarget(host="b"), BackendOptions(), asyncssh.SSHKnownHosts(), 5.0)
    assert isinstance(first["kex_algs"], list)  # expanded, not the preference string
    assert first["kex_algs"] is second["kex_algs"] and first["encryption_algs"] is second["encryption_algs"]
