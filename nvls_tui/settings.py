"""One frozen Settings for every subcommand: the command line, then the config file, then the defaults.

``cli.py`` builds it once (:func:`settings_from`) and hands it to the subcommand's ``run``; nothing
after that reads the parsed command line. Each value knows where it came from
(:meth:`Settings.source`: ``command line``, ``config file PATH``, the environment, or ``default``), so an
error can name the option or the file line that set a bad value. Tests build a Settings (or take the
command line's and ``dataclasses.replace`` a part) instead of patching module attributes; ``connect``
hands in the backends a test built itself.

The config file is read for the commands that reach nodes (console, check, repair); analyze and report
read files named on their command line and nothing else.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nvls_tui.config import DEFAULT_POLL_INTERVAL, Config

if TYPE_CHECKING:
    from nvls_tui.backends.base import Backend

COMMAND_LINE = "command line"
DEFAULT = "default"

# The simulated clock's speed-up (0 freezes it): how tests and benchmarks run a simulated fleet faster
# than real time from outside the process (the tmux tests). Read here once; the fleet's clock carries it.
SIM_SPEED_ENV = "NVLS_TUI_SIM_SPEED"

DEFAULT_TIMEOUT = 20.0
DEFAULT_CONCURRENCY = 64
DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024  # backends.base.DEFAULT_MAX_OUTPUT (a test holds them equal)

# The commands that reach nodes, and so read the config file.
REACHING = ("console", "check", "repair", "autopilot")


@dataclass(frozen=True, slots=True)
class SshSettings:
    """How SSH nodes are reached (``[ssh]`` in the config file).

    Attributes:
        user: remote user name (``-l``), or None for the SSH config's.
        identity: private key files (``-i``), in order.
        known_hosts: known_hosts file (host keys are always verified); None for the SSH default.
        ssh_config: OpenSSH client config (default ``~/.ssh/config``).
        jump: jump host (ProxyJump).
        concurrency: connections in flight.
    """

    user: str | None = None
    identity: tuple[str, ...] = ()
    known_hosts: str | None = None
    ssh_config: str | None = None
    jump: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    """The Slurm cluster, if any (``[slurm]`` in the config file).

    Attributes:
        conf: ``--slurm-conf`` or ``[slurm] conf``; None: ``SLURM_CONF``, else the default config.
        node_map: ``--slurm-node-map FILE`` (``TARGET SLURM_NODE`` per line); its entries win.
        nodes: ``[slurm.nodes]``, target -> Slurm node name.
    """

    conf: str | None = None
    node_map: str | None = None
    nodes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KubeSettings:
    """The Kubernetes cluster, if any (``[kubernetes]`` in the config file).

    Attributes:
        kubeconfig: ``--kubeconfig`` or ``[kubernetes] kubeconfig``; None: ``KUBECONFIG``, else
            ``~/.kube/config`` where kubectl is installed (``targets.kube_from_settings``).
        context: ``--kube-context`` or ``[kubernetes] context``; None: the kubeconfig's current context.
        node_map: ``--kube-node-map FILE`` (``TARGET K8S_NODE`` per line); its entries win.
        nodes: ``[kubernetes.nodes]``, target -> Kubernetes node name.
        disabled: ``--no-kubernetes``: no cluster, whatever a default would find.
    """

    kubeconfig: str | None = None
    context: str | None = None
    node_map: str | None = None
    nodes: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False


@dataclass(frozen=True, slots=True)
class RepairSettings:
    """``repair``'s options; how a repair runs (threshold, SIGKILL, waits, kubelet) also the console's and the
    config file's ``[repair]`` table (the command line wins).

    Attributes:
        dry_run: print the plan, change nothing.
        yes: do not ask for the node names to be typed.
        restore: put back what an interrupted repair changed.
        force: with ``restore``: take over a stale lock.
        strategy: parallel, serial or canary.
        smoke_threshold: minimum average bus bandwidth (GB/s), None for the per-model default.
        sigkill: allow SIGKILL for holders that ignore SIGTERM.
        wait_jobs: with Slurm, seconds to wait for the drained node's jobs to end.
        keep_drained: with Slurm, leave the node drained after a successful repair.
        wait_pods: on Kubernetes, seconds an eviction a PodDisruptionBudget refuses is retried.
        plan: an approved plan file (``repair --dry-run --json``).
        stop_kubelet: a configured cluster that has no node for the target while kubelet runs there: stop kubelet
            (as without a cluster) instead of refusing.
    """

    dry_run: bool = False
    yes: bool = False
    restore: bool = False
    force: bool = False
    strategy: str = "parallel"
    smoke_threshold: float | None = None
    sigkill: bool = False
    wait_jobs: float = 0.0
    keep_drained: bool = False
    plan: str | None = None
    wait_pods: float = 0.0
    stop_kubelet: bool = False

    def tunables(self) -> dict[str, object]:
        """How a repair runs, as RepairOptions' fields: the one mapping headless repair and the console's plan,
        runbook and single actions build their options from."""
        return {"sigkill": self.sigkill, "smoke_threshold": self.smoke_threshold, "wait_jobs": max(0.0, self.wait_jobs),
                "keep_drained": self.keep_drained, "wait_pods": max(0.0, self.wait_pods),
                "stop_kubelet": self.stop_kubelet}


@dataclass(frozen=True, slots=True)
class SimCommand:
    """``nvls-tui sim list`` or ``sim shims DIR --scenario S --node N [--static] [--speed X]``."""

    action: str
    dir: str | None = None
    scenario: str = "seed-incident"
    node: str | None = None
    static: bool = False
    speed: float | None = None


@dataclass(frozen=True, slots=True)
class LabCommand:
    """``nvls-tui lab up [--scenario S] [--nodes NODESET] [--slurm] [--dir DIR]``, ``lab status``, ``lab down``."""

    action: str
    dir: str | None = None
    scenario: str = "seed-incident"
    nodes: str = "gpu[05-06]"
    slurm: bool = False


@dataclass(frozen=True, slots=True)
class AutopilotSettings:
    """``nvls-tui autopilot``'s own options (docs/autopilot.md gives each default and why).

    Attributes:
        mode: ``observe`` (decide and record, change nothing), ``ask`` (propose: headless it changes nothing; the
            console's ``--autopilot ask`` shows the proposals and one key approves) or ``auto`` (repair).
        every: seconds between two rounds.
        rounds: stop after this many rounds (None: until stopped).
        state_dir: where the state file, the pause file and the default audit logs live (None: the state
            directory's ``autopilot``).
        policy: a policy TOML file (None: the built-in policy).
        close_breaker: close a tripped breaker (an operator's act, audited) and exit.
        limits: the limits' values by name (``decide.Limits``'s fields).
    """

    mode: str = "observe"
    every: float = 60.0
    rounds: int | None = None
    state_dir: str | None = None
    policy: str | None = None
    close_breaker: bool = False
    limits: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a subcommand needs to know, decided once.

    Attributes:
        command: the subcommand (``console``, ``check``, ``analyze``, ``repair``, ``report``).
        targets: TARGET words (command line, else the config file's ``targets`` for console and check).
        hosts_file: ``--hosts-file``: more targets, one per line.
        demo: ``--demo``: the simulated demo fleet.
        ssh: how SSH nodes are reached.
        sudo: prefix privileged commands with ``sudo -n``.
        timeout: per-command timeout in seconds.
        max_output: bytes one command may print before it is stopped.
        read_only: never change a node (the config file can only turn this on).
        audit_dir: where audit logs go (None: the state directory's).
        slurm: the Slurm cluster.
        kube: the Kubernetes cluster.
        repair: ``repair``'s own options.
        json: print the JSON of contract.md.
        via: ``check --via``: ``ssh`` or ``slurm``.
        watch: ``check --watch``: seconds between two rounds, or None for one round.
        problems_only: ``check --problems-only``: leave the healthy nodes out of the table and the JSON.
        metrics_textfile: ``check --metrics-textfile``: node_exporter's textfile written after every round.
        metrics_listen: ``check --metrics-listen``: ``[ADDR:]PORT`` serving ``/metrics`` while the watch runs.
        notify: the console's bell and desktop notification when a long repair ends or a running one
            waits for the operator (``notify`` in the
            config file; ``--no-notify`` turns it off).
        poll_interval: the console's seconds between two polls of one node.
        keymap: binding id -> key, already checked against the binding table.
        files: ``analyze``'s files.
        log: ``report``'s audit log.
        output: ``report -o``.
        sim_speed: simulated seconds per real second of a ``sim:`` fleet's clock (0 freezes it).
        config_file: the config file read, or None.
        sim: ``nvls-tui sim``'s subcommand and its arguments (None for the other commands).
        lab: ``nvls-tui lab``'s subcommand and its arguments (None for the other commands).
        sources: setting name (``timeout``, ``ssh.user``, ``slurm.conf`` ...) -> where its value came from;
            a name not listed took its default.
        connect: builds the backends from these settings (tests hand in their own fleet); None: the
            targets' (``targets.resolve_backends``).
    """

    command: str = "check"
    targets: tuple[str, ...] = ()
    hosts_file: str | None = None
    demo: bool = False
    ssh: SshSettings = field(default_factory=SshSettings)
    sudo: bool = False
    timeout: float = DEFAULT_TIMEOUT
    max_output: int = DEFAULT_MAX_OUTPUT
    read_only: bool = False
    audit_dir: str | None = None
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    kube: KubeSettings = field(default_factory=KubeSettings)
    repair: RepairSettings = field(default_factory=RepairSettings)
    json: bool = False
    via: str = "ssh"
    watch: float | None = None
    problems_only: bool = False
    metrics_textfile: str | None = None
    metrics_listen: str | None = None
    notify: bool = True
    poll_interval: float = DEFAULT_POLL_INTERVAL
    keymap: Mapping[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    log: str | None = None
    output: str | None = None
    sim_speed: float = 1.0
    config_file: Path | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    sim: SimCommand | None = None
    lab: LabCommand | None = None
    autopilot: AutopilotSettings | None = None
    connect: Callable[[Settings], Sequence[Backend]] | None = field(default=None, compare=False)

    def source(self, name: str) -> str:
        """Where setting ``name`` came from: ``command line``, ``config file PATH``, ... or ``default``."""
        return self.sources.get(name, DEFAULT)

    def named(self, name: str, option: str) -> str:
        """How an error names setting ``name``: its ``option`` when the command line gave it, else the
        config file's key and the file (``ssh.known_hosts in config file ~/.config/nvls-tui/config.toml``)."""
        where = self.source(name)
        return f"{name} in {where}" if where.startswith("config file") else option


def _number_from_env(environ: Mapping[str, str], name: str, default: float) -> tuple[float, bool]:
    """A finite number of 0 or more from the environment, or ``default`` (and False) when unset or bad."""
    try:
        value = float(environ[name])
    except (KeyError, ValueError):
        return default, False
    return (value, True) if math.isfinite(value) and value >= 0 else (default, False)


class _Picker:
    """Takes each value from the first place that has it, and remembers which place that was."""

    def __init__(self, args: argparse.Namespace, config: Config) -> None:
        self.given = vars(args)
        self.config = config
        self.file = f"config file {config.path}"
        self.sources: dict[str, str] = {}

    def pick(self, name: str, dest: str | None, file_key: str | None, file_value: Any, default: Any) -> Any:
        """The command line's ``dest`` (None there: unset), else the file's ``file_key``, else ``default``."""
        value = self.given.get(dest) if dest else None
        if value is not None:
            self.sources[name] = COMMAND_LINE
            return value
        if file_key is not None and file_key in self.config.given:
            self.sources[name] = self.file
            return file_value
        return default


def settings_from(args: argparse.Namespace, config: Config | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """The Settings of one command line: the command line wins, the config file fills what it left
    unset, the defaults the rest.

    Args:
        args: the parsed command line (``cli.build_parser``).
        config: the config file's contents (None or empty for commands that read none).
        environ: the environment (``NVLS_TUI_SIM_SPEED``); default none.
    """
    config = config or Config()
    ssh_file = config.ssh
    p = _Picker(args, config)
    given = p.given
    command = str(given.get("command") or "check")
    targets = tuple(given.get("targets") or ())
    if targets:
        p.sources["targets"] = COMMAND_LINE
    elif command not in ("repair", "autopilot") and not given.get("demo") and "targets" in config.given:
        # A repair (and the autopilot, which repairs) never takes its nodes from a default: a TARGET it needs.
        targets = tuple(config.targets)
        p.sources["targets"] = p.file
    identity = p.pick("ssh.identity", "identity", "ssh.identity", ssh_file.get("identity"), None)
    ssh = SshSettings(
        user=p.pick("ssh.user", "user", "ssh.user", ssh_file.get("user"), None),
        identity=tuple(identity or ()),
        known_hosts=p.pick("ssh.known_hosts", "known_hosts", "ssh.known_hosts", ssh_file.get("known_hosts"), None),
        ssh_config=p.pick("ssh.ssh_config", "ssh_config", "ssh.ssh_config", ssh_file.get("ssh_config"), None),
        jump=p.pick("ssh.jump", "jump", "ssh.jump", ssh_file.get("jump"), None),
        concurrency=int(p.pick("ssh.concurrency", "concurrency", "ssh.concurrency", ssh_file.get("concurrency"),
                               DEFAULT_CONCURRENCY)),
    )
    read_only = bool(given.get("read_only"))
    if read_only:
        p.sources["read_only"] = COMMAND_LINE
    elif config.read_only:  # the file can only make a run safer
        read_only = True
        p.sources["read_only"] = p.file
    slurm = SlurmSettings(
        conf=p.pick("slurm.conf", "slurm_conf", "slurm.conf", config.slurm_conf, None),
        node_map=p.pick("slurm.node_map", "slurm_node_map", None, None, None),
        nodes=dict(config.slurm_nodes),
    )
    if config.slurm_nodes:
        p.sources["slurm.nodes"] = p.file
    kube_file = config.kubernetes
    kube = KubeSettings(
        kubeconfig=p.pick("kubernetes.kubeconfig", "kubeconfig", "kubernetes.kubeconfig", kube_file.get("kubeconfig"),
                          None),
        context=p.pick("kubernetes.context", "kube_context", "kubernetes.context", kube_file.get("context"), None),
        node_map=p.pick("kubernetes.node_map", "kube_node_map", None, None, None),
        nodes=dict(config.kube_nodes),
        disabled=bool(given.get("no_kubernetes")),
    )
    if config.kube_nodes:
        p.sources["kubernetes.nodes"] = p.file
    def how(key: str, default: object) -> Any:  # how a repair runs: the command line, the file's [repair], default
        return p.pick(f"repair.{key}", key, f"repair.{key}", config.repair.get(key), default)

    repair = RepairSettings(
        dry_run=bool(given.get("dry_run")), yes=bool(given.get("yes")), restore=bool(given.get("restore")),
        force=bool(given.get("force")), strategy=str(given.get("strategy") or "parallel"),
        smoke_threshold=how("smoke_threshold", None), sigkill=bool(how("sigkill", False)),
        wait_jobs=float(how("wait_jobs", 0.0)), keep_drained=bool(how("keep_drained", False)),
        plan=given.get("plan"), wait_pods=float(how("wait_pods", 0.0)),
        stop_kubelet=bool(how("stop_kubelet", False)),
    )
    speed, from_env = _number_from_env(environ or {}, SIM_SPEED_ENV, 1.0)
    if from_env:
        p.sources["sim_speed"] = f"environment {SIM_SPEED_ENV}"
    if config.keymap:
        p.sources["keymap"] = p.file
    return Settings(
        command=command,
        targets=targets,
        hosts_file=p.pick("hosts_file", "hosts_file", None, None, None),
        demo=bool(given.get("demo")),
        ssh=ssh,
        sudo=bool(p.pick("sudo", "sudo", "ssh.sudo", ssh_file.get("sudo"), False)),
        timeout=float(p.pick("timeout", "timeout", "timeout", config.timeout, DEFAULT_TIMEOUT)),
        max_output=int(p.pick("max_output", "max_output", None, None, DEFAULT_MAX_OUTPUT)),
        read_only=read_only,
        audit_dir=p.pick("audit_dir", "audit_dir", None, None, None),
        slurm=slurm,
        kube=kube,
        repair=repair,
        json=bool(given.get("json")),
        via=str(given.get("via") or "ssh"),
        watch=float(given["watch"]) if given.get("watch") is not None else None,
        problems_only=bool(given.get("problems_only")),
        metrics_textfile=given.get("metrics_textfile"),
        metrics_listen=given.get("metrics_listen"),
        notify=bool(p.pick("notify", "notify", "notify", config.notify, True)),
        poll_interval=float(p.pick("poll_interval", "poll", "poll_interval", config.poll_interval,
                                   DEFAULT_POLL_INTERVAL)),
        keymap=dict(config.keymap),
        files=tuple(given.get("files") or ()),
        log=given.get("log"),
        output=given.get("output"),
        sim_speed=speed,
        config_file=config.path,
        sources=p.sources,
        sim=SimCommand(action=given["sim_command"], dir=given.get("dir"), scenario=given.get("scenario") or "seed-incident",
                       node=given.get("node"), static=bool(given.get("static")), speed=given.get("speed"))
        if command == "sim" else None,
        lab=LabCommand(action=given["lab_command"], dir=given.get("dir"), scenario=given.get("scenario") or "seed-incident",
                       nodes=given.get("nodes") or "gpu[05-06]", slurm=bool(given.get("slurm")))
        if command == "lab" else None,
        autopilot=_autopilot_settings(given) if command == "autopilot" or (command == "console" and any(
            given.get(k) is not None for k in ("autopilot_mode", "state_dir", "policy", *AUTOPILOT_LIMITS))) else None,
    )


#: The autopilot's limit options (their argparse dest) -> the name of ``autopilot.decide.Limits``'s field.
AUTOPILOT_LIMITS = {"breaker_nodes": "breaker_nodes", "breaker_percent": "breaker_percent", "window": "window_s",
                    "max_parallel": "max_parallel", "budget": "budget", "budget_days": "budget_days",
                    "cooldown": "cooldown_s", "fm_starts": "fm_starts", "fm_window": "fm_window_s"}


def _autopilot_settings(given: Mapping[str, Any]) -> AutopilotSettings:
    """``autopilot``'s options; a limit not given keeps its default (``Limits``')."""
    return AutopilotSettings(
        mode=str(given.get("autopilot_mode") or given.get("mode") or "observe"), every=float(given.get("every") or 60.0), rounds=given.get("rounds"),
        state_dir=given.get("state_dir"), policy=given.get("policy"), close_breaker=bool(given.get("close_breaker")),
        limits={field_name: given[dest] for dest, field_name in AUTOPILOT_LIMITS.items() if given.get(dest) is not None},
    )


__all__ = ["AUTOPILOT_LIMITS", "AutopilotSettings", "COMMAND_LINE", "DEFAULT", "REACHING", "SIM_SPEED_ENV", "KubeSettings", "LabCommand", "SimCommand", "RepairSettings", "Settings", "SlurmSettings",
           "SshSettings", "settings_from"]
