"""Helpers for the metrics tests: a simulated fleet's round, its exposition, and promtool."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose_guarded
from nvls_tui.headless.check import poll_all
from nvls_tui.metrics.build import Round, registry_for
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import scaled

PROMTOOL = shutil.which("promtool")


def sim_results(spec: str) -> list[tuple[NodeState, Diagnosis]]:
    """One poll of the simulated fleet ``spec``, diagnosed, on a frozen clock.

    At real speed the nodes' short-lived processes came and went during a slow poll: gpu06's ``watch -n 1
    nvidia-smi`` starts a new nvidia-smi every 2 simulated seconds, and one that ended between the holders' read
    and their parents' read was no longer the watch loop's (its ``watch`` holder read 0 under load).
    """
    states = asyncio.run(poll_all(sim_backends(load_fleet(spec, speed=0)), scaled(30.0)))
    return [(s, diagnose_guarded(s)) for s in states]


def exposition(round_: Round) -> str:
    """The text format of ``round_``'s registry."""
    return generate_latest(registry_for(round_)).decode()


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample of an exposition."""
    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def promtool(*args: str, stdin: str | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run the real promtool (Debian's prometheus package)."""
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd)
