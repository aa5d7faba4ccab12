"""``nvidia-smi --query-gpu=... --format=csv`` (and ``--query-compute-apps``) -> :class:`QueryCsv`.

nvidia-smi separates fields with ``", "`` and never quotes, so a value containing a comma splits in
two. Keys and values:

- Row keys are the header names exactly as printed, stripped of surrounding spaces, units included:
  ``"memory.total [MiB]"``, ``"used_gpu_memory [MiB]"``. :meth:`QueryCsv.get` looks a field up by
  its bare name (``"memory.total"``) or an alias (``"gpu_bus_id"`` for ``"pci.bus_id"``).
- Without a header (``--format=csv,noheader``) pass the queried field names as ``fields``; otherwise
  columns are keyed by position (``"0"``, ``"1"``, ...) and a warning says so.
- Numbers become numbers, their unit dropped (``"81559 MiB"`` -> 81559, ``"100.00 %"`` -> 100.0).
  Identifiers that only look numeric stay text: ``0x233010DE``, ``590.48.01``, ``0000000000000``
  (leading zeros). ``N/A``, ``[N/A]``, ``[Not Supported]`` and empty fields become None. Other words,
  including ``Not Supported`` as a fabric state and bracketed messages such as
  ``[Requested functionality has been deprecated]``, stay as printed.
- A row with more fields than the header (a comma inside a value) is repaired when the header has a
  name column (``name``, ``process_name``, ...): the extra pieces are joined back into it.
  Otherwise the extra fields are dropped. Either way a warning says so.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

from nvls_tui.model import FabricHealth, FabricInfo, GpuState
from nvls_tui.parsers.base import Parsed, number

Cell = str | float | int | None

_NONE_WORDS = frozenset({"N/A", "[N/A]", "[Not Supported]", ""})
_NUMBER = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?:\s*(\S+))?$", re.ASCII)
# Columns that hold identifiers or versions: never turned into numbers ("418.40" is not 418.4).
_TEXT_COLUMNS = frozenset({"driver_version", "vbios_version", "serial", "gpu_serial", "uuid", "gpu_uuid",
                           "pci.bus_id", "gpu_bus_id", "name", "gpu_name", "process_name", "hostname",
                           "timestamp", "fabric.clusterUuid", "platform.chassis_serial_number",
                           "platform.gpu_fabric_guid", "inforom.img", "inforom.image", "inforom.oem",
                           "inforom.ecc", "inforom.pwr", "inforom.power"})
_UNITS = frozenset({"MiB", "KiB", "GiB", "MB", "KB", "GB", "%", "W", "mW", "MHz", "GHz", "us", "ms", "s",
                    "C", "KB/s", "MB/s", "bank(s)"})
_UNIT_IN_KEY = re.compile(r"^(.*?)\s*\[([^\]]*)\]$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?:\s*\[[^\]]*\])?$")
_KNOWN_BARE = frozenset({"index", "name", "uuid", "serial", "pid", "count", "pstate", "timestamp",
                         "hostname", "vbios_version", "driver_version", "persistence_mode",
                         "process_name", "used_memory", "used_gpu_memory", "gpu_name", "gpu_uuid",
                         "gpu_bus_id", "gpu_serial", "compute_mode", "compute_cap"})
_NAME_COLUMNS = ("name", "gpu_name", "process_name")
_INVALID_FIELD = re.compile(r'^Field "[^"]*" is not a valid field to query', re.MULTILINE)

#: Alternative spellings nvidia-smi accepts for the same field (``--help-query-gpu``).
ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("name", "gpu_name"),
    "uuid": ("uuid", "gpu_uuid"),
    "serial": ("serial", "gpu_serial"),
    "pci.bus_id": ("pci.bus_id", "gpu_bus_id"),
    "gpu_bus_id": ("gpu_bus_id", "pci.bus_id"),
}


def bare_name(key: str) -> str:
    """A header name without its unit: ``"memory.total [MiB]"`` -> ``"memory.total"``."""
    m = _UNIT_IN_KEY.match(key.strip())
    return m.group(1) if m else key.strip()


def _unit(key: str) -> str | None:
    m = _UNIT_IN_KEY.match(key.strip())
    return m.group(2) if m else None


def convert_cell(raw: str, unit: str | None = None, text_only: bool = False) -> Cell:
    """One CSV field as a value: number, None for N/A, else the stripped text (see module docs).

    Args:
        raw: the field as printed.
        unit: the unit the header names for this column (``MiB`` of ``memory.total [MiB]``).
        text_only: keep a number-looking value as text (identifier and version columns).
    """
    text = raw.strip()
    if text in _NONE_WORDS:
        return None
    m = None if text_only else _NUMBER.match(text)
    if m is None:
        return text
    digits, suffix = m.group(1), m.group(2)
    if suffix is not None and suffix != unit and suffix not in _UNITS:
        return text
    integral = digits.lstrip("+-").split(".")[0].split("e")[0].split("E")[0]
    if len(integral) > 1 and integral.startswith("0"):
        return text  # serials and ids with leading zeros are identifiers, not quantities
    value = number(digits) if len(digits) <= 300 else None
    return text if value is None else value


@dataclass(frozen=True, slots=True)
class QueryCsv:
    """A parsed ``--format=csv`` table.

    Attributes:
        header: the column keys in order, as printed (stripped), units included.
        rows: one dict per line, keyed by ``header``.
    """

    header: tuple[str, ...] = ()
    rows: tuple[dict[str, Cell], ...] = ()

    def key(self, field: str) -> str | None:
        """The header key for ``field`` (bare name, with or without unit, or an alias), or None."""
        return _header_key(self.header, field)

    def get(self, row: dict[str, Cell], field: str) -> Cell:
        """``row``'s value of ``field`` looked up as in :meth:`key`; None when the column is absent."""
        key = self.key(field)
        return row.get(key) if key is not None else None


@functools.lru_cache(maxsize=1024)
def _header_key(header: tuple[str, ...], field: str) -> str | None:
    """Memoised: a fleet poll looks up the same few fields in the same header for every cell."""
    wanted = {field.strip(), bare_name(field)}
    wanted.update(ALIASES.get(bare_name(field), ()))
    for key in header:
        if key in wanted or bare_name(key) in wanted:
            return key
    return None


def _looks_like_header(cells: list[str], fields: tuple[str, ...] | None) -> bool:
    if fields is not None:
        return [bare_name(c).lower() for c in cells] == [bare_name(f).lower() for f in fields]
    if not cells or not all(_FIELD_NAME.match(c) for c in cells):
        return False
    return any("." in c or "[" in c or bare_name(c) in _KNOWN_BARE for c in cells)


def _fit(cells: list[str], header: tuple[str, ...], line_no: int, warnings: list[str]) -> list[str]:
    """Make ``cells`` as long as ``header``: rejoin a split name, or drop/pad with a warning."""
    extra = len(cells) - len(header)
    if extra > 0:
        name_at = next((i for i, k in enumerate(header) if bare_name(k) in _NAME_COLUMNS), None)
        if name_at is not None:
            joined = ", ".join(cells[name_at:name_at + extra + 1])
            warnings.append(f"Line {line_no} has {extra} field(s) more than the header; "
                            f"joined them into {header[name_at]!r}.")
            return cells[:name_at] + [joined] + cells[name_at + extra + 1:]
        warnings.append(f"Line {line_no} has {extra} field(s) more than the header; dropped them.")
        return cells[:len(header)]
    if extra < 0:
        warnings.append(f"Line {line_no} has {-extra} field(s) fewer than the header; they are None.")
        return cells + [""] * -extra
    return cells


def parse_query_csv(text: str, fields: tuple[str, ...] | list[str] | None = None) -> Parsed[QueryCsv]:
    """Parse nvidia-smi ``--format=csv`` output, with or without header. Never raises.

    Args:
        text: the command's output.
        fields: the queried field names, in order (needed to name the columns of ``noheader``
            output; when given, a first line equal to them is taken as the header).

    Returns:
        The header and one dict per row (see the module docstring for keys and values).
    """
    if not isinstance(text, str):
        return Parsed(QueryCsv(), (f"Expected text, got {type(text).__name__}.",))
    warnings: list[str] = []
    try:
        wanted = tuple(str(f).strip() for f in fields) if fields is not None else None
        if invalid := _INVALID_FIELD.search(text):
            warnings.append(invalid.group(0) + ".")
            return Parsed(QueryCsv(header=wanted or ()), tuple(warnings))
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        header: tuple[str, ...]
        # The header is found by its field names, not by its position: nvidia-smi prints driver
        # warnings ("WARNING: infoROM is corrupted at gpu ...") on stdout, before the table too.
        at = next((i for i, (_n, line) in enumerate(lines)
                   if _looks_like_header([c.strip() for c in line.split(",")], wanted)), None)
        if at is not None:
            warnings += [f"nvidia-smi said: {line.strip()[:200]}" for _n, line in lines[:at]]
            header = tuple(c.strip() for c in lines[at][1].split(","))
            lines = lines[at + 1:]
        elif wanted is not None:
            header = wanted
        else:
            width = max((len(line.split(",")) for _n, line in lines), default=0)
            header = tuple(str(i) for i in range(width))
            if lines:
                warnings.append("No header line and no field names given: columns are keyed by position.")
        if len(set(header)) != len(header):
            warnings.append("The header names a column twice; the last value wins.")
        units = [_unit(k) for k in header]
        text_only = [bare_name(k) in _TEXT_COLUMNS for k in header]
        rows = []
        for n, line in lines:
            raw_cells = [c.strip() for c in line.split(",")]
            if len(raw_cells) == 1 and len(header) > 1:
                warnings.append(f"nvidia-smi said: {line.strip()[:200]}")  # a message, not a row
                continue
            cells = _fit(raw_cells, header, n, warnings)
            rows.append({k: convert_cell(c, u, t) for k, c, u, t in zip(header, cells, units, text_only, strict=False)})
        return Parsed(QueryCsv(header, tuple(rows)), tuple(warnings))
    except Exception as exc:  # the never-raise promise
        return Parsed(QueryCsv(), tuple(warnings) + (f"Could not read the CSV: {exc!r}"[:200],))


def _word(value: Cell) -> str | None:
    """A cell back as text: ints as digits, None stays None."""
    if value is None:
        return None
    return str(value)


_HEALTH_FIELDS = tuple(f.name for f in dataclasses.fields(FabricHealth))


def _gpu(row: dict[str, Cell], order: int, warnings: list[str], keys: dict[str, str | None],
         has_health: bool) -> GpuState:
    """One GPU of a row; ``keys``: each field's header key (looked up once per table, not per cell)."""

    def get(field: str) -> Cell:
        key = keys[field]
        return row.get(key) if key is not None else None

    index = get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        if keys["index"] is not None:
            warnings.append(f"Row {order}: index {str(index)[:40]!r} is not a GPU index; using the row order.")
        index = order
    health = None
    if has_health:
        # FabricHealth's attribute names are the CSV field names (fabric.health.route_unhealthy, ...).
        health = FabricHealth(**{name: _word(get(f"fabric.health.{name}")) for name in _HEALTH_FIELDS})
    fabric = FabricInfo(
        state=_word(get("fabric.state")) or "N/A",
        status=_word(get("fabric.status")) or "N/A",
        clique_id=_word(get("fabric.cliqueId")),
        cluster_uuid=_word(get("fabric.clusterUuid")),
        health=health,
    )
    return GpuState(
        index=index,
        bus_id=_word(get("pci.bus_id")) or "",
        name=_word(get("name")) or "",
        uuid=_word(get("uuid")) or "",
        fabric=fabric,
        persistence_mode=_word(get("persistence_mode")),
        mig_current=_word(get("mig.mode.current")),
        mig_pending=_word(get("mig.mode.pending")),
        # NVML's recovery action as nvidia-smi prints it ("None", "Drain and Reset"); None where not asked.
        recovery_action=_word(get("gpu_recovery_action")),
    )


_GPU_FIELDS = ("index", "fabric.state", "fabric.status", "fabric.cliqueId", "fabric.clusterUuid", "pci.bus_id",
               "name", "uuid", "persistence_mode", "mig.mode.current", "mig.mode.pending", "gpu_recovery_action",
               *(f"fabric.health.{name}" for name in _HEALTH_FIELDS))


def gpus_from_query(q: QueryCsv) -> tuple[GpuState, ...]:
    """GpuStates from a ``--query-gpu`` table with any subset of the columns index, pci.bus_id, name,
    uuid, persistence_mode, mig.mode.current, mig.mode.pending, fabric.state, fabric.status, fabric.cliqueId, fabric.clusterUuid and
    fabric.health.*. Missing columns give "" / None / ``"N/A"``; a missing index gives the row order.
    Never raises.
    """
    return gpus_from_query_parsed(q).value


def gpus_from_query_parsed(q: QueryCsv) -> Parsed[tuple[GpuState, ...]]:
    """:func:`gpus_from_query` with the warnings (an unreadable index, ...)."""
    warnings: list[str] = []
    try:
        keys = {field: q.key(field) for field in _GPU_FIELDS}
        has_health = any(bare_name(k).startswith("fabric.health.") for k in q.header)
        return Parsed(tuple(_gpu(row, i, warnings, keys, has_health) for i, row in enumerate(q.rows)),
                      tuple(warnings))
    except Exception as exc:  # the never-raise promise
        return Parsed((), tuple(warnings) + (f"Could not build GPUs from the CSV: {exc!r}"[:200],))


def driver_from_query(q: QueryCsv) -> str | None:
    """The ``driver_version`` column of the first row that has one, or None."""
    try:
        for row in q.rows:
            value = q.get(row, "driver_version")
            if value is not None:
                return str(value)
    except Exception:  # the never-raise promise; a malformed QueryCsv has no driver to report
        return None
    return None


_HELP_ENTRY = re.compile(r'^"[A-Za-z_][A-Za-z0-9_.]*"(?:\s+or\s+"[A-Za-z_][A-Za-z0-9_.]*")*\s*$')
_QUOTED = re.compile(r'"([^"]+)"')


def parse_help_query(text: str) -> Parsed[tuple[str, ...]]:
    """The field names ``nvidia-smi --help-query-gpu`` lists, aliases included, in order. Never raises.

    Useful before a query: one unknown field makes nvidia-smi reject the whole ``--query-gpu``
    (``Field "..." is not a valid field to query.``), and the fabric.health fields vary by driver.
    """
    if not isinstance(text, str):
        return Parsed((), (f"Expected text, got {type(text).__name__}.",))
    names: list[str] = []
    try:
        for line in text.splitlines():
            if _HELP_ENTRY.match(line.strip()):
                names.extend(_QUOTED.findall(line))
    except Exception as exc:  # the never-raise promise
        return Parsed(tuple(names), (f"Could not read the field list: {exc!r}"[:200],))
    return Parsed(tuple(names), () if names else ("No --help-query-gpu field list was recognised.",))


__all__ = [
    "ALIASES",
    "parse_help_query",
    "QueryCsv",
    "bare_name",
    "convert_cell",
    "driver_from_query",
    "gpus_from_query",
    "gpus_from_query_parsed",
    "parse_query_csv",
]
