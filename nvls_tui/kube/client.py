"""The Kubernetes cluster as the bastion sees it: the real ``kubectl``, run as a subprocess.

Why ``kubectl`` and not the Python client: it is what operators already trust and have configured
(kubeconfig, contexts, exec credential plugins such as ``gke-gcloud-auth-plugin`` or ``aws eks get-token``
work without nvls-tui knowing them), it prints what the API returns (``-o json``), and every call is one
argv that the dry run and the audit log can show exactly as an operator would type it.

Commands are argv lists (no shell) with ``--kubeconfig``/``--context`` where the settings name them and a
``--request-timeout`` under the subprocess's own deadline. A poll round reads the whole fleet with one
``kubectl get nodes -o json`` and one pods list per node (``--field-selector spec.nodeName=NODE``, at most
:data:`CONCURRENCY` at a time). A cluster that could not be read, or answered with text that could not be
read whole, is every node's ``error`` (unknown), never a node that is ready and not cordoned.

The repair path builds on :meth:`Kubectl.run` / :meth:`Kubectl.run_status` / :meth:`Kubectl.argv`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nvls_tui import node_map
from nvls_tui.model.kube import KubeEvent, KubeNode, KubePod
from nvls_tui.parsers.kube import parse_events, parse_nodes, parse_pods
from nvls_tui.textsafe import one_line

TIMEOUT = 15.0
CONCURRENCY = 8
# A pods list of one node, or the node list of a large cluster, is well under this; past it the answer is cut.
MAX_OUTPUT = 64 * 1024 * 1024

# How an error reads as missing evidence (nvls_tui.poll.evidence's words).
FAILED, TIMED_OUT, TOOL_MISSING, UNPARSEABLE, OVER_CAP = (
    "failed", "timed out", "tool missing", "unparseable", "over the size cap")

# argv, deadline in seconds, byte cap -> (exit status, stdout, stderr). The real one starts kubectl; the
# simulator hands in its own kubectl (nvls_tui/sim/kubectl.py) that answers as the real one does.
Runner = Callable[[Sequence[str], float, int], Awaitable[tuple[int, str, str]]]


class KubeError(Exception):
    """A kubectl command could not be run, failed, or printed what could not be read (one sentence).

    Attributes:
        reason: the missing-evidence reason (``failed``, ``timed out``, ``tool missing``, ``unparseable``,
            ``over the size cap``).
    """

    def __init__(self, message: str, reason: str = FAILED) -> None:
        super().__init__(message)
        self.reason = reason


# kubectl's global flags that take the next word as their value (``--kubeconfig=F`` is one word).
VALUED = frozenset({"--kubeconfig", "--context"})


def global_flags_end(argv: Sequence[str]) -> int:
    """Where a kubectl argv's own words begin: after the binary and the global flags :meth:`Kubectl.argv` puts
    before the verb (``--kubeconfig F --context C --request-timeout=Ns``). After the verb every word is the
    call's own, flags included."""
    i = 1
    while i < len(argv) and argv[i].startswith("--"):
        i += 2 if argv[i] in VALUED else 1
    return min(i, len(argv))


def shown(argv: Sequence[str]) -> str:
    """A kubectl call as an operator types it, whatever binary ran it: ``kubectl label node gpu06 K=V`` (the
    global flags, paths of the kubeconfig and the binary, left out: what the call did is in the words after)."""
    return shlex.join(["kubectl", *argv[global_flags_end(argv):]]) if argv else "kubectl"


async def run_kubectl(argv: Sequence[str], timeout: float, max_output: int) -> tuple[int, str, str]:
    """Start ``argv`` (no shell), wait at most ``timeout`` seconds; (exit status, stdout, stderr).

    Raises:
        KubeError: it could not be started, did not end in time (killed), or printed more than ``max_output``.
    """
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    limit=max_output)
    except OSError as exc:
        reason = TOOL_MISSING if isinstance(exc, FileNotFoundError) else FAILED
        raise KubeError(f"`{argv[0]}` could not be run: {exc.strerror or exc}", reason) from None
    assert proc.stdout is not None and proc.stderr is not None

    async def bounded(stream: asyncio.StreamReader) -> bytes:
        data = await stream.read(max_output + 1)
        chunks = [data]
        total = len(data)
        while data and total <= max_output:
            data = await stream.read(max_output + 1 - total)
            chunks.append(data)
            total += len(data)
        return b"".join(chunks)

    try:
        async with asyncio.timeout(timeout):
            out, err, _ = await asyncio.gather(bounded(proc.stdout), bounded(proc.stderr), proc.wait())
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        # One line that names the call as typed (a hung exec credential plugin, an API server that accepts and
        # never answers): the binary's path and the kubeconfig say nothing of what hung.
        raise KubeError(f"kubectl did not answer within {timeout:.0f} s (ended): `{shown(argv)}`", TIMED_OUT) from None
    except asyncio.CancelledError:
        # An interrupted repair cancels the step in flight: its kubectl (a wait of minutes) goes with it.
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(proc.wait())
        raise
    if len(out) > max_output:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise KubeError(f"`{shown(argv)}` printed more than {max_output} bytes", OVER_CAP)
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def short_name(host: str) -> str:
    """A target's short host name (``root@gpu05.dc1:22`` -> ``gpu05``; an IP address stays whole)."""
    bare = host.rpartition("@")[2]
    if bare.startswith("[") and "]" in bare:  # [::1]:22
        return bare[1:bare.index("]")]
    if bare.count(":") == 1:
        bare = bare.partition(":")[0]
    if bare.count(":") > 1 or bare.replace(".", "").isdecimal():
        return bare
    return bare.split(".")[0]


@dataclass(frozen=True)
class Kubectl:
    """How to reach the cluster from the bastion, and the fleet-wide read of a poll round.

    Attributes:
        kubeconfig: the kubeconfig file (``--kubeconfig``); None: kubectl's own choice (KUBECONFIG, ~/.kube/config).
        context: the context (``--context``); None: the kubeconfig's current context.
        node_map: target host -> Kubernetes node name, where they differ (else the short host name).
        timeout: seconds one kubectl call may take (its ``--request-timeout`` is a second less).
        binary: the kubectl to run.
        runner: runs one argv (tests and the simulator hand in their own); None: a real subprocess.
        max_output: bytes one call may print.
    """

    kubeconfig: str | None = None
    context: str | None = None
    node_map: Mapping[str, str] = field(default_factory=dict)
    timeout: float = TIMEOUT
    binary: str = "kubectl"
    runner: Runner | None = field(default=None, compare=False)
    max_output: int = MAX_OUTPUT

    def node_name(self, host: str) -> str:
        """The Kubernetes node name of a target (mapped, or its short host name)."""
        return self.node_map.get(host) or short_name(host)

    def argv(self, *args: str) -> list[str]:
        """The whole argv of ``kubectl ARGS`` against this cluster (what the dry run and the audit log show)."""
        out = [self.binary]
        if self.kubeconfig:
            out += ["--kubeconfig", self.kubeconfig]
        if self.context:
            out += ["--context", self.context]
        # The API call gives up a second before the process is killed, so kubectl says why itself.
        out.append(f"--request-timeout={max(1, int(self.timeout) - 1)}s")
        return out + list(args)

    async def run_status(self, *args: str) -> tuple[int, str, str]:
        """Run ``kubectl ARGS``; (exit status, stdout, stderr). Raises KubeError only where it could not run."""
        runner = self.runner or run_kubectl
        return await runner(self.argv(*args), self.timeout, self.max_output)

    async def run(self, *args: str) -> str:
        """Run ``kubectl ARGS``; its stdout. Raises KubeError with kubectl's own words where it failed."""
        status, out, err = await self.run_status(*args)
        if status != 0:
            # kubectl logs its retries (klog's E... lines) before the one sentence that says what failed: the last.
            lines = [line for line in (err or out).splitlines() if line.strip()]
            said = one_line(lines[-1], 200) if lines else "no message"
            raise KubeError(f"`kubectl {' '.join(args[:2])}` failed (exit {status}): {said}")
        return out

    async def nodes(self) -> dict[str, KubeNode]:
        """Every node of the cluster (``kubectl get nodes -o json``), by name.

        Raises:
            KubeError: kubectl failed, or printed what could not be read whole.
        """
        parsed = parse_nodes(await self.run("get", "nodes", "-o", "json"))
        if parsed.warnings:
            raise KubeError(parsed.warnings[0], UNPARSEABLE)
        return parsed.value

    async def pods_on(self, node: str) -> tuple[KubePod, ...]:
        """Every pod bound to ``node``, in every namespace.

        Raises:
            KubeError: kubectl failed, printed what could not be read whole, or a pod of another node.
        """
        parsed = parse_pods(await self.run("get", "pods", "--all-namespaces", "--field-selector",
                                           f"spec.nodeName={node}", "-o", "json"))
        if parsed.warnings:
            raise KubeError(parsed.warnings[0], UNPARSEABLE)
        stray = next((p for p in parsed.value if p.node != node), None)
        if stray is not None:
            raise KubeError(f"kubectl get pods for node {node} printed pod {stray.namespace}/{stray.name} of node "
                            f"{stray.node}", UNPARSEABLE)
        return tuple(parsed.value)

    def events_argv(self, node: str) -> list[str]:
        """The kubectl words that read ``node``'s events (what the describe view says to run where they failed)."""
        # Every namespace: kubelet files a node's events in the default namespace, which the kubeconfig's
        # context may not be.
        return ["get", "events", "--all-namespaces", "--field-selector",
                f"involvedObject.kind=Node,involvedObject.name={node}", "-o", "json"]

    async def events_of(self, node: str) -> tuple[KubeEvent, ...]:
        """The events the cluster recorded about ``node``, oldest first (read when asked: not every poll round).

        Raises:
            KubeError: kubectl failed, printed what could not be read whole, or an event of another object.
        """
        parsed = parse_events(await self.run(*self.events_argv(node)))
        if parsed.warnings:
            raise KubeError(parsed.warnings[0], UNPARSEABLE)
        stray = next((e for e in parsed.value if (e.object_kind, e.object_name) != ("Node", node)), None)
        if stray is not None:
            raise KubeError(f"kubectl get events for node {node} printed an event of {stray.object_kind} "
                            f"{stray.object_name}", UNPARSEABLE)
        return tuple(parsed.value)

    async def read(self, hosts: Sequence[str]) -> dict[str, KubeNode]:
        """Every host's node: ready, cordoned, labels, taints and its pods (one node list, one pods list a node).

        A host the cluster does not have is ``found=False``. A cluster that did not answer (or answered with
        what could not be read) is every host's ``error`` with ready and cordoned unknown; a node whose pods
        could not be read keeps its ready and cordoned with ``error`` saying so.
        """
        names = {host: self.node_name(host) for host in hosts}
        try:
            nodes = await self.nodes()
        except KubeError as exc:
            return {host: KubeNode(name, error=str(exc), reason=exc.reason) for host, name in names.items()}
        gate = asyncio.Semaphore(CONCURRENCY)

        async def with_pods(name: str) -> KubeNode:
            async with gate:
                try:
                    return replace(nodes[name], pods=await self.pods_on(name))
                except KubeError as exc:
                    return replace(nodes[name], error=f"the pods on {name} could not be read: {exc}",
                                   reason=exc.reason)

        wanted = sorted({n for n in names.values() if n in nodes})
        read = dict(zip(wanted, await asyncio.gather(*(with_pods(n) for n in wanted)), strict=True))
        return {host: read.get(name) or KubeNode(name, found=False) for host, name in names.items()}


def read_node_map(path: str) -> dict[str, str]:
    """``--kube-node-map FILE``: one ``TARGET K8S_NODE`` pair per line, ``#`` comments (:mod:`nvls_tui.node_map`).

    Raises:
        OSError: the file cannot be read. ValueError: a line is not two words (one sentence).
    """
    return node_map.read_node_map(path, "K8S_NODE")


def default_kubeconfig(environ: Mapping[str, str] | None = None) -> str | None:
    """``KUBECONFIG`` (as kubectl takes it: a list joined by ``:``), else ``~/.kube/config`` where it exists."""
    env = os.environ if environ is None else environ
    if env.get("KUBECONFIG"):
        return env["KUBECONFIG"]
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.isfile(home) else None


__all__ = ["CONCURRENCY", "KubeError", "Kubectl", "MAX_OUTPUT", "Runner", "TIMEOUT", "VALUED", "default_kubeconfig",
           "global_flags_end", "read_node_map", "shown",
           "run_kubectl", "short_name"]
