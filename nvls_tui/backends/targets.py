"""TARGET words of contract.md -> one Backend per node.

``sim:SCENARIO[/NODESET]`` builds a simulated fleet, ``local`` this machine, anything else is an
SSH node or a ClusterShell node set of them. With no target, the demo fleet (clearly simulated).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import stat

from nvls_tui.backends.base import (
    DEFAULT_MAX_OUTPUT,
    Backend,
    BackendOptions,
    InvalidArgument,
)
from nvls_tui.backends.nodesets import MAX_TARGETS, nodeset_size

DEMO = "sim:seed-incident"

# Tests and benchmarks speed the simulated clock up through this variable.
SIM_SPEED_ENV = "NVLS_TUI_SIM_SPEED"


def options_from_args(args: argparse.Namespace) -> BackendOptions:
    """BackendOptions from the shared command-line options (missing ones take their defaults)."""
    identity = getattr(args, "identity", None)
    return BackendOptions(
        timeout=getattr(args, "timeout", None) or 20.0,
        sudo=bool(getattr(args, "sudo", False)),
        read_only=bool(getattr(args, "read_only", False)),
        concurrency=max(1, getattr(args, "concurrency", None) or 64),
        ssh_config=getattr(args, "ssh_config", None),
        identity=identity[0] if isinstance(identity, list) and len(identity) == 1 else identity,
        known_hosts=getattr(args, "known_hosts", None),
        user=getattr(args, "user", None),
        jump=getattr(args, "jump", None),
        max_output=getattr(args, "max_output", None) or DEFAULT_MAX_OUTPUT,
    )


def target_words(args: argparse.Namespace) -> list[str]:
    """The targets named on the command line, in the hosts file, or the demo fleet."""
    words = list(getattr(args, "targets", None) or [])
    hosts_file = getattr(args, "hosts_file", None)
    if hosts_file:
        from nvls_tui.backends.ssh.targets import read_hosts_file

        try:
            words += read_hosts_file(hosts_file)
        except OSError as exc:
            raise InvalidArgument(f"cannot read hosts file {hosts_file}: {exc.strerror or exc}") from None
    if getattr(args, "demo", False):
        words.insert(0, DEMO)
    words = words or [DEMO]
    check_total(words)
    return words


def target_size(word: str) -> int | None:
    """How many nodes one target names, counted without expanding it (None: a node set not counted)."""
    if word == "local":
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


def sim_speed(default: float = 1.0) -> float:
    """The simulated clock's speed-up (``NVLS_TUI_SIM_SPEED``; 0 freezes it), for tests and benchmarks."""
    try:
        return max(0.0, float(os.environ.get(SIM_SPEED_ENV, default)))
    except ValueError:
        return default


def resolve_backends(args: argparse.Namespace, *, speed: float | None = None) -> list[Backend]:
    """One Backend per node named by ``args`` (contract.md TARGET syntax).

    Raises:
        InvalidArgument: a target that is not valid (one sentence saying why).
    """
    options = options_from_args(args)
    # asyncssh opens it on the event loop at every connection: a FIFO there would hang every node.
    require_regular_file(options.known_hosts, "--known-hosts")
    backends: list[Backend] = []
    ssh_words: list[str] = []
    for word in target_words(args):
        if word.startswith("sim:"):
            from nvls_tui.backends.simulated import sim_backends
            from nvls_tui.sim.fleet import load_fleet

            backends += sim_backends(load_fleet(word, speed=speed if speed is not None else sim_speed()))
        elif word == "local":
            from nvls_tui.backends.local import LocalBackend

            backends.append(LocalBackend(options))
        else:
            ssh_words.append(word)
    if ssh_words:
        from nvls_tui.backends.ssh import SshBackend
        from nvls_tui.backends.ssh.targets import parse_target, parse_targets

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


def scheduler_from_args(args: argparse.Namespace):
    """The cluster's Slurm named by ``--slurm-conf`` / ``SLURM_CONF`` (or the default config), or None.

    Raises:
        InvalidArgument: a named configuration or node map that cannot be used (one sentence).
    """
    from nvls_tui.scheduler.slurm import SlurmError, find_slurm, read_node_map

    node_map = dict(getattr(args, "slurm_nodes", None) or {})  # the config file's [slurm.nodes]
    if getattr(args, "slurm_node_map", None):
        try:
            node_map.update(read_node_map(args.slurm_node_map))
        except OSError as exc:
            raise InvalidArgument(f"cannot read the Slurm node map {args.slurm_node_map}: "
                                  f"{exc.strerror or exc}") from None
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
    try:
        return find_slurm(getattr(args, "slurm_conf", None), node_map)
    except SlurmError as exc:
        raise InvalidArgument(str(exc)) from None
