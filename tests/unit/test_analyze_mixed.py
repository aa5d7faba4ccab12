"""A paste read line by line (issue 35, item 1): every part of a mixed paste is read by its kind's reader.

A journal paste of kernel lines beside systemd's words about Fabric Manager, mpirun-tagged NCCL lines
followed by the driver's lines, and a shell transcript (a MIG change, a refused reset, a process killed, a
reset that worked) were each read as ONE kind: the other parts were lost (no finding, exit 0). The lines
here are in the shapes of the public captures under tests/fixtures (journal-short, mpirun --tag-output,
nvidia-smi -r/-mig, fuser -v); the prompts are the forms operators paste.
"""

from __future__ import annotations

import io
import json

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.cli import main

KERNEL_AND_FM_JOURNAL = """\
Dec 02 09:14:05 gpu05 systemd[1]: Started Session 42 of User root.
Dec 02 09:14:07 gpu05 kernel: NVRM: nvAssertFailedNoLog: Assertion failed: NV_ERR_FABRIC_STATE_OUT_OF_SYNC @ gpu_fabric_probe.c:233
Dec 02 09:14:07 gpu05 kernel: NVRM: Xid (PCI:0000:1b:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)
Dec 02 09:14:09 gpu05 systemd[1]: nvidia-fabricmanager.service: Main process exited, code=killed, status=9/KILL
Dec 02 09:14:09 gpu05 systemd[1]: nvidia-fabricmanager.service: Failed with result 'signal'.
"""

MPIRUN_NCCL_THEN_KERNEL = """\
[1,0]<stdout>:gpu05:22:28 [0] NCCL INFO Using network Socket
[1,0]<stdout>:gpu05:22:28 [0] NCCL INFO comm 0x55fb28c68190 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xea07 - Init START
[1,0]<stdout>:gpu05:22:28 [0] transport/nvls.cc:379 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'.
[ 5123.456789] NVRM: Xid (PCI:0000:1b:00): 79, pid=1926, name=python, GPU has fallen off the bus.
[ 5123.456901] NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.
"""

TRANSCRIPT = """\
[root@gpu05 ~]# nvidia-smi -mig 0
Warning: MIG mode is in pending disable state for GPU 00000000:1B:00.0:In use by another client
00000000:1B:00.0 is currently being used by one or more other processes (e.g. CUDA application or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using the device and retry the command or reboot the system to make MIG mode effective.
All done.
[root@gpu05 ~]# nvidia-smi -r -i 0
The following GPUs could not be reset:
  GPU 00000000:1B:00.0: In use by another client

1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using this device and all compute applications running in the system.
[root@gpu05 ~]# fuser -v /dev/nvidia0
                     USER        PID ACCESS COMMAND
/dev/nvidia0:        root       4242 F...m python
[root@gpu05 ~]# kill 4242
[root@gpu05 ~]# nvidia-smi -r -i 0
GPU 00000000:1B:00.0 was successfully reset.
All done.
"""


def run_analyze(monkeypatch, capsys, text: str, *json_flag: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code = main(["analyze", *json_flag, "-"])
    return code, capsys.readouterr().out


def by_code(entry: dict) -> dict[str, dict]:
    return {f["code"]: f for f in entry["findings"]}


# ---- a) kernel lines beside systemd's words about Fabric Manager -------------------------------------

def test_a_journal_paste_reads_the_kernel_lines_and_fabric_manager_s_death(monkeypatch, capsys):
    entry = analyze_text(KERNEL_AND_FM_JOURNAL, "paste")
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [("kernel-log", [1, 3]),
                                                                 ("fabricmanager-log", [4, 5])]
    found = by_code(entry)
    assert found["FABRIC_OUT_OF_SYNC"]["severity"] == "error" and found["FABRIC_OUT_OF_SYNC"]["lines"] == [1, 3]
    assert found["XID"]["severity"] == "error" and "Xid 145" in found["XID"]["message"]
    fm = found["FM_NOT_RUNNING"]
    assert fm["severity"] == "error" and fm["lines"] == [4, 5] and "code=killed" in fm["message"]
    assert entry["kind"] == "mixed"
    code, _ = run_analyze(monkeypatch, capsys, KERNEL_AND_FM_JOURNAL, "--json")
    assert code == 1


def test_the_two_kernel_lines_alone_are_still_one_kernel_log():
    lines = KERNEL_AND_FM_JOURNAL.splitlines()[1:3]
    entry = analyze_text("\n".join(lines) + "\n", "paste")
    assert entry["kind"] == "kernel-log" and [p["kind"] for p in entry["parts"]] == ["kernel-log"]
    assert sorted(f["code"] for f in entry["findings"]) == ["FABRIC_OUT_OF_SYNC", "XID"]


# ---- b) mpirun-tagged NCCL lines, then the driver's -----------------------------------------------

def test_mpirun_tagged_nccl_lines_and_the_kernel_lines_after_them_are_both_read():
    entry = analyze_text(MPIRUN_NCCL_THEN_KERNEL, "paste")
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [("nccl-tests", [1, 3]), ("kernel-log", [4, 5])]
    found = by_code(entry)
    assert found["NVLS_SMOKE_FAILED"]["lines"] == [1, 3] and "401" in found["NVLS_SMOKE_FAILED"]["message"]
    assert found["GPU_LOST"]["lines"] == [4, 5]
    assert found["XID"]["severity"] == "error" and "Xid 79" in found["XID"]["message"]
    nccl = entry["parts"][0]
    assert nccl["wrapper"]["form"] == "mpirun" and nccl["wrapper"]["ranks"] == [0]  # peeled within its run


# ---- c) a shell transcript --------------------------------------------------------------------------

def test_a_transcript_is_split_at_its_prompts_and_each_output_read_as_its_command_s():
    entry = analyze_text(TRANSCRIPT, "transcript")
    parts = [(p["kind"], p["lines"], p["command"]) for p in entry["parts"]]
    assert parts == [("nvidia-smi-mig", [2, 4], "nvidia-smi -mig 0"),
                     ("nvidia-smi-reset", [6, 9], "nvidia-smi -r -i 0"),
                     ("fuser", [11, 12], "fuser -v /dev/nvidia0"),
                     ("nvidia-smi-reset", [15, 16], "nvidia-smi -r -i 0")]


def test_a_refused_reset_then_one_that_worked_says_both_and_which_stands(monkeypatch, capsys):
    entry = analyze_text(TRANSCRIPT, "transcript")
    refused = [f for f in entry["findings"] if f["code"] == "RESET_REFUSED"]
    assert len(refused) == 1
    assert refused[0]["severity"] == "info" and refused[0]["lines"] == [6, 9]
    assert "superseded by the reset at line 15" in refused[0]["message"]
    # The pending MIG change was committed by that reset: said, no longer a warning.
    mig = by_code(entry)["MIG_PENDING"]
    assert mig["severity"] == "info" and "the reset at line 15" in mig["message"]
    assert entry["parts"][1]["superseded_by"] == 15
    assert not [f for f in entry["findings"] if f["severity"] != "info"]
    code, _ = run_analyze(monkeypatch, capsys, TRANSCRIPT, "--json")
    assert code == 0  # what stands is a GPU reset that worked


def test_a_refusal_that_nothing_supersedes_stands():
    lines = TRANSCRIPT.splitlines()
    entry = analyze_text("\n".join(lines[:13]) + "\n", "transcript")
    refused = by_code(entry)["RESET_REFUSED"]
    assert refused["severity"] == "error" and "superseded" not in refused["message"]


def test_a_reset_of_another_gpu_does_not_supersede_the_refusal():
    other = TRANSCRIPT.replace("GPU 00000000:1B:00.0 was successfully reset.", "GPU 00000000:2A:00.0 was successfully reset.")
    entry = analyze_text(other, "transcript")
    assert by_code(entry)["RESET_REFUSED"]["severity"] == "error"


@pytest.mark.parametrize("prompt", ["$ ", "# ", "user@gpu05:~$ ", "[root@gpu05 ~]# ", "root@gpu05:/home/ops# "])
def test_every_prompt_form_splits_the_transcript(prompt):
    text = TRANSCRIPT.replace("[root@gpu05 ~]# ", prompt)
    entry = analyze_text(text, "transcript")
    assert [p["kind"] for p in entry["parts"]] == ["nvidia-smi-mig", "nvidia-smi-reset", "fuser", "nvidia-smi-reset"]


def test_the_command_line_tells_the_kind_where_the_output_alone_does_not():
    # journalctl -u nvidia-fabricmanager's lines are FM's; `systemctl status` output is read as that command's.
    text = ("$ journalctl -k --no-pager | grep NVRM\n"
            "Dec 02 09:14:07 gpu05 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1926, name=python, GPU has fallen off the bus.\n"
            "$ systemctl status nvidia-fabricmanager\n"
            "× nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
            "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)\n"
            "     Active: failed (Result: signal) since Tue 2026-12-02 09:14:09 UTC; 3min ago\n"
            "   Main PID: 2718 (code=killed, signal=KILL)\n")
    entry = analyze_text(text, "transcript")
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [("kernel-log", [2, 2]), ("systemctl-status", [4, 7])]
    assert {"GPU_LOST", "FM_NOT_RUNNING"} <= set(by_code(entry))


# ---- prose and NVIDIA's text that no reader takes -------------------------------------------------

def test_prose_between_the_parts_is_no_error_and_nvidia_s_unread_text_is_said(monkeypatch, capsys):
    text = ("Here is what I saw on the node after the job hung:\n" + KERNEL_AND_FM_JOURNAL
            + "Any idea what is going on?\n")
    entry = analyze_text(text, "paste")
    assert [p["kind"] for p in entry["parts"]] == ["kernel-log", "fabricmanager-log"]
    unread = "nv-hostengine[901]: DCGM failed to read the NVLink state of GPU 0000:1b:00.0: Unknown Error\n"
    nccl_tail = MPIRUN_NCCL_THEN_KERNEL.splitlines()[2] + "\n"
    mixed = nccl_tail + "and then:\n" + unread + KERNEL_AND_FM_JOURNAL.splitlines()[1] + "\n"
    entry = analyze_text(mixed, "paste")
    kinds = [p["kind"] for p in entry["parts"]]
    assert kinds == ["nccl-tests", "unknown", "kernel-log"]
    assert entry["parts"][1]["lines"] == [2, 3]  # the prose before it too: the gap between the runs
    unread_finding = entry["parts"][1]["findings"][0]
    assert unread_finding["code"] == "UNREAD_EVIDENCE" and "nv-hostengine" in unread_finding["message"]
    code, _ = run_analyze(monkeypatch, capsys, mixed, "--json")
    assert code == 1  # NVIDIA's error text that no reader takes is never "healthy"


def test_the_readable_output_shows_each_part_s_lines(monkeypatch, capsys):
    code, out = run_analyze(monkeypatch, capsys, KERNEL_AND_FM_JOURNAL)
    assert code == 1
    flat = " ".join(out.split())
    assert "lines 1-3" in flat and "lines 4-5" in flat and "FM_NOT_RUNNING" in flat


def test_the_json_keeps_one_document_per_file_with_its_parts(monkeypatch, capsys):
    code, out = run_analyze(monkeypatch, capsys, TRANSCRIPT, "--json")
    (doc,) = json.loads(out)
    assert {"file", "kind", "data", "findings", "warnings", "parts"} <= set(doc)
    for part in doc["parts"]:
        assert {"kind", "lines", "data", "findings", "warnings"} <= set(part)


# ---- benign parts stay quiet ------------------------------------------------------------------------

HEALTHY_BOOT = """\
Dec 02 09:10:01 gpu05 kernel: nvidia-nvlink: Nvlink Core is being initialized, major device number 235
Dec 02 09:10:01 gpu05 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 23 19:33:59 UTC 2025
Dec 02 09:10:05 gpu05 systemd[1]: Starting NVIDIA fabric manager service...
Dec 02 09:10:09 gpu05 nv-fabricmanager[2718]: Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with the NVLink fabric.
Dec 02 09:10:09 gpu05 systemd[1]: Started NVIDIA fabric manager service.
"""


def test_a_healthy_boot_s_kernel_and_fm_lines_are_two_quiet_parts(monkeypatch, capsys):
    entry = analyze_text(HEALTHY_BOOT, "boot")
    # systemd's "Starting NVIDIA fabric manager service" is FM's (its unit's description), not the kernel's
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [("kernel-log", [1, 2]), ("fabricmanager-log", [3, 5])]
    assert entry["findings"] == []
    code, _ = run_analyze(monkeypatch, capsys, HEALTHY_BOOT, "--json")
    assert code == 0


def test_fm_killed_then_started_again_is_not_down():
    text = HEALTHY_BOOT + "\n".join(KERNEL_AND_FM_JOURNAL.splitlines()[3:]) + (
        "\nDec 02 09:14:19 gpu05 systemd[1]: Started NVIDIA fabric manager service.\n")
    entry = analyze_text(text, "boot")
    codes = [f["code"] for f in entry["findings"]]
    assert "FM_NOT_RUNNING" not in codes
    assert codes == ["UNREAD_EVIDENCE"]  # systemd's words of the kill are still quoted, never dropped


@pytest.mark.parametrize(("wrap", "form"), [("    ", "indent"), ("> ", "quote")])
def test_a_transcript_quoted_or_indented_in_a_ticket_is_split_at_its_prompts(wrap, form):
    text = "".join(wrap + line + "\n" for line in TRANSCRIPT.splitlines())
    entry = analyze_text(text, "ticket")
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [
        ("nvidia-smi-mig", [2, 4]), ("nvidia-smi-reset", [6, 9]), ("fuser", [11, 12]), ("nvidia-smi-reset", [15, 16])]
    assert entry["wrapper"]["form"] == form
    assert by_code(entry)["RESET_REFUSED"]["severity"] == "info"
