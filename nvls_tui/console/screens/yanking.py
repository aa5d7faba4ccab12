"""Yank on the fleet and node screens (``y`` and the palette's ``yank:`` entries): copy, then say what.

The copy goes through ``App.copy_to_clipboard`` (OSC 52: it reaches the operator's own clipboard
through SSH and tmux); a toast says what was copied, since a terminal that refuses OSC 52 gives no sign.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from nvls_tui.console.yank import Yank, host_yank, node_yanks, toast

if TYPE_CHECKING:
    from textual.screen import Screen

    from nvls_tui.console.commands import Command
    from nvls_tui.console.services import ConsoleServices


def copy(screen: Screen, yank: Yank) -> None:
    """Copy ``yank``'s text to the clipboard and say what was copied."""
    screen.app.copy_to_clipboard(yank.text)
    screen.notify(toast(yank), timeout=6)


def newest_audit_path(services: ConsoleServices, host: str) -> str | None:
    """The newest audit log naming ``host`` in the console's audit directory (None: none, or unreadable)."""
    from nvls_tui.audit.log import default_audit_dir
    from nvls_tui.audit.past import audit_logs_naming

    folder = services.session.audit_dir or default_audit_dir()
    try:
        logs = audit_logs_naming(host, folder)
    except OSError:
        return None
    return str(logs[0].path) if logs else None


def yank_commands(screen: Screen, services: ConsoleServices, host: str, holder_pid: int | None) -> Iterator[Command]:
    """The palette's ``yank: Copy ...`` entries for ``host`` (read-only mode keeps them: nothing changes)."""
    yanks = node_yanks(host, services.live.fleet.get(host), services.live.diagnoses.get(host),
                       holder_pid=holder_pid, audit_path=newest_audit_path(services, host))
    for yank in yanks:
        yield (f"yank: Copy {yank.what} of {host}", partial(copy, screen, yank),
               f"to the clipboard (OSC 52): {yank.text[:80]}")


def yank_host(screen: Screen, host: str | None) -> None:
    """``y`` where only a host is at hand (the fleet's cursor)."""
    if host is None:
        screen.notify("Nothing to copy: no node under the cursor.", severity="warning")
        return
    copy(screen, host_yank(host))


__all__ = ["copy", "newest_audit_path", "yank_commands", "yank_host"]
