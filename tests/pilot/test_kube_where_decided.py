"""Issue 38 item 5: the Kubernetes side where the operator decides and where they read the outcome.

On ``sim:k8s-incident`` the typed confirmation named the reset but not the workload pod it evicts (gpu06's
vLLM pod), and the end line (the console's column summary, headless ``gpu05: repaired, 291.9 GB/s - ...``)
said nothing of gpu05's cordon, which someone else made before the repair and which stays: only the report
did. Now the confirmation lists each eviction (``ns/pod``), and the end line says what stays cordoned (or
drained, or labelled paused) with the command that lifts it; ``repair --json`` lists them as ``stays``.
"""

from __future__ import annotations

import io
import json

from textual.widgets import Static

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.headless.repair import confirm
from nvls_tui.settings import Settings
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.targets import kube_from_settings
from tests.pilot.test_console_repair import SIZE
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until

VLLM = "inference/vllm-llama-70b-6d5f8b9c7-b25a6"
UNCORDON = "kubectl uncordon gpu05"


def _app(tmp_path, nodes: str) -> NvlsApp:
    fleet = load_fleet(f"sim:k8s-incident/{nodes}", speed=0)
    backends = sim_backends(fleet)
    return NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path),
                   kube=kube_from_settings(Settings(), backends))


def test_headless_end_line_says_the_cordon_someone_else_made_stays_and_how_to_lift_it(capsys, tmp_path, monkeypatch):
    # A frozen simulated clock: FM's start and the smoke test move it on instead of sleeping 11 s of real time.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["repair", "sim:k8s-incident/gpu05", "--yes"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("gpu05: "))
    assert line.startswith("gpu05: repaired, 291.9 GB/s")
    assert "gpu05 stays cordoned in Kubernetes" in line and f"`{UNCORDON}`" in line


def test_repair_json_lists_what_stays_and_nothing_for_a_cordon_it_lifted(capsys, tmp_path, monkeypatch):
    # A frozen simulated clock: FM's start and the smoke test move it on instead of sleeping 11 s of real time.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["repair", "sim:k8s-incident/gpu[05-06]", "--yes", "--json"]) == 0
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert [s for s in nodes["gpu05"]["stays"] if "cordoned" in s and UNCORDON in s]
    assert nodes["gpu06"]["result"] == "repaired" and nodes["gpu06"]["stays"] == []  # its own cordon was lifted


async def test_the_console_end_line_says_the_cordon_stays(tmp_path):
    from tests.pilot.test_console_repair import start_repair

    app = _app(tmp_path, "gpu05")
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end", timeout=60)
        await pilot.pause()
        column = screen.query_one(RunbookColumn)
        summary = str(column.query_one(".summary", Static).render())
        assert column.run.result == "repaired", column.run.message
        assert "gpu05 stays cordoned in Kubernetes" in summary and UNCORDON in summary
        header = str(screen.query_one("#runbook-header", Static).render())
        assert "gpu05 repaired  ⚠ stays cordoned in Kubernetes" in header


async def test_the_typed_confirmation_lists_the_pods_the_repair_evicts(tmp_path):
    app = _app(tmp_path, "gpu06")
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes, "the plan")
        await pilot.pause()
        note = str(app.screen.query_one("#plan-note", Static).render())
        assert "This resets every GPU and NVSwitch of gpu06" in note
        assert f"evicts 1 workload pod: {VLLM} (gpu06)" in note


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_headless_confirmation_lists_the_evictions(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    err = io.StringIO()
    ok, _ = confirm(["gpu06"], _Terminal("gpu06\n"), err, evictions={"gpu06": [VLLM]})
    assert ok
    assert f"It evicts 1 workload pod: {VLLM} (gpu06)" in err.getvalue()
