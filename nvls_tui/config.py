"""The console's config file: ``$XDG_CONFIG_HOME/nvls-tui/config.toml`` (``~/.config/...`` by default).

Example::

    poll_interval = 5.0          # seconds between polls of one node
    timeout = 20.0               # per-command timeout
    targets = ["gpu[01-08]"]     # used when the command line names no target
    read_only = false
    notify = true                # bell + desktop notification when a long repair ends or waits for you

    [ssh]
    user = "ops"
    identity = ["~/.ssh/id_ed25519"]
    known_hosts = "~/.ssh/known_hosts"
    jump = "bastion"
    sudo = true

    [slurm]                      # the cluster's scheduler (else SLURM_CONF, else /etc/slurm/slurm.conf)
    conf = "/etc/slurm/slurm.conf"
    [slurm.nodes]                # target = Slurm node name, where it is not the short host name
    "gpu05.dc1.example" = "dc1-gpu05"

    [kubernetes]                 # the cluster (else KUBECONFIG, else ~/.kube/config when kubectl is installed)
    kubeconfig = "~/.kube/config"
    context = "prod"
    [kubernetes.nodes]           # target = Kubernetes node name, where it is not the short host name
    "gpu05.dc1.example" = "dc1-gpu05"

    [repair]                     # how a repair runs, in the console and headless (the command line wins)
    wait_pods = 120              # on Kubernetes: retry an eviction a disruption budget refuses this long
    wait_jobs = 0                # with Slurm: wait this long for the drained node's jobs to end
    smoke_threshold = 300.0      # GB/s the smoke test must reach (default: per GPU model)
    keep_drained = false         # with Slurm: leave the node drained after a repair that passed
    sigkill = false              # allow SIGKILL for holders that ignore SIGTERM
    stop_kubelet = false         # a cluster without a node for the target: stop kubelet instead of refusing

    [keymap]                     # binding id = key (see `?` in the console)
    "node.sigterm" = "k"

The command line always wins over the file; the file only fills what the command line left unset
(:mod:`nvls_tui.settings` builds the one Settings of every subcommand from both). Every key is checked:
an unknown one, a ``[keymap]`` id that names no binding, or a key two bindings would answer to is an
error, one sentence naming the file.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvls_tui import paths
from nvls_tui.binding_table import keymap_problem

DEFAULT_POLL_INTERVAL = 5.0
MAX_BYTES = 1 << 20
"""A config file larger than this is not read (it is a few lines)."""
MAX_NESTING = 8
"""Arrays and tables inside one another, the file's top level counted: no setting nests more than 3."""

# argparse destinations that [ssh] may fill, with the type each must have.
_SSH_KEYS: dict[str, type | tuple[type, ...]] = {
    "user": str,
    "identity": (str, list),
    "known_hosts": str,
    "ssh_config": str,
    "jump": str,
    "sudo": bool,
    "concurrency": int,
}

# ``[repair]``: each key, and the sentence a wrong value gets (numbers) or the type it must have (flags).
_REPAIR_NUMBERS = {"smoke_threshold": ("a finite number of GB/s, more than 0", lambda v: v > 0),
                   "wait_jobs": ("a finite number of seconds, 0 or more", lambda v: v >= 0),
                   "wait_pods": ("a finite number of seconds, 0 or more", lambda v: v >= 0)}
_REPAIR_FLAGS = ("sigkill", "keep_drained", "stop_kubelet")


class ConfigError(Exception):
    """The config file cannot be read or has a value of the wrong type; ``str()`` is one sentence."""


@dataclass(frozen=True, slots=True)
class Config:
    """What the config file says (defaults where it says nothing).

    Attributes:
        path: the file read, or None when there was none.
        poll_interval: seconds between two polls of one node.
        timeout: per-command timeout in seconds, or None for the command line's default.
        targets: default targets when the command line names none.
        read_only: start in read-only mode.
        notify: the console's notification when a long repair ends or a running one waits for the
            operator (bell, OSC 9/777).
        ssh: SSH options by argparse destination (``user``, ``identity``, ``known_hosts``, ...).
        keymap: binding id -> key (validated later against the binding table).
        slurm_conf: ``[slurm] conf``, the Slurm cluster's slurm.conf.
        slurm_nodes: ``[slurm.nodes]``, target -> Slurm node name.
        kubernetes: ``[kubernetes]`` ``kubeconfig`` and ``context`` (the file's path expanded).
        kube_nodes: ``[kubernetes.nodes]``, target -> Kubernetes node name.
        repair: ``[repair]``, how a repair runs (``wait_pods``, ``sigkill`` ...), console and headless alike.
        given: the settings the file itself set (``poll_interval``, ``ssh.user``, ``slurm.conf`` ...), so
            that a value can say it came from the file rather than from a default.
    """

    path: Path | None = None
    poll_interval: float = DEFAULT_POLL_INTERVAL
    timeout: float | None = None
    targets: tuple[str, ...] = ()
    read_only: bool = False
    notify: bool = True
    ssh: Mapping[str, object] = field(default_factory=dict)
    keymap: Mapping[str, str] = field(default_factory=dict)
    slurm_conf: str | None = None
    slurm_nodes: Mapping[str, str] = field(default_factory=dict)
    kubernetes: Mapping[str, str] = field(default_factory=dict)
    kube_nodes: Mapping[str, str] = field(default_factory=dict)
    repair: Mapping[str, object] = field(default_factory=dict)
    given: frozenset[str] = frozenset()


def default_path() -> Path:
    """``$XDG_CONFIG_HOME/nvls-tui/config.toml``, with ``~/.config`` when the variable is unset (platformdirs)."""
    return paths.config_file()


def _expect(name: str, value: object, kind: type | tuple[type, ...]) -> Any:
    # bool is an int in Python: refuse `poll_interval = true` rather than polling every second.
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"config: {name} must be a {kinds[0].__name__}, not a boolean")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(f"config: {name} must be a {names}, not {type(value).__name__}")
    return value


# The top-level settings the file may hold (each table's own keys are checked where it is read).
_TOP_KEYS = ("poll_interval", "timeout", "targets", "read_only", "notify", "ssh", "slurm", "kubernetes", "repair",
             "keymap")


def parse_config(data: Mapping[str, object], path: Path | None = None) -> Config:
    """Build a Config from parsed TOML, checking every key and type.

    Raises:
        ConfigError: an unknown setting, ``[ssh]``/``[slurm]`` option or ``[keymap]`` binding id, a key two
            bindings would answer to, or a value of the wrong type: one sentence naming the file.
    """
    try:
        return _parse(data, path)
    except ConfigError as exc:
        if path is None:
            raise
        raise ConfigError(f"config file {path}: {str(exc).removeprefix('config: ')}") from None


def _parse(data: Mapping[str, object], path: Path | None) -> Config:
    unknown_keys = [k for k in data if k not in _TOP_KEYS]
    if unknown_keys:
        # A typo (`pol_interval`) would otherwise leave the default in force without a word.
        raise ConfigError(f"config: unknown setting {unknown_keys[0]!r} (known: {', '.join(_TOP_KEYS)})")
    poll = data.get("poll_interval", DEFAULT_POLL_INTERVAL)
    poll = float(_expect("poll_interval", poll, (int, float)))
    # TOML has nan and inf; nan compares false with everything, so test for a finite number first.
    if not math.isfinite(poll) or poll <= 0:
        raise ConfigError("config: poll_interval must be a finite number of seconds, more than 0")
    timeout = data.get("timeout")
    if timeout is not None:
        timeout = float(_expect("timeout", timeout, (int, float)))
        if not math.isfinite(timeout) or timeout <= 0:
            raise ConfigError("config: timeout must be a finite number of seconds, more than 0")
    raw_targets = data.get("targets", [])
    targets: list[Any] = _expect("targets", [raw_targets] if isinstance(raw_targets, str) else raw_targets, list)
    for t in targets:
        _expect("targets[]", t, str)
    read_only = bool(_expect("read_only", data.get("read_only", False), bool))
    notify = bool(_expect("notify", data.get("notify", True), bool))
    ssh_raw = _expect("[ssh]", data.get("ssh", {}), dict)
    ssh: dict[str, object] = {}
    for key, value in ssh_raw.items():
        dest = key.replace("-", "_")
        if dest not in _SSH_KEYS:
            raise ConfigError(f"config: unknown [ssh] option {key!r} (known: {', '.join(sorted(_SSH_KEYS))})")
        ssh[dest] = _expect(f"ssh.{key}", value, _SSH_KEYS[dest])
        if dest == "concurrency" and int(value) < 1:
            raise ConfigError("config: ssh.concurrency must be 1 or more")
    if isinstance(ssh.get("identity"), str):
        ssh["identity"] = [ssh["identity"]]
    identity = ssh.get("identity")
    for key_file in identity if isinstance(identity, list) else []:
        _expect("ssh.identity[]", key_file, str)  # a list in it would be read as a file named "[...]"
    keymap_raw = _expect("[keymap]", data.get("keymap", {}), dict)
    problem = keymap_problem(keymap_raw)
    if problem:
        raise ConfigError(f"config: {problem}")
    keymap = {str(k): str(v).strip() for k, v in keymap_raw.items()}
    slurm_raw = _expect("[slurm]", data.get("slurm", {}), dict)
    unknown = set(slurm_raw) - {"conf", "nodes"}
    if unknown:
        raise ConfigError(f"config: unknown [slurm] option {sorted(unknown)[0]!r} (known: conf, nodes)")
    conf = slurm_raw.get("conf")
    slurm_conf = str(Path(_expect("slurm.conf", conf, str)).expanduser()) if conf is not None else None
    nodes = _expect("[slurm.nodes]", slurm_raw.get("nodes", {}), dict)
    slurm_nodes = {str(k): str(_expect(f"slurm.nodes.{k}", v, str)) for k, v in nodes.items()}
    kubernetes, kube_nodes = _kubernetes(data.get("kubernetes", {}))
    repair = _repair(data.get("repair", {}))
    given = {k for k in data if k not in ("ssh", "slurm", "kubernetes", "repair")} | {f"ssh.{k}" for k in ssh} | {
        f"slurm.{k}" for k in slurm_raw} | {f"kubernetes.{k}" for k in kubernetes} | (
        {"kubernetes.nodes"} if kube_nodes else set()) | {f"repair.{k}" for k in repair}
    return Config(path=path, poll_interval=poll, timeout=timeout, targets=tuple(targets),
                  read_only=read_only, notify=notify, ssh=ssh, keymap=keymap, slurm_conf=slurm_conf, slurm_nodes=slurm_nodes,
                  kubernetes=kubernetes, kube_nodes=kube_nodes, repair=repair, given=frozenset(given))


def _kubernetes(raw: object) -> tuple[dict[str, str], dict[str, str]]:
    """``[kubernetes]``: ``kubeconfig`` (path expanded) and ``context``; ``[kubernetes.nodes]``: target -> node."""
    table = _expect("[kubernetes]", raw, dict)
    unknown = set(table) - {"kubeconfig", "context", "nodes"}
    if unknown:
        raise ConfigError(f"config: unknown [kubernetes] option {sorted(unknown)[0]!r} "
                          "(known: kubeconfig, context, nodes)")
    out: dict[str, str] = {}
    for key in ("kubeconfig", "context"):
        if key in table:
            value = str(_expect(f"kubernetes.{key}", table[key], str))
            if not value.strip():
                raise ConfigError(f"config: kubernetes.{key} must not be empty")
            out[key] = str(Path(value).expanduser()) if key == "kubeconfig" else value
    nodes = _expect("[kubernetes.nodes]", table.get("nodes", {}), dict)
    return out, {str(k): str(_expect(f"kubernetes.nodes.{k}", v, str)) for k, v in nodes.items()}


def _repair(raw: object) -> dict[str, object]:
    """``[repair]``: how a repair runs (the same settings as ``repair``'s options), each key and value checked."""
    table = _expect("[repair]", raw, dict)
    known = sorted((*_REPAIR_NUMBERS, *_REPAIR_FLAGS))
    out: dict[str, object] = {}
    for key, value in table.items():
        dest = key.replace("-", "_")
        if dest in _REPAIR_FLAGS:
            out[dest] = bool(_expect(f"repair.{key}", value, bool))
        elif dest in _REPAIR_NUMBERS:
            words, good = _REPAIR_NUMBERS[dest]
            number = float(_expect(f"repair.{key}", value, (int, float)))
            if not math.isfinite(number) or not good(number):
                raise ConfigError(f"config: repair.{key} must be {words}")
            out[dest] = number
        else:
            raise ConfigError(f"config: unknown [repair] option {key!r} (known: {', '.join(known)})")
    return out


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the config file.

    Args:
        path: an explicit file (``--config``): it must exist. None: the XDG default, if present.

    Raises:
        ConfigError: the explicit file is missing, or any file is larger than :data:`MAX_BYTES`, nests
            deeper than :data:`MAX_NESTING`, is not valid TOML or has a bad value.
    """
    explicit = path is not None
    file = Path(path).expanduser() if path is not None else default_path()
    if not file.is_file():
        if explicit:
            raise ConfigError(f"config file {file} does not exist")
        return Config()
    try:
        with file.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)  # no further: a huge file is not read whole to be refused
        if len(raw) > MAX_BYTES:
            raise ConfigError(f"config file {file} is larger than {MAX_BYTES >> 20} MiB: not a config file")
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {file}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from exc
    except RecursionError:
        # tomllib reads an array or inline table inside another by recursing: thousands deep, Python stops it.
        raise ConfigError(_too_deep(file)) from None
    if nesting(data) > MAX_NESTING:
        raise ConfigError(_too_deep(file))
    return parse_config(data, file)


def _too_deep(file: Path) -> str:
    return f"config file {file}: arrays or tables nest deeper than {MAX_NESTING} levels (no setting nests more than 3)"


def nesting(data: object) -> int:
    """How deep arrays and tables nest in ``data`` (a scalar 0, ``{}`` 1, ``{"a": []}`` 2); without
    recursion, and no deeper than ``MAX_NESTING + 1`` (enough to refuse it)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            break
        stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest
