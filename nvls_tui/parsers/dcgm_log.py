"""DCGM's own logs: ``nv-hostengine.log``, nvvs's debug log, dcgm-exporter's log, and DCGM's failure reasons.

Three line shapes, each with DCGM's own level:

- nv-hostengine and nvvs: ``2024-05-24 10:22:29.245 ERROR [5231:5273] [[NvSwitch]] message [/path/File.cpp:388]
  [Function]`` (the time stamp is sometimes cut off by the paste; ``[[Module]]`` only where a module logged it);
- dcgm-exporter (logrus/slog): ``time="..." level=info msg="..."`` or ``INFO[0001] message``;
- a DCGM failure reason quoted by another tool (NVSentinel, a health check): ``DCGM_FR_IMEX_UNHEALTHY ...``.

Which of these lines say something went wrong is :func:`problem`'s: DCGM's own level, not the words in the line
(an INFO or DEBUG line may say "error" in passing; a WARN line that names nothing of the fabric is nvvs skipping a
check). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed


@dataclass(frozen=True, slots=True)
class DcgmEvent:
    """One line of a DCGM log.

    Attributes:
        level: DCGM's level, upper case (``ERROR``, ``WARN``, ``INFO``, ``DEBUG``, ``FATAL``, ...); ``FAILURE`` for
            a DCGM failure reason (``DCGM_FR_*``) quoted by another tool.
        message: the words, without time stamp, level, thread ids, module and source location.
        module: DCGM's module (``NvSwitch``, ``SysMon``) where the line names one.
        source: DCGM's source location (``DcgmModuleNvSwitch.cpp:388``) where printed.
        timestamp: as printed, or None.
        line: the whole line as it was.
    """

    level: str
    message: str
    module: str | None
    source: str | None
    timestamp: str | None
    line: str


# nv-hostengine / nvvs: optional stamp, level, [pid:tid], [[Module]], then the rest (message and source).
_ENGINE = re.compile(
    r"^(?:(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?)\s+)?(?P<level>VERBOSE|DEBUG|INFO|WARN(?:ING)?|ERROR|FATAL|"
    r"CRITICAL)\s+\[\d+:\d+\]\s+(?:\[\[(?P<module>[^\]]{1,40})\]\]\s+)?(?P<rest>.*)$")
# The source location at the rest's end: " [/path/File.cpp:388] [Function]" (bounded, bracket-free parts: a line of
# brackets is not tried from every position).
_SOURCE = re.compile(r"\s\[(?:[^\[\]\s]{0,300}/)?(?P<src>[^\[\]\s/]{1,120}:\d{1,6})\](?:\s+\[[^\[\]\n]{0,300}\])?\s*$")
# dcgm-exporter through logrus's or slog's key=value form: time="..." level=info msg="..."
_LOGFMT = re.compile(r'^time="?[^"\s]*"?\s+level=(?P<level>\w+)\s+msg=(?:"(?P<qmsg>(?:[^"\\]|\\.)*)"|(?P<msg>\S+))')
# dcgm-exporter through logrus's text form: INFO[0001] message
_LOGRUS = re.compile(r"^(?P<level>INFO|WARN|ERRO|FATA|PANI|DEBU|TRAC)\[\d+\]\s+(?P<msg>.*)$")
_LOGRUS_LEVELS = {"ERRO": "ERROR", "FATA": "FATAL", "PANI": "PANIC", "DEBU": "DEBUG", "TRAC": "TRACE"}
# DCGM's failure reason codes (dcgm_errors.h's DCGM_FR_*), wherever they are quoted.
FAILURE_REASON = re.compile(r"\bDCGM_FR_[A-Z0-9_]+\b")

#: Detection (nvls_tui.parsers.detect_services): a line that is DCGM's own by its shape, never its words alone.
DETECT = re.compile(
    # hostengine/nvvs: a level and [pid:tid], and DCGM's or nvvs's source path at the end
    r"^(?:\d{4}-\d\d-\d\d[ T][\d:.]+\s+)?(?:DEBUG|INFO|WARN(?:ING)?|ERROR|FATAL|CRITICAL)\s+\[\d+:\d+\]\s[^\n]*"
    r"/(?i:dcgm|nvvs)[^\[\]\s/]{0,80}/[^\[\]\s]{0,300}\.(?:cpp|h|hpp|c):\d{1,6}\]|"
    # dcgm-exporter: a logfmt or logrus text line whose words name DCGM or the exporter
    r'^(?:time="?[^"\s]*"?\s+level=\w+\s+msg=|(?:INFO|WARN|ERRO|FATA|PANI|DEBU)\[\d+\]\s)[^\n]{0,300}?'
    r"(?:\bDCGM\b|dcgm-exporter)|"
    r"\bDCGM_FR_[A-Z0-9_]+\b", re.M)

# Levels that say something went wrong whatever the words; WARN counts where it names the fabric.
_PROBLEM = frozenset({"ERROR", "FATAL", "CRITICAL", "PANIC", "FAILURE"})
_WARN = frozenset({"WARN", "WARNING"})
_FABRIC = re.compile(r"nv ?switch|nvlink|nscq|fabric|imex", re.I)


def parse_dcgm_line(line: str) -> DcgmEvent | None:
    """One line as a :class:`DcgmEvent`, or None for a line of no DCGM shape (a shell prompt, prose)."""
    text = line.strip()
    if m := _ENGINE.match(text):
        rest, source = m["rest"], None
        if src := _SOURCE.search(rest):
            rest, source = rest[:src.start()], src["src"]
        return DcgmEvent(m["level"], rest.strip(), m["module"], source, m["ts"], text)
    if m := _LOGFMT.match(text):
        msg = m["qmsg"] if m["qmsg"] is not None else m["msg"]
        return DcgmEvent(m["level"].upper(), msg.replace('\\"', '"'), None, None, None, text)
    if m := _LOGRUS.match(text):
        return DcgmEvent(_LOGRUS_LEVELS.get(m["level"], m["level"]), m["msg"].strip(), None, None, None, text)
    if FAILURE_REASON.search(text):
        return DcgmEvent("FAILURE", text, None, None, None, text)
    return None


def problem(event: DcgmEvent) -> bool:
    """Whether DCGM says something went wrong in ``event``: its level is ERROR or worse, it is a failure reason,
    or it is a WARN that names the fabric (the NVSwitches, NVLink, NSCQ, Fabric Manager, IMEX)."""
    return event.level in _PROBLEM or (event.level in _WARN and bool(_FABRIC.search(event.message)))


def parse_dcgm_log(text: str) -> Parsed[dict]:
    """``events[]`` (every DCGM line: ``level``, ``message``, ``module``, ``source``, ``timestamp``) and
    ``failure_reasons[]`` (``{code, text}`` for each ``DCGM_FR_*`` quoted)."""
    events = [e for line in text.splitlines() if (e := parse_dcgm_line(line)) is not None]
    reasons = [{"code": code, "text": e.message} for e in events for code in FAILURE_REASON.findall(e.line)]
    data = {"events": [{"level": e.level, "message": e.message, "module": e.module, "source": e.source,
                        "timestamp": e.timestamp} for e in events],
            "failure_reasons": reasons}
    return Parsed(data, () if events else ("no DCGM log lines were found",))


def said(event: DcgmEvent) -> str:
    """``event`` as a finding quotes it: its stamp, level, module and words, its source file last (DCGM's build path
    before it would fill the quote)."""
    if event.level == "FAILURE":
        return event.line
    head = " ".join(p for p in (event.timestamp, event.level, f"[[{event.module}]]" if event.module else None) if p)
    return f"{head} {event.message}" + (f" ({event.source})" if event.source else "")


def problem_lines(text: str) -> list[str]:
    """The lines of ``text`` in which DCGM says something went wrong (:func:`problem`), as :func:`said` quotes them."""
    return [said(e) for line in text.splitlines() if (e := parse_dcgm_line(line)) is not None and problem(e)]


__all__ = ["DETECT", "FAILURE_REASON", "DcgmEvent", "parse_dcgm_line", "parse_dcgm_log", "problem", "problem_lines", "said"]
