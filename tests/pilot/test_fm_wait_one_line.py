"""Issue 28 item 6: a stuck Fabric Manager registration wait is ONE updating line, not five new lines every poll.

In the console's output pane the wait's polls add nothing and its ``Fabric Manager ...`` line is rewritten in
place; since issue 38 item 7 an answer that changed is not printed either while the wait runs (the 9-line
``nvidia-smi`` CSV came again on every change of a GPU's state): the wait's last answers are printed once, when
its step ends. Headless
progress prints a repeated poll's commands once per wait, and on a terminal its ``waiting:`` line is rewritten
in place. The audit log keeps every command.
"""

from __future__ import annotations

import io

from textual.app import App, ComposeResult

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.output_pane import OutputPane
from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.runbook.events import (
    FABRIC_POLL,
    CommandFinished,
    CommandStarted,
    FabricProgress,
    StepFinished,
    StepStarted,
)
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.runbook import NodeRun, PaneLine
from tests.pilot.test_console_repair import SIZE, start_repair
from tests.test_console_fakes import fixed_clock
from tests.waiting import wait_until

HOST = "gpu-stuck01"
ACTIVE = ("systemctl", "is-active", "nvidia-fabricmanager.service")
QUERY = ("nvidia-smi", "--query-gpu=index,fabric.state", "--format=csv")
IN_PROGRESS = "index, fabric.state\n" + "".join(f"{i}, In Progress\n" for i in range(8))


def poll(elapsed: float, answer: str = IN_PROGRESS) -> list:
    """One poll of the registration wait, as the runbook reports it (its commands marked as its polls)."""
    return [CommandStarted(host=HOST, step="fabric-manager", argv=ACTIVE, purpose=FABRIC_POLL),
            CommandFinished(host=HOST, step="fabric-manager", argv=ACTIVE, exit_status=0, output="active\n"),
            CommandStarted(host=HOST, step="fabric-manager", argv=QUERY, purpose=FABRIC_POLL),
            CommandFinished(host=HOST, step="fabric-manager", argv=QUERY, exit_status=0, output=answer),
            FabricProgress(host=HOST, step="fabric-manager", unit="active", states={"In Progress/N/A": 8},
                           elapsed=elapsed, limit=300.0)]


def pane_lines(run: NodeRun, events: list, now: float) -> list[PaneLine]:
    lines: list[PaneLine] = []
    for event in events:
        lines += run.apply(event, now)[1]
    return lines


def test_a_repeated_poll_adds_only_the_wait_line_which_replaces_the_last():
    run = NodeRun(HOST)
    pane_lines(run, [StepStarted(host=HOST, step="fabric-manager")], 0.0)
    first = pane_lines(run, poll(0.0), 0.0)
    assert [(line.key, line.text) for line in first] == [("fabric", "Fabric Manager active; In Progress/N/A ×8 (0:00 of 5:00)")]
    for n in range(1, 150):
        again = pane_lines(run, poll(2.0 * n), 2.0 * n)
        assert len(again) == 1, [line.text for line in again]
        assert again[0].key == "fabric" and again[0].text.startswith("Fabric Manager active; In Progress/N/A ×8")
    assert "(4:58 of 5:00)" in again[0].text


def test_a_changed_answer_waits_for_the_steps_end_and_is_printed_once_there():
    run = NodeRun(HOST)
    pane_lines(run, [StepStarted(host=HOST, step="fabric-manager")], 0.0)
    pane_lines(run, poll(0.0), 0.0)
    half = IN_PROGRESS.replace("0, In Progress", "0, Completed")
    done = IN_PROGRESS.replace("In Progress", "Completed")
    for n, answer in enumerate((half, done), start=1):
        during = pane_lines(run, poll(2.0 * n, answer), 2.0 * n)
        assert [line.key for line in during] == ["fabric"], [line.text for line in during]
    end = [line.text for line in pane_lines(run, [StepFinished(host=HOST, step="fabric-manager", status="ok",
                                                                message="Fabric Manager active")], 6.0)]
    assert end == ["$ systemctl is-active nvidia-fabricmanager.service", "active",
                   "$ nvidia-smi --query-gpu=index,fabric.state --format=csv", *done.splitlines(),
                   "✔ fabric-manager ok in 0.0 s: Fabric Manager active"]


def test_a_poll_that_failed_is_printed_at_once():
    run = NodeRun(HOST)
    pane_lines(run, [StepStarted(host=HOST, step="fabric-manager")], 0.0)
    failed = [CommandStarted(host=HOST, step="fabric-manager", argv=QUERY, purpose=FABRIC_POLL),
              CommandFinished(host=HOST, step="fabric-manager", argv=QUERY, exit_status=9,
                              output="Unable to determine the device handle for GPU0000:0F:00.0: Unknown Error\n")]
    texts = [line.text for line in pane_lines(run, failed, 1.0)]
    assert texts[:2] == ["$ nvidia-smi --query-gpu=index,fabric.state --format=csv",
                         "Unable to determine the device handle for GPU0000:0F:00.0: Unknown Error"]


class PaneApp(App):
    def compose(self) -> ComposeResult:
        yield OutputPane()


async def test_the_output_pane_rewrites_a_keyed_line_in_place():
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(OutputPane)
        pane.add([PaneLine("$ systemctl start nvidia-fabricmanager.service", "cmd")])
        for n in range(40):
            pane.add([PaneLine(f"Fabric Manager active; In Progress/N/A ×8 (0:{n:02d} of 5:00)", "note", key="fabric")])
            await pilot.pause()
        texts = [strip.text.rstrip() for strip in pane.lines]
        assert texts == ["$ systemctl start nvidia-fabricmanager.service",
                         "Fabric Manager active; In Progress/N/A ×8 (0:39 of 5:00)"]
        pane.add([PaneLine("✖ fabric-manager failed", "err"),
                  PaneLine("Fabric Manager active; In Progress/N/A ×8 (0:40 of 5:00)", "note", key="fabric")])
        assert len(pane.lines) == 4  # a keyed line after another line is a new line


async def test_a_stuck_registration_wait_in_the_console_is_one_line(tmp_path):
    fleet = load_fleet("sim:stuck-in-progress", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, [HOST])
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end", timeout=120)
        await pilot.pause()
        texts = [strip.text.rstrip() for strip in screen.columns[HOST].query_one(OutputPane).lines]
        step = texts[texts.index("── fabric-manager ──"):texts.index("── restore ──")]
        waits = [t for t in step if t.startswith("Fabric Manager active; ")]
        assert len(waits) == 1 and "of 5:00)" in waits[0], step
        wait = step[step.index("$ systemctl start nvidia-fabricmanager.service"):]
        assert wait.count("  (same output as the last time)") == 0, wait
        assert wait.count("$ systemctl is-active nvidia-fabricmanager.service") == 1, wait
        assert len(wait) < 30, wait  # ~150 polls: once five lines each


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_headless_prints_a_repeated_poll_once_and_on_a_terminal_rewrites_the_waiting_line():
    clock = [0.0]
    stream = Tty()
    printer = ProgressPrinter(stream, clock=lambda: clock[0])
    printer(StepStarted(host=HOST, step="fabric-manager"))
    for n in range(60):
        clock[0] = 2.0 * n
        for event in poll(2.0 * n):
            printer(event)
    out = stream.getvalue()
    assert out.count("$ systemctl is-active nvidia-fabricmanager.service") == 1
    assert out.count("$ nvidia-smi --query-gpu=index,fabric.state --format=csv") == 1
    waiting = [line for line in out.split("\n") if "waiting: " in line]
    assert len(waiting) == 7  # every 15 s of 118 s
    assert all(line.startswith("\x1b[1A\x1b[2K") for line in waiting[1:])  # each replaces the one before
    assert "waiting: 8× In Progress, 1:46 of 5:00" in waiting[-1]


def test_headless_on_a_pipe_prints_no_escape_sequence():
    clock = [0.0]
    stream = io.StringIO()
    printer = ProgressPrinter(stream, clock=lambda: clock[0])
    printer(StepStarted(host=HOST, step="fabric-manager"))
    for n in range(60):
        clock[0] = 2.0 * n
        for event in poll(2.0 * n):
            printer(event)
    out = stream.getvalue()
    assert "\x1b" not in out and out.count("$ systemctl is-active") == 1
    assert out.count("waiting: ") == 7


def test_headless_repair_of_a_stuck_node_prints_each_poll_command_once(tmp_path, capsys):
    backends = sim_backends(load_fleet("sim:stuck-in-progress", speed=0))
    assert main(["repair", "sim:stuck-in-progress", "--yes", "--audit-dir", str(tmp_path)],
                connect=lambda settings: backends) == 1
    out = capsys.readouterr().out
    fm = out[out.index("fabric-manager ..."):out.index("fabric-manager failed")]
    assert fm.count("$ systemctl is-active nvidia-fabricmanager.service") == 1, fm
    assert fm.count("$ nvidia-smi --query-gpu=") == 1, fm
    assert len(fm.splitlines()) < 40, fm
    log = next(tmp_path.glob("repair-*.jsonl")).read_text()
    assert log.count('"argv": ["systemctl", "is-active", "nvidia-fabricmanager.service"]') > 100  # kept in full
