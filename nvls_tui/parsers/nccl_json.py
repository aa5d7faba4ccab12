"""nccl-tests ``-J FILE`` output, and the analyze/contract dict shape of any :class:`NcclRun`.

The JSON file is written as the test runs, so a run that crashed leaves a cut-off file: when the
whole document does not decode, every complete object of the ``results`` array is still read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nvls_tui.parsers.base import Parsed, number
from nvls_tui.parsers.nccl_tests import (
    NcclPerf,
    NcclRow,
    NcclRun,
    NvlsInfo,
    version_from_code,
)


def _num(value: Any) -> float | None:
    """A finite number from a JSON value (a number or a numeric string), else None."""
    if isinstance(value, bool):
        return None
    got: float | None
    if isinstance(value, (int, float)):
        try:
            got = float(value)
        except OverflowError:
            return None
    elif isinstance(value, str):
        parsed = number(value)
        got = float(parsed) if parsed is not None else None
    else:
        return None
    return None if got is None or got != got or got in (float("inf"), float("-inf")) else got


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    got = _num(value)
    if got is None or got != int(got):
        return None
    return int(got)


def _perf(obj: Any) -> NcclPerf:
    if not isinstance(obj, dict):
        return NcclPerf()
    return NcclPerf(
        time_us=_num(obj.get("time")),
        algbw=_num(obj.get("alg_bw")),
        busbw=_num(obj.get("bus_bw")),
        wrong=_int(obj.get("nwrong")),
    )


def _row(obj: Any) -> NcclRow | None:
    if not isinstance(obj, dict):
        return None
    size, count = _int(obj.get("size")), _int(obj.get("count"))
    if size is None or count is None:
        return None
    return NcclRow(
        size=size,
        count=count,
        type=str(obj.get("type", "?")).strip(),
        redop=str(obj.get("redop", "none")).strip(),
        root=_int(obj.get("root")),  # printed as a padded string: "    -1"
        oop=_perf(obj.get("out_of_place")),
        ip=_perf(obj.get("in_place")),
        timestamp=str(obj["timestamp"]) if obj.get("timestamp") is not None else None,
    )


def _salvage_results(text: str) -> list[Any]:
    """The complete objects of a cut-off ``"results": [ ... `` array."""
    m = re.search(r'"results"\s*:\s*\[', text)
    if not m:
        return []
    decoder = json.JSONDecoder()
    found: list[Any] = []
    at = m.end()
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            return found
        try:
            obj, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return found
        found.append(obj)


def _salvage_scalars(text: str) -> dict[str, Any]:
    """Top-level facts of a document that does not decode, read one by one."""
    doc: dict[str, Any] = {}
    if m := re.search(r'"nccl_version"\s*:\s*(\d{1,9})', text):
        doc["nccl_version"] = int(m.group(1))
    if m := re.search(r'"ngpus"\s*:\s*(\d{1,9})', text):
        doc["config"] = {"ngpus": int(m.group(1))}
    if m := re.search(r'"args"\s*:\s*\[\s*"([^"]*)"', text):
        doc["args"] = [m.group(1)]
    doc["env"] = re.findall(r'"(NCCL_[A-Z_]+=[^"]*)"', text)
    return doc


def parse_nccl_json(text: str) -> Parsed[NcclRun]:
    """Parse an nccl-tests ``-J`` file into an :class:`NcclRun` (never raises)."""
    warnings: list[str] = []
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict):
        results = _salvage_results(text)
        doc = _salvage_scalars(text)
        doc["results"] = results
        warnings.append("the JSON document is incomplete or invalid; read what could be recovered")
    results = doc.get("results")
    rows: list[NcclRow] = []
    for item in _list(results):
        row = _row(item)
        if row is None:
            warnings.append("a result entry has no readable size/count")
        else:
            rows.append(row)

    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    ngpus = _int(config.get("ngpus"))
    threads = _int(config.get("nthreads"))
    if ngpus is not None and threads is not None and threads > 0:
        ngpus *= threads
    devices = tuple(_device(d) for d in _list(config.get("devices")) if isinstance(d, dict))
    if devices and (ngpus is None or len(devices) > ngpus):
        ngpus = len(devices)

    args = doc.get("args")
    test = None
    if isinstance(args, list) and args and isinstance(args[0], str):
        test = args[0].rsplit("/", 1)[-1] or None

    oob_obj = doc.get("out_of_bounds")
    oob = _int(oob_obj.get("count")) if isinstance(oob_obj, dict) else None
    avg_obj = doc.get("average_bus_bandwidth")
    avg = _num(avg_obj.get("bandwidth")) if isinstance(avg_obj, dict) else None

    errors = [str(e) for e in _list(doc.get("errors")) if str(e).strip()]
    if isinstance(oob_obj, dict) and (oob or str(oob_obj.get("okay", "")).lower() == "false"):
        errors.append(f"Out of bounds values : {oob} FAILED")

    env = [e for e in _list(doc.get("env")) if isinstance(e, str)]
    env_map = dict(e.split("=", 1) for e in env if "=" in e)
    algo = env_map.get("NCCL_ALGO", "")
    used = "nvls" in algo.lower() and not algo.startswith("^") and env_map.get("NCCL_NVLS_ENABLE") != "0"

    code = _int(doc.get("nccl_version"))
    concluded = avg is not None or "end_time" in doc
    completed = concluded and not errors and bool(rows)
    hint = None
    if errors:
        hint = errors[0]
    elif not concluded:
        hint = "the output ended before the test concluded"
    run = NcclRun(
        test=test,
        version=None,  # the -J file does not record the nccl-tests version
        ngpus=ngpus,
        devices=devices,
        rows=tuple(rows),
        avg_busbw=avg,
        out_of_bounds=oob,
        completed=completed,
        errors=tuple(errors),
        warns=(),
        nvls=NvlsInfo(used=used),
        exit_hint=hint,
        nccl_version=version_from_code(code) if code is not None and code > 0 else None,
        test_output=True,  # nccl-tests' own -J file
    )
    return Parsed(run, tuple(warnings))


def _device(d: dict[str, Any]) -> str:
    """A device entry in the text output's ``# Using devices`` words."""
    return " ".join(
        str(x)
        for x in (
            "Rank", d.get("rank"), "Group", d.get("group"), "Pid", d.get("pid"), "on", d.get("hostname"),
            "device", d.get("device"), f"[{d.get('device_hex')}]", d.get("device_info"),
        )
    )


def _perf_dict(p: NcclPerf) -> dict[str, Any]:
    return {"time_us": p.time_us, "algbw": p.algbw, "busbw": p.busbw, "wrong": p.wrong}


def run_to_dict(run: NcclRun) -> dict[str, Any]:
    """The ``analyze --json`` data of an nccl-tests run (contract.md; numbers stay numbers)."""
    return {
        "test": run.test,
        "version": run.version,
        "nccl_version": run.nccl_version,
        "ngpus": run.ngpus,
        "devices": list(run.devices),
        "rows": [
            {
                "size": r.size,
                "count": r.count,
                "type": r.type,
                "redop": r.redop,
                "root": r.root,
                "oop": _perf_dict(r.oop),
                "ip": _perf_dict(r.ip),
                "timestamp": r.timestamp,
            }
            for r in run.rows
        ],
        "avg_busbw": run.avg_busbw,
        "out_of_bounds": run.out_of_bounds,
        "completed": run.completed,
        "test_output": run.test_output,
        "errors": list(run.errors),
        "warns": list(run.warns),
        "nvls": {
            "channels": run.nvls.channels,
            "multicast_available": run.nvls.multicast_available,
            "used": run.nvls.used,
            "bind_error": run.nvls.bind_error,
            "bind_failed": run.nvls.bind_failed,
        },
        "exit_hint": run.exit_hint,
    }


__all__ = ["parse_nccl_json", "run_to_dict"]
