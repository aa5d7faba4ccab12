"""Command line: the console (default) and the headless commands of contract.md.

Each subcommand's work lives in ``nvls_tui.headless.<name>.run(settings) -> int``; this module parses
the arguments, builds the one :class:`~nvls_tui.settings.Settings` (command line > config file >
defaults) and turns any stray error into one clear line on stderr (never a traceback). ``sim`` and
``lab``, tools of the simulator and the lab that read no config file, still take the parsed arguments.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nvls_tui import __version__
from nvls_tui.config import Config

if TYPE_CHECKING:
    from nvls_tui.backends.base import Backend
    from nvls_tui.settings import Settings

EPILOG = """\
targets:
  host, user@host, user@host:port   an SSH node (host keys always verified)
  gpu[01-08]                        a ClusterShell node set of SSH nodes
  local                             this machine, through NVML and /proc
  sim:SCENARIO[/NODESET]            a built-in simulated fleet (see `nvls-tui sim list`)
  no target                         the console starts on the demo fleet (sim:seed-incident);
                                    check and repair refuse (--demo checks it)
"""


def _size(text: str) -> int:
    """``4M`` -> 4194304 (argparse type: a bad size is a usage error, one sentence)."""
    units = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    word = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (word[:-1], word[-1]) if word[-1:] in units and word[-1:] else (word, "")
    if not number.isdecimal() or int(number) < 1024 // units[unit] or int(number) * units[unit] < 1024:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size of at least 1K (like 512K, 4M)")
    return int(number) * units[unit]


def _finite(text: str, wanted: str, ok) -> float:
    """``float(text)`` when it is finite and ``ok(value)``; else one sentence naming ``wanted``.

    ``nan`` and ``inf`` parse as floats, but no wait, interval or threshold can be either (``nan``
    compares false with everything, so a later ``<= 0`` check would let it through).
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not {wanted}")
    return value


def _positive(text: str) -> float:
    """argparse type: a positive finite number (seconds, GB/s)."""
    return _finite(text, "a positive finite number", lambda v: v > 0)


def _not_negative(text: str) -> float:
    """argparse type: a finite number of 0 or more (a wait that may be none, a clock that may be frozen)."""
    return _finite(text, "a finite number of 0 or more", lambda v: v >= 0)


def _listen_address(text: str) -> str:
    """argparse type: ``[ADDR:]PORT`` for ``--metrics-listen`` (checked here, bound when the watch starts)."""
    from nvls_tui.headless.metrics_out import parse_listen

    try:
        parse_listen(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _positive_int(text: str) -> int:
    """argparse type: a whole number of 1 or more."""
    if not text.strip().isdecimal() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def _file_says(config: Config | None, key: str) -> str:
    """`` (config file PATH: VALUE)`` when the config file sets ``key`` (``timeout``, ``ssh.user`` ...), so
    that ``--help`` says what a run without the option would use, and why."""
    if config is None or key not in config.given:
        return ""
    if key.startswith("ssh."):
        value = config.ssh.get(key.removeprefix("ssh."))
    elif key == "slurm.conf":
        value = config.slurm_conf
    elif key.startswith("kubernetes."):
        value = config.kubernetes.get(key.removeprefix("kubernetes."))
    elif key.startswith("repair."):
        value = config.repair.get(key.removeprefix("repair."))
    else:
        value = getattr(config, key)
    shown = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value).lower() \
        if isinstance(value, bool) else str(value)
    return f" (config file {config.path}: {shown})".replace("%", "%%")  # argparse formats help with %


def _add_repair_how_options(p: argparse.ArgumentParser, config: Config | None = None) -> None:
    """How a repair runs: the same options for ``repair`` and the console, each also in the config file's
    ``[repair]`` table. Defaults are None here so that the file can fill what the command line left unset."""
    def now(key: str) -> str:
        return _file_says(config, f"repair.{key}")

    g = p.add_argument_group("how a repair runs (also the config file's [repair] table)")
    g.add_argument("--smoke-threshold", type=_positive, default=None, metavar="GBPS",
                   help="minimum average bus bandwidth (default per GPU model)" + now("smoke_threshold"))
    g.add_argument("--sigkill", action="store_true", default=None,
                   help="allow SIGKILL for holders that ignore SIGTERM (never by default)" + now("sigkill"))
    g.add_argument("--wait-jobs", type=_not_negative, default=None, metavar="SECONDS",
                   help="with Slurm: how long to wait for the drained node's jobs to end before refusing "
                        "(default 0: refuse at once while jobs run)" + now("wait_jobs"))
    g.add_argument("--keep-drained", action="store_true", default=None,
                   help="with Slurm: leave the node drained after a successful repair" + now("keep_drained"))
    g.add_argument("--wait-pods", type=_not_negative, default=None, metavar="SECONDS",
                   help="on Kubernetes: how long an eviction that a PodDisruptionBudget refuses is retried "
                        "before the repair is refused (default 0: refuse at the first refusal; a pod is never "
                        "force-deleted)" + now("wait_pods"))
    g.add_argument("--stop-kubelet", action="store_true", default=None,
                   help="on Kubernetes: where the cluster has no node for a target while kubelet runs on it, "
                        "repair it by stopping kubelet (the node NotReady to the cluster meanwhile) instead of "
                        "refusing; better: map the target to its node (--kube-node-map)" + now("stop_kubelet"))


def _add_metrics_options(p: argparse.ArgumentParser, what: str, listen_when: str) -> None:
    """``--metrics-textfile`` and ``--metrics-listen`` (``check``'s and the autopilot's): ``what`` they export."""
    p.add_argument("--metrics-textfile", metavar="FILE",
                   help=f"write {what} to FILE after every round, for node_exporter's textfile collector (a name "
                        "ending in .prom in its --collector.textfile.directory; written to a temporary file, then "
                        "renamed)")
    p.add_argument("--metrics-listen", metavar="[ADDR:]PORT", type=_listen_address,
                   help=f"{listen_when}serve {what} on http://ADDR:PORT/metrics while it runs (a bare PORT listens "
                        "on 127.0.0.1 only; 0 takes a free port, named on stderr)")


def _add_autopilot_options(p: argparse.ArgumentParser) -> None:
    """``autopilot``'s mode and limits; a limit left out takes the default docs/autopilot.md explains."""
    p.add_argument("--mode", choices=("observe", "ask", "auto"), default="observe",
                   help="observe: decide and record what it would do, change nothing (default); ask: propose "
                        "and change nothing (the console's --autopilot ask shows the proposals, one key approves); "
                        "auto: repair")
    p.add_argument("--every", type=_positive, default=None, metavar="SECONDS",
                   help="seconds between two polling rounds (default 60)")
    p.add_argument("--rounds", type=_positive_int, default=None, metavar="N",
                   help="stop after N polling rounds (default: run until stopped)")
    p.add_argument("--json", action="store_true", help="print one decision record per line (JSON)")
    p.add_argument("--close-breaker", action="store_true",
                   help="close a tripped breaker (audited) and exit; what to check first: docs/autopilot.md")
    _add_metrics_options(p, "the autopilot's metrics (its decisions by action and reason, the breaker, budgets left, "
                            "the pause: docs/metrics.md)", "")
    _add_autopilot_limits(p)


def _add_autopilot_limits(p: argparse.ArgumentParser, *, console: bool = False) -> None:
    """The autopilot's state directory, policy and limits: ``autopilot``'s and the console's ``--autopilot ask``."""
    pause = ("stops new approvals until it is removed" if console else
             "(SIGUSR1 writes it) stops new repairs until it is removed")
    p.add_argument("--state-dir", metavar="DIR",
                   help="the state file (breaker, budgets), the pause file and the audit logs (default: the "
                        f"state directory's autopilot/); a file DIR/pause {pause}")
    p.add_argument("--policy", metavar="FILE", help="a policy TOML file: which finding codes and NVIDIA buckets "
                                                    "are safe to repair unattended")
    g = p.add_argument_group("limits (docs/autopilot.md: each default and why)")
    g.add_argument("--breaker-nodes", type=_positive_int, default=None, metavar="N",
                   help="the breaker trips past N repairs in the window (default 5)")
    g.add_argument("--breaker-percent", type=_positive, default=None, metavar="P",
                   help="... or past P %% of the nodes watched, whichever is lower, never below 1 (default 5)")
    g.add_argument("--window", type=_positive, default=None, metavar="SECONDS",
                   help="the breaker's sliding window (default 3600)")
    g.add_argument("--max-parallel", type=_positive_int, default=None, metavar="N",
                   help="at most N repairs at once, after a first canary passed its smoke test (default 2)")
    g.add_argument("--budget", type=_positive_int, default=None, metavar="N",
                   help="repairs a node may have in --budget-days before it becomes a hardware ticket (default 3)")
    g.add_argument("--budget-days", type=_positive, default=None, metavar="D", help="the budget's days (default 7)")
    g.add_argument("--cooldown", type=_not_negative, default=None, metavar="SECONDS",
                   help="after a repair, seconds before the node is judged again (default 900)")
    g.add_argument("--fm-starts", type=_positive_int, default=None, metavar="N",
                   help="FM flapping: a node whose Fabric Manager started more than N times in --fm-window (its "
                        "own start times, not systemd's NRestarts) is left to a person (default 3)")
    g.add_argument("--fm-window", type=_positive, default=None, metavar="SECONDS",
                   help="the window FM's starts are counted in (default 3600)")


def _add_reach_options(p: argparse.ArgumentParser, config: Config | None = None) -> None:
    """Options shared by the commands that reach nodes (contract.md); ``config``: what the config file
    sets, named in the help of each option it fills."""
    def now(key: str) -> str:
        return _file_says(config, key)

    g = p.add_argument_group("reaching nodes")
    g.add_argument("targets", nargs="*", metavar="TARGET", help="nodes to reach (see targets below)" + now("targets"))
    g.add_argument("--demo", action="store_true", help="the simulated demo fleet (sim:seed-incident)")
    g.add_argument("--hosts-file", metavar="FILE", help="one target per line, # comments")
    g.add_argument("--ssh-config", metavar="FILE", help="OpenSSH client config (default ~/.ssh/config)"
                   + now("ssh.ssh_config"))
    g.add_argument("-i", "--identity", metavar="FILE", action="append", help="private key file" + now("ssh.identity"))
    g.add_argument("--known-hosts", metavar="FILE", help="known_hosts file (host keys are always verified)"
                   + now("ssh.known_hosts"))
    g.add_argument("-l", "--user", metavar="USER", help="remote user name" + now("ssh.user"))
    g.add_argument("--jump", metavar="HOST", help="jump host (ProxyJump)" + now("ssh.jump"))
    # Defaults are None so that an explicit value is told apart from an unset one: the command line
    # beats the config file, which beats the built-in default (settings.settings_from).
    g.add_argument("--sudo", action=argparse.BooleanOptionalAction, default=None,
                   help="prefix privileged commands with `sudo -n` (default: no)" + now("ssh.sudo"))
    g.add_argument("--timeout", type=_positive, default=None, metavar="SECONDS",
                   help="per-command timeout (default 20)" + now("timeout"))
    g.add_argument("--concurrency", type=_positive_int, default=None, metavar="N",
                   help="connections in flight (default 64)" + now("ssh.concurrency"))
    g.add_argument("--max-output", type=_size, default=None, metavar="BYTES",
                   help="what one command may print before it is stopped and its section is unknown "
                        "(default 4M; suffixes K, M, G)")
    g.add_argument("--read-only", action="store_true", help="never change anything on a node" + now("read_only"))
    g.add_argument("--slurm-conf", metavar="FILE",
                   help="the Slurm cluster's slurm.conf (default: $SLURM_CONF, else /etc/slurm/slurm.conf "
                        "when scontrol is installed; none: no scheduler)" + now("slurm.conf"))
    g.add_argument("--slurm-node-map", metavar="FILE",
                   help="'TARGET SLURM_NODE' per line, where a node's Slurm name is not its short host name")
    g.add_argument("--kubeconfig", metavar="FILE",
                   help="the Kubernetes cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config when kubectl "
                        "is installed; none: no cluster)" + now("kubernetes.kubeconfig"))
    g.add_argument("--kube-context", metavar="NAME", help="the kubeconfig's context (default: its current one)"
                   + now("kubernetes.context"))
    g.add_argument("--kube-node-map", metavar="FILE",
                   help="'TARGET K8S_NODE' per line, where a node's Kubernetes name is not its short host name")
    g.add_argument("--no-kubernetes", action="store_true",
                   help="no Kubernetes cluster, whatever would name one (KUBECONFIG, ~/.kube/config, "
                        "the config file's [kubernetes])")
    g.add_argument("--audit-dir", metavar="DIR", help="where audit logs go (default ~/.local/state/nvls-tui/audit)")
    g.add_argument("--config", metavar="FILE", help="config file (default XDG nvls-tui/config.toml)"
                   + (f"; read: {config.path}".replace("%", "%%") if config is not None and config.path else ""))


GROUPS: dict[str, tuple[argparse.ArgumentParser, list[str]]] = {}
"""Command groups (``sim``, ``lab``): their parser and subcommand names, filled by :func:`build_parser`."""


WATCH_DEFAULT_S = 5.0


def split_watch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """``check --watch WORD``: WORD is the interval when it is a number, else the first target.

    ``--watch`` takes an optional value, so argparse hands it the word after it whatever it is; a
    host name there is a target and the interval keeps its default. A number that is no interval
    (0, -1, nan) is a usage error (one line, exit 2).
    """
    word = getattr(args, "watch", None)
    if word is None:
        return
    try:
        float(word)
    except ValueError:
        args.targets = [word, *(args.targets or [])]
        args.watch = WATCH_DEFAULT_S
        return
    try:
        args.watch = _positive(word)
    except argparse.ArgumentTypeError as exc:
        parser.error(f"argument --watch: {exc}")


class OneLineParser(argparse.ArgumentParser):
    """argparse that says what is wrong in one sentence and where the help is (no usage block)."""

    def error(self, message: str):  # noqa: D102 - argparse.ArgumentParser.error, one line
        self.exit(2, f"nvls-tui: {message} (see {self.prog} --help)\n")


def build_parser(config: Config | None = None) -> argparse.ArgumentParser:
    """The whole command line; ``config``: the config file, whose values the help of each option names."""
    parser = OneLineParser(
        prog="nvls-tui",
        description="Diagnose and repair NVLink SHARP (NVLS) failures on HGX NVSwitch nodes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"nvls-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    console = sub.add_parser("console", help="the full-screen console (the default command)",
                             epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_reach_options(console, config)
    console.add_argument("--poll", type=_positive, default=None, metavar="SECONDS",
                         help="poll interval (default 5)" + _file_says(config, "poll_interval"))
    console.add_argument("--notify", action=argparse.BooleanOptionalAction, default=None,
                         help="ring the bell and raise a desktop notification (OSC 9/777) when a repair that ran "
                              "a minute or more ends, or a running repair waits for the operator (default: on)"
                              + _file_says(config, "notify"))

    console.add_argument("--metrics-listen", metavar="[ADDR:]PORT", type=_listen_address,
                         help="serve the fleet's metrics (docs/metrics.md) on http://ADDR:PORT/metrics while the "
                              "console runs (a bare PORT listens on 127.0.0.1 only)")

    _add_repair_how_options(console, config)
    console.add_argument("--autopilot", choices=("ask",), default=None, dest="autopilot_mode",
                         help="ask: judge every round of the console's poll with the autopilot's policy and limits, "
                              "show what it proposes (a mark on the node's row, the pane under the grid) and run "
                              "nothing without approval: a on a proposed node opens its plan, the typed names run "
                              "the repair, counted in the autopilot's state (docs/autopilot.md)")
    _add_autopilot_limits(console, console=True)

    check = sub.add_parser("check", help="poll every target once and diagnose it",
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_reach_options(check, config)
    check.add_argument("--json", action="store_true", help="print the JSON of docs/contract.md (in the repository)")
    check.add_argument("--via", choices=("ssh", "slurm"), default="ssh",
                       help="reach the nodes over SSH (default) or through one srun of the Slurm cluster "
                            "(TARGETs are then Slurm node names, e.g. 'gpu[05-06]')")
    check.add_argument("--problems-only", action="store_true",
                       help="leave the healthy nodes out of the table and the JSON (the counts still count them; "
                            "the JSON says how many were left out)")
    # A string here: `--watch gpu05` must leave gpu05 a target (see split_watch), not fail as a number.
    check.add_argument("--watch", nargs="?", const=str(WATCH_DEFAULT_S), default=None, metavar="SECONDS",
                       help=f"poll again every SECONDS (default {WATCH_DEFAULT_S:g}) until Ctrl-C: on a terminal "
                            "the table is redrawn in place, piped each round follows the last under a header "
                            "line (--json: one document per line); exit status of the last round")
    _add_metrics_options(check, "the metrics (docs/metrics.md)", "with --watch: ")

    analyze = sub.add_parser("analyze", help="recognise and parse captured command outputs")
    analyze.add_argument("files", nargs="+", metavar="FILE", help="files to read ('-' = stdin)")
    analyze.add_argument("--json", action="store_true", help="print the JSON of docs/contract.md (in the repository)")

    repair = sub.add_parser("repair", help="the repair runbook, headless",
                            epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_reach_options(repair, config)
    mode = repair.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    mode.add_argument("--yes", action="store_true", help="do not ask for the node names to be typed")
    mode.add_argument("--restore", action="store_true",
                      help="put units and settings back from an interrupted repair's record")
    repair.add_argument("--force", action="store_true",
                        help="with --restore: take over a stale lock (no heartbeat for 5 minutes on the node's clock, "
                             "or its nvls-tui process gone from this bastion), or one that cannot be judged after "
                             "watching it for two heartbeats with none coming; audited. A live run's lock is never "
                             "taken, even with --force")
    repair.add_argument("--json", action="store_true", help="print the JSON of docs/contract.md (in the repository)")
    _add_repair_how_options(repair, config)
    repair.add_argument("--strategy", choices=("parallel", "serial", "canary"), default="parallel",
                        help="how several nodes are repaired (default parallel)")
    repair.add_argument("--plan", metavar="FILE",
                        help="hold each node to this approved plan (the JSON of `repair --dry-run --json`): "
                             "a node that changed since is refused")

    autopilot = sub.add_parser("autopilot", help="poll, and repair the safe cases unattended within limits "
                               "(docs/autopilot.md)", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_reach_options(autopilot, config)
    _add_autopilot_options(autopilot)
    _add_repair_how_options(autopilot, config)

    report = sub.add_parser("report", help="an incident report (Markdown) from an audit log")
    report.add_argument("log", metavar="AUDIT_LOG")
    report.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    sim = sub.add_parser("sim", help="the simulator: list scenarios, write shims for a real sshd")
    sim_sub = sim.add_subparsers(dest="sim_command", metavar="SIMCOMMAND")
    sim_sub.add_parser("list", help="list the built-in scenarios")
    shims = sim_sub.add_parser("shims", help="write DIR/bin commands that behave as one simulated node")
    shims.add_argument("dir", metavar="DIR")
    shims.add_argument("--scenario", default="seed-incident")
    shims.add_argument("--node", required=True, metavar="NAME")
    shims.add_argument("--static", action="store_true",
                       help="pre-rendered read-only outputs from /bin/sh (benchmarks; no Python per command)")
    shims.add_argument("--speed", type=_not_negative, default=None, help="simulated clock speed-up")

    lab = sub.add_parser("lab", help="boot simulated nodes as real systemd containers reachable over real SSH",
                         description="The lab: each node a systemd-nspawn container with real systemd, journald, "
                                     "sshd and processes; only the GPUs, NVSwitches and the kernel's fabric log "
                                     "are simulated. Needs root and Debian's systemd-container package.")
    lab_sub = lab.add_subparsers(dest="lab_command", metavar="LABCOMMAND")
    lab_up = lab_sub.add_parser("up", help="boot the nodes, act the scenario, write DIR/ssh_config")
    lab_up.add_argument("--scenario", default="seed-incident",
                        help="seed-incident (gpu05 FM killed, gpu06 out of sync), healthy, or missing-device-files "
                             "(HGX H200s out of sync whose /dev lacks nvidia-modeset, nvidia-nvlink and "
                             "nvidia-nvswitchctl, as the real H200's does), or fm-in-container (no host FM unit: "
                             "nv-fabricmanager runs in the GPU Operator's driver pod's cgroup), or fm-restarters "
                             "(out of sync; FM crashed 3 times; Debian's needrestart, set to restart on its own, and "
                             "unattended-upgrades installed in the node, apt's timers running: apt downloads them), or "
                             "journal-rotated (out of sync; the node's real kernel journal vacuumed after the fault, "
                             "whose line only the ring buffer still holds), or k8s-incident (out of sync on "
                             "Kubernetes: a stand-in API server runs the GPU Operator's pods and a vLLM pod as real "
                             "processes in each node; up prints the KUBECONFIG to use)")
    lab_up.add_argument("--nodes", default="gpu[05-06]", metavar="NODESET",
                        help="node names, ClusterShell syntax (default: gpu[05-06])")
    lab_up.add_argument("--slurm", action="store_true",
                        help="also a real Slurm cluster over the nodes (slurmctld here, slurmd and munged in each "
                             "node; use it with SLURM_CONF=DIR/slurm.conf); needs slurm-wlm, slurm-client, munge")
    for command, text in (("status", "say which nodes run (and their Slurm states)"), ("down", "stop every node, unmount, clean DIR")):
        lab_sub.add_parser(command, help=text)
    for parser_ in (lab_up, *(lab_sub.choices[c] for c in ("status", "down"))):
        parser_.add_argument("--dir", metavar="DIR", help="the lab folder (default: the state directory's lab/)")
    GROUPS.update({"sim": (sim, list(sim_sub.choices)), "lab": (lab, list(lab_sub.choices))})
    return parser


SUBCOMMANDS = ("console", "check", "analyze", "repair", "autopilot", "report", "sim", "lab")


def _host_like(word: str, argv: list[str]) -> bool:
    """True when ``word`` names a node: target syntax, a name that resolves, or an SSH config alias."""
    import fnmatch
    import os
    import re
    import socket
    from pathlib import Path

    if word == "local" or word.startswith("sim:") or re.search(r"[\d.@:\[\]]", word):
        return True
    configs = [os.path.expanduser("~/.ssh/config")]
    if "--ssh-config" in argv[:-1]:
        configs.insert(0, argv[argv.index("--ssh-config") + 1])
    for path in configs:
        if not os.path.isfile(path):  # a FIFO would block the read forever (resolve_backends says why)
            continue
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields and fields[0].lower() == "host" and any(fnmatch.fnmatch(word, p) for p in fields[1:]):
                return True
    try:
        socket.getaddrinfo(word, None)
    except (OSError, UnicodeError):
        return False
    return True


def _not_a_command(word: str) -> str:
    """The one sentence for a first word that is neither a command nor a node."""
    import difflib

    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    if close:
        return f"nvls-tui: unknown command {word!r} (did you mean {close[0]!r}?)"
    return (f"nvls-tui: {word!r} is neither a command nor a host this machine knows (commands: "
            f"{', '.join(SUBCOMMANDS)}; a host resolves, or is user@host, a node set like gpu[01-08], local or "
            "sim:SCENARIO)")


def _help_config(argv: list[str]) -> Config | None:
    """The config file ``--help`` names values from (``--config FILE`` or the default); None when it
    cannot be read (the run itself then says why)."""
    from nvls_tui.config import ConfigError, load_config

    explicit = argv[argv.index("--config") + 1] if "--config" in argv[:-1] else next(
        (a.removeprefix("--config=") for a in argv if a.startswith("--config=")), None)
    try:
        config = load_config(explicit)
    except ConfigError:
        return None
    return config if config.path is not None else None


def build_settings(args: argparse.Namespace) -> Settings:
    """The one Settings of a parsed command line: the config file read (for the commands that reach
    nodes), the environment's simulated-clock speed, the defaults.

    Raises:
        ConfigError: the config file cannot be used (one sentence naming it).
    """
    import os

    from nvls_tui.config import load_config
    from nvls_tui.settings import REACHING, settings_from

    config = load_config(vars(args).get("config")) if args.command in REACHING else None
    return settings_from(args, config, os.environ)


def main(argv: list[str] | None = None, *,
         connect: Callable[[Settings], Sequence[Backend]] | None = None) -> int:
    """Entry point of the ``nvls-tui`` command. Returns the exit status (contract.md).

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        connect: builds the backends from the Settings instead of the targets (tests hand in a fleet
            they hold; ``Settings.connect``).
    """
    from nvls_tui.quiet import quiet_asyncssh_imports

    quiet_asyncssh_imports()  # before any command imports asyncssh (SSH targets): one line of error is one line
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else ""
    if first and not first.startswith("-") and first not in SUBCOMMANDS and not _host_like(first, argv):
        print(_not_a_command(first), file=sys.stderr)
        return 2
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "console")
    parser = build_parser(_help_config(argv) if {"-h", "--help"} & set(argv) else None)
    try:
        args, unknown = parser.parse_known_args(argv)
    except SystemExit as exc:  # argparse already printed a usage line
        return 0 if exc.code in (0, None) else 2
    if unknown:  # said here, not by the top parser: the help that lists the flags is the subcommand's
        words = [args.command, getattr(args, f"{args.command}_command", None)]
        from nvls_tui.textsafe import one_line

        print(f"nvls-tui: unrecognized arguments: {one_line(' '.join(unknown), 200)} (see nvls-tui "
              f"{' '.join(w for w in words if w)} --help)", file=sys.stderr)
        return 2
    try:
        split_watch(args, parser)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    for command in ("sim", "lab"):  # a command group without its subcommand is a usage error
        if args.command == command and not getattr(args, f"{command}_command"):
            group_parser, names = GROUPS[command]
            group_parser.print_usage(sys.stderr)
            print(f"nvls-tui {command}: give a subcommand ({', '.join(names)})", file=sys.stderr)
            return 2
    module = importlib.import_module(f"nvls_tui.headless.{args.command}")
    try:
        from dataclasses import replace

        from nvls_tui.config import ConfigError

        try:
            settings = build_settings(args)
        except ConfigError as exc:
            print(f"nvls-tui: {exc}", file=sys.stderr)
            return 2
        return int(module.run(replace(settings, connect=connect) if connect else settings))
    except KeyboardInterrupt:
        print("nvls-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `nvls-tui analyze --json ... | head`: the reader had enough, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second complaint at exit
        return 141
    except Exception as exc:  # noqa: BLE001 - the contract: one sentence, never a traceback
        if isinstance(exc, (ValueError, OSError)) or type(exc).__module__.startswith("nvls_tui"):
            print(f"nvls-tui: {exc}", file=sys.stderr)
        else:  # a bug: keep the traceback for the report, show one line
            print(f"nvls-tui: internal error ({type(exc).__name__}: {exc}); details in {_save_crash()}",
                  file=sys.stderr)
        return 2


def _save_crash() -> str:
    """Write the current traceback to the state directory and return its path (nothing is lost).

    Private like every file of nvls-tui's (a traceback can quote hosts and command lines): 0600, new,
    never through a link, in a directory of the operator's own.
    """
    import os
    import time
    import traceback

    from nvls_tui.localfiles import create_private, private_dir
    from nvls_tui.paths import state_dir

    try:
        folder = private_dir(state_dir())
        path = folder / f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
        with os.fdopen(create_private(path), "w", encoding="utf-8") as fh:
            fh.write(traceback.format_exc())
    except OSError:
        return "(could not be written)"
    return str(path)


if __name__ == "__main__":
    sys.exit(main())
