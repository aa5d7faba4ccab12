"""TARGET words of contract.md -> one Backend per node, and the scheduler the settings name.

``sim:SCENARIO[/NODESET]`` builds a simulated fleet, ``local`` this machine, anything else is an
SSH node or a ClusterShell node set of them. With no target, the console opens on the demo fleet (clearly
simulated); ``check`` and ``repair`` refuse.

It reads the one ``Settings`` and builds transports, simulated fleets and the Slurm scheduler, so it
sits above all of them with the entry points (``cli``, ``headless``, the console), not inside
``backends``: a transport never reads the command line (docs/design.md, "Layers").
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from nvls_tui.backends.base import (
    DEFAULT_MAX_OUTPUT,
    Backend,
    BackendOptions,
    InvalidArgument,
)
from nvls_tui.backends.nodesets import MAX_TARGETS, nodeset_size
from nvls_tui.backends.recorded import REPLAY_PREFIX

if TYPE_CHECKING:
    from nvls_tui.settings import Settings

DEMO = "sim:seed-incident"
DEFAULT_SOURCE = "default"  # settings.DEFAULT: a setting no one gave


def backend_options(settings: Settings) -> BackendOptions:
    """BackendOptions from the settings of the commands that reach nodes."""
    # One key as a path, several as a list: the pool takes either (ssh.pool.identities), though
    # BackendOptions' annotation names only the first form.
    identity = cast("str | None", settings.ssh.identity[0] if len(settings.ssh.identity) == 1
                    else list(settings.ssh.identity) or None)
    return BackendOptions(
        timeout=settings.timeout,
        sudo=settings.sudo,
        read_only=settings.read_only,
        concurrency=max(1, settings.ssh.concurrency),
        ssh_config=settings.ssh.ssh_config,
        identity=identity,
        known_hosts=settings.ssh.known_hosts,
        user=settings.ssh.user,
        jump=settings.ssh.jump,
        max_output=settings.max_output or DEFAULT_MAX_OUTPUT,
    )


def target_words(settings: Settings) -> list[str]:
    """The targets named on the command line (or in the config file), in the hosts file, or the demo fleet."""
    return read_targets(settings)[0]


def read_targets(settings: Settings) -> tuple[list[str], list[str]]:
    """The target words and where they came from (``command line``, ``config file PATH``, ``hosts file
    FILE``, ``--demo``), in that order.

    Only the console opens on the demo fleet when nothing is named (its screens say SIMULATED on every
    line); ``check`` and ``repair`` never poll or repair a fleet nobody named: a host list that came out
    empty in a script is a usage error, not eight simulated nodes.

    Raises:
        InvalidArgument: no target (outside the console), a hosts file that cannot be read, or more
            nodes than one run takes.
    """
    words = list(settings.targets)
    sources = [settings.source("targets")] if words else []
    hosts_file = settings.hosts_file
    if hosts_file:
        from nvls_tui.backends.ssh.targets import read_hosts_file

        try:
            listed = read_hosts_file(hosts_file)
        except OSError as exc:
            raise InvalidArgument(f"cannot read hosts file {hosts_file}: {exc.strerror or exc}") from None
        words += listed
        if listed:
            sources.append(f"hosts file {hosts_file}")
    if settings.demo:
        words.insert(0, DEMO)
        sources.insert(0, "--demo")
    if not words:
        if settings.command != "console":
            raise InvalidArgument(no_target(settings.command, hosts_file))
        words, sources = [DEMO], ["no target: the demo fleet"]
    check_total(words)
    return words, sources


def no_target(command: str, hosts_file: str | None) -> str:
    """The one sentence of a ``check`` or ``repair`` that names no node."""
    why = f"the hosts file {hosts_file} names none" if hosts_file else "none was named"
    verb = "repairs" if command == "repair" else "checks"
    return (f"{command} needs a TARGET (a host, a node set such as gpu[01-08], local, sim:SCENARIO, "
            f"--hosts-file FILE, or --demo for the simulated demo fleet); {why}, and it never {verb} "
            "the demo fleet unless --demo is given")


def target_size(word: str) -> int | None:
    """How many nodes one target names, counted without expanding it (None: a node set not counted)."""
    if word == "local" or word.startswith(REPLAY_PREFIX):
        return 1
    if word.startswith("sim:"):
        from nvls_tui.sim.fleet import parse_spec
        from nvls_tui.sim.scenarios import SCENARIOS

        name, nodeset = parse_spec(word)
        if nodeset:
            return nodeset_size(nodeset)
        scenario = SCENARIOS.get(name)
        return len(scenario.nodes) if scenario is not None else 1  # an unknown one is refused by name later
    host = word.split("@", 1)[-1]
    if host.startswith("[") and "]:" in host or host.count(":") > 1:
        return 1  # an IPv6 address, bracketed or bare
    return nodeset_size(host.rpartition(":")[0] if ":" in host else host)


def check_total(words: list[str]) -> None:
    """Hold every target together to :data:`MAX_TARGETS`, before any node set is expanded.

    A target whose node set is not counted (ClusterShell's operators) counts as one here: the SSH
    and Slurm paths refuse its syntax with their own reason before they expand it.

    Raises:
        InvalidArgument: more nodes than one run takes (one sentence naming the cap).
    """
    total = 0
    for word in words:
        total += target_size(word) or 1
    if total > MAX_TARGETS:
        first = words[0] if len(words) == 1 else f"{len(words):,} targets"
        raise InvalidArgument(f"{total:,} targets named ({first[:80]}), more than one run takes "
                              f"(at most {MAX_TARGETS:,}); split the fleet into several runs")


def require_regular_file(path: str | None, option: str) -> None:
    """Refuse a path that is not a regular file (a FIFO would block the read forever).

    Raises:
        InvalidArgument: it is missing, unreadable, or a FIFO, device, socket or directory.
    """
    if not path:
        return
    expanded = os.path.expanduser(path)
    try:
        mode = os.stat(expanded).st_mode
    except OSError as exc:
        raise InvalidArgument(f"{option} {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a file")
        raise InvalidArgument(f"{option} {path} is not a regular file ({kind})")


def resolve_backends(settings: Settings) -> list[Backend]:
    """One Backend per node named by ``settings`` (contract.md TARGET syntax), or those its ``connect``
    builds (tests hand in their own fleet).

    A ``sim:`` fleet's clock runs at ``settings.sim_speed``: the runbook and the console take their
    time from that clock (``views.runbook.repair_options``), so nothing else scales for simulated time.

    Raises:
        InvalidArgument: a target that is not valid (one sentence saying why).
    """
    if settings.connect is not None:
        return list(settings.connect(settings))
    options = backend_options(settings)
    # asyncssh opens it on the event loop at every connection: a FIFO there would hang every node.
    require_regular_file(options.known_hosts, settings.named("ssh.known_hosts", "--known-hosts"))
    require_regular_file(options.ssh_config, settings.named("ssh.ssh_config", "--ssh-config"))  # the same hang
    backends: list[Backend] = []
    ssh_words: list[str] = []
    for word in target_words(settings):
        if word.startswith("sim:"):
            from nvls_tui.backends.simulated import sim_backends
            from nvls_tui.sim.fleet import load_fleet

            # --timeout is per command on simulated nodes too: a hung tool is waited out that long.
            backends += sim_backends(load_fleet(word, speed=settings.sim_speed), timeout=options.timeout,
                                     max_output=options.max_output)
        elif word.startswith(REPLAY_PREFIX):
            # A captured probe output replayed through the same poll (backends/recorded.py).
            from nvls_tui.backends.recorded import replay_backend

            backends.append(replay_backend(word, options.max_output))
        elif word == "local":
            from nvls_tui.backends.local import LocalBackend

            backends.append(LocalBackend(options))
        else:
            ssh_words.append(word)
    if ssh_words:
        from nvls_tui.backends.ssh import SshBackend
        from nvls_tui.backends.ssh.pool import identities
        from nvls_tui.backends.ssh.targets import parse_target, parse_targets

        # asyncssh's word for a key it cannot open names the node, not the file (`gpu01: No such file or
        # directory`, on every node), and a FIFO blocks its read: the key is named here, once, before any connection.
        for key in identities(options):
            require_regular_file(key, settings.named("ssh.identity", "--identity"))

        if options.jump:
            parse_target(options.jump)  # refuse shell syntax in --jump as a usage error, before any connection

        limiter = asyncio.Semaphore(options.concurrency)
        backends += [SshBackend(t, options, limiter) for t in parse_targets(ssh_words)]
    seen: set[str] = set()
    for backend in backends:
        if backend.host in seen:
            raise InvalidArgument(f"target {backend.host} is named twice")
        seen.add(backend.host)
    return backends


def scheduler_from_settings(settings: Settings):
    """The cluster's Slurm named by ``--slurm-conf`` / ``[slurm] conf`` / ``SLURM_CONF`` (or the default
    config), or None.

    Raises:
        InvalidArgument: a named configuration or node map that cannot be used (one sentence; a
            configuration the config file named says so).
    """
    from nvls_tui.scheduler.slurm import SlurmError, find_slurm, read_node_map

    node_map = dict(settings.slurm.nodes)  # the config file's [slurm.nodes]
    if settings.slurm.node_map:
        try:
            node_map.update(read_node_map(settings.slurm.node_map))
        except OSError as exc:
            raise InvalidArgument(f"cannot read the Slurm node map {settings.slurm.node_map}: "
                                  f"{exc.strerror or exc}") from None
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
    try:
        return find_slurm(settings.slurm.conf, node_map)
    except SlurmError as exc:
        where = settings.source("slurm.conf")
        raise InvalidArgument(f"{exc} (slurm.conf in {where})" if where.startswith("config file")
                              else str(exc)) from None


def kube_from_settings(settings: Settings, backends: Sequence[Backend]):
    """The clusters of this run (a ``KubeFleet``), or None where no target is in one.

    Real targets are read through the real ``kubectl`` with ``--kubeconfig`` / ``[kubernetes] kubeconfig``, else
    ``KUBECONFIG``, else ``~/.kube/config`` where kubectl is installed; ``--no-kubernetes`` (or none of these)
    leaves them in no cluster. A simulated fleet on Kubernetes (``sim:k8s-incident``) is read through the
    simulator's kubectl. A kubeconfig that was named is checked here, once (``kubectl config view --minify``:
    the file parses and its context exists), so that a bad one is one sentence before anything runs.

    Raises:
        InvalidArgument: a named kubeconfig, context or node map that cannot be used, or kubectl missing while
            a kubeconfig was named (one sentence; one the config file named says so).
    """
    from nvls_tui.kube.client import Kubectl, default_kubeconfig, read_node_map
    from nvls_tui.kube.fleet import KubeFleet

    parts = []
    sim = [b for b in backends if b.simulated and getattr(getattr(getattr(b, "fleet", None), "scenario", None),
                                                            "kubernetes", False)]
    if sim:
        from nvls_tui.sim.kubectl import SimKubectl

        fleet = sim[0].fleet  # type: ignore[attr-defined]
        names = [b.host for b in sim]
        parts.append((Kubectl(runner=SimKubectl(fleet.node, names, fleet.clock.now)), tuple(names)))
    real = tuple(b.host for b in backends if not b.simulated)
    kube = settings.kube
    if real and not kube.disabled:
        named = kube.kubeconfig or kube.context
        config = kube.kubeconfig or default_kubeconfig()
        binary = shutil.which("kubectl")
        if config and (named or binary):
            node_map = dict(kube.nodes)
            if kube.node_map:
                try:
                    node_map.update(read_node_map(kube.node_map))
                except OSError as exc:
                    raise InvalidArgument(f"cannot read the Kubernetes node map {kube.node_map}: "
                                          f"{exc.strerror or exc}") from None
                except ValueError as exc:
                    raise InvalidArgument(str(exc)) from None
            kubectl = Kubectl(kubeconfig=config, context=kube.context, node_map=node_map,
                              timeout=min(settings.timeout, 60.0))
            _check_kubeconfig(settings, kubectl, binary)
            parts.append((kubectl, real))
        elif kube.context:
            raise InvalidArgument(f"--kube-context {kube.context} names a context but no kubeconfig was found "
                                  "(--kubeconfig, KUBECONFIG or ~/.kube/config)")
    return KubeFleet(tuple(parts)) if parts else None


def _check_kubeconfig(settings: Settings, kubectl, binary: str | None) -> None:
    """Refuse a kubeconfig kubectl cannot use (missing, not YAML, no such context), in one sentence."""
    import subprocess

    where = settings.source("kubernetes.kubeconfig")
    named = settings.named("kubernetes.kubeconfig", "--kubeconfig") if where != DEFAULT_SOURCE else "the kubeconfig"
    config = kubectl.kubeconfig
    if binary is None:
        raise InvalidArgument(f"{named} {config} names a Kubernetes cluster but kubectl is not installed")
    if ":" not in config:  # KUBECONFIG may be a list; kubectl itself skips its missing files
        require_regular_file(config, named)
    argv = [a for a in kubectl.argv("config", "view", "--minify", "-o", "json") if not a.startswith("--request-timeout")]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidArgument(f"kubectl could not read {named} {config}: {exc}") from None
    if done.returncode != 0:
        from nvls_tui.textsafe import one_line

        lines = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
        said = one_line(lines[-1], 200).removeprefix("error: ") if lines else f"exit {done.returncode}"
        raise InvalidArgument(f"{named} {config} cannot be used: {said}")
