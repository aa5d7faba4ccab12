"""TARGET words of contract.md -> one Backend per node.

``sim:SCENARIO[/NODESET]`` builds a simulated fleet, ``local`` this machine, anything else is an
SSH node or a ClusterShell node set of them. With no target, the demo fleet (clearly simulated).
"""

from __future__ import annotations

import argparse
import asyncio
import os

from nvls_tui.backends.base import (
    DEFAULT_MAX_OUTPUT,
    Backend,
    BackendOptions,
    InvalidArgument,
)

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
    return words or [DEMO]


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
