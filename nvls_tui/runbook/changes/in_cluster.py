"""The cluster's changes: kubectl's writes to the Kubernetes API, made from the bastion (cordon and uncordon, the
GPU Operator's operand labels paused and put back, the annotation a kept cordon carries, evictions, the driver
pod's deletion), the remarks a plan makes of what it leaves in the cluster, and the one reader of an audited
kubectl argv back into its change (for the report)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from nvls_tui.kube.client import global_flags_end
from nvls_tui.runbook.changes.base import CLUSTER, Argv, Change, Command
from nvls_tui.runbook.changes.shown import Remark

#: The value a paused operand label gets (the GPU Operator's own managers use paused-for-mig-change and
#: paused-for-driver-upgrade the same way).
PAUSED = "paused-for-nvls-repair"
#: The annotation a cordon kept after a failed or interrupted repair carries: the step it stopped at.
STOPPED_AT = "nvls-tui/repair-stopped-at"
#: What a plan shows for the resourceVersion a label write is conditioned on: the node's, read right before the
#: write (each write and the cordon move it), so known only when the run runs.
READ_AT_RUN_TIME = "<read at run time>"
#: What a plan shows for the file an eviction's body is in (a temporary file the run writes).
EVICTION_FILE = "EVICTION.json"


class InCluster(Change):
    """A change to the Kubernetes API, made from the bastion with kubectl; ``kubectl`` (a field of each) is the
    argv that reaches the cluster (the binary and its global flags: ``Kubectl.argv()``)."""

    __slots__ = ()
    where: ClassVar[str] = CLUSTER
    privileged: ClassVar[bool] = False  # kubectl runs on the bastion, as the operator
    kubectl: Argv

    def call(self, *args: str) -> Command:
        """``kubectl GLOBAL-FLAGS ARGS``."""
        return Command((*self.kubectl, *args))

    def args(self) -> Argv:
        """The words after kubectl's global flags (``("cordon", "gpu06")``)."""
        return self.argv()[len(self.kubectl):]


@dataclass(frozen=True, slots=True)
class Cordon(InCluster):
    """``kubectl cordon NODE``: no new pod lands on the node while it is repaired."""

    node: str
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        return (self.call("cordon", self.node),)

    @property
    def why(self) -> str:
        return f"no new pod lands on {self.node} while it is repaired"

    @property
    def note(self) -> str:
        return "after the record: no new pod lands while the node is repaired"

    def undo(self) -> Change | None:
        return Uncordon(self.node, self.kubectl)


@dataclass(frozen=True, slots=True)
class Uncordon(InCluster):
    """``kubectl uncordon NODE``: only a cordon this repair (or an earlier nvls-tui repair) set, after a pass."""

    node: str
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        return (self.call("uncordon", self.node),)

    @property
    def why(self) -> str:
        return f"{self.node} is repaired (the smoke test passed): back in service"

    @property
    def note(self) -> str:
        return "only after a passing smoke test"

    def undo(self) -> Change | None:
        return Cordon(self.node, self.kubectl)


def label_patch(key: str, value: str | None, resource_version: str) -> str:
    """The JSON merge patch (RFC 7386) of one conditioned label write: the label (``null`` removes it) and the
    resourceVersion the API holds the write to (a precondition: 409 Conflict where the node has moved on;
    kubernetes/kubernetes#63104)."""
    return json.dumps({"metadata": {"labels": {key: value}, "resourceVersion": resource_version}},
                      separators=(",", ":"))


def read_label_patch(body: str) -> tuple[str, str | None, str | None] | None:
    """(key, value, resourceVersion) of a :func:`label_patch` body; None where it is not one label's patch."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    meta = data.get("metadata") if isinstance(data, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if not isinstance(labels, dict) or len(labels) != 1:
        return None
    ((key, value),) = labels.items()
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    if not isinstance(key, str) or not (value is None or isinstance(value, str)) or not isinstance(rv, str | None):
        return None
    return key, value, rv


@dataclass(frozen=True, slots=True)
class SetOperandLabel(InCluster):
    """A GPU Operator operand label set to ``value`` or removed (``value`` None: it was unset before).

    A conditioned write is a JSON merge patch (:func:`label_patch`) that carries the node's ``resource_version``
    as the decision saw it (the API refuses it with 409 Conflict where anyone wrote the node since, as it does
    ``kubectl label --resource-version``, which sends the same PATCH body) and prints the server's answer
    (``-o json``: the node after the write, the next write's decision is made on it, no read in between). The
    run fills the resourceVersion in; the plan, which cannot know it, shows :data:`READ_AT_RUN_TIME`, and neither
    equality nor :meth:`planned` looks at it. An unconditioned write (``kubectl label --overwrite KEY=VALUE`` or
    ``KEY-``) is the restore's where the node could not be read. The label stays in the argv's last word.
    """

    node: str
    key: str
    value: str | None
    before: str | None
    kubectl: Argv
    resource_version: str | None = field(default=None, compare=False)
    conditioned: bool = True

    def commands(self) -> tuple[Command, ...]:
        if self.conditioned:
            body = label_patch(self.key, self.value, self.resource_version or READ_AT_RUN_TIME)
            return (self.call("patch", "node", self.node, "--type=merge", "-o", "json", "-p", body),)
        if self.value is None:
            return (self.call("label", "node", self.node, f"{self.key}-"),)
        return (self.call("label", "node", self.node, "--overwrite", f"{self.key}={self.value}"),)

    @property
    def pauses(self) -> bool:
        """The write pauses the operand (the repair's quiesce); else it puts the label back (the restore)."""
        return self.value == PAUSED

    @property
    def why(self) -> str:
        operand = self.key.rsplit(".", 1)[-1]
        if self.pauses:
            return f"the GPU Operator deletes {operand}'s pod on {self.node}: it opens the GPUs"
        return f"{operand} was paused for the repair: its label as it was ({self.value or 'unset'})"

    @property
    def note(self) -> str:
        if self.pauses:
            return f"was {self.before or 'unset'}; where it still reads so (a 409 Conflict: read and decided again)"
        return "where it still reads paused" if self.conditioned else "the node could not be read: put back as is"

    def undo(self) -> Change | None:
        return SetOperandLabel(self.node, self.key, self.before, self.value, self.kubectl)

    def planned(self) -> Change:
        return dataclasses.replace(self, resource_version=None)


@dataclass(frozen=True, slots=True)
class Annotate(InCluster):
    """The annotation :data:`STOPPED_AT` that names the step a repair stopped at on the cordon it keeps
    (``step`` None: removed, once a passing repair lifts that cordon)."""

    node: str
    step: str | None
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        if self.step is None:
            return (self.call("annotate", "node", self.node, f"{STOPPED_AT}-"),)
        return (self.call("annotate", "node", self.node, f"{STOPPED_AT}={self.step}", "--overwrite"),)

    @property
    def why(self) -> str:
        if self.step is None:
            return f"the cordon an earlier repair kept on {self.node} is lifted: its note goes with it"
        return f"the repair stopped at {self.step}: {self.node} stays cordoned, and says why"

    def undo(self) -> Change | None:
        return Annotate(self.node, None, self.kubectl) if self.step is not None else None


def eviction_body(namespace: str, pod: str) -> str:
    """The Eviction the API is sent for one pod (policy/v1)."""
    return json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": pod, "namespace": namespace}}, sort_keys=True)


@dataclass(frozen=True, slots=True)
class EvictPod(InCluster):
    """``kubectl create --raw .../pods/P/eviction -f FILE``: the Eviction subresource (disruption budgets are
    honoured; nvls-tui never force-deletes). ``body_file`` is the temporary file the run writes :attr:`body` to:
    the plan shows :data:`EVICTION_FILE`, and neither equality nor :meth:`planned` looks at it. How a disruption
    budget's refusal is waited on is the plan's next entry (``kube_waits.budget_wait``)."""

    namespace: str
    pod: str
    kubectl: Argv
    body_file: str | None = field(default=None, compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (self.call("create", "--raw", f"/api/v1/namespaces/{self.namespace}/pods/{self.pod}/eviction",
                          "-f", self.body_file or EVICTION_FILE),)

    @property
    def name(self) -> str:
        """``namespace/pod``."""
        return f"{self.namespace}/{self.pod}"

    @property
    def body(self) -> str:
        """The Eviction sent (the file's content)."""
        return eviction_body(self.namespace, self.pod)

    @property
    def why(self) -> str:
        return f"{self.name} holds a GPU: it leaves the node through the Eviction API"

    @property
    def note(self) -> str:
        return self.body

    def planned(self) -> Change:
        return dataclasses.replace(self, body_file=None)


@dataclass(frozen=True, slots=True)
class DeleteDriverPod(InCluster):
    """``kubectl delete pod -n NS P --wait=false``: the GPU Operator's driver pod, where Fabric Manager runs in it
    (graceful: its DaemonSet makes a new one, which loads the driver again: that is the reset and FM's start)."""

    namespace: str
    pod: str
    kubectl: Argv

    def commands(self) -> tuple[Command, ...]:
        return (self.call("delete", "pod", "-n", self.namespace, self.pod, "--wait=false"),)

    @property
    def name(self) -> str:
        """``namespace/pod``."""
        return f"{self.namespace}/{self.pod}"

    @property
    def why(self) -> str:
        return "Fabric Manager runs in the driver pod: its restart reloads the driver (GPUs and NVSwitches)"

    @property
    def note(self) -> str:
        return "FM runs in the driver pod: its restart reloads the driver (GPUs and NVSwitches)"


def read_cluster_change(argv: Sequence[str]) -> InCluster | None:
    """The cluster change an audited kubectl argv made (the inverse of :meth:`InCluster.commands`, for the
    report, whose audit log holds argvs); None for a read, a wait, or a command that is not kubectl.

    What the argv does not say is left at its default: a label's value before (``before`` None), an eviction's
    body file as the argv names it.
    """
    if not argv or os.path.basename(argv[0]) != "kubectl":
        return None
    at = global_flags_end(argv)
    kubectl, words = tuple(argv[:at]), list(argv[at:])
    match words:
        case ["cordon", node, *_]:
            return Cordon(node, kubectl)
        case ["uncordon", node, *_]:
            return Uncordon(node, kubectl)
        case ["label", "node", node, *rest] if rest:
            rv = next((w.split("=", 1)[1] for w in rest if w.startswith("--resource-version=")), None)
            key, is_set, value = rest[-1].partition("=")
            return SetOperandLabel(node, key if is_set else key.rstrip("-"), value if is_set else None, None,
                                   kubectl, resource_version=rv, conditioned=rv is not None)
        case ["patch", "node", node, *rest] if len(rest) >= 2 and rest[-2] == "-p":
            label = read_label_patch(rest[-1])
            if label is not None:
                return SetOperandLabel(node, label[0], label[1], None, kubectl, resource_version=label[2])
        case ["annotate", "node", node, said, *_] if said.startswith((f"{STOPPED_AT}=", f"{STOPPED_AT}-")):
            _, is_set, step = said.partition("=")
            return Annotate(node, step if is_set else None, kubectl)
        case ["create", "--raw", path, *rest]:
            bits = path.split("/")  # /api/v1/namespaces/NS/pods/P/eviction
            if len(bits) == 8 and bits[7] == "eviction":
                body = rest[rest.index("-f") + 1] if "-f" in rest[:-1] else None
                return EvictPod(bits[4], bits[6], kubectl, body_file=body)
        case ["delete", "pod", *rest] if "-n" in rest[:-1]:
            at_n = rest.index("-n")
            names = [w for w in rest[at_n + 2:] if not w.startswith("-")]
            if names:
                return DeleteDriverPod(rest[at_n + 1], names[0], kubectl)
    return None


# ---- what a plan says it leaves in the cluster ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CordonKept(Remark):
    """The node was cordoned before the repair: the repair makes no cordon, and lifts this one only where it is an
    earlier nvls-tui repair's (``inherited``: it carries :data:`STOPPED_AT`) and the repair passes."""

    node: str
    inherited: bool = False

    @property
    def text(self) -> str:
        return f"{self.node} is cordoned already: it is left so" + (" until a repair passes" if self.inherited else "")


@dataclass(frozen=True, slots=True)
class LabelKept(Remark):
    """An operand label the repair does not pause: it reads ``value``, not ``true`` (an administrator's)."""

    node: str
    key: str
    value: str

    @property
    def text(self) -> str:
        return f"{self.key}={self.value} left as it is (not true: an administrator's)"


__all__ = ["Annotate", "CordonKept", "Cordon", "DeleteDriverPod", "EVICTION_FILE", "EvictPod", "InCluster",
           "LabelKept", "PAUSED", "READ_AT_RUN_TIME", "STOPPED_AT", "SetOperandLabel", "Uncordon", "eviction_body",
           "label_patch", "read_cluster_change", "read_label_patch"]
