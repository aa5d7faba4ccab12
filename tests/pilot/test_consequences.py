"""The SIGTERM dialog says what the signal leads to (issue 14, item 11)."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.model import Holder, HolderKind, NodeState, ServiceState
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.consequences import sigterm_consequences
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen, wait_until

POD = Holder(37538, "root", "/usr/bin/dcgm-exporter", HolderKind.DCGM_EXPORTER, ("/dev/nvidia0",),
             pod="pod1234", start_time="Mon Aug 10 15:00:00 2026", ppid=4242)
DCGM = Holder(924303, "root", "/usr/bin/nv-hostengine -n", HolderKind.NV_HOSTENGINE, ("/dev/nvidia0",),
              unit="nvidia-dcgm.service", start_time="Mon Aug 10 15:00:00 2026", ppid=1)
WATCH = Holder(880000, "ubuntu", "watch -n 1 nvidia-smi", HolderKind.WATCH, (), unit="session-3.scope", ppid=879983)
SMI = Holder(880123, "ubuntu", "nvidia-smi", HolderKind.NVIDIA_SMI, ("/dev/nvidia0",), unit="session-3.scope",
             ppid=880000)


def state(kubelet: str = "active") -> NodeState:
    return NodeState("gpu05", services=(ServiceState("kubelet.service", kubelet, "running", "loaded", 4242, "success"),),
                     holders=(POD, DCGM, WATCH, SMI))


def test_pods_under_a_running_kubelet_will_come_back():
    (line,) = sigterm_consequences([POD], state())
    assert line.startswith("kubelet is running: it will recreate the pod's process under new PIDs")
    assert sigterm_consequences([POD], state(kubelet="inactive")) == []


def test_a_units_process_is_better_stopped_as_the_unit():
    (line,) = sigterm_consequences([DCGM], state())
    assert line == ("nv-hostengine 924303 belongs to nvidia-dcgm.service: systemd may start it again or leave the "
                    "unit down (then the next repair starts it); stopping the unit (s) is the clean way.")


def test_a_watch_loops_nvidia_smi_comes_back_unless_the_watch_goes_too():
    (line,) = sigterm_consequences([SMI], state())
    assert "run by watch 880000" in line
    assert sigterm_consequences([SMI, WATCH], state()) == []


async def test_the_dialog_lists_the_consequences(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        await pilot.press("a", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the SIGTERM dialog")
        lines = app.screen.lines
        assert any(line.startswith("⚠ kubelet is running: it will recreate") for line in lines)
        assert any("belongs to nvidia-dcgm.service" in line for line in lines)
        del node
