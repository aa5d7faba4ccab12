"""A paste read part by part: one document per file, with the parts it holds (issue 35, item 1). Pure.

A paste is cut into parts, each read by the reader of its kind:

1. a shell transcript (:mod:`nvls_tui.analyze.transcript`) at its prompts: each command's output is a part
   of the kind its command prints, or, where the command does not say, of what the output says (read as
   in 2 and 3, so one output may hold several parts);
2. otherwise a text that is one tool's whole output (nvidia-smi -q, its XML, the table, nccl-tests' JSON, a
   probe output, a query CSV, ``systemctl status`` ...) stays one part, as it always was;
3. otherwise the text's lines are grouped into runs of one kind (:mod:`nvls_tui.analyze.line_runs`): the
   driver's lines beside systemd's words about Fabric Manager, NCCL's lines beside the kernel's. A text of
   one kind is one part.

Where a later part supersedes an earlier one (:mod:`nvls_tui.analyze.supersede`: a refused reset, then one
that worked) both are said, and which stands. The document keeps the keys a one-part file always had
(``kind``, ``data``, ``findings``, ``warnings``, ``wrapper``, ``origins``); with several parts ``kind`` is
theirs where they are all of one kind (``data`` is then the last one's, the one that stands) or ``mixed``,
and each finding says the lines it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nvls_tui.analyze.board_context import soften_fm_on_boards_without_nvswitch
from nvls_tui.analyze.line_runs import UNKNOWN, line_runs
from nvls_tui.analyze.supersede import supersede
from nvls_tui.analyze.transcript import command_kind, is_transcript, lines_of, split_transcript
from nvls_tui.analyze.wrapped import wrapper_json
from nvls_tui.diagnosis.unread import unread_finding
from nvls_tui.model.jsonout import finding_json
from nvls_tui.parsers.detect import LINE_KINDS, detect_kind
from nvls_tui.parsers.unread import nvidia_error_line
from nvls_tui.parsers.unwrap import unwrap
from nvls_tui.textsafe import clean, clean_deep

# read_output(body, inside, kind) of nvls_tui.analyze.captured: one output's reading.
Reader = Callable[..., dict[str, Any]]

MIXED = "mixed"
"""The document's ``kind`` when its parts are of several kinds."""

_PART_KEYS = ("kind", "data", "findings", "warnings", "wrapper", "origins", "error")


def read_paste(body: str, read_output: Reader, header: int = 0, *, transcript: bool = True) -> dict[str, Any]:
    """The document of ``body`` (the keys of contract.md's ``analyze --json`` entry but ``file``).

    Args:
        body: the text, its escapes cleaned.
        read_output: reads one output (``nvls_tui.analyze.captured.read_output``).
        header: lines before ``body`` in the file (a fixture's header): line numbers count them.
        transcript: whether prompts split ``body`` (not inside one command's output).
    """
    if transcript and is_transcript(body):
        parts = _transcript_parts(body, read_output, header)
        if any(p["kind"] != UNKNOWN for p in parts):
            return _document(parts)
    inside = unwrap(body)
    inner = clean(inside.text) if inside.forms else body
    if transcript and inside.forms and is_transcript(inner):  # a transcript quoted or indented in a ticket
        parts = _transcript_parts(inner, read_output, header)
        if any(p["kind"] != UNKNOWN for p in parts):
            return {**_document(parts), "wrapper": clean_deep(wrapper_json(inside))}
    # Only a text recognised as a log of one of the line kinds is read line by line: prose that quotes a
    # kernel line and an NCCL line (a README, a ticket) is still no output of either.
    runs = line_runs(inner) if detect_kind(inner) in LINE_KINDS else None
    if runs is None:
        entry = read_output(body, inside)
        entry["parts"] = [_part(entry, header, header + _count_lines(inner) - 1)]
        return entry
    # What the paste's own wrapper said, as a one-part file says it; each run is then unwrapped on its own
    # (its wrapper is its own: an mpirun tag, a journal's prefix).
    wrapper = wrapper_json(inside) if inside.forms else None
    del inside
    parts = []
    for run in runs:
        text = lines_of(inner, run.start, run.end + 1)
        if run.kind == UNKNOWN:
            parts.append(_unknown_part(text, header + run.start, header + run.end))
        else:
            parts.append(_part(read_output(text, None, run.kind), header + run.start, header + run.end))
    document = _document(parts)
    if wrapper is not None:
        document["wrapper"] = clean_deep(wrapper)
    return document


def _transcript_parts(body: str, read_output: Reader, header: int) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for command in split_transcript(body):
        text = command.output
        if command.start >= command.end or not text.strip():
            continue
        first = header + command.start
        # The output's own words say what it is (and it may hold several kinds); where they say nothing
        # nvls-tui knows, the command does (systemctl's words of a failed start job of FM's unit).
        found = read_paste(text, read_output, first, transcript=False)["parts"]
        kind = command_kind(command.command)
        if kind is not None and all(p["kind"] == UNKNOWN for p in found):
            found = [_part(read_output(text, None, kind), first, first + _count_lines(text) - 1)]
        for part in found:
            part["command"] = command.command
            if part["kind"] == UNKNOWN and not part["findings"]:  # NVIDIA's error text in it is said
                first_line, last_line = part["lines"]
                unread = _unknown_part(lines_of(text, first_line - 1 - first, last_line - first), 0, 0)
                part["findings"] = unread["findings"]
        parts.extend(found)
    return parts


def _part(entry: dict[str, Any], first: int, last: int) -> dict[str, Any]:
    """A part of the document: ``kind``, ``lines`` (1-based, first and last), what its reader said."""
    part: dict[str, Any] = {"kind": entry["kind"], "lines": [first + 1, max(first, last) + 1]}
    part.update((key, entry[key]) for key in _PART_KEYS if key in entry)
    part.setdefault("warnings", [])
    return part


def _unknown_part(text: str, first: int, last: int) -> dict[str, Any]:
    """Lines no reader takes that hold NVIDIA's error text: quoted, never dropped (issue 35, item 2)."""
    lines = [line for line in text.split("\n") if nvidia_error_line(line)]
    finding = unread_finding(lines, "lines no reader of nvls-tui takes")
    return {"kind": UNKNOWN, "lines": [first + 1, last + 1], "data": {},
            "findings": [finding_json(finding)] if finding is not None else [], "warnings": []}


def _document(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One document of several parts (module doc)."""
    supersede(parts)
    soften_fm_on_boards_without_nvswitch(parts)  # a GeForce box's FM failure is no outage
    read = [p for p in parts if p["kind"] != UNKNOWN]
    kinds = {p["kind"] for p in read}
    if len(parts) == 1:
        return {**{key: parts[0][key] for key in _PART_KEYS if key in parts[0]}, "parts": parts}
    one_kind = len(kinds) == 1
    document: dict[str, Any] = {
        "kind": read[-1]["kind"] if one_kind else MIXED,
        "data": read[-1]["data"] if one_kind else {},
        "findings": [dict(f, lines=p["lines"]) for p in parts for f in p["findings"]],
        "warnings": [f"{lines_said(p['lines'])}: {w}" for p in parts for w in p["warnings"]],
    }
    origins: list[dict[str, Any]] = []
    for p in parts:
        origins.extend(o for o in p.get("origins") or () if o not in origins)
    if origins:
        document["origins"] = origins
    if errors := [f"{lines_said(p['lines'])}: {p['error']}" for p in read if p.get("error")]:
        document["error"] = "; ".join(errors)
    document["parts"] = parts
    return document


def lines_said(lines: list[int]) -> str:
    """A part's ``lines`` in words: ``line 6``, ``lines 6-9``."""
    first, last = lines
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _count_lines(text: str) -> int:
    return max(1, text.count("\n") + (0 if text.endswith("\n") else 1))


def fails(document: dict[str, Any]) -> bool:
    """Whether ``analyze`` exits 1 for this document: not recognised, a parser failed, an ``error`` finding,
    or a part no reader takes that holds NVIDIA's error text (prose alone beside what was read is no error)."""
    if document["kind"] == UNKNOWN or document.get("error"):
        return True
    if any(f["severity"] == "error" for f in document["findings"]):
        return True
    return any(p["kind"] == UNKNOWN and p["findings"] for p in document.get("parts") or ())


__all__ = ["MIXED", "fails", "lines_said", "read_paste"]

