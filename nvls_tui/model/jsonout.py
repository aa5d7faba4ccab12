"""The JSON shapes of contract.md, built from the model. Pure.

Scripts rely on these names: add fields freely, never rename or drop one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nvls_tui.model import Finding, GpuState, Holder, KernelEvent, NodeState
from nvls_tui.model.kube import KubeNode
from nvls_tui.model.node import Diagnosis, FabricHealth
from nvls_tui.model.scheduler import SchedulerState

FM_UNIT = "nvidia-fabricmanager"
# FabricHealth's fields, all text or None: the dict is built from them directly (dataclasses.asdict deep-copied
# each of 8 GPUs' 7 words on every node's JSON, a tenth of a cold node's rendering).
_HEALTH_FIELDS = tuple(f.name for f in dataclasses.fields(FabricHealth))


def gpu_json(gpu: GpuState) -> dict[str, Any]:
    """One GPU as contract.md's ``gpus[]`` entry."""
    fabric = gpu.fabric
    return {
        "index": gpu.index,
        "bus_id": gpu.bus_id,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "persistence_mode": gpu.persistence_mode,
        "recovery_action": gpu.recovery_action,
        # nvidia-smi's words; null where it printed N/A or was not asked (unknown, not "no change").
        "mig": {"current": gpu.mig_current, "pending": gpu.mig_pending},
        "fabric": {
            "state": fabric.state,
            "status": fabric.status,
            "clique_id": fabric.clique_id,
            "cluster_uuid": fabric.cluster_uuid,
            "health": {name: getattr(fabric.health, name) for name in _HEALTH_FIELDS} if fabric.health else {},
        },
    }


def pod_json(holder: Holder) -> dict[str, Any] | None:
    """A holder's ``pod`` where a cluster is configured: its uid (from the cgroup) and, where the cluster's pods
    list has that uid, its namespace, name, container and owner (null each where not known); null for a
    process in no pod."""
    if not holder.pod:
        return None
    ref = holder.pod_ref
    return {"uid": holder.pod.removeprefix("pod"), "namespace": ref.namespace if ref else None,
            "name": ref.name if ref else None, "container": ref.container if ref else None,
            "owner_kind": ref.owner_kind if ref else None, "owner_name": ref.owner_name if ref else None}


def holder_json(holder: Holder, cluster: bool = False) -> dict[str, Any]:
    """One holder as contract.md's ``holders[]`` entry (``cluster``: a Kubernetes cluster is configured, so
    ``pod`` is the pod as the cluster names it; else the cgroup's ``pod<uid>`` as before)."""
    return {
        "pid": holder.pid,
        "user": holder.user,
        "command": holder.command,
        "kind": str(holder.kind),
        "devices": list(holder.devices),
        "unit": holder.unit,
        "pod": pod_json(holder) if cluster else holder.pod,
        "start_time": holder.start_time,
        "ppid": holder.ppid,
        "job": ({"id": holder.job.id, "user": holder.job.user, "name": holder.job.name}
                if holder.job is not None else None),
    }


def scheduler_json(scheduler: SchedulerState | None) -> dict[str, Any] | None:
    """contract.md's ``scheduler`` (null without a scheduler)."""
    if scheduler is None:
        return None
    return {"kind": scheduler.kind, "node": scheduler.node, "state": scheduler.state, "reason": scheduler.reason,
            "jobs": [{"id": j.id, "user": j.user, "name": j.name, "end": j.end} for j in scheduler.jobs],
            "error": scheduler.error}


def k8s_json(node: KubeNode | None) -> dict[str, Any] | None:
    """contract.md's ``k8s`` (null without a cluster): the node name, ready and cordoned (null where unknown),
    the GPU Operator's ``nvidia.com/gpu.deploy.*`` labels and their values, its taints, whether the cluster
    has the node at all, and why it could not be read."""
    if node is None:
        return None
    return {"node": node.node, "found": node.found, "ready": node.ready, "cordoned": node.cordoned,
            "labels": node.operand_labels,
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints],
            "error": node.error}


def kernel_event_json(event: KernelEvent) -> dict[str, Any]:
    """One kernel event: code, line, and Xid number/PCI address where there is one."""
    return {"code": event.code, "line": event.line, "xid": event.xid, "pci": event.pci,
            "timestamp": event.timestamp}


def finding_json(finding: Finding) -> dict[str, Any]:
    """One finding: code, severity, message (and the GPU index when it is about one GPU)."""
    out: dict[str, Any] = {"code": finding.code, "severity": str(finding.severity), "message": finding.message}
    if finding.gpu is not None:
        out["gpu"] = finding.gpu
    if finding.section is not None:
        out["section"] = finding.section
        out["reason"] = finding.reason
    if finding.action is not None or finding.next_move is not None:
        out["action"] = finding.action
        out["next_move"] = finding.next_move
    return out


def unit_key(name: str) -> str:
    """``kubelet.service`` -> ``kubelet``; other suffixes (``.timer``) are kept."""
    return name.removesuffix(".service")


def smoke_json(state: NodeState, diagnosis: Diagnosis) -> dict[str, Any] | None:
    """The last smoke record, and whether it dates the node's kernel lines (``trusted``; ``distrust``: why not)."""
    if state.smoke is None:
        return None
    passed = state.smoke.passed
    distrust = diagnosis.smoke_distrust if passed else "the smoke test did not pass"
    return {**dataclasses.asdict(state.smoke), "trusted": passed and distrust is None, "distrust": distrust}


def restarters_json(state: NodeState) -> dict[str, Any] | None:
    """What restarts nvidia-* units behind the operator (FM_RESTARTER); null when neither section was read.

    ``needrestart``: its mode and the nvidia-* units it picks where it is installed, false where it is not,
    null where its configuration could not be read; ``unattended_upgrades`` likewise true, false or null.
    """
    found = state.restarters
    if found is None:
        return None
    fm = state.service(FM_UNIT)
    return {"needrestart": {"mode": found.needrestart_mode, "units": list(found.needrestart_units),
                            "uncertain": list(found.uncertain)} if found.needrestart else found.needrestart,
            "unattended_upgrades": found.unattended_upgrades,
            "fm_restarts": fm.restarts if fm is not None else None}


def node_json(state: NodeState, diagnosis: Diagnosis) -> dict[str, Any]:
    """One node as contract.md's ``check --json`` entry."""
    fm = state.service(FM_UNIT)
    return {
        "host": state.host,
        "reachable": state.reachable,
        "simulated": state.simulated,
        "platform": str(state.platform),
        "driver": state.driver,
        "fabric_manager": {
            "unit": (fm.active if fm.exists else "not-found") if fm else None,
            "version": state.fm_version,
            # Where FM runs (host | container | none | unknown; null when not told) and, in a container, the
            # GPU Operator's driver pod: its name where the node says it, its uid from the cgroup.
            "location": state.fm_place.location if state.fm_place else None,
            "pod": ({"name": state.fm_place.pod, "uid": state.fm_place.pod_uid, "pid": state.fm_place.pid}
                    if state.fm_place and state.fm_place.in_container else None),
        },
        "gpus": [gpu_json(g) for g in state.gpus],
        "nvswitches": [{"device": s.device, "bus_id": s.bus_id} for s in state.nvswitches],
        # The GPUs lspci lists (nvidia-smi's bus id form); null when lspci was not read.
        "pci_gpus": list(state.pci_gpus) if state.pci_gpus is not None else None,
        "services": {unit_key(s.name): (s.active if s.exists else "not-found") for s in state.services},
        "holders": [holder_json(h, state.k8s is not None) for h in state.holders],
        "kernel_events": [kernel_event_json(e) for e in state.kernel_events],
        # From when the kernel lines cover this boot (journal and/or ring buffer); null where not told.
        "kernel_coverage": ({"since": state.kernel_coverage.since, "sources": list(state.kernel_coverage.sources),
                             "complete_since_boot": state.kernel_coverage.complete_since_boot,
                             "journal_since": state.kernel_coverage.journal_since,
                             "notes": list(state.kernel_coverage.notes)}
                            if state.kernel_coverage is not None else None),
        "smoke": smoke_json(state, diagnosis),
        "restarters": restarters_json(state),
        "repair_record": state.repair_record,
        "error": state.error,
        "missing": [{"section": m.section, "reason": m.reason, "detail": m.detail} for m in state.missing],
        "scheduler": scheduler_json(state.scheduler),
        "k8s": k8s_json(state.k8s),
        "findings": [finding_json(f) for f in diagnosis.findings],
        "verdict": str(diagnosis.verdict),
    }
