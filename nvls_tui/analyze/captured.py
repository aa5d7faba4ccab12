"""``analyze``: one captured output -> its kind, what it says, and findings. Pure.

Each kind's ``data`` follows contract.md's ``analyze --json`` table. Findings reuse the node
diagnosis where the text carries the same facts (fabric words, kernel lines).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from nvls_tui import words
from nvls_tui.analyze.wrapped import nccl_origins, restore_times, wrapper_json
from nvls_tui.diagnosis import links as link_diagnosis
from nvls_tui.diagnosis import node as diagnosis
from nvls_tui.diagnosis.unread import fm_unread_finding, unread_finding
from nvls_tui.model import CommandResult, Finding, MissingEvidence, NodeState, Platform, Severity
from nvls_tui.model.jsonout import (
    finding_json,
    gpu_json,
    kernel_event_json,
    node_json,
)
from nvls_tui.parsers import nvidia_smi_misc, nvlink_views
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.detect import detect_kind
from nvls_tui.parsers.fabricmanager_log import (
    configured,
    fm_log_errors,
    journal_lines,
    parse_fm_log,
    parse_fm_version,
    start_failure,
    unread_fm_lines,
    version_mismatch,
)
from nvls_tui.parsers.fuser import parse_fuser_terse, parse_fuser_v
from nvls_tui.parsers.kernel_log import parse_kernel_log, unread_kernel_lines
from nvls_tui.parsers.lsof import parse_lsof
from nvls_tui.parsers.lspci import parse_lspci
from nvls_tui.parsers.nccl_json import parse_nccl_json, run_to_dict
from nvls_tui.parsers.nccl_tests import parse_nccl_text
from nvls_tui.parsers.nvidia_smi_csv import parse_query_csv
from nvls_tui.parsers.nvidia_smi_q import UNREAD, parse_nvidia_smi_q
from nvls_tui.parsers.nvidia_smi_reset import parse_reset
from nvls_tui.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from nvls_tui.parsers.ps import parse_proc_stat, parse_ps
from nvls_tui.parsers.systemctl import parse_status
from nvls_tui.parsers.unread import nvidia_error_line, quote
from nvls_tui.parsers.unwrap import Unwrapped, bare_lines, unwrap
from nvls_tui.poll.evidence import PURPOSE, UNPARSEABLE
from nvls_tui.poll.probe import section_argv
from nvls_tui.poll.probe_output import probe_mark, split_probe_output
from nvls_tui.textsafe import clean, clean_deep

Result = tuple[dict[str, Any], list[Finding], tuple[str, ...]]


def _smi_report(parsed) -> Result:
    report = parsed.value
    # A GPU whose section the text ended inside before its fabric words: unknown, never healthy or N/A.
    cut = [g for g in report.gpus if UNREAD in (g.fabric.state, g.fabric.status)]
    # A captured output says nothing of how long a GPU has been In Progress: it cannot be called young (fail
    # closed), so it reads as stuck, as it would after the grace period.
    state = NodeState(host="file", gpus=tuple(g for g in report.gpus if g not in cut), platform=Platform.UNKNOWN,
                      fabric_since=math.inf)
    data = {"driver": report.driver, "cuda": report.cuda, "gpus": [gpu_json(g) for g in report.gpus],
            "processes": [dataclasses.asdict(p) for p in report.processes]}
    findings = [Finding("EVIDENCE_MISSING", Severity.ERROR,
                        f"GPU {g.index}'s fabric state could not be read: the text ends inside its section",
                        g.index, section="gpus", reason="unparseable") for g in cut]
    return data, diagnosis.fabric_findings(state) + diagnosis.recovery_findings(state) + findings, parsed.warnings


def _smi_q(text: str) -> Result:
    return _smi_report(parse_nvidia_smi_q(text))


def _smi_xml(text: str) -> Result:
    return _smi_report(parse_nvidia_smi_xml(text))


def _query_csv(text: str) -> Result:
    parsed = parse_query_csv(text)
    return {"header": list(parsed.value.header), "rows": [dict(r) for r in parsed.value.rows]}, [], parsed.warnings


# NCCL's words for a broken NVLink fabric, what they mean on an H100/H200 board, and the next step
# (domain.md; the incident's 802; 401 and "invalid argument" from operators' public reports).
NCCL_ADVICE = (
    # (NCCL's older NVLS form carries no number: "transport/nvls.cc:245 NCCL WARN Cuda failure 'initialization
    # error'" fails the same setup, and NVSHMEM's multicast group mapping follows the cuMemMap that failed.)
    (re.compile(r"\b802\b|system not yet initialized|nvls\.cc:\d+ NCCL WARN Cuda failure (?:\d+ )?'initialization error'"),
     "CUDA error 802 means NVLS multicast could not bind: the NVLink fabric is not usable (Fabric Manager not "
     "running, the GPUs not registered, or the driver's fabric state out of sync); run `nvls-tui check` on the "
     "node: the repair resets the GPUs and NVSwitches and starts Fabric Manager"),
    (re.compile(r"\b401\b|operation not permitted"),
     "CUDA error 401 means multicast is not permitted on this fabric: Fabric Manager is not running or has not "
     "registered the GPUs; check the FM unit and the GPUs' fabric state (`nvls-tui check`)"),
    (re.compile(r"nvls\.cc.*invalid argument|invalid argument.*nvls", re.I),
     "'invalid argument' from NCCL's NVLS transport follows a Fabric Manager restart without a GPU reset in "
     "between (or with processes still on the GPUs): stop every holder, reset all GPUs and NVSwitches, then "
     "start Fabric Manager (the repair's order)"),
)


def nccl_advice(text: str) -> str | None:
    """What an NCCL error line means for the fabric and what to do next, or None when it is not one of them."""
    for pattern, advice in NCCL_ADVICE:
        if pattern.search(text):
            return advice
    return None


def _nccl_findings(run) -> list[Finding]:
    findings = []
    if run.errors:
        # The line that carries the fabric's cause (a traceback's first error line is torch's, not CUDA's).
        line, advice = next(((e, a) for e in run.errors if (a := nccl_advice(e))), (run.errors[0], None))
        if run.nvls.bind_failed:
            what = "NVLS multicast setup failed"
        else:
            what = "the all-reduce test failed" if run.test or run.rows else "the NCCL client failed"
        findings.append(Finding("NVLS_SMOKE_FAILED", Severity.ERROR,
                                f"{what}: {line[:200]}" + (f" — {advice}" if advice else "")))
    elif not run.completed:
        findings.append(Finding("NVLS_SMOKE_FAILED", Severity.WARNING, "the test output ends before its footer"))
    if run.out_of_bounds:
        findings.append(Finding("NVLS_SMOKE_FAILED", Severity.ERROR,
                                f"{run.out_of_bounds} out-of-bounds values (wrong results)"))
    elif wrong := [r for r in run.rows if (r.oop.wrong or 0) > 0 or (r.ip.wrong or 0) > 0]:
        # The table's own #wrong counts, where the footer that sums them is not in the text (cut, or a hang).
        sizes = ", ".join(str(r.size) for r in wrong[:3]) + (" …" if len(wrong) > 3 else "")
        findings.append(Finding("NVLS_SMOKE_FAILED", Severity.ERROR,
                                f"{words.count(len(wrong), 'row')} of the table count wrong results (#wrong > 0, "
                                f"size {sizes} bytes): the collective returned wrong data"))
    return findings


def _nccl_unread(text: str, errors: tuple[str, ...]) -> list[Finding]:
    """UNREAD_EVIDENCE for NCCL's (or NVSHMEM's, the driver's) error text in a client's output that the smoke
    rule does not read: every line the parser took as a failure is read (NVLS_SMOKE_FAILED quotes one)."""
    taken = [e.strip() for e in errors]
    lines = [ln for ln in text.splitlines()
             if nvidia_error_line(ln) and not any(ln.strip() in e or e in ln.strip() for e in taken if e)]
    finding = unread_finding(lines, "NCCL's output")
    return [finding] if finding is not None else []


def _nccl_text(text: str) -> Result:
    parsed = parse_nccl_text(text)
    return (run_to_dict(parsed.value), _nccl_findings(parsed.value) + _nccl_unread(text, parsed.value.errors),
            parsed.warnings)


def _nccl_json(text: str) -> Result:
    parsed = parse_nccl_json(text)
    return run_to_dict(parsed.value), _nccl_findings(parsed.value), parsed.warnings


def _reset(text: str) -> Result:
    parsed = parse_reset(text)
    r = parsed.value
    # How many devices were refused: the summary line's count, which stands for a GPU list cut by hand.
    refused = max(r.in_use_devices or 0, len(r.failed))
    data = {"reset": list(r.reset), "failed": [{"bus_id": b, "reason": why} for b, why in r.failed],
            "nvswitches_reset": r.nvswitches_reset, "in_use_devices": r.in_use_devices, "all_done": r.all_done,
            "refused": refused}
    findings = []
    if refused:
        named = [b for b, _ in r.failed]
        unlisted = f" and {refused - len(named)} not listed" if named and refused > len(named) else ""
        which = f" ({', '.join(named)}{unlisted})" if named else ""
        findings.append(Finding("RESET_REFUSED", Severity.ERROR,
                                f"the reset was refused: {words.count(refused, 'device')} in use{which}: stop every "
                                "holder of /dev/nvidia* first (`nvls-tui check` names them)"))
    return data, findings, parsed.warnings


def _status(text: str) -> Result:
    parsed = parse_status(text)
    s = parsed.value
    data: dict[str, Any] = {"unit": s.name, "active": s.active, "sub": s.sub, "load": s.load, "main_pid": s.main_pid,
            "result": s.result, "since": s.since}
    findings = []
    if s.name.startswith("nvidia-fabricmanager") and s.active != "active":
        findings.append(Finding("FM_NOT_RUNNING", Severity.ERROR, f"nvidia-fabricmanager is {s.active}"))
    if s.name.startswith("nvidia-fabricmanager") and (journal := journal_lines(text)):
        # The journal lines under the status block are FM's log (and systemd's about its unit): read them as
        # the FM log reader reads them, so FM's own errors there are not dropped behind the unit's state.
        log, logged, _ = _fm_log(journal, down=s.active != "active")
        data["log"] = {"events": log["events"], "mismatch": log["mismatch"]}
        said = {f.code for f in findings}
        findings.extend(f for f in logged if f.code not in said)
    return data, findings, parsed.warnings


def _kernel(text: str) -> Result:
    parsed = parse_kernel_log(text)
    state = NodeState(host="file", kernel_events=parsed.value, kernel_unread=unread_kernel_lines(text))
    # GPU_LOST first, as check gives it for the same lines (Xid 79, the driver's "fallen off the bus"): a
    # pasted log must say that a reset cannot help, not only name the Xid. No GPU list here: by bus id.
    # The same Xid from many lines is one finding naming the GPUs, as check says it (kernel_findings).
    # The driver's lines that say something went wrong and that no rule reads: quoted, never dropped.
    findings = (diagnosis.gpu_lost_findings(state) + diagnosis.kernel_findings(state)
                + diagnosis.kernel_unread_findings(state))
    return {"events": [kernel_event_json(e) for e in parsed.value]}, findings, parsed.warnings


def _fm_log(text: str, down: bool = False) -> Result:
    """A Fabric Manager log; ``down``: something else (the unit's state) already says FM is not running, so
    systemd's and the start script's words of that failure are explained."""
    parsed = parse_fm_log(text)
    events = parsed.value
    versions = version_mismatch(events)
    data = {"version": parse_fm_version(text), "events": [dataclasses.asdict(e) for e in events],
            "mismatch": {"fm_version": versions[0], "driver_version": versions[1]} if versions else None}
    findings = []
    if versions:
        findings.append(diagnosis.version_mismatch_finding(*versions))
    elif any(e.code == "VERSION_MISMATCH" for e in events):
        findings.append(Finding("FM_VERSION_MISMATCH", Severity.ERROR,
                                "Fabric Manager refused to start: its version differs from the driver's (the versions "
                                "were not in the text). Install the nvidia-fabricmanager package of the driver's "
                                "version and hold it; clearing the unit's failed state, starting it again or "
                                "resetting GPUs do not help"))
    if (never := start_failure(events)) is not None and not versions:
        nothing = any(e.code == "NV_WARN_NOTHING_TO_DO" for e in events)
        why = (" FM found no NVSwitch it could manage (NV_WARN_NOTHING_TO_DO): not an NVSwitch board, the NVSwitch "
               "driver not loaded, or on Blackwell NVLSM missing." if nothing else "")
        findings.append(Finding("FM_NOT_RUNNING", Severity.ERROR,
                                f"Fabric Manager never started: its start script failed (“{never.message[:200]}”).{why} "
                                "Fix what the script says (its arguments, the FM package, the NVSwitch driver), then "
                                "start Fabric Manager and check the GPUs' fabric state"))
    logged = diagnosis.fm_log_finding(fm_log_errors(events), configured(events))
    if logged is not None:
        findings.append(logged)
    if not findings and (died := _fm_died(events)) is not None:
        findings.append(died)
    # NVIDIA's error text no FM rule reads (FM killed, a kernel line in the paste): quoted, never dropped.
    # systemd's failed start is explained by a version mismatch, by the start script's own failure, or by whatever
    # else says FM is down (``down``: the unit's state). FM_NOT_RUNNING read from systemd's last word alone explains
    # nothing: check, which reads the unit's state, quotes those lines too.
    explained = down or never is not None or any(f.code == "FM_VERSION_MISMATCH" for f in findings)
    if (unread := fm_unread_finding(unread_fm_lines(text), explained, "Fabric Manager's log")) is not None:
        findings.append(unread)
    return data, findings, parsed.warnings


def _fm_died(events) -> Finding | None:
    """``FM_NOT_RUNNING`` where the text's last word of FM's unit is systemd's that it failed (killed, its
    start job failed) and no start follows: FM is down, whatever else the paste holds (issue 35, item 1)."""
    life = [e for e in events if e.code in ("FAILED", "STARTED", "STOPPED")]
    if not life or life[-1].code != "FAILED":
        return None
    if any(e.code == "NV_WARN_NOTHING_TO_DO" for e in events):
        return None  # FM found no NVSwitch to manage (an A40 bridge, a 4090 box): its exit is no NVLS outage
    since = next((i for i in range(len(life) - 1, -1, -1) if life[i].code != "FAILED"), -1) + 1
    said = "; ".join(f"“{quote(e.message)}”" for e in life[since:since + 2])
    return Finding("FM_NOT_RUNNING", Severity.ERROR,
                   f"Fabric Manager's unit failed and the text shows no start after it: {said}. NVLink multicast "
                   "(NVLS) cannot be set up until it runs again: `nvls-tui check` reads the node, and its repair "
                   "resets the GPUs and NVSwitches before it starts Fabric Manager")


def _fuser(text: str) -> Result:
    parsed = parse_fuser_v(text)
    holders = parsed.value
    if not holders:  # terse form: PIDs (with access letters) after each device name
        terse = parse_fuser_terse(text)
        by_pid: dict[int, list[str]] = {}
        for device, pids in terse.value.items():
            for pid in pids:
                by_pid.setdefault(pid, []).append(device)
        data = {"holders": [{"pid": p, "user": None, "access": None, "command": None, "devices": d}
                            for p, d in sorted(by_pid.items())]}
        return data, _holder_findings(len(by_pid)), terse.warnings
    data = {"holders": [dataclasses.asdict(h) | {"devices": list(h.devices)} for h in holders]}
    return data, _holder_findings(len(holders)), parsed.warnings


def _lsof(text: str) -> Result:
    parsed = parse_lsof(text)
    holders = parsed.value
    data = {"holders": [dataclasses.asdict(h) | {"devices": list(h.devices)} for h in holders]}
    findings = _holder_findings(len(holders))
    # lsof that could not stat a device (no such file, permission) saw nothing there: unknown, not "no holder".
    unseen = [w for w in parsed.warnings if w.startswith("lsof: status error") or "Permission denied" in w]
    if unseen and not holders:
        findings.append(Finding("EVIDENCE_MISSING", Severity.WARNING,
                                f"lsof could not read the device files ({unseen[0][:160]}): who holds them is unknown",
                                section="holders", reason="failed"))
    return data, findings, parsed.warnings


def _holder_findings(count: int) -> list[Finding]:
    if not count:
        return []
    return [Finding("HOLDERS_PRESENT", Severity.INFO, f"{words.count(count, 'process')} {words.verb(count, 'holds')} /dev/nvidia* (a reset would be "
                                                      "refused)")]


def _ps(text: str) -> Result:
    parsed = parse_ps(text)
    return {"processes": [dataclasses.asdict(p) for p in parsed.value]}, [], parsed.warnings


def _proc_stat(text: str) -> Result:
    parsed = parse_proc_stat(text)
    return {"processes": [dataclasses.asdict(s) for s in parsed.value.values()]}, [], parsed.warnings


def _lspci(text: str) -> Result:
    parsed = parse_lspci(text)
    devices = [dataclasses.asdict(d) for d in parsed.value]
    switches = sum(1 for d in parsed.value if "NVSwitch" in d.description or (d.vendor_device or "") == "10de:22a3")
    return {"devices": devices, "nvswitches": switches}, [], parsed.warnings


def _probe(text: str) -> Result:
    """A poll script's whole output, captured by hand: the node it describes, as ``check`` reads it."""
    from nvls_tui.poll.assemble import (
        assemble_node_state,  # the probe's own assembly, not a second one
    )

    mark = probe_mark(text)
    split = split_probe_output(text, mark=mark)
    sections = {name: CommandResult(section_argv(name), -1 if status is None else status, body)
                for name, (status, body) in split.items()}
    state = assemble_node_state("file", sections, simulated=False)
    last = next(reversed(split), None)
    if last is not None and split[last][0] is None:
        state = _cut_probe(state, last, set(split))
    diag = diagnosis.diagnose_guarded(state)
    return node_json(state, diag), list(diag.findings), state.warnings


def _mig(text: str) -> Result:
    """nvidia-smi's MIG messages: a change left pending is committed by the next GPU reset (a repair's too)."""
    parsed = nvidia_smi_misc.parse_mig_messages(text)
    findings = [Finding("MIG_PENDING", Severity.WARNING,
                        f"GPU {p['bus_id']} has a pending MIG mode change (to {p['mode']}"
                        f"{'; not applied: ' + p['reason'] if p['reason'] else ''}): the next GPU reset or a reboot "
                        "commits it, and a repair's reset would commit it too") for p in parsed.value["pending"]]
    return parsed.value, findings, parsed.warnings


# nvidia-smi's own words that it could not reach the driver, and what each calls for.
_NVML_FAILED = (
    (re.compile(r"Failed to initialize NVML: Driver/library version mismatch.*"),
     "the loaded driver and its user-space libraries differ (a driver upgrade without a reboot or a module reload): "
     "reboot the node (or unload and load the nvidia modules once nothing holds them), then read it again"),
    (re.compile(r"Failed to initialize NVML: .*"),
     "NVML could not start: check that the driver is loaded (`lsmod | grep nvidia`, `dmesg` for NVRM lines)"),
    (re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.*"),
     "no driver answers: check that the nvidia modules are loaded (`lsmod | grep nvidia`) and `dmesg` for NVRM lines"),
)


def _smi_table(text: str) -> Result:
    """``nvidia-smi``'s table; where nvidia-smi said it could not reach the driver, the GPUs could not be read (an
    error, never an empty table read as nothing)."""
    parsed = nvidia_smi_misc.parse_smi_table(text)
    findings = []
    for pattern, move in _NVML_FAILED:
        if m := pattern.search(text):
            findings.append(Finding("EVIDENCE_MISSING", Severity.ERROR,
                                    f"nvidia-smi could not read the GPUs: “{m.group(0).strip()[:200]}” — {move}",
                                    section="gpus", reason="failed"))
            break
    return parsed.value, findings, parsed.warnings


def _cut_probe(state: NodeState, cut: str, seen: set[str]) -> NodeState:
    """A captured probe output that ends inside section ``cut``: the paste was cut, no command timed out.

    Live, a section without its end marker means the command hung or the link dropped; in a captured
    text it means the text stops there, and the sections after it were never reached (unknown either way).
    """
    def why(section: str, said: str) -> str:
        return f"{PURPOSE.get(section, section)} could not be read: the captured text ends {said} it"

    missing = tuple(
        MissingEvidence(m.section, UNPARSEABLE, why(m.section, "inside")) if m.section == cut
        else MissingEvidence(m.section, m.reason, why(m.section, "before")) if m.section not in seen
        else m for m in state.missing)
    warning = (f"the text ends inside the probe's {cut} section ({PURPOSE.get(cut, cut)}): what it did not reach "
               "is unknown")
    return dataclasses.replace(state, missing=missing, warnings=(*state.warnings, warning))


def _nvlink_status(text: str) -> Result:
    parsed = nvidia_smi_misc.parse_nvlink_status(text)
    return parsed.value, link_diagnosis.nvlink_status_findings(parsed.value["gpus"]), parsed.warnings


def _nvlink_errors(text: str) -> Result:
    parsed = nvlink_views.parse_nvlink_errors(text)
    return parsed.value, link_diagnosis.nvlink_error_findings(parsed.value["gpus"]), parsed.warnings


def _dcgmi_nvlink_errors(text: str) -> Result:
    parsed = nvlink_views.parse_dcgmi_nvlink_errors(text)
    return parsed.value, link_diagnosis.nvlink_error_findings(parsed.value["gpus"]), parsed.warnings


def _dcgmi_link_status(text: str) -> Result:
    parsed = nvlink_views.parse_dcgmi_link_status(text)
    data = parsed.value
    return data, link_diagnosis.dcgm_link_findings(data["gpus"], data["nvswitches"]), parsed.warnings


def _dcgmi_diag(text: str) -> Result:
    parsed = nvlink_views.parse_dcgmi_diag(text)
    data = parsed.value
    findings = link_diagnosis.dcgm_diag_findings(data["results"], data["links_down"])
    # DCGM's own words of a failure that no rule reads: quoted, never dropped.
    if not findings and (failed := [f"{r['test']}: {r['result']}" for r in data["results"]
                                    if r["result"].lower().startswith("fail")]):
        if (unread := unread_finding([f"DCGM diag {f} failed" for f in failed], "DCGM's diagnostic")) is not None:
            findings.append(unread)
    return data, findings, parsed.warnings


def _simple(fn: Callable) -> Callable[[str], Result]:
    def run(text: str) -> Result:
        parsed = fn(text)
        return parsed.value, [], parsed.warnings
    return run


HANDLERS: dict[str, Callable[[str], Result]] = {
    "nvls-tui-probe": _probe,
    "nvidia-smi-q": _smi_q,
    "nvidia-smi-q-xml": _smi_xml,
    "nvidia-smi-query-csv": _query_csv,
    "nccl-tests": _nccl_text,
    "nccl-tests-json": _nccl_json,
    "nvidia-smi-reset": _reset,
    "nvidia-smi-mig": _mig,
    "systemctl-status": _status,
    "kernel-log": _kernel,
    "fabricmanager-log": _fm_log,
    "fuser": _fuser,
    "lsof": _lsof,
    "ps": _ps,
    "proc-stat": _proc_stat,
    "nvidia-smi": _smi_table,
    "nvlink-status": _nvlink_status,
    "nvlink-errors": _nvlink_errors,
    "dcgmi-nvlink-status": _dcgmi_link_status,
    "dcgmi-nvlink-errors": _dcgmi_nvlink_errors,
    "dcgmi-diag": _dcgmi_diag,
    "topo-matrix": _simple(nvidia_smi_misc.parse_topo_matrix),
    "nvml-fabric": _simple(nvidia_smi_misc.parse_nvml_fabric_dump),
    "nvidia-smi-help": _simple(nvidia_smi_misc.parse_help_query),
    "lspci": _lspci,
}


def analyze_text(text: str, file: str) -> dict[str, Any]:
    """Recognise and parse one captured output, part by part where it holds several (issue 35, item 1).

    Args:
        text: the file's content (a public fixture's ``# source:`` header is skipped).
        file: the name to report.

    Returns:
        contract.md's entry: ``file``, ``kind``, ``data``, ``findings``, ``warnings`` and ``parts`` (``error``
        for unknown input); see :func:`nvls_tui.analyze.paste.read_paste`.
    """
    from nvls_tui.analyze.paste import read_paste  # it reads each part with read_output below

    stripped = strip_fixture_header(text)
    header = text.count("\n", 0, len(text) - len(stripped)) if stripped is not text else 0
    body = clean(stripped)  # a captured file is node text: no escape gets through
    return {"file": file, **read_paste(body, read_output, header)}


def read_output(body: str, inside: Unwrapped | None = None, kind: str | None = None) -> dict[str, Any]:
    """Recognise and parse one command's output (or one run of a paste's lines).

    Args:
        body: the text (escapes already cleaned).
        inside: ``unwrap(body)`` where the caller made it already (a big paste is unwrapped once).
        kind: the kind to read it as (a transcript's command said it, or the lines' own words did); None:
            recognised by its content.

    Returns:
        ``kind``, ``data``, ``findings``, ``warnings`` (``wrapper``, ``origins`` where they apply; ``error``
        for unknown input or a parser's failure).
    """
    inside = unwrap(body) if inside is None else inside
    inner = clean(inside.text) if inside.forms else body  # JSON-escaped text may decode to escapes again
    if kind is None or kind not in HANDLERS:
        kind = detect_kind(inner)
        if inside.forms and kind == "unknown" and detect_kind(body) != "unknown":
            # A prefix that only looked like a wrapper (a tool's own "word: " lines): read the text as it is.
            inside, inner, kind = Unwrapped(body, (), ()), body, detect_kind(body)
    if kind == "unknown":
        return {"kind": "unknown", "data": {}, "findings": [],
                "error": "not an output nvls-tui recognises (nvidia-smi, nccl-tests, systemctl, fuser, "
                         "kernel or Fabric Manager log)"}
    try:
        data, findings, warnings = HANDLERS[kind](inner)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not lose the other files' results
        return {"kind": kind, "data": {}, "findings": [],
                "error": f"could not parse this {kind} output ({type(exc).__name__}: {exc})"}
    entry: dict[str, Any] = {"kind": kind, "data": data, "findings": [finding_json(f) for f in findings],
                             "warnings": list(warnings)}
    if inside.forms:
        entry["wrapper"] = clean_deep(wrapper_json(inside))
        if kind in ("kernel-log", "fabricmanager-log") and isinstance(data.get("events"), list):
            restore_times(data["events"], inside.lines, "line", "message")
    if kind in ("nccl-tests", "nccl-tests-json"):
        lines = inside.lines if inside.forms else bare_lines(inner)
        if origins := nccl_origins(lines):
            entry["origins"] = clean_deep(origins)
    return entry
