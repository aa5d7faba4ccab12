"""A kubectl call read back into its words: the inverse of :meth:`~nvls_tui.kube.client.Kubectl.argv`.

The plan's summary (views/plan_summary.py) reads the dry run's kubectl lines and the incident report
(report/cluster.py) the audited kubectl argvs; both want the verb and its arguments without the global
flags the runbook puts before the verb (``--kubeconfig F --context C --request-timeout=Ns``).
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


def kubectl_line_args(line: str) -> list[str] | None:
    """:func:`kubectl_args` of a plan's command line (its ``  # why`` comment dropped, split as the shell
    would); None for a line that is not a kubectl call or cannot be split (an unbalanced quote)."""
    try:
        argv = shlex.split(line.partition("  # ")[0])
    except ValueError:
        return None
    return kubectl_args(argv)


__all__ = ["VALUED", "kubectl_args", "kubectl_line_args", "shown"]
