"""Issue 28 item 2: the repair's verify-no-holders box.

``t`` is offered as soon as ``space`` selects (no focus move needed), a selected holder differs in
shape from one that is not (NO_COLOR too), and the SIGTERM confirmation says when a holder is a
user's workload.
"""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.model import Holder, HolderKind
from nvls_tui.model.scheduler import Job
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import gpu_devices
from nvls_tui.views.consequences import workload_words
from tests.pilot.test_console_repair import SIZE, start_repair
from tests.test_console_fakes import fixed_clock
from tests.waiting import wait_until


def footer_key(app, key: str) -> FooterKey:
    return next(k for k in app.screen.query(FooterKey) if k.key == key)


async def waiting_on_alice(tmp_path, pilot_size=SIZE):
    fleet = load_fleet("sim:seed-incident", speed=0)
    node = fleet.node("gpu05")
    job = node.spawn(ppid=1, user="alice", start=fleet.clock.now() - 600, argv=["python3", "train.py"],
                     cgroup="0::/user.slice/user-1000.slice/session-5.scope", role="app",
                     devices=gpu_devices(node, ("/dev/nvidiactl", "/dev/nvidia-uvm")))
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    return app, job


async def test_t_is_offered_as_soon_as_space_selects_and_the_mark_differs_in_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app, job = await waiting_on_alice(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking, "the runbook to wait on the workload")
        await pilot.pause()
        listing = column.query_one(".holders")
        assert app.focused is listing
        assert footer_key(app, "t").has_class("-disabled")  # nothing selected: nothing to SIGTERM
        unselected = listing.render_line(0).text
        await pilot.press("space")
        await pilot.pause()
        assert column.selected_pids == [job.pid]
        assert app.focused is listing  # no focus move
        assert not footer_key(app, "t").has_class("-disabled")
        selected = listing.render_line(0).text
        assert unselected.startswith("[ ]") and selected.startswith("[✔]")


async def test_the_sigterm_confirmation_says_the_holder_is_a_users_workload(tmp_path):
    app, job = await waiting_on_alice(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"], select=False)
        column = screen.query_one(RunbookColumn)
        await wait_until(pilot, lambda: column.asking, "the runbook to wait on the workload")
        await pilot.press("space", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the SIGTERM confirmation")
        lines = "\n".join(map(str, app.screen.lines))
        assert f"{job.pid}(alice) python3 train.py" in lines
        assert "alice's process (a user's workload)" in lines


def test_workload_words_name_the_job_the_pod_or_the_user():
    base = Holder(pid=7, user="bob", command="python3 x.py", kind=HolderKind.OTHER)
    assert workload_words(base) == "bob's process (a user's workload)"
    job = Job(id=4242, user="carol", name="train")
    assert workload_words(Holder(pid=7, user="carol", command="x", job=job)) == "Slurm job 4242 (carol/train)"
    pod = Holder(pid=8, user="root", command="dcgm-exporter", kind=HolderKind.DCGM_EXPORTER, pod="pod1234")
    assert workload_words(pod) is None  # a node agent's pod is no user's workload
    user_pod = Holder(pid=9, user="root", command="python3 serve.py", kind=HolderKind.OTHER, pod="podabcdef")
    assert workload_words(user_pod) == "a pod's process (pod podabcdef, a workload)"
    fm = Holder(pid=10, user="root", command="/usr/bin/nv-fabricmanager", kind=HolderKind.FABRIC_MANAGER,
                unit="nvidia-fabricmanager.service")
    assert workload_words(fm) is None
