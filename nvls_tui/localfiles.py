"""nvls-tui's own files on the bastion: audit logs, incident reports and crash logs.

They can hold host names, users, command lines and tool output, so they are private (0600 in a 0700
directory), created fresh (``O_EXCL``) and never through a planted symbolic link (``O_NOFOLLOW``, and
replace-by-rename, which replaces a link rather than writing through it). A directory that someone
else owns or may write into is refused: whoever can write there can swap the files under us.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

PRIVATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafeLocation(OSError):
    """A directory or file nvls-tui refuses to use; ``str()`` is one sentence."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unsafe location"


def make_private_dirs(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and every missing directory above it 0700, whatever the umask.

    Every directory nvls-tui creates is private: ``mkdir(parents=True)`` gives the parents the
    umask's mode (0755), and the state directory that holds crash logs was one of them. Directories
    that exist are left as they are (:func:`private_dir` checks the one it writes into).

    Raises:
        OSError: one cannot be created.
    """
    folder = Path(path).expanduser()
    missing = []
    top = folder
    while not top.exists() and not top.is_symlink() and top != top.parent:
        missing.append(top)
        top = top.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: not ours to change
        os.chmod(directory, 0o700)  # the umask may have taken bits off 0700 too
    return folder


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a directory for nvls-tui's own files: created 0700 (its missing parents too), or checked.

    Raises:
        UnsafeLocation: it is a symbolic link or not a directory, belongs to another user, or is
            writable by its group or by others.
        OSError: it cannot be created.
    """
    folder = make_private_dirs(path)
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeLocation(f"refusing {folder}: it is a symbolic link; use a real directory of your own")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeLocation(f"refusing {folder}: it is not a directory")
    if st.st_uid != os.geteuid():
        raise UnsafeLocation(f"refusing {folder}: it belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}); "
                             f"use a directory of your own (--audit-dir)")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeLocation(f"refusing {folder}: others may write into it (mode {stat.S_IMODE(st.st_mode):o}); "
                             f"`chmod 700 {folder}` or use another --audit-dir")
    return folder


def create_private(path: str | os.PathLike[str]) -> int:
    """A new file, 0600, opened for writing; never an existing file and never through a link.

    Raises:
        FileExistsError: ``path`` exists (or is a link).
    """
    return os.open(path, PRIVATE_FLAGS, 0o600)


def write_private(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` (0600): a fresh temporary file beside it, then renamed over it.

    A symbolic link planted at ``path`` is replaced, not followed: its target is never written.
    """
    target = Path(path)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = create_private(temp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return target


__all__ = ["UnsafeLocation", "create_private", "make_private_dirs", "private_dir", "write_private"]
