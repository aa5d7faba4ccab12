"""A probe section whose file lacks a final newline is read, not lost (issue 34, item 9d).

A smoke record written by hand (``printf '%s' '{...}' > last-smoke.json``) has no final newline: ``cat``
printed it and the script's end marker followed on the same line, so the marker (which only counts at
the start of a line: node text must not end a section) was never seen and the record was lost. The
probe script runs here in a real shell, its ``cat`` the real one on a real file (or the simulator's,
through its shims), and both readers (the SSH backend's streaming one, and srun's and replay's) read
the record as it was written.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from nvls_tui.backends.base import CommandResult
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.probe import SMOKE_FILE
from nvls_tui.poll.probe_output import SectionReader, split_probe_output
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.sim.shims import write_shims
from tests.unit.test_probe_script import SHELLS, stand_in

SMOKE = json.dumps({"avg_busbw": 291.9, "passed": True, "out_of_bounds": 0, "nvls_used": True, "completed": True,
                    "errors": [], "threshold": 250.0})
NONCE = "f1n4l"


def read_both(stdout: str) -> list[dict[str, tuple[int | None, str]]]:
    """The output as every transport reads it: split whole (srun, replay) and streamed in odd chunks (SSH)."""
    reader = SectionReader(NONCE, 1 << 20)
    for at in range(0, len(stdout), 7):
        assert reader.feed(stdout[at:at + 7])
    return [split_probe_output(stdout, NONCE), reader.finish()]


def smoke_of(sections: dict[str, tuple[int | None, str]]):
    results = {name: CommandResult((name,), -1 if status is None else status, text)
               for name, (status, text) in sections.items()}
    state = assemble_node_state("gpu05", results, simulated=False)
    assert state.missing_section("smoke") is None
    return state.smoke


@pytest.mark.parametrize("final", ["", "\n"], ids=["no-final-newline", "final-newline"])
@pytest.mark.parametrize("shell", SHELLS)
def test_a_smoke_record_without_a_final_newline_is_read_by_a_real_shell(tmp_path, shell, final):
    record = tmp_path / "last-smoke.json"
    record.write_text(SMOKE + final)  # as printf '%s' wrote it (or echo)
    # The probe reads its small files with one cat (probe.FILE_SECTIONS): the smoke record is one of its files.
    stand_in(tmp_path, "cat", f'#!/bin/sh\nn=$#; for a do [ "$a" = {SMOKE_FILE} ] && a={record}; set -- "$@" "$a"; done\n'
                              'shift $n; exec /bin/cat "$@"\n')
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LC_ALL": "C"}
    done = subprocess.run([shell, "-c", probe_script(nonce=NONCE)], env=env, capture_output=True, text=True,
                          timeout=60)
    for sections in read_both(done.stdout):
        assert sections["smoke"] == (0, SMOKE + final)  # as written, to the byte
        assert sections["simulated"][0] is not None  # the next section is read as before
        assert smoke_of(sections).avg_busbw == 291.9


def test_a_smoke_record_without_a_final_newline_is_read_through_the_simulators_shims(tmp_path):
    root = write_shims(tmp_path / "gpu01", "healthy", "hgx01")
    # The shims keep the node's state directory under DIR and run the real cat on it (sim/shims.py).
    (root / SMOKE_FILE.lstrip("/")).write_text(SMOKE)
    env = {"PATH": f"{root}/bin:{os.environ['PATH']}", "LC_ALL": "C"}
    done = subprocess.run(["/bin/sh", "-c", probe_script(nonce=NONCE)], env=env, capture_output=True, text=True,
                          timeout=120)
    for sections in read_both(done.stdout):
        assert sections["smoke"] == (0, SMOKE)
        assert sections["simulated"][0] == 0  # the simulator's marker, the section after it
        assert smoke_of(sections).passed
