"""What a lab node's stand-ins import when they start (issue 37 item 4: the lab tier's CPU).

Every ``nvidia-smi``, ``lspci``, ``journalctl -k`` (its ``kernel-log sync``) and ``all_reduce_perf`` on a lab node,
and every start of a stand-in daemon (FM, DCGM, persistenced, kubelet's pods, a job's ``nvls-lab-hold``), is a
Python process of its own: what its module imports is paid again each time, by every check, repair and boot of
the lab tier. Importing the probe (for two path constants) pulled in the product's models and parsers: about half of
a one-shot stand-in's start-up CPU; a daemon that only holds device files imported the whole simulator.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def loaded(module: str) -> set[str]:
    """The ``nvls_tui`` modules a fresh interpreter has loaded once ``module`` is imported (as a stand-in's script
    imports it)."""
    code = f"import sys, {module}; print('\\n'.join(m for m in sys.modules if m.startswith('nvls_tui')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return set(done.stdout.split())


@pytest.mark.parametrize("module", ["nvls_tui.lab.tools", "nvls_tui.lab.kernel_log", "nvls_tui.lab.hardware"])
def test_a_one_shot_stand_in_imports_neither_the_probe_nor_the_models(module):
    heavy = {m for m in loaded(module)
             if m == "nvls_tui.poll.probe" or m.split(".")[:2] in (["nvls_tui", "model"], ["nvls_tui", "parsers"])}
    assert heavy == set(), sorted(heavy)


def test_a_holder_daemon_imports_nothing_of_the_simulator():
    modules = loaded("nvls_tui.lab.daemons")
    assert "nvls_tui.lab.devices" in modules  # what it holds devices with
    heavy = {m for m in modules if m.startswith(("nvls_tui.sim", "nvls_tui.poll", "nvls_tui.model"))
             or m in ("nvls_tui.lab.tools", "nvls_tui.lab.hardware")}
    assert heavy == set(), sorted(heavy)
