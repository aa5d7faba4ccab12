"""``lspci`` lines -> :class:`LspciDevice` (NVSwitch bridges ``10de:22a3`` and GPUs).

Accepted line shapes (one device per line; indented ``lspci -v`` detail lines are skipped)::

    0000:05:00.0 Bridge: NVIDIA Corporation GH100 [H100 NVSwitch] (rev a1)                    lspci -D
    05:00.0 Bridge [0680]: NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3] (rev a1)       lspci -nn
    05:00.0 0680: 10de:22a3 (rev a1)                                                          lspci -n
    IOMMU Group 114: 05:00.0 Bridge [0680]: ... [10de:22a3] (rev a1) (driver: nvidia-nvswitch)   IOMMU scripts

``bus_id`` is kept as printed; :func:`canonical_bus_id` turns any form into nvidia-smi's
(``00000000:05:00.0``) so lspci devices can be matched with nvidia-smi GPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.nvidia_smi_q import BUS_ID

NVSWITCH_ID = "10de:22a3"

_LINE = re.compile(
    rf"^(?:IOMMU Group \d+:\s+)?(?P<bus>{BUS_ID})\s+"  # IOMMU-listing scripts prefix the group
    r"(?P<cls>[^:\[\]]+?)(?:\s+\[(?P<code>[0-9A-Fa-f]{4})\])?:\s*(?P<rest>.*)$"
)
_DRIVER = re.compile(r"\s*\(driver:\s*([^)]*)\)\s*$")
_PROG_IF = re.compile(r"\s*\(prog-if [^)]*\)\s*$")
_REV = re.compile(r"\s*\(rev\s+([0-9A-Fa-f]+)\)\s*$")
_VENDOR_DEVICE = re.compile(r"\s*\[?\b([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4})\b\]?\s*$")
_CANONICAL = re.compile(r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$")


@dataclass(frozen=True, slots=True)
class LspciDevice:
    """One PCI device as lspci printed it.

    Attributes:
        bus_id: the address as printed (``0000:05:00.0`` with -D, ``05:00.0`` without).
        cls: the class name (``Bridge``, ``3D controller``); the class code with ``lspci -n``.
        description: vendor and device names (``NVIDIA Corporation GH100 [H100 NVSwitch]``).
        vendor_device: ``10de:22a3`` when printed (``-nn``/``-n``), else None.
        class_code: ``0680`` when printed, else None.
        revision: ``a1`` of ``(rev a1)``, else None.
        driver: ``nvidia-nvswitch`` of an IOMMU script's ``(driver: ...)``, else None.
    """

    bus_id: str
    cls: str
    description: str
    vendor_device: str | None = None
    class_code: str | None = None
    revision: str | None = None
    driver: str | None = None

    @property
    def is_nvswitch(self) -> bool:
        """True for an NVSwitch bridge (by PCI id, or by name when ids were not printed)."""
        if self.vendor_device is not None:
            return self.vendor_device.lower() == NVSWITCH_ID
        return "nvswitch" in self.description.lower()

    @property
    def is_gpu(self) -> bool:
        """True for an NVIDIA GPU: a display controller (PCI class 03xx: ``0302`` 3D controller, ``0300`` VGA).

        Known only where lspci printed the ids (``-nn``/``-n``); by name otherwise (``3D controller``).
        """
        if self.vendor_device is not None and not self.vendor_device.lower().startswith("10de:"):
            return False
        if self.class_code is not None:
            return self.class_code.startswith("03")
        return self.vendor_device is not None and self.cls.lower() in ("3d controller", "vga compatible controller")

    @property
    def canonical_bus_id(self) -> str | None:
        """The address in nvidia-smi's form (``00000000:05:00.0``)."""
        return canonical_bus_id(self.bus_id)


def canonical_bus_id(bus_id: str) -> str | None:
    """Any PCI address form -> nvidia-smi's ``DDDDDDDD:BB:DD.F`` (upper case); None if not an address.

    ``05:00.0`` and ``0000:05:00.0`` (lspci) and ``00000000:05:00.0`` (nvidia-smi) all give
    ``00000000:05:00.0``; lspci's default domain is 0.
    """
    m = _CANONICAL.match(bus_id.strip()) if isinstance(bus_id, str) else None
    if m is None:
        return None
    domain, bus, dev, fn = m.groups()
    return f"{int(domain or '0', 16):08X}:{bus.upper()}:{dev.upper()}.{fn}"


def _device(m: re.Match[str]) -> LspciDevice:
    rest = m.group("rest").strip()
    driver = revision = None
    # Trailing annotations come in a fixed order: [ids] (rev xx) (prog-if ..) (driver: ..); peel from the end.
    if d := _DRIVER.search(rest):
        driver, rest = d.group(1).strip(), rest[: d.start()]
    if p := _PROG_IF.search(rest):
        rest = rest[: p.start()]
    if r := _REV.search(rest):
        revision, rest = r.group(1), rest[: r.start()]
    vendor_device = None
    if v := _VENDOR_DEVICE.search(rest):
        vendor_device, rest = v.group(1).lower(), rest[: v.start()]
    cls, code = m.group("cls").strip(), m.group("code")
    if code is None and re.fullmatch(r"[0-9A-Fa-f]{4}", cls):  # lspci -n: the class is only a code
        code = cls
    return LspciDevice(
        bus_id=m.group("bus"),
        cls=cls,
        description=rest.strip(),
        vendor_device=vendor_device,
        class_code=code.lower() if code else None,
        revision=revision,
        driver=driver,
    )


def parse_lspci(text: str) -> Parsed[tuple[LspciDevice, ...]]:
    """Parse lspci output (``-D``, ``-nn``, ``-n``, IOMMU-group listings). Never raises.

    Args:
        text: the command's output.

    Returns:
        One LspciDevice per device line, in order; lines that are not device lines are skipped
        (indented detail lines silently, others with one warning in total).
    """
    if not isinstance(text, str):
        return Parsed((), (f"Expected text, got {type(text).__name__}.",))
    devices: list[LspciDevice] = []
    skipped = 0
    try:
        for raw in text.splitlines():
            if not raw.strip() or raw[:1] in (" ", "\t"):
                continue
            m = _LINE.match(raw.strip())
            if m is None:
                skipped += 1
                continue
            devices.append(_device(m))
    except Exception as exc:  # the never-raise promise
        return Parsed(tuple(devices), (f"Could not read lspci output: {exc!r}"[:200],))
    warnings = () if not skipped else (f"Skipped {skipped} line(s) that are not lspci device lines.",)
    return Parsed(tuple(devices), warnings)


__all__ = ["NVSWITCH_ID", "LspciDevice", "canonical_bus_id", "parse_lspci"]
