"""The poll script itself, run by a real /bin/sh: markers, exit statuses, and an older driver."""

from __future__ import annotations

import pathlib
import subprocess

from nvls_tui.backends.base import CommandResult
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.probe import probe_script, split_probe_output

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "real" / "h200x2-nvswitch" / "query-gpu-fabric.csv"

# What nvidia-smi of drivers 535-550 does with a field it does not know: reject the whole query.
OLD_NVIDIA_SMI = f"""#!/bin/sh
case "$*" in
  *fabric.health*) echo 'Field "fabric.health.summary" is not a valid field to query.'; exit 2;;
  *--query-gpu=*) cat '{FIXTURE}';;
  *) exit 9;;
esac
"""


def run_probe(bin_dir: pathlib.Path) -> dict[str, CommandResult]:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"}
    out = subprocess.run(["sh", "-c", probe_script()], env=env, capture_output=True, text=True, timeout=60)
    return {name: CommandResult((name,), -1 if status is None else status, text)
            for name, (status, text) in split_probe_output(out.stdout).items()}


def test_an_older_driver_that_rejects_the_health_field_is_asked_again_without_it(tmp_path):
    (tmp_path / "nvidia-smi").write_text(OLD_NVIDIA_SMI)
    (tmp_path / "nvidia-smi").chmod(0o755)
    sections = run_probe(tmp_path)
    assert sections["gpus"].exit_status == 0
    assert "not a valid field" not in sections["gpus"].stdout  # only the answer that worked is kept
    state = assemble_node_state("old-driver", sections, simulated=False)
    assert state.reachable and state.driver == "580.159.04"
    assert [(g.bus_id, g.fabric.state, g.fabric.status) for g in state.gpus] == [
        ("00000000:00:06.0", "Completed", "Success"), ("00000000:00:07.0", "Completed", "Success")]


def test_every_section_of_the_script_reports_its_own_exit_status(tmp_path):
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\nexit 2\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    sections = run_probe(tmp_path)
    assert {"gpus", "fm_version", "units", "nvswitches", "holders", "kernel", "record", "smoke", "simulated",
            "processes"} <= set(sections)
    assert sections["gpus"].exit_status == 2  # both queries failed: the failure is not hidden
    state = assemble_node_state("no-gpu", sections, simulated=False)
    assert not state.reachable and state.error
