"""A kubectl call read back into its words: the inverse of :meth:`~nvls_tui.kube.client.Kubectl.argv`.

The incident report (report/cluster.py) reads the audited kubectl argvs of a repair's log, which holds argvs,
not the typed changes that made them (the plan's summary and the confirmation read those instead:
runbook/kube_summary.py); it wants the verb and its arguments without the global flags the runbook puts
before the verb (``--kubeconfig F --context C --request-timeout=Ns``). kubectl's own errors name a call by
:func:`shown`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

# kubectl's global flags that take the next word as their value (``--kubeconfig=F`` is one word).
VALUED = frozenset({"--kubeconfig", "--context"})


def kubectl_args(argv: Sequence[str]) -> list[str] | None:
    """The words after kubectl's global flags (``["cordon", "gpu06"]``); None for a command that is not kubectl.

    Only the flags before the verb are dropped: after it every word is the call's own.
    """
    if not argv or os.path.basename(argv[0]) != "kubectl":
        return None
    return _after_globals(argv)


def _after_globals(argv: Sequence[str]) -> list[str]:
    i = 1
    while i < len(argv) and argv[i].startswith("--"):
        i += 2 if argv[i] in VALUED else 1
    return list(argv[i:])


def shown(argv: Sequence[str]) -> str:
    """A kubectl call as an operator types it, whatever binary ran it: ``kubectl label node gpu06 K=V`` (the
    global flags, paths of the kubeconfig and the binary, left out: what the call did is in the words after)."""
    return shlex.join(["kubectl", *_after_globals(argv)]) if argv else "kubectl"


__all__ = ["VALUED", "kubectl_args", "shown"]
