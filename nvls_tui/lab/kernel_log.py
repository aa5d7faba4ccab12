"""A lab node's kernel log as the real tools read it: a real journal file and a ring buffer file.

A lab node shares this machine's kernel, so its NVIDIA kernel lines are simulated hardware: the
hardware model logs them (``Node.kernel``). :func:`sync` hands every line not yet handed on to

- the journal: export-format entries with the kernel transport (``_TRANSPORT=kernel``, the node's
  ``_BOOT_ID``, ``__REALTIME_TIMESTAMP``, ``__MONOTONIC_TIMESTAMP``, ``PRIORITY``,
  ``SYSLOG_IDENTIFIER=kernel``, ``MESSAGE``) that the real ``systemd-journal-remote`` appends to
  ``/var/log/journal/MACHINE-ID/kernel.journal``, beside journald's own files, where the node's real
  ``journalctl -k`` (and ``--vacuum-*``) finds it. journald itself cannot take them: it sets the
  trusted fields of what it is sent, and its own ``system.journal`` has one writer;
- the ring buffer: ``/run/nvls-lab/kmsg`` in the syslog format util-linux ``dmesg --file`` reads
  (``<3>[  301.500000] NVRM: ...``).

Both stamp a line as the kernel would: seconds since this machine's boot (the node's ``/proc/uptime``
is this kernel's), so the poll's ``clock - uptime`` and ``dmesg -T`` map them back to wall time.

:func:`rotate` archives the journal file as journald rotates its own (the archived name journald
gives: ``kernel@SEQNUM-ID-HEAD-SEQNUM-HEAD-REALTIME.journal``), so the real ``journalctl
--vacuum-files`` can delete it; :func:`wrap` drops the ring buffer's oldest records, as a busy
kernel's buffer overwrites them. The pure parts (the export format, the ring's records, the archived
name) take no I/O.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from nvls_tui.sim.state import LogLine, Node

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
JOURNAL_ROOT = "/var/log/journal"
ACTIVE = "kernel.journal"
RING_DIR = "/run/nvls-lab"
RING_FILE = f"{RING_DIR}/kmsg"
SEQ_FILE = f"{RING_DIR}/kmsg.seq"
"""The sequence number of the last kernel line handed on (volatile, as the ring buffer is)."""
TOOL = "/usr/libexec/nvls-lab/kernel-log"
"""The node's own command for this module (``sync``, ``print TEXT``, ``rotate``, ``wrap EPOCH``)."""

# The journal file header (systemd's journal-def.h): where the archived name's parts are.
_SIGNATURE = b"LPKSHHRH"
_SEQNUM_ID, _HEAD_SEQNUM, _HEAD_REALTIME = 72, 168, 184
# A ring buffer record's first line: ``<level>[seconds] ``; its later lines are the message's own.
_RECORD = re.compile(r"^<[0-9]+>\[ *([0-9]+\.[0-9]+)\] ")


class KernelLogError(Exception):
    """The kernel lines could not be handed on (one line, for the node's stderr)."""


def priority(text: str) -> int:
    """The printk level the kernel gives such a line (the journal's PRIORITY, the ring's ``<N>``)."""
    if text.startswith("Linux version "):
        return 5  # KERN_NOTICE
    if "taints kernel" in text:
        return 4  # KERN_WARNING
    if text.startswith("NVRM: ") and any(w in text for w in ("Xid", "NV_ERR_", "fallen off", "failed")):
        return 3  # KERN_ERR: the driver's errors
    return 6  # KERN_INFO


def _field(key: str, value: str) -> bytes:
    raw = value.encode()
    if b"\n" in raw:  # the export format's binary form: the length, then the bytes
        return key.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
    return key.encode() + b"=" + raw + b"\n"


def export_entries(lines: Iterable[LogLine], *, boot_epoch: float, boot_id: str, machine_id: str,
                   hostname: str) -> bytes:
    """The journal export format of ``lines`` as journald stores kernel messages. Pure."""
    out = []
    for line in lines:
        mono = str(max(0, round((line.ts - boot_epoch) * 1e6)))
        fields = {"__REALTIME_TIMESTAMP": str(round(line.ts * 1e6)), "__MONOTONIC_TIMESTAMP": mono,
                  "_BOOT_ID": boot_id, "_MACHINE_ID": machine_id, "_HOSTNAME": hostname, "_TRANSPORT": "kernel",
                  "PRIORITY": str(priority(line.text)), "SYSLOG_FACILITY": "0", "SYSLOG_IDENTIFIER": "kernel",
                  "_SOURCE_MONOTONIC_TIMESTAMP": mono, "MESSAGE": line.text}
        out.append(b"".join(_field(k, v) for k, v in fields.items()) + b"\n")
    return b"".join(out)


def ring_records(lines: Iterable[LogLine], *, boot_epoch: float) -> str:
    """``lines`` as ring buffer records in the syslog format ``dmesg --file`` reads. Pure."""
    out = []
    for line in lines:
        us = max(0, round((line.ts - boot_epoch) * 1e6))
        out.append(f"<{priority(line.text)}>[{us // 1000000:5d}.{us % 1000000:06d}] {line.text}\n")
    return "".join(out)


def wrapped(ring: str, since_s: float) -> str:
    """``ring`` without its records stamped before ``since_s`` seconds after the boot (a record's later
    lines go with it). Pure."""
    keep, out = True, []
    for line in ring.splitlines(keepends=True):
        if (m := _RECORD.match(line)) is not None:
            keep = float(m.group(1)) >= since_s
        if keep:
            out.append(line)
    return "".join(out)


def archived_name(header: bytes) -> str:
    """The name journald gives a journal file it archives, from the file's header. Pure.

    Raises:
        KernelLogError: not a journal file's header.
    """
    if len(header) < _HEAD_REALTIME + 8 or header[:8] != _SIGNATURE:
        raise KernelLogError("the kernel journal file has no journal header")
    seqnum_id = header[_SEQNUM_ID:_SEQNUM_ID + 16].hex()
    (head_seqnum,) = struct.unpack_from("<Q", header, _HEAD_SEQNUM)
    (head_realtime,) = struct.unpack_from("<Q", header, _HEAD_REALTIME)
    return f"kernel@{seqnum_id}-{head_seqnum:016x}-{head_realtime:016x}.journal"


def in_lab_node() -> bool:
    """Whether this process runs inside a lab node (never on the host that reads a node from outside)."""
    return "NVLS_LAB_HW" not in os.environ and os.path.exists(TOOL)


def boot_epoch() -> float:
    """This kernel's boot on the wall clock: now less ``/proc/uptime``, as the poll reads it."""
    return time.time() - float(Path("/proc/uptime").read_text().split()[0])


def journal_dir() -> Path:
    """The node's persistent journal folder (``/var/log/journal/MACHINE-ID``)."""
    return Path(JOURNAL_ROOT, Path("/etc/machine-id").read_text().strip())


def _pending(node: Node, now: float) -> list[LogLine]:
    """The lines not yet handed on, in the order they were logged, up to the first one logged after now."""
    try:
        last = int(Path(SEQ_FILE).read_text())
    except (OSError, ValueError):
        last = 0
    out = []
    for line in sorted((e for e in node.kernel if e.seq > last), key=lambda e: e.seq):
        if line.ts > now:
            break
        out.append(line)
    return out


def sync(node: Node, now: float) -> int:
    """Hand the node's new kernel lines to its journal file and its ring buffer; returns how many.

    Call with the hardware locked (:func:`nvls_tui.lab.hardware.hardware`): one writer at a time.

    Raises:
        KernelLogError: systemd-journal-remote refused them (nothing is marked handed on).
    """
    lines = _pending(node, now)
    if not lines:
        return 0
    epoch = boot_epoch()
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
    folder = journal_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = export_entries(lines, boot_epoch=epoch, boot_id=boot_id, machine_id=folder.name,
                          hostname=socket.gethostname())
    try:
        done = subprocess.run([JOURNAL_REMOTE, "-o", str(folder / ACTIVE), "-"], input=data, capture_output=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KernelLogError(f"systemd-journal-remote could not run: {exc}") from exc
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise KernelLogError(f"systemd-journal-remote exited {done.returncode}: {said[-1] if said else ''}")
    Path(RING_DIR).mkdir(parents=True, exist_ok=True)
    fd = os.open(RING_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # root's, as the kernel's buffer
    with os.fdopen(fd, "a") as ring:
        ring.write(ring_records(lines, boot_epoch=epoch))
    Path(SEQ_FILE).write_text(f"{lines[-1].seq}\n")
    return len(lines)


def rotate() -> str | None:
    """Archive the active kernel journal file as journald archives its own; returns the new name (None:
    nothing to archive). The next line starts a new active file."""
    active = journal_dir() / ACTIVE
    try:
        with active.open("rb") as f:
            name = archived_name(f.read(_HEAD_REALTIME + 8))
    except FileNotFoundError:
        return None
    active.rename(active.with_name(name))
    return name


def wrap(since: float) -> None:
    """Drop the ring buffer's records logged before ``since`` (epoch seconds), as a wrapped buffer has."""
    ring = Path(RING_FILE)
    ring.write_text(wrapped(ring.read_text(), since - boot_epoch()))
