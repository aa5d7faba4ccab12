"""A notification when a long repair ends, or when a running repair stops to wait for the operator: the
terminal bell and a desktop notification (OSC 9, OSC 777).

Waits run 5 to 22 minutes, and the operator looks elsewhere meanwhile. The bell reaches every terminal
(tmux passes it on as an alert); OSC 9 (iTerm2, Windows Terminal, WezTerm, kitty) and OSC 777 (rxvt,
foot, Ghostty, VTE terminals) raise a desktop notification where the terminal supports them, and are
ignored where it does not. Off with ``notify = false`` in config.toml or ``--no-notify``.

The words are cleaned and stripped of the characters that end an OSC sequence or split its fields
(BEL, ESC, ``;`` in OSC 777's title), so a host name cannot inject a sequence of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nvls_tui.textsafe import one_line

BELL = "\a"
LONG_S = 60.0  # a repair shorter than this was watched: no notification
TEXT_CHARS = 200


def _field(text: str, *, semicolons: bool = True) -> str:
    cleaned = one_line(text, TEXT_CHARS).replace("\x07", "").replace("\x1b", "")
    return cleaned if semicolons else cleaned.replace(";", ",")


def desktop_sequence(title: str, body: str) -> str:
    """The bell, then OSC 9 (body) and OSC 777 (title and body), each ended by BEL."""
    return (BELL + f"\x1b]9;{_field(title + ': ' + body)}\a"
            + f"\x1b]777;notify;{_field(title, semicolons=False)};{_field(body)}\a")


class Notifier:
    """Says when a repair that ran long has ended (or ended wrongly), and when a repair waits for the operator.

    Args:
        enabled: the setting (``notify`` in config.toml; ``--no-notify`` turns it off).
        write: writes raw text to the terminal (the App's driver).
        clock: monotonic seconds.
        long_s: repairs shorter than this are not notified (the operator was watching).
    """

    def __init__(self, enabled: bool, write: Callable[[str], None], clock: Callable[[], float],
                 long_s: float = LONG_S) -> None:
        self.enabled = enabled
        self.write = write
        self.clock = clock
        self.long_s = long_s
        self._started: float | None = None

    def repair_started(self) -> None:
        """A repair began now."""
        self._started = self.clock()

    def repair_ended(self, hosts: Sequence[str], ok: bool, summary: str) -> bool:
        """Notify that the repair of ``hosts`` ended; True when a notification was written."""
        started, self._started = self._started, None
        if not self.enabled or started is None or self.clock() - started < self.long_s:
            return False
        title = "nvls-tui: repair " + ("finished" if ok else "needs you")
        self.write(desktop_sequence(title, f"{' '.join(hosts)}: {summary}"))
        return True

    def operator_needed(self, host: str, question: str) -> bool:
        """Notify that the repair of ``host`` waits for the operator's answer to ``question``.

        At once, however long the repair has run: it stands still until someone answers. The caller
        says it once per wait (a question asked again while the same wait lasts is no news).

        Returns:
            True when a notification was written.
        """
        if not self.enabled:
            return False
        self.write(desktop_sequence("nvls-tui: repair needs you", f"{host}: {question}"))
        return True


__all__ = ["BELL", "LONG_S", "Notifier", "desktop_sequence"]
