"""Is the Kubernetes Node this machine? Proven before any change to the cluster for a node.

A target's Node is found by name (its short host name, or the node map's), and names repeat across sites:
``gpu05.dc2`` with a kubeconfig whose context is dc1's cluster finds dc1's ``gpu05``, another machine, which a
repair would cordon, pause and (after a failure) leave cordoned. kubelet reports in the Node's
``status.nodeInfo`` what it read from its own machine; the machine is asked for the same files now:

=============  =====================================  ==========================================
nodeInfo       the machine's file                     its form
=============  =====================================  ==========================================
``bootID``     ``/proc/sys/kernel/random/boot_id``    dashed UUID, lower case
``machineID``  ``/etc/machine-id``                    32 hex digits, no dashes
``systemUUID`` ``/sys/class/dmi/id/product_uuid``     dashed UUID, often upper case; root only
=============  =====================================  ==========================================

They are compared without case and dashes. Any id both sides have that differs refuses, naming it and both
values; no id both sides have refuses too (a guard that cannot see refuses). A value that is not 32 hex digits,
or is one digit over and over (a board's placeholder UUID, ``FFFFFFFF-FFFF-...``), is no id: it tells no machine
from another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from nvls_tui.kube.client import Kubectl
from nvls_tui.model.kube import KubeNode
from nvls_tui.runbook.context import NodeContext

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
MACHINE_ID_FILE = "/etc/machine-id"
PRODUCT_UUID_FILE = "/sys/class/dmi/id/product_uuid"
#: (nodeInfo's field, the machine's file, whether reading it needs root), in the order they are read.
IDS = (("bootID", BOOT_ID_FILE, False), ("machineID", MACHINE_ID_FILE, False),
       ("systemUUID", PRODUCT_UUID_FILE, True))

_HEX32 = re.compile(r"[0-9a-f]{32}")


def normal(value: str | None) -> str | None:
    """An id as 32 lower-case hex digits, or None where it is no id (absent, another form, a placeholder)."""
    if not value:
        return None
    bare = value.strip().lower().replace("-", "")
    if not _HEX32.fullmatch(bare) or len(set(bare)) == 1:
        return None
    return bare


def read_argv(path: str) -> tuple[str, ...]:
    """One id file read (one file per command: a file that cannot be read leaves the others' answers whole)."""
    return ("cat", path)


def node_ids(node: KubeNode) -> dict[str, str | None]:
    """The Node's ids as its status.nodeInfo has them (as written)."""
    return {"bootID": node.boot_id, "machineID": node.machine_id, "systemUUID": node.system_uuid}


async def machine_ids(ctx: NodeContext, *, abortable: bool = True) -> dict[str, str | None]:
    """The machine's ids as its files say them now (the first line, as written); None where unread.

    Raises:
        BackendError: the node could not be reached (from the backend).
    """
    out: dict[str, str | None] = {}
    for name, path, privileged in IDS:
        result = await ctx.run(read_argv(path), privileged=privileged, abortable=abortable)
        lines = result.stdout.splitlines() if result.ok else []
        out[name] = lines[0].strip() if lines and lines[0].strip() else None
    return out


def _where(kube: Kubectl) -> str:
    return f"context {kube.context}" if kube.context else "the kubeconfig's current context"


def verdict(host: str, node: str, theirs: Mapping[str, str | None], ours: Mapping[str, str | None],
            kube: Kubectl) -> tuple[str | None, str]:
    """(why the cluster must not be changed for ``node`` from ``host``, or None; what was compared, in words).

    ``theirs``: the Node's ids (:func:`node_ids`); ``ours``: the machine's (:func:`machine_ids`). Pure.
    """
    files = {name: path for name, path, _ in IDS}
    differ = [name for name, _, _ in IDS
              if normal(theirs.get(name)) and normal(ours.get(name)) and normal(theirs[name]) != normal(ours[name])]
    if differ:
        said = "; ".join(f"its {name} is {theirs[name]} where this machine's {files[name]} reads {ours[name]}"
                         for name in differ)
        reboot = (" (only the boot differs: if this machine rebooted a moment ago, wait for its kubelet to report "
                  "the new boot and try again)" if differ == ["bootID"] else "")
        return (f"Kubernetes node {node} ({_where(kube)}) is not this machine ({host}): {said}{reboot}. Nothing was "
                f"changed in the cluster: check that the kubeconfig's context is this machine's cluster "
                f"(--kube-context) and that the node map names its node (a `{host} K8S_NODE` line in "
                f"--kube-node-map, or [kubernetes.nodes])", "")
    same = [name for name, _, _ in IDS if normal(theirs.get(name)) and normal(ours.get(name))]
    if not same:
        node_has = [name for name, _, _ in IDS if normal(theirs.get(name))]
        we_have = [files[name] for name, _, _ in IDS if normal(ours.get(name))]
        return (f"whether Kubernetes node {node} ({_where(kube)}) is this machine ({host}) cannot be told: its "
                f"status.nodeInfo has {', '.join(node_has) or 'no bootID, machineID or systemUUID'} and this "
                f"machine's {', '.join(we_have) or 'id files'} {'were' if we_have else 'could not be'} read, so no "
                f"id is on both sides. A guard that cannot see refuses: check that kubelet has registered the "
                f"node (`kubectl get node {node} -o jsonpath='{{.status.nodeInfo}}'`) and that the machine's "
                f"files can be read ({PRODUCT_UUID_FILE} needs root: --sudo)", "")
    unread = [name for name, _, _ in IDS if name not in same]
    return None, (f"Kubernetes node {node} is this machine: its {', '.join(same)} "
                  f"{'match' if len(same) > 1 else 'matches'} this machine's"
                  + (f" ({', '.join(unread)} not on both sides)" if unread else ""))


async def check(ctx: NodeContext, kube: Kubectl, node: KubeNode, *,
                abortable: bool = True) -> tuple[str | None, str]:
    """Read the machine's ids and judge ``node`` against them (:func:`verdict`); the words go to the audit log.

    Raises:
        BackendError: the node could not be reached.
    """
    refusal, words = verdict(ctx.host, node.node, node_ids(node), await machine_ids(ctx, abortable=abortable), kube)
    if refusal is None:
        ctx.note(words)
    return refusal, words


__all__ = ["IDS", "check", "machine_ids", "node_ids", "normal", "read_argv", "verdict"]
