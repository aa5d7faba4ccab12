"""``check --via slurm`` (issue 15): one srun's labelled output read back into each node's state, the same
way the SSH path reads its script's output (here the real probe output of an H200 machine)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
from itertools import zip_longest
from pathlib import Path

from nvls_tui.model import CommandResult
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.evidence import TIMED_OUT
from nvls_tui.poll.probe import section_argv
from nvls_tui.poll.probe_output import SectionReader
from nvls_tui.scheduler.slurm import Slurm
from nvls_tui.scheduler.srun import HOST_MARK, node_state, poll_via_srun, split_by_label, srun_argv

REAL = Path(__file__).parents[1] / "fixtures" / "real" / "nvidia-h200"
NONCE = "device"  # the nonce that probe output was captured with


def over_ssh(host: str, text: str):
    reader = SectionReader(NONCE, 4 << 20)
    reader.feed(text)
    sections = {n: CommandResult(section_argv(n), -1 if st is None else st, body) for n, (st, body) in
                reader.finish().items()}
    return assemble_node_state(host, sections, simulated=False)


def test_two_nodes_interleaved_by_srun_read_back_as_the_ssh_path_reads_each():
    text = (REAL / "probe-output-after-fix.txt").read_text()
    lines = text.splitlines()
    # srun --label: each task's lines prefixed by its number, the tasks' lines interleaved.
    out = [f"0: {HOST_MARK} gpu06", f"1: {HOST_MARK} gpu05"]
    for a, b in zip_longest(lines, lines):
        out += [f"1: {b}", f"0: {a}"]
    tasks = split_by_label("\n".join(out) + "\n")
    assert sorted(tasks) == [0, 1] and tasks[0][0] == f"{HOST_MARK} gpu06" and tasks[0][1:] == lines
    via_srun = asyncio.run(node_state("gpu05", tasks[1][1:], NONCE, 4 << 20))
    via_ssh = over_ssh("gpu05", text)
    assert via_srun.reachable and via_srun.gpus and via_srun.holders
    assert dataclasses.replace(via_srun, polled_at=None) == dataclasses.replace(via_ssh, polled_at=None)


def test_srun_runs_one_labelled_task_per_node_that_names_its_node_first():
    argv = srun_argv(["gpu05", "gpu06"], "echo probe", timeout=60)
    assert argv[:8] == ["srun", "--quiet", "--label", "-N", "2", "--ntasks-per-node=1", "-w", "gpu05,gpu06"]
    assert argv[-3:-1] == ["sh", "-c"] and argv[-1].startswith(f'echo "{HOST_MARK} $(hostname -s)"; echo probe')
    assert "--time=2" in argv  # bounded: a hung probe does not hold the nodes forever


# A stand-in srun: runs the one task here, labelled as srun --label does (the probe's tools are this machine's).
FAKE_SRUN = """#!/bin/sh
for a; do last=$a; done
sh -c "$last" 2>&1 | sed 's/^/0: /'
"""


async def test_a_hung_nvidia_smi_through_srun_ends_alone_on_the_node_and_the_node_is_read(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    for name, text in (("srun", FAKE_SRUN), ("nvidia-smi", f"#!/bin/sh\necho called >> '{calls}'\nexec sleep 600\n")):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    # srun's own deadline (60 s) is never reached: the node's timeout ends the hung command after 1 s.
    (state,) = await poll_via_srun(Slurm(conf=str(tmp_path / "slurm.conf")), [host], 60, 4 << 20, command_timeout=1)
    assert state.reachable, state.error
    assert ("gpus", TIMED_OUT) in [(m.section, m.reason) for m in state.missing]
    assert state.node_clock is not None  # the sections after it were read
    assert calls.read_text().count("called") == 1  # no fallback query after the timeout

