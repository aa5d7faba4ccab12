"""The poll script itself, run by a real /bin/sh: markers, exit statuses, and an older driver."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from nvls_tui.backends.base import CommandResult
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.evidence import OVER_CAP, TIMED_OUT, missing_evidence
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "real" / "h200x2-nvswitch" / "query-gpu-fabric.csv"

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
    # The node answered the rest: reachable, its GPUs unknown with nvidia-smi's status (never "no GPUs").
    missing = state.missing_section("gpus")
    assert state.reachable and missing is not None and (missing.reason, state.gpus) == ("failed", ())
    assert missing.detail.endswith("exited 2")


# ---- the cap, kept on the node -------------------------------------------------------------------------
# The gpus and holders sections are held in shell variables (the fallback query, the PID list): an
# nvidia-smi that printed without end grew the poll's `sh` to 1.7 GB in 8 s, and the node then read as
# unreachable. The shell here gets a bounded address space: a script that holds what it reads dies in it.
SHELL_MEMORY = 256 << 20
ENDLESS = "#!/bin/sh\nexec yes '{line}'\n"
CAP = 1 << 20


def run_bounded(shell: str, bin_dir: pathlib.Path, script: str) -> subprocess.CompletedProcess:
    """``shell -c script`` with the stand-ins first on PATH, in an address space of SHELL_MEMORY."""
    import resource

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (SHELL_MEMORY, SHELL_MEMORY))

    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"}
    return subprocess.run([shell, "-c", script], env=env, capture_output=True, timeout=120, preexec_fn=bound)


def read_back(stdout: bytes, cap: int = CAP):
    """The script's output as the bastion reads it (the SSH backend's SectionReader)."""
    from nvls_tui.poll.probe_output import SectionReader

    reader = SectionReader("0", cap)
    assert reader.feed(stdout.decode(errors="replace")), f"the bastion had to stop the script at {reader.overflow}"
    return reader, reader.finish()


def stand_in(bin_dir: pathlib.Path, name: str, text: str) -> None:
    (bin_dir / name).write_text(text)
    (bin_dir / name).chmod(0o755)


SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]


@pytest.mark.parametrize("shell", SHELLS)
def test_an_endless_nvidia_smi_is_cut_on_the_node_and_every_other_section_is_still_read(tmp_path, shell):
    stand_in(tmp_path, "nvidia-smi", ENDLESS.format(line="0, 00000000:19:00.0, NVIDIA H100 80GB HBM3"))
    done = run_bounded(shell, tmp_path, probe_script(cap=CAP))
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-500:]
    reader, sections = read_back(done.stdout)
    assert reader.over_cap("gpus") and sections["gpus"][1] == ""  # marked over the cap, nothing of it kept
    assert {"identity", "fm_version", "units", "nvswitches", "holders", "kernel", "record", "smoke", "simulated",
            "clock"} <= set(sections)
    assert all(status is not None for name, (status, _) in sections.items() if name != "gpus")
    gpus = CommandResult(("nvidia-smi",), -1, sections["gpus"][1], truncated=reader.over_cap("gpus"))
    assert missing_evidence("gpus", gpus).reason == OVER_CAP


@pytest.mark.parametrize("shell", SHELLS)
def test_an_endless_fuser_is_cut_on_the_node_and_no_pid_is_read_from_what_was_cut(tmp_path, shell):
    stand_in(tmp_path, "fuser", "#!/bin/sh\nexec yes '/dev/nvidia0:         root       4242 F...m x' >&2\n")
    done = run_bounded(shell, tmp_path, probe_script(cap=CAP) + 'printf "@@pids %s\\n" "$pids"\n')
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-500:]
    reader, sections = read_back(done.stdout)
    assert reader.over_cap("holders") and sections["holders"][1] == ""
    assert b"@@pids \n" in done.stdout  # no PID taken from a cut table
    assert "processes" not in sections and "cgroups" not in sections  # nothing to read them by
    assert sections["clock"][0] == 0 and sections["units"][0] is not None and sections["kernel"][0] is not None


@pytest.mark.parametrize("shell", SHELLS)
def test_a_section_just_under_the_cap_is_read_whole_with_its_own_exit_status(tmp_path, shell):
    # The bastion's cap counts what the section prints, its last newline included.
    body = "x" * (CAP - 2)
    stand_in(tmp_path, "nvidia-smi", f"#!/bin/sh\nprintf '%s\\n' '{body}'\nexit 3\n")
    done = run_bounded(shell, tmp_path, probe_script(cap=CAP))
    reader, sections = read_back(done.stdout)
    assert not reader.over_cap("gpus") and sections["gpus"] == (3, body + "\n")
    stand_in(tmp_path, "nvidia-smi", f"#!/bin/sh\nprintf '%s\\n' '{body}x'\nexit 3\n")
    reader, sections = read_back(run_bounded(shell, tmp_path, probe_script(cap=CAP)).stdout)
    assert reader.over_cap("gpus")


@pytest.mark.parametrize("shell", SHELLS)
def test_a_sections_trailing_newlines_are_dropped_and_its_blank_lines_inside_kept(tmp_path, shell):
    # The capped section drops what follows its last line (any number of newlines), one character at a time
    # behind a `case` on the last one: bash took ~10 s of CPU (44 s in a UTF-8 locale) just to test
    # "${out%"$nl"}" against a 1 MiB section (dash: milliseconds), on every node whose sh is bash.
    stand_in(tmp_path, "nvidia-smi", "#!/bin/sh\nprintf 'a\\n\\n b\\n\\n\\n\\n'\nexit 4\n")
    _, sections = read_back(run_bounded(shell, tmp_path, probe_script(cap=CAP)).stdout)
    assert sections["gpus"] == (4, "a\n\n b\n")
    stand_in(tmp_path, "nvidia-smi", "#!/bin/sh\nprintf '\\n\\n'\n")
    _, sections = read_back(run_bounded(shell, tmp_path, probe_script(cap=CAP)).stdout)
    assert sections["gpus"] == (0, "\n")  # nothing but newlines: an empty line, as printf '%s\n' "" writes


@pytest.mark.parametrize("shell", SHELLS)
def test_with_a_section_timeout_a_hung_nvidia_smi_ends_alone_and_every_other_section_is_read(tmp_path, shell):
    # What check --via slurm sends: srun has only its own deadline, so each command is bounded on the node.
    calls = tmp_path / "calls"
    stand_in(tmp_path, "nvidia-smi", f"#!/bin/sh\necho called >> '{calls}'\nexec sleep 600\n")
    done = run_bounded(shell, tmp_path, probe_script(cap=CAP, section_timeout=1))
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-500:]
    _, sections = read_back(done.stdout)
    assert sections["gpus"][0] == 124  # coreutils timeout's own status
    assert calls.read_text().count("called") == 1  # the fallback query is not run after a timeout
    assert all(status is not None for status, _ in sections.values())
    assert {"units", "holders", "kernel", "record", "boot", "clock"} <= set(sections)
    gpus = CommandResult(("nvidia-smi",), sections["gpus"][0], sections["gpus"][1])
    assert missing_evidence("gpus", gpus).reason == TIMED_OUT

