"""Times as the API writes them (RFC 3339, seconds, UTC) and names as a controller makes them."""

from __future__ import annotations

import secrets
import time
import uuid

# The alphabet apimachinery's rand.String draws generated names from (no vowels, no look-alikes).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def now() -> str:
    """The current time as ``2025-06-01T12:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_uid() -> str:
    """A fresh object UID."""
    return str(uuid.uuid4())


def suffix(n: int = 5) -> str:
    """A generated-name suffix as a DaemonSet's or ReplicaSet's pods get (``-x7k2p``)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))
