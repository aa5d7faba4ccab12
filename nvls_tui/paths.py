"""Where nvls-tui keeps its files on the operator's machine, through platformdirs (XDG on Linux).

* config: ``$XDG_CONFIG_HOME/nvls-tui/config.toml`` (``~/.config/nvls-tui``)
* state: ``$XDG_STATE_HOME/nvls-tui`` (``~/.local/state/nvls-tui``): audit logs, reports, crash logs,
  and ``audit-fallback``: what an audit log could not take
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "nvls-tui"


def config_file() -> Path:
    """The config file (it may not exist)."""
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def state_dir() -> Path:
    """The state directory (created by whoever writes there, private)."""
    return Path(platformdirs.user_state_dir(APP))


def audit_dir() -> Path:
    """The default audit directory."""
    return state_dir() / "audit"


def audit_fallback_dirs() -> list[Path]:
    """Where records go once an audit log cannot take them (a full disk), in the order tried.

    The state directory's ``audit-fallback`` (the audit log may be on another disk, ``--audit-dir``),
    then ``/var/tmp/nvls-tui-UID``: kept across reboots, unlike /tmp, and often another filesystem.
    """
    return [state_dir() / "audit-fallback", Path("/var/tmp") / f"{APP}-{os.geteuid()}"]


__all__ = ["APP", "audit_dir", "audit_fallback_dirs", "config_file", "state_dir"]
