"""Issue 39 item 1: the console serves the same metrics from its poller (``nvls-tui --metrics-listen``).

Each scrape is built from the fleet the console holds: the poller's latest state and diagnosis of
every node. Before the first poll every node is unknown (``nvls_poll_success 0``, never healthy).
"""

from __future__ import annotations

import asyncio
import urllib.request
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.headless.console import console_metrics
from nvls_tui.settings import Settings
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll


def _scrape(address: tuple[str, int]) -> dict[tuple[str, str], float]:
    with urllib.request.urlopen(f"http://{address[0]}:{address[1]}/metrics", timeout=10) as response:  # noqa: S310
        text = response.read().decode()
    return {(s.name, s.labels.get("hostname", "")): s.value for f in text_string_to_metric_families(text)
            for s in f.samples if s.name in ("nvls_fm_active", "nvls_poll_success")}


async def test_the_console_serves_its_fleets_metrics(tmp_path):
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                  audit_dir=str(tmp_path))
    served = console_metrics(app, replace(Settings(), metrics_listen="127.0.0.1:0", audit_dir=str(tmp_path)))
    try:
        assert served.address is not None
        before = await asyncio.to_thread(_scrape, served.address)
        assert before == {("nvls_poll_success", "gpu05"): 0.0, ("nvls_poll_success", "gpu06"): 0.0}
        async with app.run_test() as pilot:
            await first_poll(app)
            await pilot.pause()
            after = await asyncio.to_thread(_scrape, served.address)
    finally:
        served.close()
    assert after == {("nvls_poll_success", "gpu05"): 1.0, ("nvls_poll_success", "gpu06"): 1.0,
                     ("nvls_fm_active", "gpu05"): 0.0, ("nvls_fm_active", "gpu06"): 1.0}
