"""The console's config file: ``$XDG_CONFIG_HOME/nvls-tui/config.toml`` (``~/.config/...`` by default).

Example::

    poll_interval = 5.0          # seconds between polls of one node
    timeout = 20.0               # per-command timeout
    targets = ["gpu[01-08]"]     # used when the command line names no target
    read_only = false

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

    [keymap]                     # binding id = key (see `?` in the console)
    "node.sigterm" = "k"

The command line always wins over the file; the file only fills what the command line left unset.
"""

from __future__ import annotations

import argparse
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvls_tui import paths

DEFAULT_POLL_INTERVAL = 5.0

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
        ssh: SSH options by argparse destination (``user``, ``identity``, ``known_hosts``, ...).
        keymap: binding id -> key (validated later against the binding table).
        slurm_conf: ``[slurm] conf``, the Slurm cluster's slurm.conf.
        slurm_nodes: ``[slurm.nodes]``, target -> Slurm node name.
    """

    path: Path | None = None
    poll_interval: float = DEFAULT_POLL_INTERVAL
    timeout: float | None = None
    targets: tuple[str, ...] = ()
    read_only: bool = False
    ssh: Mapping[str, object] = field(default_factory=dict)
    keymap: Mapping[str, str] = field(default_factory=dict)
    slurm_conf: str | None = None
    slurm_nodes: Mapping[str, str] = field(default_factory=dict)


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


def parse_config(data: Mapping[str, object], path: Path | None = None) -> Config:
    """Build a Config from parsed TOML, checking every type."""
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
    keymap_raw = _expect("[keymap]", data.get("keymap", {}), dict)
    keymap = {str(k): str(_expect(f"keymap.{k}", v, str)) for k, v in keymap_raw.items()}
    slurm_raw = _expect("[slurm]", data.get("slurm", {}), dict)
    unknown = set(slurm_raw) - {"conf", "nodes"}
    if unknown:
        raise ConfigError(f"config: unknown [slurm] option {sorted(unknown)[0]!r} (known: conf, nodes)")
    conf = slurm_raw.get("conf")
    slurm_conf = str(Path(_expect("slurm.conf", conf, str)).expanduser()) if conf is not None else None
    nodes = _expect("[slurm.nodes]", slurm_raw.get("nodes", {}), dict)
    slurm_nodes = {str(k): str(_expect(f"slurm.nodes.{k}", v, str)) for k, v in nodes.items()}
    return Config(path=path, poll_interval=poll, timeout=timeout, targets=tuple(targets),
                  read_only=read_only, ssh=ssh, keymap=keymap, slurm_conf=slurm_conf, slurm_nodes=slurm_nodes)


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the config file.

    Args:
        path: an explicit file (``--config``): it must exist. None: the XDG default, if present.

    Raises:
        ConfigError: the explicit file is missing, or any file is not valid TOML or has a bad value.
    """
    explicit = path is not None
    file = Path(path).expanduser() if path is not None else default_path()
    if not file.is_file():
        if explicit:
            raise ConfigError(f"config file {file} does not exist")
        return Config()
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {file}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from exc
    return parse_config(data, file)


DEFAULT_TIMEOUT = 20.0


def merge_args(args: argparse.Namespace, config: Config) -> argparse.Namespace:
    """A copy of ``args`` where the config fills what the command line left unset.

    Targets come from the config only when the command line named none and did not ask for the demo.
    """
    merged = argparse.Namespace(**vars(args))
    if not getattr(merged, "targets", None) and not getattr(merged, "demo", False) and config.targets:
        merged.targets = list(config.targets)
    if getattr(merged, "poll", None) is None:
        merged.poll = config.poll_interval
    if config.timeout is not None and getattr(merged, "timeout", None) is None:
        merged.timeout = config.timeout
    if config.read_only:
        merged.read_only = True  # the safe direction always wins
    for dest, value in config.ssh.items():
        # Every reach option's command-line default is None: anything else was given explicitly.
        if getattr(merged, dest, None) is None:
            setattr(merged, dest, value)
    if config.slurm_conf and getattr(merged, "slurm_conf", None) is None:
        merged.slurm_conf = config.slurm_conf
    if config.slurm_nodes:
        merged.slurm_nodes = dict(config.slurm_nodes)  # --slurm-node-map entries win (backends.targets)
    if getattr(merged, "timeout", None) is None:
        merged.timeout = DEFAULT_TIMEOUT
    return merged
