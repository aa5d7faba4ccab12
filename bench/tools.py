"""The clients under test: how each one is started on the rig, and how to tell every node answered.

Every tool runs the same remote command (``sh -c '<nvls_tui.poll.probe_script.probe_script()>'``) on the same
nodes. The OpenSSH-based anchors read the rig's ``ssh_config`` (host keys verified, no
ControlMaster: these are cold runs); the Python clients get the ports, key and known_hosts.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.rig import BenchRig
from nvls_tui.poll.probe import MARK

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
VENV = ROOT / ".venv" / "bin"
ANCHORS = BENCH / ".venv-anchors" / "bin"
# The probe's last marker (bench.rig.probe_command runs probe_script() with its default nonce).
END_MARK = f"{MARK}-0 end processes".encode()


@dataclass(frozen=True)
class Tool:
    """One row of the table.

    Attributes:
        name: table label.
        argv: ``argv(rig, n, workdir)`` -> command line.
        env: ``env(rig, n, workdir)`` -> extra environment.
        answered: ``answered(stdout, n)`` -> how many nodes returned a complete probe.
        repoll: the row is a re-poll over kept connections (compared with the floor's re-poll).
        floor: this row is the floor the others are divided by.
        available: None when it can run, else why not.
    """

    name: str
    argv: Callable[[BenchRig, int, Path], list[str]]
    answered: Callable[[bytes, int], int]
    env: Callable[[BenchRig, int, Path], dict[str, str]] = lambda rig, n, work: {}
    repoll: bool = False
    floor: bool = False
    needs: str = ""
    max_nodes: int | None = None  # past this size the tool is left out (said on stderr)

    def available(self) -> str | None:
        """None when the tool's binary is installed, else a sentence saying what is missing."""
        if self.needs and not (shutil.which(self.needs) or os.access(self.needs, os.X_OK)):
            return f"{self.needs} is not installed (run `make bench`, which installs it)"
        return None


def _marks(stdout: bytes, n: int) -> int:
    return min(n, stdout.count(END_MARK))


def _sizes(stdout: bytes, n: int) -> int:
    """Lines of per-node byte counts: a complete probe is several KB."""
    return sum(1 for line in stdout.split() if line.isdigit() and int(line) > 1000)


def _check_json(stdout: bytes, n: int) -> int:
    try:
        nodes = json.loads(stdout)["nodes"]
    except (ValueError, KeyError):
        return 0
    return sum(1 for node in nodes if node.get("reachable") and node.get("gpus"))


def _repoll_lines(stdout: bytes, n: int) -> int:
    return sum(1 for line in stdout.splitlines() if b" ok " in line and b"gpus=8" in line)


def _nvls_args(rig: BenchRig, n: int, work: Path) -> list[str]:
    targets = work / f"targets.{n}"
    targets.write_text("".join(f"{t}\n" for t in rig.targets(n)))
    return ["--hosts-file", str(targets), *rig.rig.cli_args(), "--concurrency", str(n), "--timeout", "60"]


def _ansible_env(rig: BenchRig, n: int, work: Path) -> dict[str, str]:
    home = work / "ansible"
    home.mkdir(exist_ok=True)
    return {
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_SSH_ARGS": f"-F {rig.ssh_config}",  # replaces ansible's ControlMaster=auto default
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_TIMEOUT": "60",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
    }


def _ansible_inventory(rig: BenchRig, n: int, work: Path) -> Path:
    path = work / f"inventory.{n}"
    path.write_text("[nodes]\n" + "".join(f"{name}\n" for name in rig.names(n)))
    return path


TOOLS: tuple[Tool, ...] = (
    Tool("nvls-tui check (cold)",
         lambda rig, n, w: [str(VENV / "nvls-tui"), "check", "--json", *_nvls_args(rig, n, w)],
         _check_json, needs=str(VENV / "nvls-tui")),
    Tool("nvls-tui re-poll",
         lambda rig, n, w: [str(VENV / "python"), "-m", "bench.nvls_repoll", *_nvls_args(rig, n, w)],
         _repoll_lines, repoll=True),
    Tool("nvls-tui re-poll, every node changed",
         lambda rig, n, w: [str(VENV / "python"), "-m", "bench.nvls_repoll", "--changed", *_nvls_args(rig, n, w)],
         _repoll_lines, repoll=True),
    Tool("bare asyncssh (floor)",
         lambda rig, n, w: [str(VENV / "python"), str(BENCH / "bare_asyncssh.py"), str(rig.port_list(n)),
                            str(rig.rig.client_key), str(rig.rig.known_hosts), str(rig.probe_file())],
         _sizes, floor=True),
    Tool("bare asyncssh re-poll (floor)",
         lambda rig, n, w: [str(VENV / "python"), str(BENCH / "bare_asyncssh.py"), str(rig.port_list(n)),
                            str(rig.rig.client_key), str(rig.rig.known_hosts), str(rig.probe_file()), "--repoll"],
         _sizes, repoll=True, floor=True),
    Tool("pdsh -R ssh",
         lambda rig, n, w: ["pdsh", "-R", "ssh", "-f", str(n), "-t", "60", "-w", f"^{rig.hosts_file(n)}",
                            rig.probe_file().read_text()],
         _marks, env=lambda rig, n, w: {"PDSH_SSH_ARGS": f"-F {rig.ssh_config} %h"}, needs="pdsh"),
    Tool("ClusterShell clush",
         lambda rig, n, w: [str(VENV / "clush"), "-f", str(n), "-t", "60", "-w", rig.nodeset(n),
                            "-o", f"-F {rig.ssh_config}", rig.probe_file().read_text()],
         _marks, needs=str(VENV / "clush")),
    Tool("ansible ad-hoc (raw)",
         lambda rig, n, w: [str(ANCHORS / "ansible"), "all", "-i", str(_ansible_inventory(rig, n, w)),
                            "-m", "raw", "-a", rig.probe_file().read_text(), "-f", str(n)],
         # -f N forks N Python workers: a thousand of them is a memory benchmark, not a fan-out one.
         _marks, env=_ansible_env, needs=str(ANCHORS / "ansible"), max_nodes=256),
    Tool("parallel-ssh",
         lambda rig, n, w: [str(ANCHORS / "python"), str(BENCH / "pssh_run.py"), str(rig.port_list(n)),
                            str(rig.rig.client_key), str(rig.probe_file())],
         _sizes, needs=str(ANCHORS / "python")),
)


def by_name(names: list[str] | None) -> list[Tool]:
    """The tools whose names start with one of ``names`` (the standard set when None)."""
    pool = list(TOOLS)
    if not names:
        return pool
    return [t for t in pool if any(t.name.startswith(x) for x in names)]


def base_env() -> dict[str, str]:
    """The environment every client starts with (no user ssh config or agent leaking in)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT)
    env["PATH"] = f"{VENV}:{env.get('PATH', '/usr/bin:/bin')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
