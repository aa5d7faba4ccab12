"""Keep a library's import-time warnings off the operator's stderr, precisely.

asyncssh (2.x) names ``cryptography``'s DSA classes in its type annotations; with cryptography 51 each name
raises ``CryptographyDeprecationWarning: DSA is deprecated`` when asyncssh is imported: five warnings and
their source lines on stderr of every command that reaches an SSH node, before its output or its one-line
error. Nothing of nvls-tui's uses DSA (host keys are whatever known_hosts holds; asyncssh still reads a DSA
one). Only that category from asyncssh's own modules is ignored, and only once the entry point installs
the filter (before asyncssh is imported): any other warning, and that one from anywhere else, still shows.
"""

from __future__ import annotations

import warnings


def quiet_asyncssh_imports() -> None:
    """Ignore ``CryptographyDeprecationWarning`` raised in ``asyncssh``'s modules (the entry points call this
    before anything imports asyncssh). Nothing to do where cryptography is not installed."""
    try:
        from cryptography.utils import CryptographyDeprecationWarning
    except ImportError:
        return
    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")


__all__ = ["quiet_asyncssh_imports"]
