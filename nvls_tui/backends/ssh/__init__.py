"""Nodes over SSH: the backend, its pooled asyncssh connections, and the targets an operator writes."""

from nvls_tui.backends.ssh.backend import (
    MAX_SESSIONS,
    SIGNALS,
    SshBackend,
    signal_script,
)

__all__ = ["MAX_SESSIONS", "SIGNALS", "SshBackend", "signal_script"]
