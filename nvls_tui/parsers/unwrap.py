"""Read a paste inside its wrapper: journal and dmesg prefixes, kubectl, launchers' tags, quoting. Pure.

What an operator pastes is rarely one tool's bare output: it came through ``journalctl -o ...``,
``dmesg -x`` or ``--time-format``, ``kubectl logs --timestamps/--prefix``, ``pdsh``/``clush``/``mpirun``
tags, torch's ``[rank3]:``, a JSON logger that kept the newlines escaped, or a ticket that quoted it.
:func:`unwrap` peels such layers, outermost first, and keeps what each said (host, rank, time, pod,
container) per line, so a caller can say where a line came from.

A layer counts only when it is consistent: most non-blank lines carry it (:data:`MOST`), so prose that
quotes one log line is left alone. Journal and dmesg prefixes that the kernel and Fabric Manager
parsers already read (``-o short``, ``short-iso``, ``short-precise``, plain and ``-T`` dmesg) are
recognised but left in place: their times stay where the parsers look for them. The other forms are
rewritten into one of those, or down to the message when no form the parsers read can hold their time
(``dmesg --time-format iso|reltime|delta``); :class:`Line` keeps the time either way.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

MOST = 0.8
"""The share of non-blank lines that must carry a prefix for it to count as the text's wrapper."""

MAX_LAYERS = 8
"""Nesting depth read at most (kubectl --prefix over --timestamps over a quoted journal is three)."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the inner text and what its wrappers said about it.

    Attributes:
        text: the line as the inner tool printed it (or in a form the parsers read, see the module doc).
        host: the node it came from (a journal's host field, a pdsh/clush/mpirun tag).
        rank: the launcher's rank (torch ``[rankN]:``, mpirun ``--tag-output``, srun ``--label``).
        time: the time stamp of the line's record as printed.
        pod: ``kubectl logs --prefix``'s pod.
        container: ``kubectl logs --prefix``'s container.
    """

    text: str
    host: str | None = None
    rank: int | None = None
    time: str | None = None
    pod: str | None = None
    container: str | None = None


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A text read inside its wrappers.

    Attributes:
        text: the inner text (the input itself when no wrapper was found).
        forms: the wrappers found, outermost first (empty: none).
        lines: the inner text's lines with what the wrappers said about each.
    """

    text: str
    forms: tuple[str, ...]
    lines: tuple[Line, ...]

    def _distinct(self, attr: str) -> list:
        seen: dict = {}
        for line in self.lines:
            value = getattr(line, attr)
            if value is not None:
                seen.setdefault(value, None)
        return list(seen)

    @property
    def hosts(self) -> list[str]:
        """The hosts the wrappers named, in order of first appearance."""
        return self._distinct("host")

    @property
    def ranks(self) -> list[int]:
        """The ranks the wrappers named, ascending."""
        return sorted(self._distinct("rank"))

    @property
    def pods(self) -> list[str]:
        """kubectl's pods, in order of first appearance."""
        return self._distinct("pod")

    @property
    def containers(self) -> list[str]:
        """kubectl's containers, in order of first appearance."""
        return self._distinct("container")

    @property
    def times(self) -> tuple[str, str] | None:
        """The first and the last time stamp the wrappers printed (None when they printed none)."""
        stamps = self._distinct("time")
        return (stamps[0], stamps[-1]) if stamps else None


# A layer: the lines -> the lines inside it, or None when the text does not carry it. The flag says
# whether peeling may go on inside it (journal and dmesg prefixes are the innermost layer there is).
Peel = Callable[[list[Line]], "list[Line] | None"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _mostly(lines: list[Line], carries: Callable[[str], bool]) -> bool:
    """Whether most non-blank lines carry a prefix (and at least one does)."""
    nonblank = [line.text for line in lines if line.text.strip()]
    if not nonblank:
        return False
    carried = sum(1 for text in nonblank if carries(text))
    return carried > 0 and carried >= MOST * len(nonblank)


def _by_pattern(pattern: re.Pattern[str], inner: Callable[[re.Match[str], Line], Line],
                lines: list[Line]) -> list[Line] | None:
    """Peel ``pattern`` from every line that carries it (a line that does not is kept as it is)."""
    if not _mostly(lines, lambda text: pattern.match(text) is not None):
        return None
    return [inner(m, line) if (m := pattern.match(line.text)) else line for line in lines]


# ---- journalctl -------------------------------------------------------------------------------------

_MONTH_TIME = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?"
_ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)"
_TAG = r"(?P<ident>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?: ?(?P<msg>.*)$"
_JOURNAL_HOST = re.compile(rf"^(?P<time>{_MONTH_TIME}|{_ISO_TIME}) (?P<host>[^\s:\[\]]+) {_TAG}")
_JOURNAL_NO_HOST = re.compile(rf"^(?P<time>{_MONTH_TIME}|{_ISO_TIME}) {_TAG}")
# short-monotonic: only with a host, and a kernel line or a tag with a PID (dmesg's "[ 5.1] usb 1-1: ..."
# would read as host "usb", tag "1-1" otherwise).
_JOURNAL_MONO = re.compile(rf"^(?P<time>\[\s*\d+\.\d{{6}}\]) (?P<host>[^\s:\[\]]+) {_TAG}")
_JOURNAL_MARK = re.compile(r"^-- .* --$|^-- No entries --$")


def _journal_form(time: str, monotonic: bool) -> str:
    if monotonic:
        return "journal-short-monotonic"
    precise = "." in time[15:] if time[:1].isalpha() else bool(re.search(r":\d\d\.\d", time))
    iso = not time[:1].isalpha()
    return "journal-short" + ("-iso" if iso else "") + ("-precise" if precise else "")


def _journal(lines: list[Line]) -> tuple[str, list[Line]] | None:
    """journalctl's short forms. With a host and a wall-clock time the lines stay as they are (the parsers
    read them); without a host (``--no-hostname``) or with a monotonic time a record becomes its kernel
    message (dmesg's ``[seconds] message`` for a monotonic time) or ``tag[pid]: message``."""
    def record(text: str) -> re.Match[str] | None:
        m = _JOURNAL_MONO.match(text) or _JOURNAL_HOST.match(text) or _JOURNAL_NO_HOST.match(text)
        if m is None or (m.re is not _JOURNAL_HOST and m.group("ident") != "kernel" and m.group("pid") is None):
            # Without a host field a journal tag is "kernel" or has its PID: "[ 5.1] usb 1-1: ..." (dmesg)
            # or "2026-...Z NVRM: ..." (kubectl --timestamps) are not journal lines.
            return None
        return m

    # journalctl indents a message's further lines under its first: they belong to that record.
    heads = [line.text for line in lines if line.text.strip() and line.text[:1] not in (" ", "\t")]
    carried = sum(1 for text in heads if _JOURNAL_MARK.match(text) or record(text))
    if not heads or not carried or carried < MOST * len(heads):
        return None
    form = None
    out: list[Line] = []
    last: Line | None = None
    prefix: str | None = None  # what a further line of the current record gets before it (None: kept as is)
    for line in lines:
        m = record(line.text)
        if m is None:
            if last is not None and line.text[:1] in (" ", "\t") and line.text.strip():
                text = line.text if prefix is None else prefix + line.text.strip()
                out.append(replace(last, text=text))
            else:
                out.append(line)
                last = None
            continue
        time, host = m.group("time"), m.groupdict().get("host")
        monotonic = time.startswith("[")
        form = form or _journal_form(time, monotonic)
        kernel = m.group("ident") == "kernel"
        if monotonic:
            prefix = f"{time} " if kernel else _tagged_prefix(m)
        elif host is None:
            prefix = "" if kernel else _tagged_prefix(m)
        else:
            prefix = None
        text = line.text if prefix is None else prefix + m.group("msg")
        last = replace(line, text=text, host=host or line.host, time=time.strip("[] "))
        out.append(last)
    return (form or "journal-short"), out


def _tagged_prefix(m: re.Match[str]) -> str:
    pid = m.group("pid")
    return f"{m.group('ident')}[{pid}]: " if pid else f"{m.group('ident')}: "


def _journal_json(lines: list[Line]) -> tuple[str, list[Line]] | None:
    """``journalctl -o json``: one object per line; MESSAGE is a string, or an array of bytes when it is
    not valid UTF-8. Each record becomes a ``short-iso-precise`` line (the parsers read it)."""
    records: list[tuple[Line, dict | None]] = []
    for line in lines:
        obj = None
        if line.text.startswith("{") and '"MESSAGE"' in line.text:
            try:
                obj = json.loads(line.text)
            except ValueError:
                obj = None
        records.append((line, obj if isinstance(obj, dict) and "MESSAGE" in obj else None))
    if not _mostly_records(records):
        return None
    out: list[Line] = []
    for line, obj in records:
        if obj is None:
            out.append(line)
            continue
        message = _journal_message(obj.get("MESSAGE"))
        if message is None:
            continue
        host = _text(obj.get("_HOSTNAME"))
        ident = _text(obj.get("SYSLOG_IDENTIFIER")) or _text(obj.get("_COMM")) or "-"
        pid = _text(obj.get("SYSLOG_PID")) or _text(obj.get("_PID"))
        if obj.get("_TRANSPORT") == "kernel":
            ident, pid = "kernel", None
        time = _realtime(obj.get("__REALTIME_TIMESTAMP"))
        tag = f"{ident}[{pid}]: " if pid and pid.isdigit() else f"{ident}: "
        for part in message.split("\n") or [""]:
            if time and host:
                text = f"{time} {host} {tag}{part}"
            else:
                text = part if ident == "kernel" else tag + part
            out.append(replace(line, text=text, host=host or line.host, time=time or line.time))
    return "journal-json", out


def _mostly_records(records: list[tuple[Line, dict | None]]) -> bool:
    nonblank = [obj for line, obj in records if line.text.strip()]
    carried = sum(1 for obj in nonblank if obj is not None)
    return carried > 0 and carried >= MOST * len(nonblank)


def _journal_message(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value).decode("utf-8", errors="replace")
    return None  # null: a message journald could not keep (too large); nothing to read


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _realtime(value: object) -> str | None:
    """``__REALTIME_TIMESTAMP`` (microseconds since the epoch, as text) in short-iso-precise form, UTC."""
    if not isinstance(value, str) or not value.isdigit() or len(value) > 19:
        return None
    moment = dt.datetime.fromtimestamp(int(value) / 1_000_000, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f+0000")


# ---- dmesg ------------------------------------------------------------------------------------------

_FACILITIES = r"kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|res[0-3]|local[0-7]"
_DMESG_RAW = re.compile(r"^<(?P<pri>\d{1,3})>(?P<msg>.*)$")
_DMESG_X = re.compile(rf"^(?:{_FACILITIES})\s*:(?:emerg|alert|crit|err|warn|notice|info|debug)\s*: ?(?P<msg>.*)$")
_DMESG_PLAIN = re.compile(r"^\[\s*(?P<time>\d+\.\d+)\] ?(?P<msg>.*)$")
_DMESG_CTIME = re.compile(r"^\[(?P<time>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] ?(?P<msg>.*)$")
_DMESG_ISO = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d) (?P<msg>.*)$")
_DMESG_RELTIME = re.compile(r"^\[(?P<time>[A-Z][a-z]{2} ?\d{1,2} \d\d:\d\d|\s*\+\d+\.\d+)\] ?(?P<msg>.*)$")
_DMESG_DELTA = re.compile(r"^\[<\s*(?P<time>\d+\.\d+)>\] ?(?P<msg>.*)$")


def _keep(m: re.Match[str], line: Line) -> Line:
    return replace(line, time=m.group("time").strip())


def _message(m: re.Match[str], line: Line) -> Line:
    return replace(line, text=m.group("msg"), time=m.group("time").strip())


# ---- containers, launchers, tickets -----------------------------------------------------------------

_KUBECTL_PREFIX = re.compile(r"^\[pod/(?P<pod>[^/\]\s]+)/(?P<container>[^\]\s]+)\] ?(?P<msg>.*)$")
_RFC3339 = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (?P<msg>.*)$")
_MPIRUN = re.compile(r"^\[(?P<job>\d+),(?P<rank>\d+)\]<(?:stdout|stderr|stddiag)>: ?(?P<msg>.*)$")
_TORCH = re.compile(r"^\[(?:rank|default)(?P<rank>\d+)\]: ?(?P<msg>.*)$")
_SRUN = re.compile(r"^ *(?P<rank>\d{1,6}): (?P<msg>.*)$")
_HOST_TAG = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9_.-]{0,62}): (?P<msg>.*)$")
# A line's first word before ": " that is a tool's own tag, never a host (kernel drivers, NCCL, Python).
_NOT_HOSTS = re.compile(r"^(?:NVRM|kernel|nvidia(?:-nvswitch\d*|-nvlink|-modeset|-uvm|-drm|-smi)?|NCCL|Xid|SXid|"
                        r"GPU|Traceback|Error|Warning|Note|Info|Debug|\w*(?:Error|Exception|Warning))$", re.I)
# A journal's kernel line with its time and host cut off by hand ("kernel: NVRM: ...").
_KERNEL_TAG = re.compile(r"^kernel: (?P<msg>.*)$")
_QUOTE = re.compile(r"^(?:>|&gt;) ?(?P<msg>.*)$")
_COMMENT = re.compile(r"^# ?(?P<msg>.*)$")
# nccl-tests print their header as "#" lines: such a text is the tool's own, not a commented paste.
_NCCL_HEADER = re.compile(r"^# ?(?:nThread|Collective test|nccl-tests version|Using devices|\s*Rank\s+\d)", re.M)
_NUMBERED = re.compile(r"^ *(?P<n>\d{1,6})(?:\t| ?[|:] ?| {1,3}(?=\S)|$)(?P<msg>.*)$")
_ESCAPED = re.compile(r"\\(?:n|r\\n)")
_UNESCAPE = re.compile(r"\\(n|t|r|\"|\\)")
_JSON_MESSAGE_KEYS = ("message", "msg", "MESSAGE", "log", "text", "output")


def _host_tags(lines: list[Line]) -> list[Line] | None:
    def carries(text: str) -> bool:
        m = _HOST_TAG.match(text)  # a bare number is srun's rank label, not a host
        return m is not None and not _NOT_HOSTS.match(m.group("host")) and not m.group("host").isdigit()

    if not _mostly(lines, carries):
        return None
    hosts = {m.group("host") for line in lines if (m := _HOST_TAG.match(line.text))}
    carried = sum(1 for line in lines if carries(line.text))
    if len(hosts) > max(1, carried // 2):  # one word per line ("Note: ...") is prose, not a node set
        return None
    return [replace(line, text=m.group("msg"), host=m.group("host")) if (m := _HOST_TAG.match(line.text))
            and carries(line.text) else line for line in lines]


def _indent(lines: list[Line]) -> list[Line] | None:
    """A block every line of which is indented alike (pasted from a Markdown code block or an e-mail)."""
    nonblank = [line.text for line in lines if line.text.strip()]
    if not nonblank:
        return None
    width = min(len(text) - len(text.lstrip(" \t")) for text in nonblank)
    if width < 2:
        return None
    return [replace(line, text=line.text[width:]) for line in lines]


def _numbered(lines: list[Line]) -> list[Line] | None:
    """Leading line numbers (``cat -n``, a ticket's or an editor's gutter), counting up one by one."""
    numbers = [(i, int(m.group("n"))) for i, line in enumerate(lines) if (m := _NUMBERED.match(line.text))]
    if len(numbers) < 3 or len(numbers) < MOST * sum(1 for line in lines if line.text.strip()):
        return None
    steps = sum(1 for (_, a), (_, b) in zip(numbers, numbers[1:], strict=False) if b == a + 1)
    if steps < 0.9 * (len(numbers) - 1):
        return None
    return [replace(line, text=m.group("msg")) if (m := _NUMBERED.match(line.text)) else line for line in lines]


def _comment(lines: list[Line]) -> list[Line] | None:
    if _NCCL_HEADER.search("\n".join(line.text for line in lines)):
        return None
    if not _mostly(lines, lambda text: text.startswith("#")):
        return None
    return [replace(line, text=m.group("msg")) if (m := _COMMENT.match(line.text)) else line for line in lines]


def _escaped_newlines(lines: list[Line]) -> list[Line] | None:
    """A logger's line that kept the newlines as ``\\n`` (a JSON object's message, or plain text)."""
    nonblank = [line for line in lines if line.text.strip()]
    escaped = sum(len(_ESCAPED.findall(line.text)) for line in nonblank)
    if not nonblank or escaped < 2 or escaped < len(nonblank):
        return None
    out: list[Line] = []
    for line in lines:
        body = _json_message(line.text)
        if body is None:
            body = _UNESCAPE.sub(lambda m: {"n": "\n", "t": "\t", "r": ""}.get(m.group(1), m.group(1)), line.text)
        out.extend(replace(line, text=part.rstrip("\r")) for part in body.split("\n"))
    while out and not out[-1].text.strip():
        out.pop()
    return out


def _json_message(text: str) -> str | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    for key in _JSON_MESSAGE_KEYS:
        if isinstance(obj.get(key), str):
            return obj[key]
    strings = [v for v in obj.values() if isinstance(v, str)]
    return max(strings, key=len) if strings else None


def _simple(pattern: re.Pattern[str], make: Callable[[re.Match[str], Line], Line]) -> Peel:
    return lambda lines: _by_pattern(pattern, make, lines)


def _rank(m: re.Match[str], line: Line) -> Line:
    return replace(line, text=m.group("msg"), rank=int(m.group("rank")))


# Outer layers, tried in this order at each depth; peeling goes on inside each.
_OUTER: tuple[tuple[str, Peel], ...] = (
    ("indent", _indent),
    ("quote", _simple(_QUOTE, lambda m, line: replace(line, text=m.group("msg")))),
    ("line-numbers", _numbered),
    ("comment", _comment),
    ("kubectl-prefix", _simple(_KUBECTL_PREFIX, lambda m, line: replace(
        line, text=m.group("msg"), pod=m.group("pod"), container=m.group("container")))),
    ("dmesg-x", _simple(_DMESG_X, lambda m, line: replace(line, text=m.group("msg")))),
    ("dmesg-raw", _simple(_DMESG_RAW, lambda m, line: replace(line, text=m.group("msg")))),
    ("escaped-newlines", _escaped_newlines),
    ("mpirun", _simple(_MPIRUN, _rank)),
    ("torch-rank", _simple(_TORCH, _rank)),
    ("kernel-tag", _simple(_KERNEL_TAG, lambda m, line: replace(line, text=m.group("msg")))),
)
# The innermost record prefixes: nothing is peeled inside them.
_INNER: tuple[tuple[str | None, Callable[[list[Line]], tuple[str, list[Line]] | list[Line] | None]], ...] = (
    (None, _journal_json),
    (None, _journal),
    ("dmesg", lambda lines: _by_pattern(_DMESG_PLAIN, _keep, lines)),
    ("dmesg-ctime", lambda lines: _by_pattern(_DMESG_CTIME, _keep, lines)),
    ("dmesg-iso", lambda lines: _by_pattern(_DMESG_ISO, _message, lines)),
    ("dmesg-delta", lambda lines: _by_pattern(_DMESG_DELTA, _message, lines)),
    ("dmesg-reltime", lambda lines: _by_pattern(_DMESG_RELTIME, _message, lines)),
)
# Tags tried after the record prefixes: "host: " would also match a journal line's tag ("kernel: ").
_LAST: tuple[tuple[str, Peel], ...] = (
    ("kubectl-timestamps", _simple(_RFC3339, lambda m, line: replace(line, text=m.group("msg"), time=m.group("time")))),
    ("host-tags", _host_tags),
    ("srun-label", _simple(_SRUN, _rank)),
)


def _lines(text: str) -> list[Line]:
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return [Line(t) for t in text.split("\n")]


def _step(lines: list[Line]) -> tuple[str, list[Line], bool] | None:
    """The outermost layer of ``lines``: (its form, the lines inside it, whether peeling goes on)."""
    for form, peel in _OUTER:
        if (inner := peel(lines)) is not None:
            return form, inner, True
    for name, inner_peel in _INNER:
        found = inner_peel(lines)
        if found is None:
            continue
        if isinstance(found, tuple):
            return found[0], found[1], False
        return str(name), found, False
    for form, peel in _LAST:
        if (inner := peel(lines)) is not None:
            return form, inner, True
    return None


def unwrap(text: str) -> Unwrapped:
    """``text`` read inside its wrappers (ANSI colours and CRLF line ends are dropped first; they are no form).

    Example:
        >>> u = unwrap("[pod/nccl-0/worker] gpu05:1:2 [0] NCCL WARN x\\n[pod/nccl-0/worker] done\\n")
        >>> u.forms, u.pods, u.text.splitlines()[1]
        (('kubectl-prefix',), ['nccl-0'], 'done')
    """
    lines = _lines(text)
    forms: list[str] = []
    for _ in range(MAX_LAYERS):
        step = _step(lines)
        if step is None:
            break
        form, lines, deeper = step
        forms.append(form)
        if not deeper:
            break
    if not forms:
        return Unwrapped(text, (), tuple(lines))
    return Unwrapped("\n".join(line.text for line in lines), tuple(forms), tuple(lines))


def times_by_line(lines: Iterable[Line]) -> dict[str, str]:
    """Each inner line (stripped) -> the time its wrapper printed (the first, for a line seen twice)."""
    out: dict[str, str] = {}
    for line in lines:
        if line.time is not None:
            out.setdefault(line.text.strip(), line.time)
    return out


__all__ = ["MOST", "Line", "Unwrapped", "times_by_line", "unwrap"]
