"""How a lab test file boots a lab of its own, and where each lab of the suite lives.

The lab tier's files run side by side (one xdist group each, ``lab-<name>``; the shared labs of
tests/lab/conftest.py have one group each for all their users: ``lab`` and ``lab-healthy``), so every lab the
suite boots must name nothing another lab names while both run: its addresses and Slurm's ports come from its subnet (:data:`SUBNETS`, one per lab), its folder from
its prefix (in the worker's own tmp folder), its nodes' machine names and cgroups from their addresses
(:func:`nvls_tui.lab.machine.machine_name`). tests/unit/test_lab_side_by_side.py holds the table to that.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SUBNETS = {
    "lab": 6,  # tests/lab/conftest.py's lab (gpu05, gpu06: the seed incident)
    "downlab": 7,  # test_lab.py: lab01, which lab down leaves nothing of
    "slurmlab": 8,
    "h200lab": 9,
    "healthylab": 10,  # tests/lab/conftest.py's healthy_lab (gpu07, gpu08)
    "ctrlab": 13,
    "nrlab": 15,
    "rotlab": 17,
    "k8slab": 21,
    "aplab": 25,
}
"""``{folder prefix: subnet}`` of every lab the suite boots: ``127.0.SUBNET.x`` and Slurm's ports of that subnet
(:func:`nvls_tui.lab.slurm.ctld_port`) are that lab's alone; never the operator's lab's (127.0.5.x)."""


@contextmanager
def own_lab(tmp_path_factory, prefix: str, names: list[str], scenario: str, *, slurm: bool = False,
            bastion: bool = False) -> Iterator[tuple[Path, list]]:
    """Boot ``names`` acting ``scenario`` on the subnet of ``prefix`` (a folder ``PREFIXn`` of the session's
    tmp folder): ``(folder, nodes)``; down again at the end. Skips where the lab (or ``slurm``) cannot run.

    First it downs what a killed run left under this prefix (its lab.json says what to stop): only a lab whose
    maker is gone, never another live worker's or session's.
    """
    from nvls_tui.lab import lifecycle
    from nvls_tui.lab import slurm as lab_slurm
    from nvls_tui.lab.machine import missing_requirements

    problem = missing_requirements() or (lab_slurm.missing() if slurm else None)
    if problem:
        pytest.skip(f"the lab cannot boot here: {problem} (scripts/system-deps.sh installs what it needs)")
    lifecycle.down_abandoned(Path(tempfile.gettempdir()), prefix)
    folder = tmp_path_factory.mktemp(prefix)
    nodes = lifecycle.up(folder, names, scenario, say=lambda _t: None, subnet=SUBNETS[prefix], slurm=slurm,
                         bastion=bastion)
    try:
        yield folder, nodes
    finally:
        lifecycle.down(folder, say=lambda _t: None)
