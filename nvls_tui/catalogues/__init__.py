"""NVIDIA's published catalogues as data: the Xid catalogue, the NVSwitch SXid codes, the driver's NV_STATUS codes,
NVML's GPU recovery actions. Pure (standard library only), at the bottom of the layers so that parsers and the diagnosis read them.

Each catalogue is a CSV file beside this module whose ``#`` header names its source (document, address,
version); :func:`source` returns those lines. The facts are NVIDIA's; what nvls-tui makes of a resolution
bucket (a severity, the next move, whether a GPU reset fixes it) is :data:`BUCKETS`, nvls-tui's reading,
kept here beside the data so that every Xid is read through the same table.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from importlib import resources

#: The catalogue files (in this package), by name.
FILES = ("xid.csv", "sxid.csv", "nv_status.csv", "recovery_action.csv")


@dataclass(frozen=True, slots=True)
class XidEntry:
    """One row of NVIDIA's Xid catalogue.

    Attributes:
        code: the Xid number.
        mnemonic, description: NVIDIA's names for it (``ROBUST_CHANNEL_UNCONTAINED_ERROR``, ``Uncontained memory error``).
        applies: the GPUs the catalogue marks YES (``A100``, ``H100``, ``B100``, ``GB200``).
        immediate: the resolution bucket of the immediate action (``RESET_GPU``, ...); empty where NVIDIA gives none.
        investigatory: the bucket of the investigatory action.
    """

    code: int
    mnemonic: str
    description: str
    applies: frozenset[str]
    immediate: str
    investigatory: str

    def applies_to(self, gpu: str) -> bool:
        """Whether the catalogue marks this Xid for ``gpu`` (``H100``, ``H200``, ...). The catalogue has no H200
        column: H200 is a Hopper GPU and reads H100's."""
        gpu = gpu.upper()
        return ("H100" if gpu == "H200" else gpu) in self.applies


@dataclass(frozen=True, slots=True)
class Bucket:
    """What nvls-tui makes of one of NVIDIA's resolution buckets.

    Attributes:
        name: NVIDIA's bucket (``RESET_GPU``) or recovery action bucket.
        severity: ``error``, ``warning`` or ``info`` (the model's Severity values).
        move: the next move, in a few words.
        reset_fixes: True where a GPU reset (the repair's) is the move, False where NVIDIA's move is another one
            and a reset will not fix it (a reboot, a hardware ticket), None where no reset is called for.
    """

    name: str
    severity: str
    move: str
    reset_fixes: bool | None


_TICKET = "a GPU reset will not fix it"
#: nvls-tui's reading of each bucket NVIDIA uses (immediate actions and recovery actions).
BUCKETS: dict[str, Bucket] = {b.name: b for b in (
    Bucket("RESTART_APP", "warning", "the application's fault, not the fabric's: restart the application", None),
    Bucket("IGNORE", "info", "no action needed", None),
    Bucket("RESET_GPU", "error", "reset the GPU (the repair's reset)", True),
    Bucket("DRAIN_AND_RESET", "error", "drain the GPU's work, then reset it (the repair's reset)", True),
    Bucket("DRAIN_P2P", "error", "drain the work that uses the GPU's NVLink peers, then reset it", True),
    Bucket("BUS_RESET", "error", "reset the GPU's PCIe bus", None),
    Bucket("RESTART_BM", "error", f"reboot the node: {_TICKET}", False),
    Bucket("RESTART_VM", "error", f"restart the VM that owns the GPU: {_TICKET}", False),
    Bucket("RECOVER_IMEX_DOMAIN", "error", f"recover the IMEX domain: {_TICKET}", False),
    Bucket("CONTACT_SUPPORT", "error", f"open a hardware ticket: {_TICKET}", False),
    Bucket("CHECK_MECHANICALS", "error",
           f"check the GPU's seating, power and connections, then open a hardware ticket: {_TICKET}", False),
    Bucket("UPDATE_SWFW", "error", f"update the driver and firmware: {_TICKET}", False),
    Bucket("CHECK_UVM", "warning", "with UVM or vGPU in use, reset the GPU; otherwise nothing", None),
    Bucket("WORKFLOW_XID_45", "warning",
           "follow the Xid that caused it; alone, NVIDIA's workflow restarts Fabric Manager", None),
    Bucket("WORKFLOW_XID_48", "error",
           "reset the GPU (drain and reset where Xid 63 or 64 come with it), then run field diagnostics", True),
    Bucket("WORKFLOW_NVLINK_ERR", "error",
           "a GPU reset clears it; decode the line's registers (NVIDIA's NVLink workflow) and open a hardware "
           "ticket if it comes back", True),
    Bucket("WORKFLOW_NVLINK5_ERR", "error",
           "decode the line's intrInfo and errorStatus (NVIDIA's Xid 144-150 table): a fatal one needs a GPU reset",
           True),
    Bucket("XID_154", "error", "do the recovery action the line names", None),
)}
#: A listed Xid for which the catalogue names no immediate action: unknown is never fine.
NO_BUCKET = Bucket("", "error", "NVIDIA's catalogue names no immediate action: read the line, and open a hardware "
                   "ticket if it persists", None)


#: nvls-tui's reading of the driver statuses whose next move is plain (NV_STATUS has no bucket of its own): the
#: bucket of the Xid catalogue that asks the same. A status not named here is a warning quoting the driver's text.
STATUS_BUCKETS: dict[str, str] = {
    "NV_ERR_RESET_REQUIRED": "RESET_GPU",
    "NV_ERR_GPU_IS_LOST": "RESTART_BM",
    "NV_ERR_NVLINK_INIT_ERROR": "RESET_GPU",
    "NV_ERR_NVLINK_MINION_ERROR": "RESET_GPU",
    "NV_ERR_NVLINK_CLOCK_ERROR": "RESET_GPU",
    "NV_ERR_NVLINK_TRAINING_ERROR": "RESET_GPU",
    "NV_ERR_NVLINK_CONFIGURATION_ERROR": "RESET_GPU",
    "NV_ERR_NVLINK_FABRIC_FAILURE": "RESET_GPU",
}


def bucket(name: str) -> Bucket:
    """nvls-tui's reading of the bucket ``name``; a bucket it does not know reads as :data:`NO_BUCKET` (an error)."""
    return BUCKETS.get(name, NO_BUCKET if not name else Bucket(name, "error", NO_BUCKET.move, None))


@dataclass(frozen=True, slots=True)
class SxidEntry:
    """One NVSwitch SXid code of the driver's error enum: ``22013``, ``MINION_NONFATAL``, ``MINION: errors``.

    Whether an SXid is fatal is first the line's: the driver says it in most lines (``Fatal``, ``Non-fatal``,
    ``Correctable``). For a line without the word, the Fabric Manager user guide's tables say it (sxid.csv's header).

    Attributes:
        fm_guide: the guide's table that lists the code (``non-fatal``, ``fatal``, ``always-fatal``, ``notable``), or
            empty where it lists none.
        fm_recovery: the guide's recovery in one word (``none``, ``reset``, ``reboot``, ``mechanicals``, ``cooling``),
            or empty.
    """

    code: int
    name: str
    unit: str
    fm_guide: str = ""
    fm_recovery: str = ""


@dataclass(frozen=True, slots=True)
class NvStatus:
    """One of the driver's status codes: ``NV_ERR_FABRIC_STATE_OUT_OF_SYNC``, 0x87, its text."""

    name: str
    code: int
    text: str


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """One of NVML's GPU recovery actions: its value, name (``DRAIN_AND_RESET``), the words the driver prints
    (``Drain and Reset``) and the Xid catalogue bucket that asks the same."""

    value: int
    name: str
    words: str
    bucket: str


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def source(name: str) -> tuple[str, ...]:
    """The ``#`` header of the catalogue file ``name``: where its facts come from and which version."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    return tuple(line[1:].strip() for line in text.splitlines() if line.startswith("#"))


@functools.cache
def xids() -> dict[int, XidEntry]:
    """Every Xid of the catalogue, by number."""
    out = {}
    for row in _rows("xid.csv"):
        applies = frozenset(gpu for gpu in ("A100", "H100", "B100", "GB200") if row[f"applies_{gpu.lower()}"] == "YES")
        out[int(row["code"])] = XidEntry(int(row["code"]), row["mnemonic"], row["description"], applies,
                                         row["immediate"], row["investigatory"])
    return out


def xid(code: int | None) -> XidEntry | None:
    """The catalogue's row for Xid ``code``, or None where it lists no such Xid."""
    return xids().get(code) if code is not None else None


@functools.cache
def sxids() -> dict[int, SxidEntry]:
    """Every SXid code of the catalogue, by number."""
    return {int(r["code"]): SxidEntry(int(r["code"]), r["name"], r["unit"], r["fm_guide"], r["fm_recovery"])
            for r in _rows("sxid.csv")}


def sxid(code: int | None) -> SxidEntry | None:
    """The catalogue's row for SXid ``code``, or None where it lists no such code."""
    return sxids().get(code) if code is not None else None


@functools.cache
def nv_statuses() -> dict[str, NvStatus]:
    """Every NV_STATUS code, by name."""
    return {row["name"]: NvStatus(row["name"], int(row["code"], 16), row["text"]) for row in _rows("nv_status.csv")}


def nv_status(key: str | int) -> NvStatus | None:
    """The status named ``key`` (``NV_ERR_...``) or numbered ``key``; None where the driver has none such."""
    if isinstance(key, str):
        return nv_statuses().get(key)
    return next((s for s in nv_statuses().values() if s.code == key), None)


@functools.cache
def recovery_actions() -> tuple[RecoveryAction, ...]:
    """NVML's GPU recovery actions, by value."""
    return tuple(RecoveryAction(int(r["value"]), r["name"], r["words"], r["bucket"]) for r in _rows("recovery_action.csv"))


def recovery_action(key: str | int) -> RecoveryAction | None:
    """The recovery action with this value, NVML name or printed words (``None``, ``Drain and Reset``)."""
    for action in recovery_actions():
        if key == action.value or (isinstance(key, str) and key.strip().lower() in (action.name.lower(),
                                                                                    action.words.lower())):
            return action
    return None


# nvidia-smi -q's words for the action (``GPU Recovery Action``), most specific first: NVML names them, the
# text may say "Reset" or "Reboot" alone.
_SMI_WORDS = ((re.compile(r"drain\s*(?:and|&)\s*reset", re.I), "DRAIN_AND_RESET"),
              (re.compile(r"drain\s*p2p", re.I), "DRAIN_P2P"), (re.compile(r"imex", re.I), "RECOVER_IMEX_DOMAIN"),
              (re.compile(r"bus\s*reset|pcie\s*bus", re.I), "BUS_RESET"),
              (re.compile(r"system\s*reboot|reboot\s*the\s*system", re.I), "SYSTEM_REBOOT"),
              (re.compile(r"reboot", re.I), "NODE_REBOOT"), (re.compile(r"reset", re.I), "GPU_RESET"),
              (re.compile(r"^\s*none\s*$", re.I), "NONE"))


def recovery_action_said(words: str) -> RecoveryAction | None:
    """The recovery action ``nvidia-smi -q`` names in ``words`` (``None``, ``Drain and Reset``, ``Reset``,
    ``Node Reboot Required``), or None where the words name none the catalogue knows."""
    exact = recovery_action(words)
    if exact is not None:
        return exact
    return next((recovery_action(name) for pattern, name in _SMI_WORDS if pattern.search(words)), None)


# Xid 154: "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)": the action is the one after "to".
_CHANGED_TO = re.compile(r"recovery action changed from .*?\bto\s+(0x[0-9A-Fa-f]+)?\s*\(([^)]*)\)", re.IGNORECASE)
# Xid 94/95 (error containment): "... Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No" (RST: a reset is
# required; D-RST: drain and reset), the driver's format in open-gpu-kernel-modules.
_RST = re.compile(r"\bRST:\s*Yes\b", re.IGNORECASE)
_D_RST = re.compile(r"\bD-RST:\s*Yes\b", re.IGNORECASE)


def action_named_in(line: str) -> RecoveryAction | None:
    """The recovery action a driver line itself orders, or None where it names none.

    Xid 154 names it ("... changed from 0x0 (None) to 0x4 (Drain and Reset)": the action after "to"); an error
    containment Xid says ``RST: Yes`` (reset) or ``D-RST: Yes`` (drain and reset); any other line that names one
    of the actions in the driver's words (``Drain and Reset``, ``GPU Reset Required``, ``Node Reboot Required``,
    ``Drain P2P``) orders it.
    """
    if m := _CHANGED_TO.search(line):
        by_value = recovery_action(int(m.group(1), 16)) if m.group(1) else None
        return recovery_action(m.group(2)) or by_value
    if _D_RST.search(line):
        return recovery_action("DRAIN_AND_RESET")
    if _RST.search(line):
        return recovery_action("GPU_RESET")
    lowered = line.lower()
    for action in recovery_actions():
        if action.value != 0 and action.value <= 4 and action.words.lower() in lowered:
            return action
    return None


__all__ = ["BUCKETS", "FILES", "NO_BUCKET", "STATUS_BUCKETS", "Bucket", "NvStatus", "RecoveryAction", "SxidEntry", "XidEntry",
           "action_named_in", "bucket", "nv_status", "nv_statuses", "recovery_action", "recovery_action_said",
           "recovery_actions", "source", "sxid", "sxids", "xid", "xids"]
