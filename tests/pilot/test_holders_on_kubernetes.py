"""Issue 38 item 3: on Kubernetes the node screen hid what the holders are.

The "unit / pod" cell held ``namespace/pod/container · OwnerKind owner-name``: with long pod and owner names it
pushed ``started`` and ``command`` off the holders table at 160 columns, so the vLLM command line and which
``watch`` loop was which could not be seen. Now the cell is ``ns/pod`` (middle-cut where it is long), the command
is on screen at every width, and the owner, the container and the whole command are one line under the table
for the holder under the cursor (on demand: move the cursor).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import DataTable, Static

from nvls_tui.cli import build_parser
from nvls_tui.console.app import NvlsApp
from nvls_tui.settings import settings_from
from tests.waiting import first_poll, open_node_screen

VLLM = "python3 -m vllm.entrypoints.openai.api_server"


async def vllm_row(size: tuple[int, int]):
    """sim:k8s-incident's gpu06 at ``size``: the vLLM holder's cells, the table's lines on screen, the detail line
    with the cursor on the vLLM row."""
    settings = settings_from(build_parser().parse_args(["console", "sim:k8s-incident"]))
    app = NvlsApp.from_settings(replace(settings, poll_interval=None, sim_speed=0.0), poll_process=False)
    async with app.run_test(size=size) as pilot:
        await first_poll(app, timeout=30)
        screen = await open_node_screen(app, pilot, "gpu06")
        await pilot.pause()
        table = screen.query_one("#holders", DataTable)
        labels = [column.label.plain for column in table.columns.values()]
        rows = {key.value: dict(zip(labels, (c.plain if hasattr(c, "plain") else str(c) for c in table.get_row(key)),
                                    strict=True)) for key in table.rows}
        pid, cells = next((pid, cells) for pid, cells in rows.items() if VLLM in cells["command"]
                          or cells["command"].startswith("python3 -m vllm"))
        table.move_cursor(row=list(rows).index(pid))
        await pilot.pause()
        lines = [table.render_line(y).text for y in range(table.size.height)]
        detail = str(screen.query_one("#holder-detail", Static).render())
        return cells, lines, detail


@pytest.mark.parametrize("size", [(160, 48), (120, 40), (80, 24)], ids=["160x48", "120x40", "80x24"])
async def test_the_vllm_holders_command_is_on_screen_and_its_pod_is_ns_slash_pod(size):
    cells, lines, detail = await vllm_row(size)
    assert cells["unit / pod"].startswith("inference/vllm-llama-70b-") and "·" not in cells["unit / pod"]
    assert "ReplicaSet" not in cells["unit / pod"]
    row = next(line for line in lines if "inference/" in line or cells["command"][:12] in line)
    assert cells["command"][:12] in row  # the command's start is drawn on screen, not scrolled off
    assert "ReplicaSet vllm-llama-70b-6d5f8b9c7" in detail and VLLM in detail
