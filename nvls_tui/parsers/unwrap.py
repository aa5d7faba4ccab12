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
from collections.abc import Callable
from typing import cast

from nvls_tui.parsers.unwrap_lines import (
    Line,
    Lines,
    Row,
    Unwrapped,
    bare_lines,
    blank,
    said,
    text_of,
    times_by_line,
    with_text,
)

MOST = 0.8
"""The share of non-blank lines that must carry a prefix for it to count as the text's wrapper."""

MAX_LAYERS = 8
"""Nesting depth read at most (kubectl --prefix over --timestamps over a quoted journal is three)."""


# A layer: the lines -> the lines inside it, or None when the text does not carry it. The flag says
# whether peeling may go on inside it (journal and dmesg prefixes are the innermost layer there is).
Peel = Callable[[list[Row]], "list[Row] | None"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _mostly(lines: list[Row], carries: Callable[[str], bool]) -> bool:
    """Whether most non-blank lines carry a prefix (and at least one does).

    Reading stops at a line that does not carry it once even the lines left, were all of them to carry it,
    could not make most: each of the ~20 layers tried on a paste that is none of them reads about a fifth of
    its lines, not all (reading a paste of 128 Ki one-character lines: 1.12 s of CPU before, 0.85 s after).
    """
    nonblank = carried = 0
    left = len(lines)
    for row in lines:
        left -= 1
        text = text_of(row)
        if not blank(text):
            nonblank += 1
            if carries(text):
                carried += 1
            elif carried + left < MOST * (nonblank + left):
                return False
    return carried > 0 and carried >= MOST * nonblank


def _by_pattern(pattern: re.Pattern[str], inner: Callable[[re.Match[str], Row], Row],
                lines: list[Row]) -> list[Row] | None:
    """Peel ``pattern`` from every line that carries it (a line that does not is kept as it is)."""
    if not _mostly(lines, lambda text: pattern.match(text) is not None):
        return None
    return [inner(m, row) if (m := pattern.match(text_of(row))) else row for row in lines]


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


def _journal(lines: list[Row]) -> tuple[str, list[Row]] | None:
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
    heads = carried = 0
    for row in lines:
        text = text_of(row)
        if not blank(text) and text[:1] not in (" ", "\t"):
            heads += 1
            carried += bool(_JOURNAL_MARK.match(text) or record(text))
    if not heads or not carried or carried < MOST * heads:
        return None
    form = None
    out: list[Row] = []
    last: Row | None = None
    prefix: str | None = None  # what a further line of the current record gets before it (None: kept as is)
    for line in lines:
        line_text = text_of(line)
        m = record(line_text)
        if m is None:
            if last is not None and line_text[:1] in (" ", "\t") and not blank(line_text):
                text = line_text if prefix is None else prefix + line_text.strip()
                out.append(with_text(last, text))
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
        text = line_text if prefix is None else prefix + m.group("msg")
        last = with_text(line, text, host=host or said(line, "host"), time=time.strip("[] "))
        out.append(last)
    return (form or "journal-short"), out


def _tagged_prefix(m: re.Match[str]) -> str:
    pid = m.group("pid")
    return f"{m.group('ident')}[{pid}]: " if pid else f"{m.group('ident')}: "


def _journal_json(lines: list[Row]) -> tuple[str, list[Row]] | None:
    """``journalctl -o json``: one object per line; MESSAGE is a string, or an array of bytes when it is
    not valid UTF-8. Each record becomes a ``short-iso-precise`` line (the parsers read it)."""
    if not _mostly(lines, _may_be_record):  # nothing decoded (nor a pair per line made) for other texts
        return None
    records = [(line, _record(text_of(line))) for line in lines]
    if not _mostly_records(records):
        return None
    out: list[Row] = []
    for line, obj in records:
        if obj is None:
            out.append(line)
            continue
        message = _journal_message(obj.get("MESSAGE"))
        if message is None:
            continue
        host = _string(obj.get("_HOSTNAME"))
        ident = _string(obj.get("SYSLOG_IDENTIFIER")) or _string(obj.get("_COMM")) or "-"
        pid = _string(obj.get("SYSLOG_PID")) or _string(obj.get("_PID"))
        if obj.get("_TRANSPORT") == "kernel":
            ident, pid = "kernel", None
        time = _realtime(obj.get("__REALTIME_TIMESTAMP"))
        tag = f"{ident}[{pid}]: " if pid and pid.isdecimal() else f"{ident}: "
        for part in message.split("\n") or [""]:
            if time and host:
                text = f"{time} {host} {tag}{part}"
            else:
                text = part if ident == "kernel" else tag + part
            out.append(with_text(line, text, host=host or said(line, "host"), time=time or said(line, "time")))
    return "journal-json", out


def _may_be_record(text: str) -> bool:
    return text.startswith("{") and '"MESSAGE"' in text


def _record(text: str) -> dict | None:
    """The journal record a line holds (a JSON object with a MESSAGE), or None."""
    if not _may_be_record(text):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and "MESSAGE" in obj else None


def _mostly_records(records: list[tuple[Row, dict | None]]) -> bool:
    nonblank = [obj for line, obj in records if not blank(text_of(line))]
    carried = sum(1 for obj in nonblank if obj is not None)
    return carried > 0 and carried >= MOST * len(nonblank)


def _journal_message(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value).decode("utf-8", errors="replace")
    return None  # null: a message journald could not keep (too large); nothing to read


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _realtime(value: object) -> str | None:
    """``__REALTIME_TIMESTAMP`` (microseconds since the epoch, as text) in short-iso-precise form, UTC."""
    if not isinstance(value, str) or not value.isdecimal() or len(value) > 19:
        return None
    moment = dt.datetime.fromtimestamp(int(value) / 1_000_000, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f+0000")


# ---- dmesg ------------------------------------------------------------------------------------------

_FACILITIES = r"kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|res[0-3]|local[0-7]"
_DMESG_RAW = re.compile(r"^<(?P<pri>\d{1,3})>(?P<msg>.*)$")
_DMESG_X = re.compile(rf"^(?:{_FACILITIES})\s*:(?:emerg|alert|crit|err|warn|notice|info|debug)\s*: ?(?P<msg>.*)$")
# Talos' ``talosctl dmesg``, after its node tag: "kern: warning: [2026-04-22T21:27:51.291660856Z]: NVRM: ...".
_TALOS_KMSG = re.compile(rf"^(?:{_FACILITIES}): (?:emerg|alert|crit|err|warning|notice|info|debug): "
                         r"\[(?P<time>\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d))\]: (?P<msg>.*)$")
_DMESG_PLAIN = re.compile(r"^\[\s*(?P<time>\d+\.\d+)\] ?(?P<msg>.*)$")
_DMESG_CTIME = re.compile(r"^\[(?P<time>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] ?(?P<msg>.*)$")
_DMESG_ISO = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d) (?P<msg>.*)$")
_DMESG_RELTIME = re.compile(r"^\[(?P<time>[A-Z][a-z]{2} ?\d{1,2} \d\d:\d\d|\s*\+\d+\.\d+)\] ?(?P<msg>.*)$")
_DMESG_DELTA = re.compile(r"^\[<\s*(?P<time>\d+\.\d+)>\] ?(?P<msg>.*)$")


def _keep(m: re.Match[str], line: Row) -> Row:
    return with_text(line, text_of(line), time=m.group("time").strip())


def _message(m: re.Match[str], line: Row) -> Row:
    return with_text(line, m.group("msg"), time=m.group("time").strip())


# ---- containers, launchers, tickets -----------------------------------------------------------------

_KUBECTL_PREFIX = re.compile(r"^\[pod/(?P<pod>[^/\]\s]+)/(?P<container>[^\]\s]+)\] ?(?P<msg>.*)$")
_RFC3339 = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (?P<msg>.*)$")
_MPIRUN = re.compile(r"^\[(?P<job>\d+),(?P<rank>\d+)\]<(?:stdout|stderr|stddiag)>: ?(?P<msg>.*)$")
_TORCH = re.compile(r"^\[(?:rank|default)(?P<rank>\d+)\]: ?(?P<msg>.*)$")
# A worker's prefix: Ray's actor's "(RayWorkerVllm pid=7046) ", "(pid=123, ip=10.0.0.5) ", "(raylet, ip=10.0.0.5) "
# (the ip is the node's), and vLLM's worker process's "(VllmWorkerProcess pid=3265) " of the same shape, newer vLLM's
# with its rank "(VllmWorker rank=0 pid=403) ".
_RAY = re.compile(r"^\((?:[\w.:\-]{1,80}(?:, | ))?(?:rank=(?P<rank>\d{1,6}) )?(?:pid=\d{1,9})?(?:, )?"
                  r"(?:ip=(?P<host>[\w.:\-]{1,64}))?\) ?(?P<msg>.*)$")
_SRUN = re.compile(r"^ *(?P<rank>\d{1,6}): (?P<msg>.*)$")
_HOST_TAG = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9_.-]{0,62}): (?P<msg>.*)$")
# A line's first word before ": " that is a tool's own tag, never a host (kernel drivers, NCCL, CUDA, Python).
_NOT_HOSTS = re.compile(r"^(?:NVRM|kernel|CUDA|nvidia(?:-nvswitch\d*|-nvlink|-modeset|-uvm|-drm|-smi)?|NCCL|Xid|SXid|"
                        r"GPU|Traceback|Error|Warning|Note|Info|Debug|\w*(?:Error|Exception|Warning))$", re.I)
# A journal's kernel line with its time and host cut off by hand ("kernel: NVRM: ...").
_KERNEL_TAG = re.compile(r"^kernel: (?P<msg>.*)$")
_QUOTE = re.compile(r"^(?:>|&gt;) ?(?P<msg>.*)$")
_COMMENT = re.compile(r"^# ?(?P<msg>.*)$")
# nccl-tests print their header as "#" lines: such a text is the tool's own, not a commented paste.
_NCCL_HEADER = re.compile(r"^# ?(?:nThread|Collective test|nccl-tests version|Using devices|\s*Rank\s+\d)", re.M)
_NUMBERED = re.compile(r"^ *(?P<n>\d{1,6})(?:\t| ?[|:] ?| {1,3}(?=\S)|$)(?P<msg>.*)$")
_UNESCAPE = re.compile(r"\\(n|t|r|\"|\\)")
_JSON_MESSAGE_KEYS = ("message", "msg", "MESSAGE", "log", "text", "output")


def _host_tags(lines: list[Row]) -> list[Row] | None:
    def carries(text: str) -> bool:
        m = _HOST_TAG.match(text)  # a bare number is srun's rank label, not a host
        return m is not None and not _NOT_HOSTS.match(m.group("host")) and not m.group("host").isdecimal()

    if not _mostly(lines, carries):
        return None
    hosts = {m.group("host") for line in lines if (m := _HOST_TAG.match(text_of(line)))}
    carried = sum(1 for line in lines if carries(text_of(line)))
    if len(hosts) > max(1, carried // 2):  # one word per line ("Note: ...") is prose, not a node set
        return None
    return [with_text(line, m.group("msg"), host=m.group("host")) if (m := _HOST_TAG.match(text_of(line)))
            and carries(text_of(line)) else line for line in lines]


def _indent(lines: list[Row]) -> list[Row] | None:
    """A block every line of which is indented alike (pasted from a Markdown code block or an e-mail)."""
    width: int | None = None
    for row in lines:
        text = text_of(row)
        if not blank(text):
            indent = len(text) - len(text.lstrip(" \t"))
            width = indent if width is None else min(width, indent)
            if width < 2:
                return None
    if width is None:
        return None
    return [with_text(row, text_of(row)[width:]) for row in lines]


def _numbered(lines: list[Row]) -> list[Row] | None:
    """Leading line numbers (``cat -n``, a ticket's or an editor's gutter), counting up one by one."""
    numbers = steps = nonblank = 0
    last: int | None = None
    for row in lines:
        text = text_of(row)
        nonblank += not blank(text)
        if m := _NUMBERED.match(text):
            n = int(m.group("n"))
            numbers += 1
            steps += last is not None and n == last + 1
            last = n
    if numbers < 3 or numbers < MOST * nonblank:
        return None
    if steps < 0.9 * (numbers - 1):
        return None
    return [with_text(row, m.group("msg")) if (m := _NUMBERED.match(text_of(row))) else row for row in lines]


def _comment(lines: list[Row]) -> list[Row] | None:
    if not _mostly(lines, lambda text: text.startswith("#")):
        return None
    if _NCCL_HEADER.search("\n".join(text_of(row) for row in lines)):  # after: only a commented text is joined
        return None
    return [with_text(row, m.group("msg")) if (m := _COMMENT.match(text_of(row))) else row for row in lines]


def _escaped_newlines(lines: list[Row]) -> list[Row] | None:
    """A logger's line that kept the newlines as ``\\n`` (a JSON object's message, or plain text)."""
    nonblank = escaped = 0
    for row in lines:
        text = text_of(row)
        if not blank(text):
            nonblank += 1
            escaped += text.count("\\n")  # escaped newlines, \\r\\n ones too (each holds one \\n)
    if not nonblank or escaped < 2 or escaped < nonblank:
        return None
    out: list[Row]
    if all(isinstance(line, str) for line in lines):
        # Nothing said of any line: one text split once (a list per line, then one more for them all,
        # were as large as the lines themselves for a paste of short lines).
        text = "\n".join(_read_escaped(cast(str, line)) for line in lines)
        out = cast(list[Row], text.split("\n"))
        if "\r" in text:
            out = [text_of(part).rstrip("\r") for part in out]
    else:
        out = []
        for line in lines:
            out.extend(with_text(line, part.rstrip("\r")) for part in _read_escaped(text_of(line)).split("\n"))
    while out and blank(text_of(out[-1])):
        out.pop()
    return out


_UNESCAPED = {"n": "\n", "t": "\t", "r": ""}


def _unescape(text: str) -> str:
    """``\\n``, ``\\t``, ``\\r``, ``\\"`` and ``\\\\`` read back. Where every backslash starts one of the
    first three, plain replaces give the same text without the list of pieces a regex substitution
    builds (two per escape: for a paste of short lines, more than the lines themselves)."""
    if text.count("\\") == text.count("\\n") + text.count("\\t") + text.count("\\r"):
        return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "")
    return _UNESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), text)


def _read_escaped(text: str) -> str:
    """A logger's line read back: its JSON object's message, else the line with its escapes read."""
    body = _json_message(text)
    return _unescape(text) if body is None else body


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


def _simple(pattern: re.Pattern[str], make: Callable[[re.Match[str], Row], Row]) -> Peel:
    return lambda lines: _by_pattern(pattern, make, lines)


def _rank(m: re.Match[str], line: Row) -> Row:
    return with_text(line, m.group("msg"), rank=int(m.group("rank")))


# Outer layers, tried in this order at each depth; peeling goes on inside each.
_OUTER: tuple[tuple[str, Peel], ...] = (
    ("indent", _indent),
    ("quote", _simple(_QUOTE, lambda m, line: with_text(line, m.group("msg")))),
    ("line-numbers", _numbered),
    ("comment", _comment),
    ("kubectl-prefix", _simple(_KUBECTL_PREFIX, lambda m, line: with_text(
        line, m.group("msg"), pod=m.group("pod"), container=m.group("container")))),
    ("dmesg-x", _simple(_DMESG_X, lambda m, line: with_text(line, m.group("msg")))),
    ("talos-dmesg", _simple(_TALOS_KMSG, _message)),
    ("dmesg-raw", _simple(_DMESG_RAW, lambda m, line: with_text(line, m.group("msg")))),
    ("escaped-newlines", _escaped_newlines),
    ("mpirun", _simple(_MPIRUN, _rank)),
    ("torch-rank", _simple(_TORCH, _rank)),
    ("worker-tag", _simple(_RAY, lambda m, line: with_text(
        line, m.group("msg"), host=m.group("host"), rank=int(m.group("rank")) if m.group("rank") else None))),
    ("kernel-tag", _simple(_KERNEL_TAG, lambda m, line: with_text(line, m.group("msg")))),
)
# The innermost record prefixes: nothing is peeled inside them.
_INNER: tuple[tuple[str | None, Callable[[list[Row]], tuple[str, list[Row]] | list[Row] | None]], ...] = (
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
    ("kubectl-timestamps", _simple(_RFC3339, lambda m, line: with_text(line, m.group("msg"), time=m.group("time")))),
    ("host-tags", _host_tags),
    ("srun-label", _simple(_SRUN, _rank)),
)


def _lines(text: str) -> list[Row]:
    # Each step copies the whole text: only where it has something to do.
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return cast(list[Row], text.split("\n"))  # a list of str is one of rows, and no copy


def _step(lines: list[Row]) -> tuple[str, list[Row], bool] | None:
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
        return Unwrapped(text, (), Lines(lines))
    # join() makes a list of what it is given: the rows themselves where they are all bare text.
    texts = cast(list[str], lines) if all(isinstance(row, str) for row in lines) else [text_of(row) for row in lines]
    return Unwrapped("\n".join(texts), tuple(forms), Lines(lines))


__all__ = ["MOST", "Line", "Lines", "Unwrapped", "bare_lines", "times_by_line", "unwrap"]
