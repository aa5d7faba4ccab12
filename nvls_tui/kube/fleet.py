"""The clusters of one run: which :class:`~nvls_tui.kube.client.Kubectl` reads which targets.

A run may mix a real cluster's nodes (the kubeconfig's kubectl) and a simulated fleet on Kubernetes (the
simulator's kubectl); each part is read with one node list and one pods list per node per poll round.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from nvls_tui.kube.client import Kubectl
from nvls_tui.model.kube import KubeNode


@dataclass(frozen=True)
class KubeFleet:
    """The targets each cluster reads (a target in no part is in no cluster).

    Attributes:
        parts: (the cluster's kubectl, the targets it reads), in order.
    """

    parts: tuple[tuple[Kubectl, tuple[str, ...]], ...]

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every target some cluster reads."""
        return tuple(h for _, hosts in self.parts for h in hosts)

    def for_host(self, host: str) -> Kubectl | None:
        """The kubectl of the cluster ``host`` is in (the repair path's), or None."""
        return next((k for k, hosts in self.parts if host in hosts), None)

    async def read(self) -> dict[str, KubeNode]:
        """One poll round of every cluster: each target's node (unknown where its cluster could not be read)."""
        found = await asyncio.gather(*(k.read(hosts) for k, hosts in self.parts if hosts))
        return {host: node for part in found for host, node in part.items()}


__all__ = ["KubeFleet"]
