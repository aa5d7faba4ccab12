"""What the console can copy to the clipboard (yank, ``y``): each a short label and the text itself.

Pure: the screens pick one and hand its text to ``App.copy_to_clipboard`` (OSC 52, which reaches the
operator's clipboard through SSH and tmux). The text is cleaned and on one line: a process's command
line is the node's data, and a control character pasted into a shell would run as typed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis, Holder
from nvls_tui.textsafe import one_line

LIMIT = 4096  # characters: a command line longer than this is cut with a mark


@dataclass(frozen=True, slots=True)
class Yank:
    """One thing to copy.

    Attributes:
        what: what it is, for the palette and the toast (``the host``, ``PID 4242's command``).
        text: the text copied (clean, one line).
    """

    what: str
    text: str


def host_yank(host: str) -> Yank:
    """The host name."""
    return Yank("the host", one_line(host, LIMIT))


def holder_yank(holder: Holder) -> Yank:
    """A holder's command line."""
    return Yank(f"PID {holder.pid}'s command", one_line(holder.command, LIMIT))


def restore_yank(host: str) -> Yank:
    """The headless command that puts back what an interrupted repair of ``host`` changed."""
    return Yank("the --restore command", f"nvls-tui repair {shlex.quote(one_line(host))} --restore")


def node_yanks(host: str, state: NodeState | None, diagnosis: Diagnosis | None, *,
               holder_pid: int | None = None, audit_path: str | None = None) -> list[Yank]:
    """Everything the node screen offers to copy: the host, the holder under the cursor, each finding,
    the newest audit log naming the node, and the ``--restore`` command."""
    yanks = [host_yank(host)]
    if state is not None and holder_pid is not None:
        holder = next((h for h in state.holders if h.pid == holder_pid), None)
        if holder is not None:
            yanks.append(holder_yank(holder))
    for finding in diagnosis.findings if diagnosis is not None else ():
        yanks.append(Yank(f"finding {one_line(finding.code, 40)}",
                          one_line(f"{host} {finding.code}: {finding.message}", LIMIT)))
    if audit_path is not None:
        yanks.append(Yank("the audit path", one_line(audit_path, LIMIT)))
    yanks.append(restore_yank(host))
    return yanks


def toast(yank: Yank) -> str:
    """The toast after a copy: what was copied, and how (a terminal may refuse OSC 52)."""
    shown = yank.text if len(yank.text) <= 60 else yank.text[:59] + "…"
    return f"Copied {yank.what}: {shown} (OSC 52; a terminal that refuses it copies nothing)"


__all__ = ["LIMIT", "Yank", "holder_yank", "host_yank", "node_yanks", "restore_yank", "toast"]
