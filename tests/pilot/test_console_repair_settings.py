"""Issue 36: a console repair takes headless repair's options, from its command line and from the config
file's ``[repair]`` table, and builds its RepairOptions from Settings exactly as headless does.

Before, the console's command line had none of ``--wait-pods``, ``--sigkill``, ``--smoke-threshold``,
``--wait-jobs``, ``--keep-drained``, ``--stop-kubelet`` and the config file had no repair settings: a console
repair on Kubernetes always planned and ran with ``wait_pods=0``, while docs/kubernetes.md said it waits as
headless does.
"""

from __future__ import annotations

import pytest

from nvls_tui.cli import build_parser
from nvls_tui.config import ConfigError, parse_config
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.runbook.changes import EvictPod, Wait
from nvls_tui.runbook.kube_waits import BUDGET_LETS
from nvls_tui.settings import COMMAND_LINE, settings_from
from tests.waiting import first_poll, wait_until


def console_settings(argv: list[str], config_text: str = ""):
    import tomllib

    config = parse_config(tomllib.loads(config_text), None) if config_text else None
    return settings_from(build_parser(config).parse_args(["console", *argv]), config)


async def planned_eviction(settings) -> tuple[str, float]:
    """The console's plan of gpu06 on sim:k8s-incident: the eviction's budget wait as the plan says it (the
    entry right after the eviction: a typed Wait since the cluster's plan is values), and the plan's wait_pods."""
    app = NvlsApp.from_settings(settings, poll_process=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        grid.move_cursor(row=grid.visible_hosts.index("gpu06"))
        await pilot.press("space", "r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and "gpu06" in app.screen.outcomes,
                         "the dry run of gpu06")
        screen = app.screen
        assert isinstance(screen, PlanScreen) and screen.options is not None
        entries = [e for step in screen.outcomes["gpu06"].steps for e in step.entries]
        at = next(i for i, e in enumerate(entries) if isinstance(e, EvictPod))
        wait = entries[at + 1]
        assert isinstance(wait, Wait) and wait.until == BUDGET_LETS
        return " ".join(wait.lines), screen.options.wait_pods


@pytest.mark.parametrize(("argv", "config_text"), [
    (["--wait-pods", "45"], ""),
    ([], "[repair]\nwait_pods = 45\n"),
    (["--wait-pods", "45"], "[repair]\nwait_pods = 600\n"),  # the command line wins
], ids=["command-line", "config-file", "command-line-wins"])
async def test_a_console_repair_on_kubernetes_waits_for_the_disruption_budget_as_told(argv, config_text):
    eviction, wait_pods = await planned_eviction(console_settings([*argv, "sim:k8s-incident"], config_text))
    assert wait_pods == 45.0
    assert "for up to 45 s; else the repair is refused" in eviction


def test_the_repair_table_fills_what_the_command_line_left_and_says_where_each_came_from():
    settings = console_settings(["--sigkill", "sim:k8s-incident"],
                                "[repair]\nsmoke_threshold = 300\nwait_jobs = 120\nkeep_drained = true\n"
                                "sigkill = false\nstop_kubelet = true\n")
    repair = settings.repair
    assert (repair.smoke_threshold, repair.wait_jobs, repair.keep_drained, repair.sigkill, repair.stop_kubelet) == (
        300.0, 120.0, True, True, True)
    assert settings.sources["repair.sigkill"] == COMMAND_LINE
    assert settings.sources["repair.wait_jobs"].startswith("config file")
    # headless and the console read one mapping of the same settings
    assert repair.tunables() == {"sigkill": True, "smoke_threshold": 300.0, "wait_jobs": 120.0,
                                 "keep_drained": True, "wait_pods": 0.0, "stop_kubelet": True}


@pytest.mark.parametrize(("text", "words"), [
    ("[repair]\nwait_pod = 4\n", "unknown [repair] option 'wait_pod'"),
    ("[repair]\nwait_pods = -1\n", "repair.wait_pods must be a finite number of seconds, 0 or more"),
    ("[repair]\nsigkill = \"yes\"\n", "repair.sigkill must be a bool"),
    ("[repair]\nsmoke_threshold = 0\n", "repair.smoke_threshold must be a finite number of GB/s, more than 0"),
])
def test_a_bad_repair_setting_is_one_sentence(text, words):
    import tomllib

    with pytest.raises(ConfigError) as err:
        parse_config(tomllib.loads(text), None)
    assert words in str(err.value) and "\n" not in str(err.value)
