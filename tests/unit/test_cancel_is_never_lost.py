"""A cancel is never lost: a task that is cancelled ends cancelled, whenever the cancel comes.

Python 3.11's ``asyncio.wait_for`` returns the awaited result, and drops the cancel, when the cancel arrives
just as what it waits for finishes (CPython gh-86296, fixed in 3.12). The simulated backend ran every command
under it, so a repair's heartbeat that ``stop_beating`` cancelled mid-beat went on beating: the restore awaited
it for ever, and a test of an aborted repair hung the suite's edit loop (seen once in a ``make test-fast``,
then 7 times in 600 runs of that test four at a time). ``asyncio.timeout`` delivers every cancel.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.sim.fleet import load_fleet

PACKAGE = Path(__file__).resolve().parents[2] / "nvls_tui"


async def _cancelled_after(steps: int) -> tuple[bool, str]:
    """Cancel a simulated command after ``steps`` turns of the loop: (whether cancel() took, how it ended)."""
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0.0)
    backend = SimulatedBackend(fleet, "gpu05")
    task = asyncio.ensure_future(backend.run(("cat", "/proc/uptime")))
    for _ in range(steps):
        await asyncio.sleep(0)
    took = task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return took, "cancelled"
    return took, "returned"


@pytest.mark.parametrize("steps", range(8))
async def test_a_simulated_command_cancelled_at_any_turn_of_the_loop_ends_cancelled(steps):
    took, ended = await _cancelled_after(steps)
    # A task that had already finished cannot be cancelled (cancel() is False); one that took it must end so.
    assert ended == ("cancelled" if took else "returned"), (steps, took, ended)


def test_the_product_never_waits_with_asyncio_wait_for():
    """Every bounded wait in nvls_tui uses ``asyncio.timeout`` (3.11's ``wait_for`` can drop a cancel)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "wait_for" and \
                    isinstance(node.value, ast.Name) and node.value.id == "asyncio":
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert found == []
