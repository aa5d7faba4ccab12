"""The driver failing without an Xid: its own words for a GPU it cannot bring up or use (issue 35, items 2-3). Pure.

The Xid catalogue covers what the driver reports with an Xid number. A GPU the driver never brings up prints no
Xid: the GPU's boot firmware refusing to boot it (``FSP boot cmds failed. RM cannot boot.``), the GPU not
supported by the installed release, the kernel module and the user-space driver of different versions (``API
mismatch``), the GSP's heartbeat lost or its RPC timing out with the Xid line cut off, the driver dumping the
GSP's state, a kernel module of the driver that failed to load. Each kind is one :class:`DriverFailure`: the
words that say it, what it means, and how grave it is. Where the same failure has an Xid (a GSP timeout is Xid
119's), its gravity and next move are the Xid catalogue's (:attr:`DriverFailure.xid`); the rest name the
catalogue's bucket that asks the same move, or are warnings where the driver itself keeps working.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DriverFailure:
    """One failure the driver reports in words, without an Xid.

    Attributes:
        code: the kernel event code it becomes (``DRIVER_API_MISMATCH``).
        words: the driver's (or the module loader's) words for it.
        what: what it means, for the finding.
        xid: the Xid whose catalogue row reads the same failure (its bucket gives severity and move), or None.
        bucket: otherwise the catalogue's bucket that asks the same move; empty for a warning.
        move: the next move where the bucket's own does not say it.
        source: where the line must come from (None: the driver's ``NVRM``).
    """

    code: str
    words: re.Pattern[str]
    what: str
    xid: int | None = None
    bucket: str = ""
    move: str = ""
    source: re.Pattern[str] | None = None


# Only in a line of the driver (NVRM, with or without its colon: "NVRM kfspSendBootCommands_GH100: ...").
_NVRM = re.compile(r"\bNVRM\b")

FAILURES: tuple[DriverFailure, ...] = (
    DriverFailure(
        "GPU_BOOT_FAILED",
        re.compile(r"FSP boot cmds failed|RM cannot boot|FSP response reported error"),
        "the GPU's boot firmware (FSP) refused the driver's boot commands: the driver cannot use the GPU",
        bucket="RESTART_BM",
        move="reboot the node (a GPU reset cannot run on a GPU the driver did not bring up); if the GPU fails to "
             "boot again, check its mode (confidential computing) and firmware, then a hardware ticket"),
    DriverFailure(
        "GPU_NOT_SUPPORTED",
        # ("... is not supported by the NVIDIA 550.90.07 driver release", "... by open nvidia.ko because it does
        # not include the required GPU System Processor (GSP)")
        re.compile(r"installed in this system is not supported by\b"),
        "the installed driver (its release, or the open kernel module) does not support this GPU: it is not usable",
        bucket="UPDATE_SWFW",
        move="install a driver that supports the GPU (its README's list of supported GPUs; the proprietary kernel "
             "module for a GPU without a GSP); a GPU reset will not fix it"),
    DriverFailure(
        "GPU_PROBE_FAILED",
        re.compile(r"probe with driver nvidia failed|NVIDIA probe routine failed|None of the NVIDIA devices were "
                   r"initialized"),
        "the driver's probe of a GPU failed: the driver did not take the GPU (the lines before it say why)",
        bucket="RESTART_BM",
        move="read the driver's lines before the probe failure (an unsupported GPU, a GPU off the bus); fix that, "
             "then reboot; a GPU reset cannot run on a GPU the driver did not take",
        source=re.compile(r"\bNVRM\b|\bnvidia [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d: ")),
    DriverFailure(
        "DRIVER_API_MISMATCH",
        re.compile(r"\bAPI mismatch\b"),
        "the kernel module and the user-space driver are of different versions: no program can use the GPUs",
        bucket="UPDATE_SWFW",
        move="make the kernel module and the user-space driver one version: reboot after a driver upgrade (or "
             "unload and reload the module with the GPUs idle); a GPU reset will not fix it"),
    DriverFailure(
        "GSP_TIMEOUT",
        re.compile(r"Heartbeat timed out|\*+ GSP Timeout \*+|waiting for RPC response from GPU\d* GSP"),
        "the GPU's GSP stopped answering the driver (heartbeat or RPC timeout; Xid 119's failure)",
        xid=119),
    DriverFailure(
        "GSP_CORE_DUMP",
        re.compile(r"\bkflcnCoreDump\w*"),
        "the driver dumped the GSP's state: it follows a GSP failure (an Xid 119 or 120, a timeout) the lines "
        "before the dump name",
        move="read the lines before the dump for the GSP failure (its Xid says the move)"),
)

# A kernel module of the driver the module loader could not insert (systemd-modules-load, udev's modprobe).
# The core module is the driver itself; the others (uvm, modeset, drm, peermem) serve CUDA or the display.
_MODULE = re.compile(r"Failed to insert module '(?P<a>nvidia\w*)'|modprobe (?P<b>nvidia[\w-]*)' failed")
_CORE = "NVIDIA_MODULE_FAILED"  # also kernel_log's MODULE_FAILED: the NVLink core's load rolled back
_HELPER = "NVIDIA_HELPER_MODULE_FAILED"
MODULE_FAILURES = (
    DriverFailure(_CORE, _MODULE, "the driver's core kernel module failed to load (or loaded and rolled back): "
                  "the GPUs are not usable",
                  bucket="RESTART_BM",
                  move="read why the module failed (dmesg around the load); fix it, then load the driver or reboot"),
    DriverFailure(_HELPER, _MODULE,
                  "a helper module of the driver (nvidia-uvm, -modeset, -drm, -peermem) failed to load: CUDA or the "
                  "display does not work (the lines around it say whether the core module loaded)",
                  move="load it after the core module (modprobe nvidia-uvm, ...) and read the loader's reason"),
)
_BY_CODE = {f.code: f for f in (*FAILURES, *MODULE_FAILURES)}

#: Words that may start one of these failures (one cheap test for the kernel log's scan).
SCAN = re.compile("|".join(f.words.pattern for f in FAILURES) + "|" + _MODULE.pattern)


def driver_failure(text: str) -> DriverFailure | None:
    """The failure a (joined) kernel line reports in the driver's words, or None.

    Example:
        >>> driver_failure("[ 9.4] NVRM: API mismatch: the client has the version 535.54.03, but").code
        'DRIVER_API_MISMATCH'
    """
    if m := _MODULE.search(text):
        module = (m.group("a") or m.group("b")).replace("-", "_")
        return _BY_CODE[_CORE if module == "nvidia" else _HELPER]
    return next((f for f in FAILURES if f.words.search(text) and (f.source or _NVRM).search(text)), None)


def by_code(code: str) -> DriverFailure | None:
    """The failure whose kernel event code is ``code``, or None."""
    return _BY_CODE.get(code)


__all__ = ["FAILURES", "MODULE_FAILURES", "SCAN", "DriverFailure", "by_code", "driver_failure"]
