"""The logs of NVIDIA's Kubernetes GPU plugins: k8s-device-plugin and the DRA driver's kubelet plugin. Pure.

Both print through Go's log or klog (``2020/08/10 19:09:42 ...``; ``I0929 12:40:26.277236  1 nvlib.go:243] ...``,
whose first letter is the level: I, W, E, F). The device plugin reports an Xid it watches for
("XidCriticalError: Xid=69 on Device=GPU-..., the device will go unhealthy.") and the device it takes out of
service ("'nvidia.com/gpu' device marked unhealthy: GPU-..."); the DRA plugin names the fabric clique each GPU is
in. Which Xid means what is NVIDIA's Xid catalogue's (nvls_tui.diagnosis.service_logs reads it).
"""

from __future__ import annotations

import re

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.unread import says_wrong

_KLOG = r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] "
_GOLOG = r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d "
# Where a plugin's line starts: the line's start, or after a journal's "ident[pid]: " (a plugin run as a host
# service, as Bottlerocket does).
_AT = r"(?:^|\]: )"
_PREFIX = re.compile(rf"{_AT}(?:{_KLOG}|{_GOLOG})", re.M)
_LEVEL = re.compile(rf"{_AT}(?P<level>[IWEF])\d{{4}} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")
_XID = re.compile(r"XidCriticalError: Xid=(?P<xid>\d+) on Device=(?P<device>[^\s,;]+)")
_UNHEALTHY = re.compile(r"'(?P<resource>[\w./-]+)' device marked unhealthy: (?P<device>\S+)")
# The device plugin's own sentences as it starts (every release: Go log, then klog).
_OWN = (r"Loading NVML|Initializing NVML|Fetching devices\.|Starting (?:FS|OS) watcher|Starting Plugins\.|"
        r"\"?Starting NVIDIA Device Plugin|Registered device plugin for '")
#: Detection (nvls_tui.parsers.detect_services): the device plugin's own Xid and health words, its journal lines, its
#: start sentences after its log prefix, or a klog line that names what NVIDIA's GPU plugins deal in (a fabric
#: clique, a compute domain, NVML, an ``nvidia.com/`` resource).
DETECT = re.compile(rf"XidCriticalError: Xid=\d+ on Device=|'nvidia\.com/[\w.-]+' device marked unhealthy|"
                    # the plugin run as a host service: its journal lines carry its own name
                    rf"\snvidia-device-plugin\[\d+\]: |"
                    rf"{_AT}(?:{_KLOG}|{_GOLOG})(?:{_OWN})|"
                    rf"{_AT}{_KLOG}[^\n]{{0,300}}?(?:fabric clique|[Cc]ompute ?[Dd]omain|\bNVML\b|nvidia\.com/)", re.M)


def level(line: str) -> str | None:
    """klog's level letter (``I``, ``W``, ``E``, ``F``) of ``line``, None for a Go log line or anything else."""
    m = _LEVEL.search(line.strip())
    return m["level"] if m else None


def parse_gpu_plugin_log(text: str) -> Parsed[dict]:
    """``xids[]`` (``{xid, device, line}``), ``unhealthy[]`` (device ids marked unhealthy, each once), ``lines``
    (how many lines carry Go's or klog's prefix)."""
    xids, unhealthy, logged = [], [], 0
    for line in text.splitlines():
        text_line = line.strip()
        logged += bool(_PREFIX.search(text_line))
        if m := _XID.search(text_line):
            xids.append({"xid": int(m["xid"]), "device": m["device"], "line": text_line})
        if (m := _UNHEALTHY.search(text_line)) and m["device"] not in unhealthy:
            unhealthy.append(m["device"])
    found = logged or xids or unhealthy
    return Parsed({"xids": xids, "unhealthy": unhealthy, "lines": logged},
                  () if found else ("no GPU plugin log lines were found",))


def error_lines(text: str) -> list[str]:
    """The lines at klog's E or F level, or Go log lines whose words say something went wrong, other than the Xid
    and health lines :func:`parse_gpu_plugin_log` reads."""
    out = []
    for line in text.splitlines():
        if _XID.search(line) or _UNHEALTHY.search(line):
            continue
        said = level(line)
        if said in ("E", "F") or (said is None and says_wrong(line)):
            out.append(line.strip())
    return out


__all__ = ["DETECT", "error_lines", "level", "parse_gpu_plugin_log"]
