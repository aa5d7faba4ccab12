"""Where nvls-tui keeps its files on the operator's machine, through platformdirs (XDG on Linux).

* config: ``$XDG_CONFIG_HOME/nvls-tui/config.toml`` (``~/.config/nvls-tui``)
* state: ``$XDG_STATE_HOME/nvls-tui`` (``~/.local/state/nvls-tui``): audit logs, reports, crash logs
"""

from __future__ import annotations

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


__all__ = ["APP", "audit_dir", "config_file", "state_dir"]
