"""The top of every screen: the fleet summary, the SIMULATED banner and the read-only badge."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rich.text import Text
from textual.widgets import Static

from nvls_tui.console.widgets import cells
from nvls_tui.model import Verdict


def summary_text(verdicts: Iterable[Verdict | None], *, title: str = "nvls-tui", extra: str = "") -> Text:
    """``nvls-tui  8 nodes  ✖ 2 broken  ▲ 1 degraded  ✔ 5 healthy`` with each count in its colour."""
    counts = Counter(verdicts)
    total = sum(counts.values())
    text = Text()
    text.append(f" {title} ", style="bold reverse")
    text.append(f"  {total} node{'s' if total != 1 else ''}  ", style="bold")
    for verdict in (Verdict.BROKEN, Verdict.UNREACHABLE, Verdict.DEGRADED, Verdict.HEALTHY):
        n = counts.get(verdict, 0)
        style = cells.STYLE[verdict.value] if n else cells.STYLE["idle"]
        text.append(f"{cells.VERDICT_GLYPH[verdict]} {n} {verdict.value}", style=style)
        text.append("   ")
    if counts.get(None):
        text.append(f"… {counts[None]} polling   ", style=cells.STYLE["polling"])
    if extra:
        text.append(extra, style=cells.STYLE["idle"])
    return text


class FleetSummary(Static):
    """One line of fleet counts (n broken / degraded / healthy), worst first."""

    def show(self, verdicts: Iterable[Verdict | None], *, title: str = "nvls-tui", extra: str = "") -> None:
        """Redraw the counts."""
        self.update(summary_text(verdicts, title=title, extra=extra), layout=False)  # one line, fixed height


class ModeBanner(Static):
    """A full-width warning bar: SIMULATED fleets and read-only mode are never mistaken for reality.

    Shown only when one of the two applies (``display`` is off otherwise). A node reached over plain
    SSH is known to be simulated (or a lab node) only once its poll has read its marker, so the bar
    follows the console's fleet and never goes back: once simulated, always labelled.
    """

    # One line at 80 columns (with the bar's padding): the warning must be read whole on a jump host's console.
    SIM = "SIMULATED FLEET — nothing here touches real hardware"
    LAB = ("LAB FLEET — simulated GPUs and NVSwitches on real systemd, sshd and processes; nothing here "
           "touches real hardware")

    # The autopilot's ask mode (--autopilot ask), on the fleet screen where its proposals are shown.
    ASK = "AUTOPILOT ASK — nothing runs without your approval"

    def __init__(self, *, simulated: bool, read_only: bool, ask: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.simulated = simulated
        self.lab = False
        self.read_only = read_only
        self.ask = ask
        self.ask_alarm = ""  # a tripped breaker, a pause: the banner wraps, the top line is cut at its edge

    def ask_alarms(self, words: str) -> None:
        """The autopilot's alarms now ("" when none holds): named in the banner after ``AUTOPILOT ASK``."""
        if words != self.ask_alarm:
            self.ask_alarm = words
            self._show()

    def on_mount(self) -> None:
        """Say which mode applies now, and follow the fleet: its polls may find simulated nodes."""
        self._show()
        if hasattr(self.app, "fleet"):
            self.watch(self.app, "fleet", self._fleet_changed, init=True)

    def _fleet_changed(self, fleet) -> None:
        if self.simulated and self.lab:
            return  # nothing left to learn: skip the walk over the fleet on every poll
        simulated, lab = self.simulated or fleet.simulated, self.lab or fleet.lab
        if (simulated, lab) != (self.simulated, self.lab):
            self.simulated, self.lab = simulated, lab
            self._show()

    def _show(self) -> None:
        parts = []
        if self.simulated:
            parts.append(self.LAB if self.lab else self.SIM)
        if self.read_only:
            parts.append("READ-ONLY — every action that changes a node is hidden and refused")
        if self.ask:
            parts.append(self.ASK.replace(" — ", f" — {self.ask_alarm} — ", 1) if self.ask_alarm else self.ASK)
        self.set_class(self.simulated, "-simulated")
        self.set_class(self.read_only, "-read-only")
        self.display = bool(parts)
        self.update("   ·   ".join(parts))
