"""Issue 25's acceptance: the console, ``check`` and ``check --via slurm`` poll through one ``poll_once``,
and one function builds the ``NodeState`` from sections. Shown by what they give: the real H200's captured
probe output, read by the console's ``NodePoller``, by ``check``'s ``poll_all`` and by srun's
``node_state`` (the lines of one srun task), is the same state each time, and the one the sections give
through ``poll.once.build_state``."""

from __future__ import annotations

from pathlib import Path

from nvls_tui.backends.recorded import RecordedBackend
from nvls_tui.headless.check import poll_all
from nvls_tui.model import NodeState
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.once import build_state, poll_deadline
from nvls_tui.poll.poller import NodePoller
from nvls_tui.scheduler.srun import node_state

CAPTURE = Path(__file__).parents[1] / "fixtures" / "real" / "nvidia-h200" / "probe-output-after-fix.txt"
NONCE = "device"  # the nonce that probe output was captured with
HOST = "gpu05"


def recording() -> RecordedBackend:
    return RecordedBackend(HOST, CAPTURE.read_text())


def facts(state: NodeState) -> NodeState:
    """The state apart from when it was stamped (each caller stamps its own time)."""
    return state.replace(polled_at=None)


async def test_the_console_check_and_srun_read_one_capture_into_the_same_state():
    console = await NodePoller(recording(), interval=None, timeout=poll_deadline(20.0)).poll_once()
    (checked,) = await poll_all([recording()], deadline=poll_deadline(20.0))
    via_srun = await node_state(HOST, CAPTURE.read_text().splitlines(), NONCE, 4 << 20)
    assert console.state.reachable and console.state.gpus and console.state.holders
    assert facts(console.state) == facts(checked) == facts(via_srun)


async def test_that_state_is_the_one_build_state_gives_for_the_transports_sections():
    backend = recording()
    reading = await backend.read_probe()
    built = build_state(HOST, reading, LastAssembly())
    (checked,) = await poll_all([recording()], deadline=poll_deadline(20.0))
    assert facts(built) == facts(checked)
