"""The NVLink fabric as the driver and Fabric Manager see it: resets, FM start, NVLS attempts.

The rules come from the incident write-up and domain.md:
- FM that dies or stops leaves the driver's cached fabric state stale (``needs_reset``); the GPUs keep
  reporting what they last reported (Completed/Success) until a reset.
- FM started while that stale state is there, or while processes hold the GPUs, registers the GPUs
  (Completed/Success) yet NVLS multicast binds fail: the fabric is "out of sync".
- ``nvidia-smi -r`` is refused while anything holds a /dev/nvidia* file or persistence mode is on;
  otherwise it resets every GPU and NVSwitch: fabric ``Not Started`` until FM registers them again.
"""

from __future__ import annotations

from nvls_tui.sim.state import Node

REG_NOT_STARTED = 1.0  # after FM start: Not Started -> In Progress
REG_COMPLETE = 5.0  # after FM start: In Progress -> Completed

OUT_OF_SYNC_LINE = (
    "NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync "
    "[NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from "
    "_memMulticastFabricGpuAttach(pMulticastFabricDesc, pGpu) @ mem_multicast_fabric.c:3119"
)
NOT_PRESENT_LINE = (
    "NVRM: nvCheckOkFailedNoLog: Check failed: Fabric Manager is not loaded "
    "[NV_ERR_FABRIC_MANAGER_NOT_PRESENT] (0x0000007A) returned from "
    "_memMulticastFabricDescriptorAlloc(pMulticastFabricDesc, pAllocParams) @ mem_multicast_fabric.c:3039"
)

RESET_NOTE = (
    "Note: The operation has successfully reset all GPUs and NVSwitches. If the services, such as "
    "nvidia-fabricmanager, which manage or monitor NVSwitches are running, they might have been affected "
    "by this operation. Please refer respective service status or logs for details."
)
IN_USE_ONE_LINE = (
    "{n} {devices} currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
    "application, graphics application such as an X server, or a monitoring application such as another "
    "instance of nvidia-smi). Please first kill all processes using {these} and all compute applications "
    "running in the system."
)
IN_USE_WRAPPED = (
    "{n} {devices} currently being used by one or more other processes (e.g. Fabric\n"
    "Manager, CUDA application, graphics application such as an X server, or a\n"
    "monitoring application such as another instance of nvidia-smi). Please first kill\n"
    "all processes using {these} and all compute applications running in the\n"
    "system."
)


def fm_active(node: Node) -> bool:
    """True when the FM unit is active (running), or FM runs in the GPU Operator's driver pod (no unit)."""
    unit = node.units.get("nvidia-fabricmanager.service")
    if unit is None:
        return any(p.role == "pod:nvidia-driver" for p in node.procs.values())
    return unit.active == "active"


def gpus_held(node: Node, exclude_roles: tuple[str, ...] = ()) -> bool:
    """True when some process (other than ``exclude_roles``) holds a GPU device file."""
    gpu_files = {f"/dev/nvidia{g.index}" for g in node.gpus}
    return any(gpu_files & set(p.devices) for p in node.procs.values() if p.role not in exclude_roles)


def reset_gpus(node: Node, now: float, index: int | None = None) -> tuple[int, str, str]:
    """``nvidia-smi -r [-i N]``: (exit status, stdout, stderr)."""
    targets = [g for g in node.gpus if index is None or g.index == index]
    if not targets:
        return 6, "", f"No devices were found matching {index}\n"  # nvidia-smi's "not found" (6)
    held = node.holders()
    pm = [g for g in targets if g.persistence]
    if held or pm:
        gpu_files = {f"/dev/nvidia{g.index}" for g in targets}
        busy = [g for g in targets if f"/dev/nvidia{g.index}" in held]
        n = len(busy) or len(targets)
        if held and not (gpu_files & set(held)):
            n = len(targets)  # only control/NVSwitch files held: every device counts as in use
        plural = n != 1
        words = {"n": n, "devices": "devices are" if plural else "device is",
                 "these": "these devices" if plural else "this device"}
        if pm:
            lines = ["The following GPUs could not be reset:"]
            lines += [f"  GPU {g.bus_id}: In use by another client" for g in targets if g.persistence or g in busy]
            n = len(lines) - 1
            words.update(n=n, devices="devices are" if n != 1 else "device is",
                         these="these devices" if n != 1 else "this device")
            text = "\n".join(lines) + "\n\n" + IN_USE_WRAPPED.format(**words) + "\n"
        else:
            text = IN_USE_ONE_LINE.format(**words) + "\n"
        return 255, text, ""
    out = [f"GPU {g.bus_id} was successfully reset." for g in targets]
    for g in targets:
        pci = g.bus_id[4:].lower()
        node.log_kernel(now, f"NVRM: GPU at PCI:{pci[:-2]}: {g.uuid}")
        g.mig_current = g.mig_pending  # a reset commits a pending MIG mode change
        if node.platform == "hgx-h100":
            g.fabric_state, g.fabric_status = "Not Started", "N/A"
    if index is None and node.switches:
        out.append(RESET_NOTE)
        node.needs_reset = node.out_of_sync = False
        node.reg_in_progress_at = node.reg_complete_at = None
        for i, bus in enumerate(node.switches):
            node.log_kernel(now, f"nvidia-nvswitch{i}: Reset of device 0000:{bus.lower()}:00.0 completed")
    out.append("All done.")
    return 0, "\n".join(out) + "\n", ""


def fm_started(node: Node, now: float) -> None:
    """FM came up: decide whether NVLS will work, and schedule the GPUs' registration."""
    if node.needs_reset or gpus_held(node, exclude_roles=("fm",)):
        node.out_of_sync = True
    node.needs_reset = False
    if node.stuck_in_progress:
        for gpu in node.gpus:
            gpu.fabric_state, gpu.fabric_status = "In Progress", "N/A"
        node.reg_in_progress_at = node.reg_complete_at = None
        return
    if any(g.fabric_state != "Completed" for g in node.gpus):
        for gpu in node.gpus:
            gpu.fabric_state, gpu.fabric_status = "Not Started", "N/A"
        node.reg_in_progress_at = now + REG_NOT_STARTED
        node.reg_complete_at = now + REG_COMPLETE


def nvls_attempt(node: Node, now: float) -> bool:
    """One NCCL NVLS multicast bind (the smoke test). True when it works; logs what the kernel would."""
    node.smoke_runs += 1
    if node.platform != "hgx-h100":
        return all(g.fabric_state == "Completed" and g.fabric_status == "Success" for g in node.gpus)
    if not fm_active(node):
        node.log_kernel(now, NOT_PRESENT_LINE)
        return False
    if any(g.fabric_state != "Completed" or g.fabric_status != "Success" for g in node.gpus):
        return False
    if node.out_of_sync or node.needs_reset:
        node.log_kernel(now, OUT_OF_SYNC_LINE)
        return False
    if node.transient_802 > 0:
        node.transient_802 -= 1
        return False
    return True
