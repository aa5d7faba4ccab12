"""The GPU Operator's container logs: its driver container and its validators. Pure.

The driver container (``nvidia-driver-daemonset``'s ``nvidia-driver-ctr``) narrates what it does to the host's
driver ("Starting installation of NVIDIA driver version ...", "Unloading NVIDIA driver kernel modules...", "Could not
unload NVIDIA driver kernel modules, driver is in use", "Done, now waiting for signal"); its driver manager reads
the node's ``nvidia.com/gpu.deploy.*`` labels; the validators wait for what they validate ("waiting for nvidia
container stack to be setup") until it is there. A log read from ``/var/log/pods`` carries the CRI runtime's
``STAMP stdout F `` on each line (the stamp is peeled as a ``kubectl --timestamps`` one; the stream and tag here);
the driver manager of newer releases logs in logfmt (``time=... level=info msg=...``), whose level names an error.
The driver container's Fabric Manager lines are Fabric Manager's (kind ``fabricmanager-log``), not this kind's.
"""

from __future__ import annotations

import re

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.unread import says_wrong

# The CRI runtime's stream and tag, after its stamp: "stdout F " (F: a full line, P: a partial one); the driver
# manager's logfmt head ("time=... level=info msg=").
_CRI = re.compile(r"^(?:\S+\s+)?(?:stdout|stderr) [FP] |^time=\S+ level=\w+ msg=\"?")
_OWN = (r"={3,} NVIDIA Software Installer ={3,}|Starting installation of NVIDIA driver version |"
        r"(?:Could not unload|Unloading|Loading) NVIDIA driver kernel modules|(?:Stopping|Starting) NVIDIA persistence "
        r"daemon\.\.\.|Done, now waiting for signal|"
        r"nvidia driver module is already loaded with refcount|Getting current value of the ['\"]nvidia\.com/gpu\.deploy\.|"
        r"Starting driver uninstallation process|Fetching current component labels|"
        r"Shutting down all GPU clients on the current node|waiting for (?:the )?nvidia[\w -]{0,40} to be (?:setup|ready)")
#: Detection (nvls_tui.parsers.detect_services): the containers' own sentences, at a line's start (after a CRI tag).
DETECT = re.compile(rf"^(?:(?:stdout|stderr) [FP] |time=\S+ level=\w+ msg=\"?)?(?:{_OWN})", re.M)
_LINE = re.compile(rf"^(?:{_OWN})")
# A validator waiting for what it validates (not the driver container's last words, "now waiting for signal").
_WAITING = re.compile(r"^waiting for (?!signal)(?P<what>.*\S)", re.I)
_WORD = re.compile(r"\w")
_VERSION = re.compile(r"Starting installation of NVIDIA driver version (?P<v>\S+)")


def operator_lines(text: str) -> list[str]:
    """The non-blank lines of ``text``, each without the CRI runtime's stream and tag or the driver manager's logfmt
    head."""
    return [_CRI.sub("", line.strip()) for line in text.splitlines() if line.strip()]


def parse_gpu_operator_log(text: str) -> Parsed[dict]:
    """``driver_version`` (the driver the container installs, or None), ``waiting`` (what a validator still waits
    for at the end of the text, or None), ``waited`` (how many lines waited for it), ``problems[]`` (lines whose
    words say something went wrong)."""
    lines = operator_lines(text)
    version = next((m["v"] for line in lines if (m := _VERSION.search(line))), None)
    waiting, waited = None, 0
    for line in lines:
        if not _WORD.search(line):  # a paste's elision ("......", "…"): more of the same, not a new line
            continue
        if m := _WAITING.match(line):
            waiting, waited = (m["what"], waited + 1) if m["what"] == waiting else (m["what"], 1)
        else:
            waiting, waited = None, 0
    problems = [line for line in lines if says_wrong(line)]
    recognised = any(_LINE.match(line) for line in lines)
    return Parsed({"driver_version": version, "waiting": waiting, "waited": waited, "problems": problems},
                  () if recognised else ("no GPU Operator container lines were found",))


__all__ = ["DETECT", "operator_lines", "parse_gpu_operator_log"]
