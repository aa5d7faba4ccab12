"""The labs several lab files share, each booted once by the one worker that runs its xdist group
(tests/conftest.py, ``SHARED_LABS``) and down again once that worker leaves tests/lab.

Package scope, not session: a lab stays up only while its worker runs tests/lab, where every test that takes it
is (one group, handed to one worker as a whole, so its tests run one after another). Session-scoped, a lab
idled on, its nodes' systemd, timers and daemons busy, through the rest of its worker's run (the other tiers).
"""

from __future__ import annotations

import pytest

from tests.lab.own_lab import own_lab


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    """Two lab nodes (gpu05, gpu06) acting the seed incident: ``(folder, {name: LabNode})``.

    Its tests (the xdist group ``lab``) read the incident first, then repair it, then use the repaired nodes;
    torn down by the PIDs, mounts and cgroups ``lab.json`` recorded.
    """
    with own_lab(tmp_path_factory, "lab", ["gpu05", "gpu06"], "seed-incident") as (folder, nodes):
        yield folder, {n.name: n for n in nodes}


HEALTHY_NODES = ("gpu07", "gpu08")
"""``healthy_lab``'s nodes. test_hung_every_transport.py wedges gpu07's nvidia-smi and reads both;
test_fm_journal.py reads and restarts FM on gpu08 only, and leaves it healthy."""


@pytest.fixture(scope="package")
def healthy_lab(tmp_path_factory):
    """Two lab nodes acting ``healthy``, with the lab's Slurm over them where this host has Slurm:
    ``(folder, {name: LabNode}, slurm)``. One boot for test_fm_journal.py and test_hung_every_transport.py
    (the xdist group ``lab-healthy``), which booted a lab each before."""
    from nvls_tui.lab import slurm as lab_slurm

    slurm = lab_slurm.missing() is None
    with own_lab(tmp_path_factory, "healthylab", list(HEALTHY_NODES), "healthy", slurm=slurm) as (folder, nodes):
        yield folder, {n.name: n for n in nodes}, slurm
