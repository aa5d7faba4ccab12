"""Fabric Manager logs: ``journalctl -u nvidia-fabricmanager`` and ``/var/log/fabricmanager.log``.

Codes name the few messages a diagnosis acts on: the configured-all-switches line that ends a good
start, the driver/FM version mismatch that stops FM from starting, and systemd's start/stop/failure
lines for the unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.unread import nvidia_error_line


@dataclass(frozen=True, slots=True)
class FmEvent:
    """One log line.

    Attributes:
        level: ``INFO``/``WARNING``/``ERROR``/... from fabricmanager.log; None for journal lines.
        message: the text after the time stamp, host and process (or level and thread) prefix.
        code: ``CONFIGURED``, ``VERSION_MISMATCH``, ``NV_WARN_NOTHING_TO_DO`` (or another ``NV_ERR_``/
            ``NV_WARN_`` code), ``STARTED``, ``STOPPED``, ``FAILED``; None for other lines.
        timestamp: the line's time stamp as printed.
    """

    level: str | None
    message: str
    code: str | None
    timestamp: str | None


# fabricmanager.log: "[Nov 30 2026 08:00:01] [INFO] [tid 1234] message"
_FM_FILE = re.compile(r"^\[(?P<ts>[^\]]{1,40})\]\s*\[(?P<level>[A-Za-z]+)\]\s*(?:\[tid\s*\d+\]\s*)?(?P<msg>.*)$")
# journalctl short / short-iso: "Jan 05 14:45:28 host nv-fabricmanager[1120]: message"
_JOURNAL = re.compile(
    r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT[\d:.,]+(?:Z|[+-]\d\d:?\d\d)?)"
    r"\s+\S+\s+(?P<proc>[^\s:\[]+)(?:\[\d+\])?:\s?(?P<msg>.*)$"
)
# FM's own prefix inside a journal line: its level, after its own time stamp where it printed one
# ("nv-fabricmanager[29850]: [May 16 2025 15:10:21] [INFO] [tid 30042] ...").
# The wrappers that start FM and log in Go's form: Talos's "2025/11/25 13:58:49 nvidia-fabricmanager-wrapper: ...",
# and the NVLSM it runs ("nvlsm: ..."), after a talosctl "host: " tag where one was not peeled.
_WRAPPER = re.compile(r"^(?:\S+: )?(?P<ts>\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )?(?P<proc>nvidia-fabricmanager-wrapper|nvlsm): "
                      r"(?P<msg>.*)$")
_INNER_LEVEL = re.compile(r"^(?:\[[^\]]{1,40}\]\s*)?\[(?P<level>[A-Z]+)\]\s*(?:\[tid\s*\d+\]\s*)?(?P<msg>.*)$")
_CODES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("CONFIGURED", re.compile(r"Successfully configured all the available (?:GPUs and )?NVSwitches", re.I)),
    # FM's words: "... driver interface version 530.30.02 don't match with driver version 530.41.03." (also
    # "don’t", with a typographic apostrophe, and "doesn't"/"does not" as other releases and pastes have it).
    ("VERSION_MISMATCH", re.compile(r"version.{0,300}?do(?:n['’]t|esn['’]t| not|es not) match", re.I)),
    ("NV_WARN_NOTHING_TO_DO", re.compile(r"NV_WARN_NOTHING_TO_DO")),
    # FM's start script refusing its arguments (its usage text, after "Unknown option: ..."), or reporting that
    # FM itself exited ("\"/usr/bin/nv-fabricmanager -c ...\" failed! Exit code: 1"): FM never started.
    # FM's own check of its config file ("fabric manager config file item: FABRIC_NODE_CONFIG_FILE has an invalid
    # value", as Talos's extension logs it): FM refuses to start.
    ("START_FAILED", re.compile(r"^Unknown option: |^Usage: \S*nvidia-fabricmanager-start\.sh\b"
                                r"|\"[^\"]*nv-fabricmanager[^\"]*\" failed! Exit code: [1-9]"
                                r"|(?i:fabric manager config file item: \S+ has an invalid value)")),
    ("FAILED", re.compile(r"Failed to start|failed with result|Job for \S*fabricmanager\S* failed"
                          # systemd killing FM's process (a stop that timed out, a kill)
                          r"|Killing process \d+ \(nv-fabricmanage"
                          r"|Main process exited, code=(?:killed|dumped)"
                          # systemd's words for a start that FM itself refused (a version mismatch exits 1)
                          r"|(?:Control|Main) process exited, code=exited, status=[1-9]", re.I)),
    ("STARTED", re.compile(r"\bStarted\b.*fabric ?manager", re.I)),
    ("STOPPED", re.compile(r"\bStopped\b.*fabric ?manager", re.I)),
)
_OTHER_CODE = re.compile(r"\bNV_(?:ERR|WARN)_[A-Z0-9_]+")
_VERSION = re.compile(r"Fabric ?Manager version is\s*:\s*(?P<v>[0-9][0-9A-Za-z.\-]*)", re.I)
_MISMATCH = re.compile(r"driver interface version\s+(?P<fm>\d+(?:\.\d+)+)\s+do(?:n['’]t|esn['’]t| not|es not) match"
                       r"(?:es)?\s+with\s+(?:the\s+)?driver version\s+(?P<driver>\d+(?:\.\d+)+)", re.I)
# FM's errors about the multicast teams NVLS asks it to set up ("failed to release multicast team with
# handle ..., cannot find the team", "failed to find the GPU handle ... in the multicast team"). Two
# searches, not one pattern with ".*" between the words: a long line costs one pass each.
_MULTICAST = re.compile(r"\bmulticast\b", re.I)
_FAILURE = re.compile(r"\b(?:fail\w*|error\w*|cannot|unable)\b", re.I)


def multicast_error(message: str) -> bool:
    """True for FM's words of a multicast (team) operation that failed."""
    return bool(_MULTICAST.search(message) and _FAILURE.search(message))


# The levels of fabricmanager.log that report a problem.
_PROBLEM_LEVELS = frozenset({"ERROR", "WARNING", "WARN", "ERR", "FATAL", "CRITICAL"})


def _code(message: str) -> str | None:
    for code, pattern in _CODES:
        if pattern.search(message):
            return code
    m = _OTHER_CODE.search(message)
    return m.group(0) if m else None


def parse_fm_line(line: str) -> FmEvent | None:
    """One log line as an :class:`FmEvent`; None for a line that is neither a log line nor coded."""
    text = line.strip()
    if not text or text.startswith("-- "):  # journal markers: "-- Boot ... --", "-- No entries --"
        return None
    if m := _FM_FILE.match(text):
        msg = m.group("msg").strip()
        return FmEvent(m.group("level").upper(), msg, _code(msg), m.group("ts").strip())
    if m := _JOURNAL.match(text):
        msg, level = m.group("msg").strip(), None
        if inner := _INNER_LEVEL.match(msg):
            msg, level = inner.group("msg").strip(), inner.group("level")
        return FmEvent(level, msg, _code(msg), m.group("ts"))
    if m := _WRAPPER.match(text):
        msg = m.group("msg").strip()
        return FmEvent(None, msg, _code(msg), (m.group("ts") or "").strip() or None)
    code = _code(text)
    return FmEvent(None, text, code, None) if code else None


def parse_fm_log(text: str) -> Parsed[tuple[FmEvent, ...]]:
    """Every log line of a Fabric Manager journal or log file, in order."""
    events = tuple(e for line in text.splitlines() if (e := parse_fm_line(line)) is not None)
    warnings = () if events or not text.strip() else ("no Fabric Manager log lines were found",)
    return Parsed(events, warnings)


def version_mismatch(events: tuple[FmEvent, ...]) -> tuple[str, str] | None:
    """``(FM version, driver version)`` from FM's own mismatch message, the last one logged; None without it.

    FM names the driver interface it was built for (its own version) and the driver it found.
    """
    for event in reversed(events):
        if event.code == "VERSION_MISMATCH" and (m := _MISMATCH.search(event.message)):
            return m.group("fm"), m.group("driver")
    return None


def configured(events: tuple[FmEvent, ...]) -> bool:
    """True when FM said it configured the fabric (``Successfully configured all the available ...``)."""
    return any(e.code == "CONFIGURED" for e in events)


def fm_log_errors(events: tuple[FmEvent, ...]) -> tuple[FmEvent, ...]:
    """FM's ERROR and WARNING lines (and its multicast team errors at any level) after its last successful
    configuration; every such line when the text has none (what came after it cannot be told apart).

    The version mismatch has its own finding and is left out here.
    """
    last = max((i for i, e in enumerate(events) if e.code == "CONFIGURED"), default=-1)
    return tuple(e for e in events[last + 1:]
                 if e.code != "VERSION_MISMATCH"
                 and ((e.level or "").upper() in _PROBLEM_LEVELS or multicast_error(e.message)))


def unread_fm_lines(text: str) -> tuple[str, ...]:
    """The lines of a Fabric Manager log from NVIDIA's stack that say something went wrong and that no FM rule
    reads: FM_LOG_ERROR reads every line of a problem level (and multicast errors), FM_VERSION_MISMATCH the
    mismatch; a systemd line that FM was killed, or a kernel line in the paste, is read by none of them."""
    out = []
    for line in text.splitlines():
        if not nvidia_error_line(line):
            continue
        event = parse_fm_line(line)
        if event is not None and ((event.level or "").upper() in _PROBLEM_LEVELS or multicast_error(event.message)
                                  or event.code in ("VERSION_MISMATCH", "CONFIGURED")):
            continue
        out.append(line.strip())
    return tuple(out)


_CONFIG_ITEM = re.compile(r"(?i:fabric manager config file item: (?P<item>\S+) has an invalid value)")


def refused_config_item(message: str) -> str | None:
    """The config file item FM refused as invalid ("... config file item: FABRIC_NODE_CONFIG_FILE has an invalid
    value"), or None."""
    m = _CONFIG_ITEM.search(message)
    return m.group("item") if m else None


def start_failure(events: tuple[FmEvent, ...]) -> FmEvent | None:
    """The last line in which FM's start script says FM never started (it refused its arguments, or FM exited),
    where no later line says FM started or configured the fabric; None otherwise."""
    failed = None
    for event in events:
        if event.code == "START_FAILED":
            # "Unknown option: X" and "... failed! Exit code: N" say why; the usage text after the first says
            # only that the script gave up, so it stands only alone.
            if failed is None or failed.message.startswith("Usage:"):
                failed = event
        elif event.code in ("STARTED", "CONFIGURED"):
            failed = None
    return failed


def journal_lines(text: str) -> str:
    """The journal lines of ``text`` (``Mon DD HH:MM:SS host ident[pid]: ...``, short-iso too): what
    ``systemctl status`` prints under its status block."""
    return "".join(line + "\n" for line in text.splitlines() if _JOURNAL.match(line.strip()))


def parse_fm_version(text: str) -> str | None:
    """``nv-fabricmanager --version`` -> ``580.82.07`` (None when the line is missing)."""
    m = _VERSION.search(text)
    return m.group("v") if m else None


__all__ = ["FmEvent", "configured", "fm_log_errors", "journal_lines", "multicast_error", "parse_fm_line", "parse_fm_log",
           "parse_fm_version", "refused_config_item", "start_failure", "version_mismatch"]
