"""``nvidia-smi`` in the formats of a 580-series driver (see tests/fixtures/real/h200x2-nvswitch).

Layouts are copied from the real captures: the 91-column table, the ``-q`` report whose values start
at column 57 (``label`` padded to 55, then ``: ``), the ``-q -x`` XML (same element names) and the
``--query-gpu`` CSV. Sections unrelated to the fabric are shortened but keep their real shape.
"""

from __future__ import annotations

import time
from html import escape as _html_escape

from nvls_tui.sim.state import Gpu, Node


def escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML entities (what xml.sax.saxutils.escape does; that module imports
    urllib and http.client, a third of a simulated command's start-up behind the sshd)."""
    return _html_escape(text, quote=False)


DEVICE_IDS = {"NVIDIA H100 80GB HBM3": ("0x233010DE", "0x16C110DE"), "NVIDIA GB200": ("0x294110DE", "0x20CE10DE")}


def smi_time(ts: float) -> str:
    """``Mon Nov 30 07:51:12 2026`` (UTC, as the simulated nodes run in UTC)."""
    return time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(ts))


def compute_procs(node: Node, gpu: Gpu) -> list:
    """Processes with a CUDA context on ``gpu`` (what nvidia-smi lists: only the smoke test here)."""
    dev = f"/dev/nvidia{gpu.index}"
    return [p for p in node.alive("smoke") if dev in p.devices]


def used_mib(node: Node, gpu: Gpu) -> int:
    """FB memory in use: driver reservations plus what a running smoke test allocated."""
    return 0 + 1542 * len(compute_procs(node, gpu))


def visible(gpus: list[Gpu]) -> list[Gpu]:
    """The GPUs nvidia-smi lists: a GPU the driver lost is on the PCI bus only."""
    return [g for g in gpus if not g.lost]


def mig_cell(gpu: Gpu) -> str:
    """The table's ``MIG M.`` cell: the pending mode with a star while a change waits for a reset."""
    return f"{gpu.mig_pending}*" if gpu.mig_pending != gpu.mig_current else gpu.mig_current


def table(node: Node, now: float) -> str:
    """Plain ``nvidia-smi``."""
    dash = "+-----------------------------------------+------------------------+----------------------+"
    lines = [
        f"{smi_time(now)}       ",
        "+" + "-" * 89 + "+",
        f"| NVIDIA-SMI {node.driver:<23}Driver Version: {node.driver:<15}CUDA Version: {node.cuda:<9}|",
        dash,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for gpu in visible(node.gpus):
        pm = "On" if gpu.persistence else "Off"
        name = gpu.name if len(gpu.name) <= 33 - len(pm) - 1 else gpu.name[: 33 - len(pm) - 4] + "..."
        power = f"{gpu.power}W /  700W"
        lines.append(f"| {gpu.index:>3}  {name}{pm:>{33 - len(name)}}  |   {gpu.bus_id} Off |"
                     f"                    0 |")
        lines.append(f"| N/A   {gpu.temp:>2}C    P0 {power:>23} | {used_mib(node, gpu):>7}MiB / {gpu.mem_total:>6}MiB |"
                     f"      0%      Default |")
        lines.append(f"|                                         |                        | {mig_cell(gpu):>20} |")
        lines.append(dash)
    lines += [
        "",
        "+" + "-" * 89 + "+",
        "| Processes:" + " " * 78 + "|",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|" + "=" * 89 + "|",
    ]
    rows = [(g, p) for g in visible(node.gpus) for p in compute_procs(node, g)]
    if not rows:
        lines.append("|  No running processes found" + " " * 61 + "|")
    for gpu, proc in rows:
        lines.append(f"|  {gpu.index:>3}   N/A  N/A  {proc.pid:>13}      C   {proc.comm:<32} {1542:>9}MiB |")
    lines.append("+" + "-" * 89 + "+")
    return "\n".join(lines) + "\n"


def _kv(indent: int, label: str, value: object | None = None) -> str:
    pad = " " * (4 * indent)
    if value is None:
        return f"{pad}{label}"
    return f"{pad}{label:<{55 - len(pad)}}: {value}"


def query_text(node: Node, now: float, gpus: list[Gpu] | None = None) -> str:
    """``nvidia-smi -q``."""
    gpus = visible(node.gpus if gpus is None else gpus)
    out = ["", "==============NVSMI LOG==============", "",
           _kv(0, "Timestamp", smi_time(now)), _kv(0, "Driver Version", node.driver),
           _kv(0, "CUDA Version", node.cuda), "", _kv(0, "Attached GPUs", len(visible(node.gpus)))]
    for gpu in gpus:
        dev_id, sub_id = DEVICE_IDS.get(gpu.name, DEVICE_IDS["NVIDIA H100 80GB HBM3"])
        used = used_mib(node, gpu)
        bus = gpu.bus_id.split(":")[1]
        out += [
            f"GPU {gpu.bus_id}",
            _kv(1, "Product Name", gpu.name), _kv(1, "Product Brand", "NVIDIA"),
            _kv(1, "Product Architecture", "Blackwell" if "GB200" in gpu.name else "Hopper"),
            _kv(1, "Display Mode", "Requested functionality has been deprecated"),
            _kv(1, "Display Attached", "No"), _kv(1, "Display Active", "Disabled"),
            _kv(1, "Persistence Mode", "Enabled" if gpu.persistence else "Disabled"),
            _kv(1, "Addressing Mode", "None"),
            _kv(1, "MIG Mode"), _kv(2, "Current", gpu.mig_current.strip("[]")),
            _kv(2, "Pending", gpu.mig_pending.strip("[]")),
            _kv(1, "Accounting Mode", "Disabled"), _kv(1, "Accounting Mode Buffer Size", 4000),
            _kv(1, "Serial Number", gpu.serial), _kv(1, "GPU UUID", gpu.uuid),
            _kv(1, "Minor Number", gpu.index), _kv(1, "VBIOS Version", "96.00.99.00.01"),
            _kv(1, "MultiGPU Board", "No"), _kv(1, "Board ID", f"0x{int(bus, 16) * 256:x}"),
            _kv(1, "Platform Info"), _kv(2, "Chassis Serial Number", "N/A"), _kv(2, "Slot Number", "N/A"),
            _kv(2, "Tray Index", "N/A"), _kv(2, "Host ID", "N/A"), _kv(2, "Peer Type", "N/A"),
            _kv(2, "Module Id", gpu.index + 1), _kv(2, "GPU Fabric GUID", "N/A"),
            _kv(1, "Inforom Version"), _kv(2, "Image Version", "G520.0200.00.05"), _kv(2, "OEM Object", "2.1"),
            _kv(2, "ECC Object", "7.16"), _kv(2, "Power Management Object", "N/A"),
            _kv(1, "GPU Recovery Action", gpu.recovery_action), _kv(1, "GSP Firmware Version", node.driver),
            _kv(1, "PCI"), _kv(2, "Bus", f"0x{bus}"), _kv(2, "Device", "0x00"), _kv(2, "Domain", "0x0000"),
            _kv(2, "Base Classcode", "0x3"), _kv(2, "Sub Classcode", "0x2"), _kv(2, "Device Id", dev_id),
            _kv(2, "Bus Id", gpu.bus_id), _kv(2, "Sub System Id", sub_id),
            _kv(1, "Fan Speed", "N/A"), _kv(1, "Performance State", "P0"),
            _kv(1, "FB Memory Usage"), _kv(2, "Total", f"{gpu.mem_total} MiB"), _kv(2, "Reserved", "479 MiB"),
            _kv(2, "Used", f"{used} MiB"), _kv(2, "Free", f"{gpu.mem_total - 479 - used} MiB"),
            _kv(1, "Compute Mode", "Default"),
            _kv(1, "Utilization"), _kv(2, "GPU", "0 %"), _kv(2, "Memory", "0 %"),
            _kv(1, "ECC Mode"), _kv(2, "Current", "Enabled"), _kv(2, "Pending", "Enabled"),
            _kv(1, "Temperature"), _kv(2, "GPU Current Temp", f"{gpu.temp} C"),
            _kv(2, "Memory Current Temp", f"{gpu.temp - 2} C"),
            _kv(1, "GPU Power Readings"), _kv(2, "Average Power Draw", f"{gpu.power - 4}.27 W"),
            _kv(2, "Instantaneous Power Draw", f"{gpu.power}.61 W"), _kv(2, "Current Power Limit", "700.00 W"),
            _kv(1, "Clocks"), _kv(2, "Graphics", "345 MHz"), _kv(2, "SM", "345 MHz"),
            _kv(2, "Memory", "2619 MHz"), _kv(2, "Video", "765 MHz"),
            _kv(1, "Fabric"), _kv(2, "State", gpu.fabric_state), _kv(2, "Status", gpu.fabric_status),
            _kv(2, "CliqueId", gpu.clique_id), _kv(2, "ClusterUUID", gpu.cluster_uuid),
            _kv(2, "Health"), _kv(3, "Summary", gpu.health_summary), _kv(3, "Bandwidth", "N/A"),
            _kv(3, "Route Recovery in progress", "N/A"), _kv(3, "Route Unhealthy", "N/A"),
            _kv(3, "Access Timeout Recovery", "N/A"), _kv(3, "Incorrect Configuration", "N/A"),
            _kv(3, "Partition Assigned", "N/A"),
        ]
        procs = compute_procs(node, gpu)
        if not procs:
            out.append(_kv(1, "Processes", "None"))
        else:
            out.append(_kv(1, "Processes"))
            for proc in procs:
                out += [f"        {'GPU instance ID':<34}: N/A", f"        {'Compute instance ID':<34}: N/A",
                        f"        {'Process ID':<34}: {proc.pid}", f"            {'Type':<30}: C",
                        f"            {'Name':<30}: {proc.argv[0]}",
                        f"            {'Used GPU Memory':<30}: 1542 MiB"]
        out += [_kv(1, "Capabilities"), _kv(2, "EGM", "disabled"), ""]
    return "\n".join(out) + "\n"


def _x(tag: str, value: object, depth: int) -> str:
    return "\t" * depth + f"<{tag}>{escape(str(value))}</{tag}>"


def query_xml(node: Node, now: float) -> str:
    """``nvidia-smi -q -x``."""
    out = ['<?xml version="1.0" ?>', '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">', "<nvidia_smi_log>",
           _x("timestamp", smi_time(now), 1), _x("driver_version", node.driver, 1),
           _x("cuda_version", node.cuda, 1), _x("attached_gpus", len(visible(node.gpus)), 1)]
    for gpu in visible(node.gpus):
        dev_id, sub_id = DEVICE_IDS.get(gpu.name, DEVICE_IDS["NVIDIA H100 80GB HBM3"])
        bus = gpu.bus_id.split(":")[1]
        used = used_mib(node, gpu)
        out += [f'\t<gpu id="{gpu.bus_id}">', _x("product_name", gpu.name, 2), _x("product_brand", "NVIDIA", 2),
                _x("product_architecture", "Blackwell" if "GB200" in gpu.name else "Hopper", 2),
                _x("persistence_mode", "Enabled" if gpu.persistence else "Disabled", 2),
                "\t\t<mig_mode>", _x("current_mig", gpu.mig_current.strip("[]"), 3),
                _x("pending_mig", gpu.mig_pending.strip("[]"), 3), "\t\t</mig_mode>",
                _x("serial", gpu.serial, 2), _x("uuid", gpu.uuid, 2), _x("minor_number", gpu.index, 2),
                _x("vbios_version", "96.00.99.00.01", 2), _x("multigpu_board", "No", 2),
                "\t\t<platformInfo>", _x("module_id", gpu.index + 1, 3), _x("gpu_fabric_guid", "N/A", 3),
                "\t\t</platformInfo>", _x("gsp_firmware_version", node.driver, 2),
                "\t\t<pci>", _x("pci_bus", bus, 3), _x("pci_device", "00", 3), _x("pci_domain", "0000", 3),
                _x("pci_device_id", dev_id[2:], 3), _x("pci_bus_id", gpu.bus_id, 3),
                _x("pci_sub_system_id", sub_id[2:], 3), "\t\t</pci>",
                _x("fan_speed", "N/A", 2), _x("performance_state", "P0", 2),
                "\t\t<fb_memory_usage>", _x("total", f"{gpu.mem_total} MiB", 3), _x("reserved", "479 MiB", 3),
                _x("used", f"{used} MiB", 3), _x("free", f"{gpu.mem_total - 479 - used} MiB", 3),
                "\t\t</fb_memory_usage>", _x("compute_mode", "Default", 2),
                "\t\t<temperature>", _x("gpu_temp", f"{gpu.temp} C", 3), "\t\t</temperature>",
                "\t\t<fabric>", _x("state", gpu.fabric_state, 3), _x("status", gpu.fabric_status, 3),
                _x("cliqueId", gpu.clique_id, 3), _x("clusterUuid", gpu.cluster_uuid, 3), "\t\t\t<health>",
                _x("summary", gpu.health_summary, 4), _x("bandwidth", "N/A", 4),
                _x("route_recovery_in_progress", "N/A", 4), _x("route_unhealthy", "N/A", 4),
                _x("access_timeout_recovery", "N/A", 4), _x("incorrect_configuration", "N/A", 4),
                _x("partition_assigned", "N/A", 4), "\t\t\t</health>", "\t\t</fabric>", "\t\t<processes>"]
        for proc in compute_procs(node, gpu):
            out += ["\t\t\t<process_info>", _x("gpu_instance_id", "N/A", 4), _x("compute_instance_id", "N/A", 4),
                    _x("pid", proc.pid, 4), _x("type", "C", 4), _x("process_name", proc.argv[0], 4),
                    _x("used_memory", "1542 MiB", 4), "\t\t\t</process_info>"]
        out += ["\t\t</processes>", "\t\t<accounted_processes>", "\t\t</accounted_processes>",
                "\t\t<capabilities>", _x("egm", "disabled", 3), "\t\t</capabilities>", "\t</gpu>", ""]
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"


def _field(node: Node, gpu: Gpu, name: str, now: float) -> tuple[str, str] | None:
    """(value, unit) of one --query-gpu field, or None if nvidia-smi does not know the field."""
    table_ = {
        "index": str(gpu.index), "count": str(len(node.gpus)), "timestamp": time.strftime(
            "%Y/%m/%d %H:%M:%S.000", time.gmtime(now)),
        "name": gpu.name, "gpu_name": gpu.name, "serial": gpu.serial, "gpu_serial": gpu.serial,
        "uuid": gpu.uuid, "gpu_uuid": gpu.uuid, "driver_version": node.driver, "vbios_version": "96.00.99.00.01",
        "pci.bus_id": gpu.bus_id, "gpu_bus_id": gpu.bus_id, "pci.domain": "0x0000",
        "pci.bus": "0x" + gpu.bus_id.split(":")[1], "pci.device_id": DEVICE_IDS.get(gpu.name, ("0x233010DE",))[0],
        "persistence_mode": "Enabled" if gpu.persistence else "Disabled",
        "pstate": "P0", "temperature.gpu": str(gpu.temp), "compute_mode": "Default",
        "fabric.state": gpu.fabric_state, "fabric.status": gpu.fabric_status,
        "fabric.cliqueId": gpu.clique_id, "fabric.clusterUuid": gpu.cluster_uuid,
        "fabric.health.summary": gpu.health_summary, "mig.mode.current": gpu.mig_current,
        "mig.mode.pending": gpu.mig_pending, "gpu_recovery_action": gpu.recovery_action,
    }
    if name in table_:
        return table_[name], ""
    for health in ("bandwidth", "route_recovery_in_progress", "route_unhealthy", "access_timeout_recovery",
                   "incorrect_configuration", "partition_assigned"):
        if name == f"fabric.health.{health}":
            return "N/A", ""
    units = {"memory.total": (str(gpu.mem_total), "MiB"), "memory.used": (str(used_mib(node, gpu)), "MiB"),
             "memory.free": (str(gpu.mem_total - 479 - used_mib(node, gpu)), "MiB"),
             "power.draw": (f"{gpu.power}.61", "W"), "power.limit": ("700.00", "W"),
             "utilization.gpu": ("0", "%"), "clocks.sm": ("345", "MHz")}
    return units.get(name)


def query_csv(node: Node, now: float, fields: list[str], fmt: set[str], gpus: list[Gpu]) -> tuple[int, str, str]:
    """``--query-gpu=FIELDS --format=csv[,noheader][,nounits]``: (exit, stdout, stderr)."""
    rows, header = [], []
    gpus = visible(gpus)
    for name in fields:
        if _field(node, node.gpus[0], name, now) is None if node.gpus else False:
            return 2, f'Field "{name}" is not a valid field to query.\n\n', ""
    for name in fields:
        found = _field(node, node.gpus[0], name, now) if node.gpus else None
        unit = found[1] if found else ""
        header.append(f"{name} [{unit}]" if unit and "nounits" not in fmt else name)
    for gpu in gpus:
        cells = []
        for name in fields:
            value, unit = _field(node, gpu, name, now) or ("[N/A]", "")  # every field was checked above
            cells.append(f"{value} {unit}" if unit and "nounits" not in fmt and value != "[N/A]" else value)
        rows.append(", ".join(cells))
    text = "" if "noheader" in fmt else ", ".join(header) + "\n"
    return 0, text + "".join(r + "\n" for r in rows), ""


def set_persistence(node: Node, enable: bool, gpus: list[Gpu]) -> str:
    """``nvidia-smi -pm 0|1``: the per-GPU lines and ``All done.``"""
    out = []
    for gpu in gpus:
        word = "Enabled" if enable else "Disabled"
        if gpu.persistence == enable:
            out.append(f"Persistence mode is already {word} for GPU {gpu.bus_id}.")
        else:
            out.append(f"{word} persistence mode for GPU {gpu.bus_id}.")
        gpu.persistence = enable
    for proc in node.alive("persistenced"):
        dev = [f"/dev/nvidia{g.index}" for g in node.gpus if g.persistence]
        proc.devices = dev + (["/dev/nvidiactl"] if dev else [])
    return "\n".join(out + ["All done."]) + "\n"
