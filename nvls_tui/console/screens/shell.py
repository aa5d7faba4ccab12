"""``S`` on the fleet and node screens: suspend the console, run ``ssh`` to the node, come back.

The argv comes from :func:`nvls_tui.console.ssh_shell.shell_for` (the console's own SSH options, no shell in
between). While ``ssh`` runs the console is suspended (``App.suspend``: the terminal is the operator's);
when the shell ends the console draws again where it was and a toast says how ssh ended. A node with no
shell to open (simulated, this machine, a replay) says why in one line and nothing is suspended.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from nvls_tui.console.ssh_shell import NoShell, shell_for, shown

if TYPE_CHECKING:
    from textual.screen import Screen

    from nvls_tui.console.services import ConsoleServices

Runner = Callable[[Sequence[str]], int]


def run_in_terminal(argv: Sequence[str]) -> int:
    """Run ``argv`` on the terminal the console left (no shell; its exit status)."""
    print(f"nvls-tui: {shown(argv)}\nnvls-tui: leave the shell (exit or Ctrl-D) to come back to the console.",
          flush=True)
    status = subprocess.run(list(argv), check=False).returncode
    if status == 255:  # ssh's own failure: keep its words on the terminal until they are read
        try:
            input("nvls-tui: ssh failed (exit 255). Press Enter to go back to the console. ")
        except EOFError:
            pass
    return status


def open_shell(screen: Screen, services: ConsoleServices, host: str | None, runner: Runner = run_in_terminal) -> None:
    """Suspend the console and ssh to ``host`` (the fleet's cursor or the node screen's node).

    Args:
        screen: where the toasts go.
        services: the node's backend (its SSH target and options).
        host: the node, or None (no node under the cursor).
        runner: runs the argv on the terminal (tests give their own).
    """
    if host is None:
        screen.notify("No node under the cursor to ssh to.", severity="warning")
        return
    try:
        argv = shell_for(services.backend_for(host))
    except NoShell as exc:
        screen.notify(f"ssh {host}: {exc}", severity="warning", timeout=8)
        return
    try:
        with screen.app.suspend():
            status = runner(argv)
    except SuspendNotSupported:
        screen.notify(f"This terminal cannot suspend the console; run it yourself: {shown(argv)}",
                      severity="warning", timeout=15)
        return
    except OSError as exc:
        screen.notify(f"ssh {host} could not start: {exc.strerror or exc}", severity="error", timeout=10)
        return
    # 255 is ssh's own failure (it could not connect or authenticate); any other status is the shell's.
    if status == 255:
        screen.notify(f"ssh {host} failed (exit 255: ssh could not connect or authenticate; its words were on "
                      "the terminal).", severity="warning", timeout=10)
    else:
        screen.notify(f"Back from ssh {host} (exit {status}).", timeout=5)


__all__ = ["Runner", "open_shell", "run_in_terminal"]
