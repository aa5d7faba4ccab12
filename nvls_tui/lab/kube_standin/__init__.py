"""A stand-in Kubernetes API server for tests and the lab (no kube-apiserver can be installed here).

It serves the subset of the Kubernetes API that nvls-tui's client, the real ``kubectl``, uses:
discovery, nodes (get, list, patch), pods (list by field and label selector, get, delete, watch),
the Eviction subresource with PodDisruptionBudget refusals, and PodDisruptionBudgets. A small
controller plays the GPU Operator's DaemonSets and the kubelet: a paused
``nvidia.com/gpu.deploy.<operand>`` label deletes that operand's pod on the node, ``true`` (or unset)
brings a new one back, and a deleted pod's processes are ended through a callback before the pod
object goes. docs/kubernetes.md says where it differs from a real cluster.

Only the standard library is imported: tests, the lab and ``python -m nvls_tui.lab.kube_standin`` start it.
"""

from nvls_tui.lab.kube_standin.errors import ApiError
from nvls_tui.lab.kube_standin.fixture import FixtureError, load_state, load_state_file
from nvls_tui.lab.kube_standin.harness import StandIn, running
from nvls_tui.lab.kube_standin.store import Store

__all__ = ["ApiError", "FixtureError", "StandIn", "Store", "load_state", "load_state_file", "running"]
