"""``nvidia-smi -q`` (text) -> :class:`SmiReport`.

The text is a tree drawn with indentation: section headers stand alone on a line, values are written
``Label<padding> : value``. Label columns differ between drivers (and between sections of one output:
the ``Processes`` block uses a narrower column), so a line is split on its FIRST ``" : "``, never on a
column. Nesting is tracked with a stack of section headers keyed by indentation.

Also read: the incident's ``nvidia-smi -q | grep -i -A 2 Fabric`` output, where the GPU headers are
gone (and, in the write-up, even the indentation): every ``Fabric`` block then becomes one GPU,
numbered in order, with an empty bus id, name and uuid.

This module also holds what the XML and CSV parsers share: :class:`SmiReport`, :class:`SmiProcess`,
the bus-id pattern, the fabric-health field names and the ``N/A`` handling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.model import FabricHealth, FabricInfo, GpuState
from nvls_tui.parsers.base import Parsed

#: A PCI address as nvidia-smi prints it (``00000000:0F:00.0``); lspci's shorter forms also match.
BUS_ID = r"(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"

_GPU_HEADER = re.compile(rf"^GPU\s+({BUS_ID})\s*$")
#: The fabric word for a GPU whose section the text ended inside before the value: unknown, never N/A.
UNREAD = "unread"
_NA_WORDS = frozenset({"N/A", "[N/A]", "[Not Supported]", ""})

#: FabricHealth attribute for each spelling of a health label (lowercase, spaces removed), shared by
#: the text labels (``Route Recovery in progress``), XML tags and ``fabric.health.*`` CSV columns.
HEALTH_FIELDS: dict[str, str] = {
    "summary": "summary",
    "bandwidth": "bandwidth",
    "routerecoveryinprogress": "route_recovery_in_progress",
    "route_recovery_in_progress": "route_recovery_in_progress",
    "routeunhealthy": "route_unhealthy",
    "route_unhealthy": "route_unhealthy",
    "accesstimeoutrecovery": "access_timeout_recovery",
    "access_timeout_recovery": "access_timeout_recovery",
    "incorrectconfiguration": "incorrect_configuration",
    "incorrect_configuration": "incorrect_configuration",
    "partitionassigned": "partition_assigned",
    "partition_assigned": "partition_assigned",
}

# Text labels of the Fabric block (lowercase, spaces removed) -> FabricInfo attribute.
_FABRIC_FIELDS = {
    "state": "state",
    "status": "status",
    "cliqueid": "clique_id",
    "clusteruuid": "cluster_uuid",
}


@dataclass(frozen=True, slots=True)
class SmiProcess:
    """One process that nvidia-smi lists on a GPU (processes with a CUDA or graphics context only).

    Attributes:
        gpu_bus_id: the GPU it runs on (``00000000:00:06.0``).
        pid: process id.
        name: process name as printed (``python3``, ``/root/tools/memhog``).
        type: ``C`` (compute), ``G`` (graphics) or ``C+G``; None when not printed.
        used_memory: GPU memory in MiB; None when nvidia-smi printed ``N/A``.
    """

    gpu_bus_id: str
    pid: int
    name: str
    type: str | None = None
    used_memory: int | None = None


@dataclass(frozen=True, slots=True)
class SmiReport:
    """What ``nvidia-smi -q`` (text or XML) says about a machine."""

    driver: str | None = None
    cuda: str | None = None
    gpus: tuple[GpuState, ...] = ()
    processes: tuple[SmiProcess, ...] = ()


def na_to_none(value: str | None) -> str | None:
    """``"N/A"``, ``"[N/A]"``, ``"[Not Supported]"`` and empty -> None; anything else stripped."""
    if value is None:
        return None
    v = value.strip()
    return None if v in _NA_WORDS else v


def small_int(text: str | None) -> int | None:
    """A plain non-negative decimal of at most 18 digits, else None (no giant-int conversions)."""
    if text is None:
        return None
    t = text.strip()
    return int(t) if t.isascii() and t.isdecimal() and len(t) <= 18 else None


def memory_mib(text: str | None) -> int | None:
    """``"1542 MiB"`` -> 1542; ``N/A`` or anything else -> None."""
    if text is None:
        return None
    return small_int(text.strip().removesuffix("MiB").strip())


def label_key(label: str) -> str:
    """Normalise a label for lookups: lowercase, no spaces (``"Route Recovery in progress"``)."""
    return "".join(label.lower().split())


class GpuBuilder:
    """Mutable notes about one GPU while its lines (or elements) are read; :meth:`build` freezes them."""

    def __init__(self, bus_id: str, order: int) -> None:
        self.bus_id = bus_id
        self.order = order
        self.name: str | None = None
        self.uuid: str | None = None
        self.minor: str | None = None
        self.persistence: str | None = None
        self.recovery: str | None = None
        self.fabric: dict[str, str] = {}
        self.has_fabric = False
        self.health: dict[str, str | None] | None = None

    def set_fabric(self, key: str, value: str) -> None:
        """Record a fabric field by its normalised label (state, status, cliqueid, clusteruuid)."""
        attr = _FABRIC_FIELDS.get(key)
        if attr is not None:
            self.fabric[attr] = value.strip()

    def set_health(self, key: str, value: str) -> None:
        """Record a health field by its normalised label or tag."""
        attr = HEALTH_FIELDS.get(key)
        if attr is not None:
            if self.health is None:
                self.health = {}
            self.health[attr] = na_to_none(value)

    def build(self, warnings: list[str]) -> GpuState:
        """The frozen GpuState; index from the minor number, else the order of appearance."""
        index = small_int(self.minor)
        if index is None:
            index = self.order
            if self.minor is not None:
                warnings.append(f"GPU {self.bus_id or index}: minor number {self.minor[:40]!r} is not a number.")
        fabric = FabricInfo(
            state=self.fabric.get("state") or "N/A",
            status=self.fabric.get("status") or "N/A",
            clique_id=na_to_none(self.fabric.get("clique_id")),
            cluster_uuid=na_to_none(self.fabric.get("cluster_uuid")),
            health=FabricHealth(**self.health) if self.health is not None else None,
        )
        return GpuState(
            index=index,
            bus_id=self.bus_id,
            name=self.name or "",
            uuid=self.uuid or "",
            fabric=fabric,
            persistence_mode=na_to_none(self.persistence),
            recovery_action=na_to_none(self.recovery),
        )


def _split(line: str) -> tuple[int, str, str | None]:
    """(indent, label, value) of one line; value None for a section header."""
    expanded = line.expandtabs(4).rstrip()
    body = expanded.lstrip(" ")
    indent = len(expanded) - len(body)
    at = body.find(" : ")
    if at >= 0:
        return indent, body[:at].strip(), body[at + 3:].strip()
    if body.endswith(" :"):  # "Label   :" with an empty value, right-stripped
        return indent, body[:-2].strip(), ""
    return indent, body.strip(), None


class _TextReader:
    """A line-by-line reader of ``nvidia-smi -q``; see the module docstring for the format."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.driver: str | None = None
        self.cuda: str | None = None
        self.attached: int | None = None
        self.gpus: list[GpuBuilder] = []
        self.processes: list[SmiProcess] = []
        self.gpu: GpuBuilder | None = None
        self.stack: list[tuple[int, str]] = []  # open section headers below the GPU header
        self.fabric_indent: int | None = None  # set while inside a Fabric block
        self.proc: dict[str, str] | None = None  # the process entry being read
        self.anonymous = False
        self.sections: dict[int, dict[str, str]] = {}  # GPU (by id) -> its top-level labels, key -> label

    def feed(self, line: str) -> None:
        """Read one line."""
        indent, label, value = _split(line)
        if not label:
            return
        header = _GPU_HEADER.match(label) if value is None else None
        if header or label == "--":
            self._flush_process()
            self.fabric_indent = None
            self.stack.clear()
            if header:
                self.gpu = GpuBuilder(header.group(1), len(self.gpus))
                self.gpus.append(self.gpu)
            return
        if self.fabric_indent is not None and self._fabric_line(indent, label, value):
            return
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()
        if not self.stack and self.gpu is not None:
            self.sections.setdefault(id(self.gpu), {}).setdefault(label_key(label), label)
        if value is None:
            self._header(indent, label)
        else:
            self._value(label, value)

    def _fabric_line(self, indent: int, label: str, value: str | None) -> bool:
        """Consume a line of the open Fabric block; False (and close the block) when it has ended."""
        key = label_key(label)
        known = key in _FABRIC_FIELDS or key in HEALTH_FIELDS or (value is None and key == "health")
        # Deeper lines belong to the block; at the block's own indentation (the write-up's flattened
        # grep output) only fabric labels do.
        if (self.fabric_indent is not None and indent > self.fabric_indent) or known:
            gpu = self._fabric_gpu()
            if value is None:
                if key == "health" and gpu.health is None:
                    gpu.health = {}
            elif key in _FABRIC_FIELDS:
                gpu.set_fabric(key, value)
            elif key in HEALTH_FIELDS:
                gpu.set_health(key, value)
            return True
        self.fabric_indent = None
        return False

    def _fabric_gpu(self) -> GpuBuilder:
        """The GPU a Fabric block belongs to; grep output has no GPU headers, so invent one."""
        if self.gpu is None:
            if not self.anonymous:
                self.anonymous = True
                self.warnings.append(
                    "No GPU header before a Fabric block (grep output?): GPUs are numbered in order "
                    "and have no bus id, name or uuid."
                )
            self.gpu = GpuBuilder("", len(self.gpus))
            self.gpus.append(self.gpu)
        return self.gpu

    def _header(self, indent: int, label: str) -> None:
        key = label_key(label)
        if key == "fabric":
            gpu = self.gpu
            if gpu is None or gpu.has_fabric:
                if gpu is not None and gpu.bus_id:
                    self.warnings.append(f"GPU {gpu.bus_id} has a second Fabric block; the last one wins.")
                else:
                    self.gpu = None
            self._fabric_gpu().has_fabric = True
            self.fabric_indent = indent
            self.stack.clear()
            return
        if key == "processes":
            self._flush_process()
            self.proc = None
        self.stack.append((indent, key))

    def _value(self, label: str, value: str) -> None:
        key = label_key(label)
        section = self.stack[0][1] if self.stack else None
        if section is None:
            self._top_value(key, value)
        elif section == "processes" and self.gpu is not None:
            self._process_value(key, value)

    def _top_value(self, key: str, value: str) -> None:
        """A value outside any section: the log's header or a GPU's own field."""
        if key == "driverversion":
            self.driver = na_to_none(value)
        elif key == "cudaversion":
            self.cuda = na_to_none(value)
        elif key == "attachedgpus":
            self.attached = small_int(value)
        elif self.gpu is None:
            return
        elif key == "productname":
            self.gpu.name = value
        elif key == "gpuuuid":
            self.gpu.uuid = value
        elif key == "minornumber":
            self.gpu.minor = value
        elif key == "persistencemode":
            self.gpu.persistence = value
        elif key == "gpurecoveryaction":
            self.gpu.recovery = value

    def _process_value(self, key: str, value: str) -> None:
        """One line of a GPU's Processes block; an entry starts at its ``Process ID``."""
        if key in ("gpuinstanceid", "computeinstanceid"):
            return
        if key == "processid":
            self._flush_process()
            self.proc = {"pid": value}
        elif self.proc is not None and key in ("type", "name", "usedgpumemory"):
            self.proc[key] = value

    def _flush_process(self) -> None:
        if self.proc is None or self.gpu is None:
            self.proc = None
            return
        pid = small_int(self.proc.get("pid"))
        if pid is None:
            shown = self.proc.get("pid", "")[:40]
            self.warnings.append(f"GPU {self.gpu.bus_id}: process id {shown!r} is not a number.")
        else:
            self.processes.append(
                SmiProcess(
                    gpu_bus_id=self.gpu.bus_id,
                    pid=pid,
                    name=self.proc.get("name", ""),
                    type=na_to_none(self.proc.get("type")),
                    used_memory=memory_mib(self.proc.get("usedgpumemory")),
                )
            )
        self.proc = None

    def _cut(self) -> None:
        """Say so when the text ends inside the last GPU's section, and leave what it did not reach unread.

        Complete sections of one output carry the same top-level labels; a full ``-q`` section (one with a
        ``Product Name``) ends with ``Processes``. The last section lacking one of those was cut.
        """
        if not self.gpus or self.anonymous:
            return
        last = self.gpus[-1]
        mine = self.sections.get(id(last), {})
        if len(self.gpus) > 1:
            before = [self.sections.get(id(g), {}) for g in self.gpus[:-1]]
            lacking = [label for key, label in before[0].items() if key not in mine and all(key in b for b in before)]
        else:
            lacking = ["Processes"] if "productname" in mine and "processes" not in mine else []
        if not lacking:
            return
        inside_fabric = self.fabric_indent is not None and self.gpu is last
        for attr in ("state", "status"):
            if not last.has_fabric or (inside_fabric and attr not in last.fabric):
                last.fabric[attr] = UNREAD
        index = small_int(last.minor)
        never = ""
        if self.attached is not None and self.attached > len(self.gpus):
            never = f"; {self.attached - len(self.gpus)} more of the {self.attached} attached GPUs were never reached"
        self.warnings.append(f"the text ends inside GPU {last.order if index is None else index}'s section "
                             f"({last.bus_id}), before {', '.join(lacking[:4])}: what it did not reach is unknown, "
                             f"not N/A{never}")

    def report(self) -> Parsed[SmiReport]:
        """Everything read so far."""
        self._flush_process()
        self._cut()
        gpus = tuple(b.build(self.warnings) for b in self.gpus)
        if self.attached is not None and self.attached != len(gpus) and not self.anonymous:
            self.warnings.append(f"nvidia-smi says {self.attached} GPUs are attached but {len(gpus)} were read.")
        seen: set[str] = set()
        for gpu in gpus:
            if gpu.bus_id and gpu.bus_id in seen:
                self.warnings.append(f"GPU {gpu.bus_id} appears more than once.")
            seen.add(gpu.bus_id)
        if not gpus and self.driver is None:
            self.warnings.append("No nvidia-smi -q output was recognised.")
        report = SmiReport(self.driver, self.cuda, gpus, tuple(self.processes))
        return Parsed(report, tuple(self.warnings))


def parse_nvidia_smi_q(text: str) -> Parsed[SmiReport]:
    """Parse ``nvidia-smi -q`` text (or a ``grep -A N Fabric`` excerpt of it). Never raises.

    Args:
        text: the command's output.

    Returns:
        The driver and CUDA versions, one GpuState per GPU (fabric words kept as printed:
        ``Completed``, ``In Progress``, ``N/A``; ``N/A`` clique id, cluster uuid and health fields
        become None; ``health`` is None when the driver prints no Health block), the processes
        listed per GPU, and warnings.
    """
    if not isinstance(text, str):
        return Parsed(SmiReport(), (f"Expected text, got {type(text).__name__}.",))
    reader = _TextReader()
    try:
        for line in text.splitlines():
            reader.feed(line)
        return reader.report()
    except Exception as exc:  # the never-raise promise; keep what was read before the surprise
        try:
            partial = reader.report()
            return Parsed(partial.value, partial.warnings + (f"Stopped reading: {exc!r}"[:200],))
        except Exception:
            return Parsed(SmiReport(), (f"Could not read nvidia-smi -q output: {exc!r}"[:200],))


__all__ = [
    "BUS_ID",
    "HEALTH_FIELDS",
    "GpuBuilder",
    "SmiProcess",
    "SmiReport",
    "UNREAD",
    "label_key",
    "memory_mib",
    "na_to_none",
    "parse_nvidia_smi_q",
    "small_int",
]
