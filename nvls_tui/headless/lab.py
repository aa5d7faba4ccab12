"""``nvls-tui lab up|status|down``: the lab's command line (contract.md, "lab")."""

from __future__ import annotations

import sys
from pathlib import Path

from nvls_tui.settings import LabCommand, Settings


def lab_dir(lab: LabCommand) -> Path:
    """``--dir``, or the state directory's ``lab/``."""
    from nvls_tui.paths import state_dir

    return Path(lab.dir).expanduser().resolve() if lab.dir else state_dir() / "lab"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _slurm_status(folder: Path) -> None:
    """``lab status``'s Slurm lines (a lab of ``up --slurm``): slurmctld, then each node's Slurm state."""
    from nvls_tui.lab import lifecycle

    slurm = lifecycle.slurm_status(folder)
    if slurm is None:
        return
    daemon = f"running (pid {slurm.slurmctld_pid})" if slurm.slurmctld_running else "stopped"
    print(f"slurmctld\t{slurm.controller}\t{daemon}\tSLURM_CONF={slurm.conf}")
    if slurm.slurmctld_running and not slurm.munged_running:
        print("munged\t-\tstopped\t(the host's munged: Slurm's clients here cannot authenticate)")
    for name, state in (slurm.nodes or {}).items():
        print(f"slurm\t{name}\t{state}")


def run(settings: Settings) -> int:
    """Exit 0 when done; 2 with one sentence when the lab cannot run or a node did not come up."""
    from ClusterShell.NodeSet import NodeSet, NodeSetParseError

    from nvls_tui.backends.nodesets import nodeset_size
    from nvls_tui.lab import lifecycle
    from nvls_tui.lab.machine import LabError

    lab = settings.lab
    if lab is None:
        print("nvls-tui: lab: give a subcommand (up, status, down)", file=sys.stderr)
        return 2
    folder = lab_dir(lab)
    try:
        if lab.action == "up":
            size = nodeset_size(lab.nodes)  # counted before NodeSet builds every name (gpu[1-30000000]: 4 GB)
            if size is not None and not 1 <= size <= 64:
                raise LabError("give between 1 and 64 lab nodes")
            try:
                names = list(NodeSet(lab.nodes))
            except NodeSetParseError as exc:
                raise LabError(f"bad node set {lab.nodes!r}: {exc}") from None
            if not names or len(names) > 64:
                raise LabError("give between 1 and 64 lab nodes")
            lifecycle.up(folder, names, lab.scenario, say=_say, slurm=lab.slurm)
            print(folder / "ssh_config")
        elif lab.action == "status":
            nodes = lifecycle.status(folder)
            if not nodes:
                print(f"no lab in {folder}")
            for node, up in nodes:
                print(f"{node.name}\t{node.address}\t{'running' if up else 'stopped'}")
            _slurm_status(folder)
        elif lab.action == "down":
            lifecycle.down(folder, say=_say)
    except LabError as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    return 0
