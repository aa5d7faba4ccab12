"""Compact, coloured cells for the tables: verdicts, GPU fabric states, units, versions, bandwidth.

DataTable cells are Rich ``Text`` and cannot take CSS classes, so cell content is styled by colour
role (:data:`STYLE`, the console's :mod:`~nvls_tui.console.widgets.palette`), whose colours live in
``styles/palette.tcss``. Every state is shown in colour *and* in a glyph or a word, so it reads
without colour too.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from nvls_tui.console.widgets import palette
from nvls_tui.diagnosis.story import nccl_symptom
from nvls_tui.model import (
    FabricInfo,
    Finding,
    GpuState,
    NodeState,
    ServiceState,
    Severity,
    SmokeResult,
    Verdict,
)
from nvls_tui.model.kube import KubeNode
from nvls_tui.model.scheduler import SchedulerState

# Role -> Rich style, filled from the stylesheet when the console mounts: look roles up when drawing.
STYLE = palette.STYLE

VERDICT_GLYPH = {
    Verdict.BROKEN: "✖",
    Verdict.UNREACHABLE: "⊘",
    Verdict.DEGRADED: "▲",
    Verdict.HEALTHY: "✔",
}


def verdict_text(verdict: Verdict | None) -> Text:
    """``✖ broken`` in red, ``✔ healthy`` in green...; ``… polling`` before the first poll."""
    if verdict is None:
        return Text("… polling", style=STYLE["polling"])
    return Text(f"{VERDICT_GLYPH[verdict]} {verdict.value}", style=STYLE[verdict.value])


def fabric_glyph(fabric: FabricInfo) -> tuple[str, str]:
    """One glyph and a style key for a GPU's fabric state/status (nvidia-smi's words)."""
    if fabric.state == "Completed":
        return ("✔", "ok") if fabric.status == "Success" else ("✖", "bad")
    if fabric.state == "In Progress":
        return "…", "warn"
    if fabric.state == "Not Started":
        return "○", "bad"
    if fabric.state in ("Not Supported", "N/A"):
        return "–", "idle"
    return "?", "bad"


def fabric_words(fabric: FabricInfo) -> Text:
    """``✔ Completed/Success``: the glyph and nvidia-smi's own words."""
    glyph, style = fabric_glyph(fabric)
    words = fabric.state if fabric.state != "Completed" else f"{fabric.state}/{fabric.status}"
    return Text(f"{glyph} {words}", style=STYLE[style])


def gpu_cell(gpu: GpuState | None, stale: bool = False) -> Text:
    """The one-glyph fleet cell of a GPU (blank when the node has no such GPU)."""
    if gpu is None:
        return Text("")
    glyph, style = fabric_glyph(gpu.fabric)
    return Text(glyph, style=STYLE["stale"] if stale else STYLE[style])


def switch_cell(present: bool, stale: bool = False) -> Text:
    """The fleet cell of an NVSwitch: ``◆`` when its device is present."""
    return Text("◆" if present else "", style=STYLE["stale"] if stale else STYLE["ok"])


def unit_text(service: ServiceState | None, stale: bool = False) -> Text:
    """A unit's ActiveState in colour (``failed`` red, ``active`` green); ``–`` when absent."""
    if service is None or not service.exists:
        return Text("–", style=STYLE["idle"])
    active = service.active if service.load != "masked" else "masked"
    style = {"active": "ok", "failed": "bad", "masked": "bad", "activating": "warn",
             "deactivating": "warn"}.get(active, "idle")
    return Text(active, style=STYLE["stale" if stale else style])


def version_texts(state: NodeState, stale: bool = False) -> tuple[Text, Text]:
    """Driver and FM version cells; both red with ``≠`` when FM differs from the driver; ``?`` unread."""
    # The driver's version is nvidia-smi's word: unknown when its section was not read.
    driver = "?" if state.missing_section("gpus") is not None else state.driver or "–"
    fm = "?" if state.missing_section("fm_version") is not None else state.fm_version or "–"
    if stale:
        return Text(driver, style=STYLE["stale"]), Text(fm, style=STYLE["stale"])
    if state.driver and state.fm_version and state.driver != state.fm_version:
        return Text(driver, style=STYLE["bad"]), Text(f"≠{fm}", style=STYLE["bad"])
    return Text(driver), Text(fm)


SCHEDULER_WORDS = {"allocated": "alloc", "mixed": "mix", "drained": "drain", "draining": "drng", "unknown": "?"}


def scheduler_text(scheduler: SchedulerState | None, stale: bool = False) -> Text:
    """The scheduler's state in the grid: ``idle``, ``alloc``, ``mix``, ``drain``, ``drng``, ``down``; ``–`` none."""
    if scheduler is None:
        return Text("–", style=STYLE["idle"])
    word = SCHEDULER_WORDS.get(scheduler.state, scheduler.state)
    style = "bad" if scheduler.state == "down" else "warn" if scheduler.held_back or scheduler.error else ""
    return Text(word, style=STYLE["stale"] if stale else STYLE[style] if style else "")


def kube_text(node: KubeNode | None, stale: bool = False) -> Text:
    """The Kubernetes node in the grid: ``Ready``, ``NotReady`` (red), ``cordoned`` (yellow), ``NR,crdn`` (both),
    ``absent`` (not in the cluster), ``?`` (not read: never a reassuring word); ``–`` where no cluster is configured."""
    if node is None:
        return Text("–", style=STYLE["idle"])
    word = node.word
    if word == "cordoned,NotReady":
        word = "NR,crdn"
    style = ("bad" if node.ready is False else "warn" if node.cordoned or word in ("?", "absent") or node.error
             else "")
    return Text(word, style=STYLE["stale"] if stale else STYLE[style] if style else "")


def smoke_text(smoke: SmokeResult | None, stale: bool = False, distrust: str | None = None) -> Text:
    """The last smoke test's average bus bandwidth in GB/s: ``✔ 291.9`` green, ``✖ 120.3`` red, and ``? 291.9``
    for a pass whose record is not trusted (``distrust``: its older kernel lines count again)."""
    if smoke is None:
        return Text("–", style=STYLE["idle"])
    if smoke.avg_busbw is None:
        return Text("✖ failed" if not smoke.passed else "–", style=STYLE["stale" if stale else "bad"])
    style = "ok" if smoke.passed else "bad"
    mark = "✔" if smoke.passed else "✖"
    if smoke.passed and distrust:
        style, mark = "warn", "?"
    return Text(f"{mark} {smoke.avg_busbw:.1f}", style=STYLE["stale" if stale else style])


def unknown_text(stale: bool = False) -> Text:
    """A cell whose evidence could not be read: never a green 0 or an empty "fine"."""
    return Text("?", style=STYLE["stale" if stale else "warn"])


def count_text(n: int, style_if_any: str = "warn", stale: bool = False) -> Text:
    """A count, coloured when it is not zero."""
    if n == 0:
        return Text("0", style=STYLE["idle"])
    return Text(str(n), style=STYLE["stale" if stale else style_if_any])


def age_text(seconds: float | None, exact: bool = False) -> Text:
    """How old the last good poll is: ``<10s``, ``20s``, ``2m``, ``1h``; ``–`` before the first one.

    In the grid the age moves in steps (``exact=False``): a cell that changes every second on 256
    rows makes the table re-render all the time (each cell update empties its whole render cache),
    and "fresh" is all an operator needs until a node falls behind.
    """
    if seconds is None:
        return Text("–", style=STYLE["idle"])
    s = max(0, int(seconds))
    if s < 60:
        words = f"{s}s" if exact else ("<10s" if s < 10 else f"{s // 10 * 10}s")
    else:
        words = f"{s // 60}m" if s < 3600 else f"{s // 3600}h"
    return Text(words, style=STYLE["warn"] if s >= 60 else "")


SEVERITY_STYLE = {Severity.ERROR: "bad", Severity.WARNING: "warn", Severity.INFO: "idle"}


def findings_text(findings: Sequence[Finding] | None, limit: int | None = None, *, nccl: bool = False) -> Text:
    """One line per finding: severity in colour, the code in bold, the message.

    Args:
        findings: the node's findings (None before the first poll).
        limit: show at most this many, then say how many more.
        nccl: under each error, what NCCL prints in a job's log for it (the node screen).
    """
    text = Text()
    if findings is None:
        return Text("Waiting for the first poll…", style="dim")
    if not findings:
        return Text("No findings.", style=STYLE["ok"])
    shown = list(findings)[:limit] if limit else list(findings)
    told: list[str] = []
    for i, f in enumerate(shown):
        text.append("\n" if i else "")
        text.append(f"{f.severity.value:7} ", style=STYLE[SEVERITY_STYLE[f.severity]])
        text.append(f.code, style="bold")
        text.append(f"  {f.message}")
        symptom = nccl_symptom(f.code) if nccl and f.severity is Severity.ERROR else None
        if symptom and not any(said.startswith(symptom) or symptom.startswith(said) for said in told):  # said once
            text.append(f"\n        ↳ {symptom}", style=STYLE["muted"])
            told.append(symptom)
    if len(shown) < len(findings):
        text.append(f"\n… {len(findings) - len(shown)} more (Enter opens the node)", style="dim")
    return text


def fit_words(text: str, width: int | None) -> Text:
    """``text`` in ``width`` cells, cut after a whole word with a visible ``…``: a kernel line's hex status
    (``(0x00000087)``) or a function name is never cut in two; a first word longer than the room is cut as
    :func:`fit` cuts."""
    if width is None or len(text) <= width:
        return Text(text)
    room = max(1, width - 1)
    head = text[:room + 1]
    at = head.rfind(" ")
    if at <= 0:
        return fit(Text(text), width)
    cut = Text(text[:at].rstrip())
    cut.append("…", style=STYLE["muted"])
    return cut


def fit(text: Text, width: int | None) -> Text:
    """``text`` cut to ``width`` cells with a visible ``…``: a table never cuts a value silently.

    A driver of "580.159.04" in a 9-wide column read "580.159.0", a wrong version.
    """
    if width is None or text.cell_len <= width:
        return text
    cut = text.copy()
    cut.truncate(max(1, width - 1))
    cut.append("…", style=STYLE["muted"])
    return cut
