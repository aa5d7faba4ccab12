"""What a Kubernetes cluster says about a node: ready, cordoned, the GPU Operator's labels, the pods on it.

Immutable and standard-library only, like the rest of the model. ``None`` on a NodeState means no cluster
is configured (everything works as without one). A cluster that was configured but could not be read is a
:class:`KubeNode` with ``error`` set and ``ready``/``cordoned`` None: unknown, never "not cordoned".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The GPU Operator's operand switches: ``nvidia.com/gpu.deploy.<operand>`` = true | false | paused-for-...
OPERAND_LABEL_PREFIX = "nvidia.com/gpu.deploy."


@dataclass(frozen=True, slots=True)
class KubeContainer:
    """One container of a pod, and the runtime's id of it where the pod's status says it (``containerd://ID``).

    Attributes:
        name: the container's name in the pod spec.
        container_id: the runtime's id without its ``runtime://`` prefix (what the cgroup path carries);
            None where the status has none yet (not started).
    """

    name: str
    container_id: str | None = None


@dataclass(frozen=True, slots=True)
class KubePod:
    """One pod bound to a node, as ``kubectl get pods -o json`` says it.

    Attributes:
        namespace, name, uid: the pod's identity (the uid is what a process's cgroup names).
        node: ``spec.nodeName``.
        phase: ``status.phase`` (``Running``, ``Pending``, ...), None where not said.
        containers: its containers (init containers too: they may hold a GPU while they run).
        owner_kind, owner_name: the controlling owner (``ownerReferences`` with ``controller: true``, else
            the first one): ``DaemonSet``/``nvidia-dcgm-exporter``, ``ReplicaSet``/``vllm-7c9f``; None for a
            bare pod.
        labels: the pod's labels, as (key, value) pairs.
    """

    namespace: str
    name: str
    uid: str
    node: str | None = None
    phase: str | None = None
    containers: tuple[KubeContainer, ...] = ()
    owner_kind: str | None = None
    owner_name: str | None = None
    labels: tuple[tuple[str, str], ...] = ()

    def container_of(self, container_id: str | None) -> str | None:
        """The name of the container whose runtime id is ``container_id``; the only container's name where
        the pod has one and no id is known; else None (never a guess between several)."""
        if container_id:
            found = next((c.name for c in self.containers if c.container_id == container_id), None)
            if found is not None:
                return found
        return self.containers[0].name if len(self.containers) == 1 else None


@dataclass(frozen=True, slots=True)
class PodRef:
    """A holder's pod as the cluster names it (the holder's cgroup gave only the pod's uid).

    Attributes:
        namespace, name: the pod.
        container: the container that holds the devices (None where it could not be told).
        owner_kind, owner_name: the pod's controlling owner (a GPU Operator DaemonSet, a workload's
            ReplicaSet/StatefulSet/Job, ...).
    """

    namespace: str
    name: str
    container: str | None = None
    owner_kind: str | None = None
    owner_name: str | None = None


@dataclass(frozen=True, slots=True)
class Taint:
    """One node taint (``key=value:effect``)."""

    key: str
    value: str | None
    effect: str


@dataclass(frozen=True, slots=True)
class KubeNode:
    """One target's node as the Kubernetes API sees it.

    Attributes:
        node: the Kubernetes node name (the target's short host name unless mapped).
        found: False when the cluster answered and has no such node (then nothing else is known of it).
        ready: the ``Ready`` condition is ``True`` (False for ``False``/``Unknown``); None when not read.
        cordoned: ``spec.unschedulable``; None when not read.
        labels: the node's labels, as (key, value) pairs, sorted.
        annotations: the node's annotations, as (key, value) pairs, sorted.
        taints: its taints.
        pods: the pods bound to it (every namespace).
        error: why the cluster (or this node's pods) could not be read; ``ready``/``cordoned`` are None
            where the node itself was not read (its pods may have failed alone).
        reason: with ``error``, the missing-evidence word (``failed``, ``timed out``, ``tool missing``,
            ``unparseable``, ``over the size cap``).
        boot_id, machine_id, system_uuid: ``status.nodeInfo``'s ``bootID``, ``machineID``, ``systemUUID``: what the
            node's kubelet read from its machine (``/proc/sys/kernel/random/boot_id``, ``/etc/machine-id``, the
            DMI product UUID), as written; None where empty or absent. A repair proves with them that the Node
            is the machine it changes (runbook/kube_identity.py).
        resource_version: ``metadata.resourceVersion`` of the read (a write conditioned on it is refused with 409
            when the node changed since); None where not said. Not compared: it moves with every write of the
            node, kubelet's status updates included, and says nothing a screen shows.
    """

    node: str
    found: bool = True
    ready: bool | None = None
    cordoned: bool | None = None
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    taints: tuple[Taint, ...] = ()
    pods: tuple[KubePod, ...] = ()
    error: str | None = None
    reason: str | None = None
    boot_id: str | None = None
    machine_id: str | None = None
    system_uuid: str | None = None
    resource_version: str | None = field(default=None, compare=False)
    # Every condition the node reports, as (type, status, reason) in the API's order (MemoryPressure, DiskPressure,
    # PIDPressure, Ready ...): the describe view lists them; ``ready`` is the one a repair decides on.
    conditions: tuple[tuple[str, str, str | None], ...] = ()

    @property
    def known(self) -> bool:
        """The node and its pods were read (a node the cluster does not have is known too: absent)."""
        return self.error is None

    @property
    def operand_labels(self) -> dict[str, str]:
        """The GPU Operator's ``nvidia.com/gpu.deploy.*`` labels and their values (sorted by key)."""
        return {k: v for k, v in self.labels if k.startswith(OPERAND_LABEL_PREFIX)}

    def label(self, key: str) -> str | None:
        """The value of label ``key``, or None where the node does not carry it."""
        return next((v for k, v in self.labels if k == key), None)

    def pod_by_uid(self, uid: str) -> KubePod | None:
        """The pod on this node whose uid is ``uid``."""
        return next((p for p in self.pods if p.uid == uid), None)

    @property
    def word(self) -> str:
        """The grid's word: ``Ready``, ``NotReady``, ``cordoned`` (with ``,NotReady`` where both), ``absent``,
        or ``?`` where the node could not be read."""
        if not self.found:
            return "absent"
        if self.ready is None or self.cordoned is None:
            return "?"
        if self.cordoned:
            return "cordoned" if self.ready else "cordoned,NotReady"
        return "Ready" if self.ready else "NotReady"


@dataclass(frozen=True, slots=True)
class KubeEvent:
    """One event the cluster recorded about an object (``kubectl get events -o json``'s core/v1 Event).

    Attributes:
        type: ``Normal`` or ``Warning`` (None where not said).
        reason: the short CamelCase reason (``Rebooted``, ``NodeNotReady``, ``NodeNotSchedulable``).
        message: what the reporting component wrote (anyone's text: cleaned when read, one line when shown).
        last_seen: when it was last seen, epoch seconds (``lastTimestamp``, else ``eventTime``, else
            ``firstTimestamp``, else the object's ``creationTimestamp``); None where none of them is said.
        object_kind, object_name: ``involvedObject``'s kind and name (a node's events name the node).
        count: how many times it was seen (``count``, else ``series.count``); None where not said.
    """

    type: str | None
    reason: str | None
    message: str | None
    last_seen: float | None
    object_kind: str | None = None
    object_name: str | None = None
    count: int | None = None


@dataclass(frozen=True, slots=True)
class NodeEvents:
    """A node's events as read from its cluster when the describe view opened, or why they could not be read.

    Attributes:
        events: the node's events, oldest first (empty with ``error`` set means unknown, never "no events").
        error: why they could not be read (one sentence); None where they were.
        read_at: when they were read, on the console's clock (ages are counted from it).
    """

    events: tuple[KubeEvent, ...] = ()
    error: str | None = None
    read_at: float = 0.0


__all__ = ["OPERAND_LABEL_PREFIX", "KubeContainer", "KubeEvent", "KubeNode", "KubePod", "NodeEvents", "PodRef", "Taint"]
