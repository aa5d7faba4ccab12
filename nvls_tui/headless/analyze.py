"""``nvls-tui analyze FILE... [--json]``: recognise and parse captured command outputs."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.analyze.paste import fails, lines_said
from nvls_tui.analyze.services import service_summary
from nvls_tui.analyze.wrapped import origins_text
from nvls_tui.settings import Settings
from nvls_tui.textsafe import one_line
from nvls_tui.words import count, gbps

# Refuse to slurp something that cannot be a command output (a disk image, /dev/zero).
MAX_BYTES = 64 * 1024 * 1024

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def read_input(name: str) -> str:
    """The text of ``name`` ('-' = stdin), decoded leniently (outputs may hold stray bytes).

    Raises:
        OSError: the file cannot be opened or is too large.
    """
    if name == "-":
        raw = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        with open(name, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise OSError(f"{name} is larger than {MAX_BYTES // (1024 * 1024)} MiB; not a command output")
    return raw.decode("utf-8", errors="replace")


def _summary(entry: dict) -> str:
    """One line that says what the file holds, in the operator's terms (numbers agree with their nouns)."""
    kind, data = entry["kind"], entry["data"]
    if kind in ("nvidia-smi-q", "nvidia-smi-q-xml"):
        fabric = {f"{g['fabric']['state']}/{g['fabric']['status']}" for g in data["gpus"]}
        return f"driver {data['driver']}, {count(len(data['gpus']), 'GPU')}, fabric {', '.join(sorted(fabric)) or '-'}"
    if kind == "nccl-tests" and data.get("test_output") is False:
        # A client's NCCL log (a job's NCCL_DEBUG lines): no test, so no rows or footer to count.
        errors = f", {count(len(data['errors']), 'failure line')}" if data.get("errors") else ""
        return f"NCCL client log, {count(len(data['warns']), 'WARN line')}{errors}"
    if kind == "app-log":
        codes = list(dict.fromkeys(str(e["code"]) if e["code"] is not None else "?" for e in data["cuda_errors"]))
        return f"application output, CUDA {'error' if len(codes) == 1 else 'errors'} {', '.join(codes)}"
    if kind in ("nccl-tests", "nccl-tests-json"):
        state = "completed" if data.get("completed") else "did not complete"
        on = f" on {count(data['ngpus'], 'GPU')}" if data.get("ngpus") else ""
        return (f"{data.get('test') or 'nccl test'}{on}, {count(len(data['rows']), 'row')}, "
                f"avg bus bandwidth {gbps(data.get('avg_busbw'))}, {state}")
    if kind == "nvidia-smi-reset":
        return (f"{count(len(data['reset']), 'GPU')} reset, {len(data['failed'])} refused"
                + (", NVSwitches reset" if data["nvswitches_reset"] else ""))
    if kind == "nvidia-smi-query-csv":
        return f"{count(len(data['rows']), 'row')}: {', '.join(data['header'][:6])}"
    if kind == "systemctl-status":
        return f"{data['unit']}: {data['active']} ({data['sub']}), main PID {data['main_pid']}"
    if kind in ("kernel-log", "fabricmanager-log"):
        codes = sorted({e.get("code") or "-" for e in data["events"]})
        return f"{count(len(data['events']), 'event')}: {', '.join(codes)}"
    if kind in ("fuser", "lsof"):
        pids = [str(h["pid"]) for h in data["holders"]]
        return f"{count(len(pids), 'holder')}: {'PID' if len(pids) == 1 else 'PIDs'} {', '.join(pids) or 'none'}"
    if kind == "nvidia-smi":
        return (f"driver {data['driver']}, {count(len(data['gpus']), 'GPU')}, "
                f"{count(len(data['processes']), 'process')}")
    if kind == "nvlink-status":
        return ", ".join(f"GPU {g['index']}: {count(g['active_links'], 'link')}" for g in data["gpus"])
    if kind in ("nvlink-errors", "dcgmi-nvlink-errors"):
        links = [x for g in data["gpus"] for x in g["links"]]
        noisy = sum(1 for x in links if any(x["counters"].values()))
        return f"{count(len(data['gpus']), 'GPU')}, {count(len(links), 'link')}, {noisy} with non-zero counters"
    if kind == "dcgmi-nvlink-status":
        down = sum(len(d["down"]) for d in (*data["gpus"], *data["nvswitches"]))
        return (f"{count(len(data['gpus']), 'GPU')}, {count(len(data['nvswitches']), 'NVSwitch')}, "
                f"{count(down, 'link')} down")
    if kind == "dcgmi-diag":
        failed = [r["test"] for r in data["results"] if r["result"].lower().startswith("fail")]
        return (f"{count(len(data['results']), 'test')}, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}"
                f", {count(len(data['links_down']), 'NVLink')} down")
    if kind == "topo-matrix":
        return f"{count(len(data['matrix']), 'GPU')}: " + ", ".join(
            f"{a}-{b} {v}" for a, row in data["matrix"].items() for b, v in row.items() if a < b)
    if kind in ("ps", "proc-stat"):
        return count(len(data["processes"]), "process")
    if kind == "nvml-fabric":
        return ", ".join(f"GPU {e['gpu']} {e['api']}: {e['state']}" for e in data["entries"])
    if kind == "nvls-tui-probe":
        return (f"{data.get('verdict') or 'not diagnosed'}: {data.get('platform')}, driver {data.get('driver') or '?'}, "
                f"{count(len(data.get('gpus') or []), 'GPU')}, {count(len(data.get('holders') or []), 'holder')}, "
                f"{count(len(data.get('missing') or []), 'section')} unread")
    return service_summary(kind, data)  # DCGM's, the GPU Operator's, the GPU plugins', persistenced's logs


def _print_rich(entries: list[dict]) -> None:
    # Plain Text everywhere: the files' words (and their names) are data, never markup.
    console = Console(highlight=False, markup=False, emoji=False)
    table = Table(title="nvls-tui analyze", expand=False)
    table.add_column("file", overflow="fold")
    table.add_column("kind", style="bold")
    table.add_column("what it says")  # wrapped at words: a number is never cut in two
    for entry in entries:
        text = entry.get("error") or _summary(entry)
        if len(entry.get("parts") or ()) > 1:  # each part, with the lines it came from
            text = "; ".join(f"{lines_said(p['lines'])} {p['kind']}"
                             + (f": {p.get('error') or _summary(p)}" if p["kind"] != "unknown" else ": not read")
                             for p in entry["parts"])
        table.add_row(Text(one_line(entry["file"])), Text(entry["kind"]), Text(one_line(text)))
    console.print(table)
    for entry in entries:
        for finding in entry["findings"]:
            line = Text(f"{finding['severity']:>7}", style=SEVERITY_STYLE.get(finding["severity"], ""))
            line.append(f" {finding['code']}: {one_line(finding['message'])} ")
            where = f", {lines_said(finding['lines'])}" if finding.get("lines") else ""
            line.append(f"({one_line(entry['file'])}{where})", style="dim")
            console.print(line)
        for said in _context(entry):
            line = Text(f"{'note':>7}", style="dim")
            line.append(f" {one_line(said)} ")
            line.append(f"({one_line(entry['file'])})", style="dim")
            console.print(line)


def _context(entry: dict) -> list[str]:
    """What the paste's wrapper said, where an NCCL error came from, and the parser's warnings, in words."""
    said = list(entry.get("warnings") or [])
    if origins := entry.get("origins"):
        said.insert(0, f"the NCCL error came from {origins_text(origins)}")
    if wrapper := entry.get("wrapper"):
        parts = [f"read inside {wrapper['form']}"]
        if wrapper.get("hosts"):
            parts.append(f"{'host' if len(wrapper['hosts']) == 1 else 'hosts'} {', '.join(wrapper['hosts'])}")
        if wrapper.get("ranks"):
            parts.append(f"{'rank' if len(wrapper['ranks']) == 1 else 'ranks'} {', '.join(map(str, wrapper['ranks']))}")
        if wrapper.get("pods"):
            parts.append(f"{'pod' if len(wrapper['pods']) == 1 else 'pods'} {', '.join(wrapper['pods'])}")
        said.insert(0, "; ".join(parts))
    return said


def run(settings: Settings) -> int:
    """Analyze every file; exit 0 all recognised and no error finding, 1 otherwise, 2 unreadable file."""
    entries: list[dict] = []
    unreadable = False
    for name in settings.files:
        try:
            text = read_input(name)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"nvls-tui: cannot read {name}: {reason}", file=sys.stderr)
            unreadable = True
            continue
        entries.append(analyze_text(text, name))
    if settings.json:
        json.dump(entries, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif entries:
        _print_rich(entries)
    if unreadable:
        return 2
    return 1 if any(fails(e) for e in entries) else 0
