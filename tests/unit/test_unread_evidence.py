"""Nothing NVIDIA says is dropped silently (issue 35, item 2): a driver or NVSwitch line that says something went
wrong and that no rule reads is ``UNREAD_EVIDENCE`` (a warning quoting the lines, capped), in ``analyze`` and in
``check`` (the poll's kernel section, read as analyze reads it). A healthy H100's boot lines (the driver's banner
at ``err`` level), ACPI noise and NIC link flaps stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvls_tui.analyze.captured import analyze_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
README_LINES = FIXTURES / "kernel" / "rminitadapter-failed-nvidia-readme-390.txt"
HEALTHY_H100 = sorted((FIXTURES / "real" / "h100-1gpu-vm").glob("*.txt"))
PROBE = FIXTURES / "real" / "h200-1gpu-vm" / "probe-output-with-cuda-holder.txt"


def unread(entry: dict) -> list[dict]:
    return [f for f in entry["findings"] if f["code"] == "UNREAD_EVIDENCE"]


def test_the_driver_s_lines_no_rule_reads_are_a_warning_quoting_them():
    # The GPU's failed initialisation is read now (DRIVER_ERROR, tests/unit/test_gpu_init_failed.py); the line before it,
    # which no rule reads, is still quoted.
    entry = analyze_text(README_LINES.read_text(), str(README_LINES))
    assert entry["kind"] == "kernel-log"
    (finding,) = unread(entry)
    assert finding["severity"] == "warning"
    assert "NVRM: failed to copy vbios to system memory." in finding["message"]
    init = [f for f in entry["findings"] if f["code"] == "DRIVER_ERROR"]
    assert init and init[0]["severity"] == "error" and "RmInitAdapter failed! (0x30:0xffffffff:858)" in init[0]["message"]


def test_the_quotes_are_capped_and_the_rest_counted():
    text = "".join(f"[  {i}.000000] NVRM: GPU 0000:1b:00.0: failed to copy vbios to system memory (attempt {i})\n"
                   for i in range(10, 20))
    (finding,) = unread(analyze_text(text, "k.txt"))
    assert finding["message"].count("failed to copy vbios") == 3 and "and 7 more" in finding["message"]


# As a public driver write-up quotes its journal (apnex/nvidia-driver-injector, a GPU lost mid-session): an
# NV_ERR_* status the kernel parser reads as an event. It was quoted as UNREAD_EVIDENCE until a rule read it:
# now DRIVER_ERROR reads it through the status catalogue (tests/unit/test_driver_status_lines.py), and it is not
# quoted again as unread.
GPU_IS_LOST = "NVRM: GPU0 _issueRpcAndWait: GPU lost, returning NV_ERR_GPU_IS_LOST without issuing RPC\n"


def test_an_nv_err_status_is_read_with_the_driver_s_own_text_not_quoted_as_unread():
    entry = analyze_text(GPU_IS_LOST, "k.txt")
    assert unread(entry) == []
    (finding,) = [f for f in entry["findings"] if f["code"] == "DRIVER_ERROR"]
    assert "NV_ERR_GPU_IS_LOST (0x0000000F: GPU lost from the bus)" in finding["message"]


def test_lines_a_rule_reads_are_not_quoted_again():
    text = ("NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No\n"
            "NVRM: NVLink fabric state cached by the driver is out of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087)\n")
    assert unread(analyze_text(text, "k.txt")) == []


@pytest.mark.parametrize("path", HEALTHY_H100, ids=lambda p: p.name)
def test_a_healthy_h100_boot_stays_quiet(path):
    entry = analyze_text(path.read_text(), str(path))
    assert entry["kind"] == "kernel-log" and entry["findings"] == []


# ACPI and NIC lines of a boot, as public forum posts quote them, around the healthy H100's driver lines.
NOISE = ("[    0.412000] ACPI Warning: SystemIO range 0x0000000000000428-0x000000000000042F conflicts with OpRegion\n"
         "[    0.412100] ACPI BIOS Error (bug): Could not resolve symbol [\\_SB.PCI0.SAT0.PRT1._GTF.DSSP], AE_NOT_FOUND\n"
         "[   94.579211] e1000e: enp0s31f6 NIC Link is Down\n"
         "[  167.528145] e1000e: enp0s31f6 NIC Link is Up 100 Mbps Full Duplex, Flow Control: Rx/Tx\n"
         "[  601.108127] ata6.00: exception Emask 0x10 SAct 0xc SErr 0x190002 action 0xe frozen\n")


def test_acpi_noise_and_nic_flaps_stay_quiet():
    boot = (FIXTURES / "real" / "h100-1gpu-vm" / "dmesg-nvidia-lines.txt").read_text()
    entry = analyze_text(boot + NOISE, "boot.txt")
    assert entry["kind"] == "kernel-log" and entry["findings"] == []


def _probe_with_kernel(lines: str) -> str:
    text = PROBE.read_text()
    return text.replace("@@nvls-tui begin kernel\n", "@@nvls-tui begin kernel\n" + lines)


def test_check_reads_the_poll_s_kernel_section_the_same_way():
    # analyze of a captured probe output is the node as check sees it (poll/assemble builds the state).
    body = README_LINES.read_text().split("# ---\n", 1)[1]
    stamped = "".join(f"2026-12-06T10:00:0{i}+0000 gpu05 kernel: {line}\n" for i, line in enumerate(body.splitlines()))
    entry = analyze_text(_probe_with_kernel(stamped), "probe.txt")
    assert entry["kind"] == "nvls-tui-probe"
    (finding,) = unread(entry)
    assert "failed to copy vbios" in finding["message"] and finding["severity"] == "warning"
    assert any(f["code"] == "DRIVER_ERROR" and f["severity"] == "error" and "RmInitAdapter failed!" in f["message"]
               for f in entry["findings"])


def test_check_stays_quiet_on_the_healthy_boot():
    boot = (FIXTURES / "real" / "h100-1gpu-vm" / "dmesg-nvidia-lines.txt").read_text()
    assert unread(analyze_text(_probe_with_kernel(boot + NOISE), "probe.txt")) == []


# The mixed paste: systemd's lines about FM's unit (as NVIDIA/NVSentinel#883 quotes them) beside the
# driver's Xid 145 (the shared capture's line) and its out-of-sync status, read as a Fabric Manager log.
MIXED = ("Jan 30 11:58:43 node systemd[1]: nvidia-fabricmanager.service: Killing process 76454 (nv-fabricmanage) "
         "with signal SIGKILL.\n"
         "Jan 30 11:58:43 node systemd[1]: nvidia-fabricmanager.service: Main process exited, code=killed, "
         "status=9/KILL\n"
         "Jan 30 12:01:02 node kernel: NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 "
         "(0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)\n"
         "Jan 30 12:01:05 node kernel: NVRM: nvAssertOkFailedNoLog: Assertion failed: NVLink fabric state cached by "
         "the driver is out of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from "
         "knvlinkGetP2pLoopbackModeHelper @ kern_nvlink.c:1088\n")


def test_a_fabric_manager_log_holding_lines_no_fm_rule_reads_says_so():
    # Read line by line (issue 35, item 1): the kernel lines by the kernel's reader, systemd's words of FM's
    # death by FM's, which says FM is down and still quotes the lines no FM rule reads.
    entry = analyze_text(MIXED, "paste.txt")
    assert entry["kind"] == "mixed"
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [("fabricmanager-log", [1, 2]), ("kernel-log", [3, 4])]
    (finding,) = unread(entry)
    assert "2 lines" in finding["message"] and "code=killed" in finding["message"] and finding["lines"] == [1, 2]
    assert {"FM_NOT_RUNNING", "XID", "FABRIC_OUT_OF_SYNC"} <= {f["code"] for f in entry["findings"]}


def test_fm_s_own_error_lines_are_read_by_its_rule_not_quoted_again():
    text = ("[Jun 12 2025 10:00:00] [INFO] [tid 1] Successfully configured all the available GPUs and NVSwitches.\n"
            "[Jun 12 2025 10:05:00] [ERROR] [tid 2] failed to release multicast team with handle 0x1, cannot find "
            "the team\n")
    entry = analyze_text(text, "fabricmanager.log")
    assert [f["code"] for f in entry["findings"]] == ["FM_LOG_ERROR"]


def test_systemd_s_failed_start_is_not_quoted_beside_the_version_mismatch_that_caused_it():
    path = FIXTURES / "fm" / "version-mismatch-systemctl-status-akash.txt"
    entry = analyze_text(path.read_text(), str(path))
    assert "FM_VERSION_MISMATCH" in [f["code"] for f in entry["findings"]] and unread(entry) == []


def test_a_failed_fm_restart_no_rule_read_is_no_longer_silent():
    # Shared public capture: systemctl's "Job for nvidia-fabricmanager.service failed" after a restart; before,
    # analyze read it as a Fabric Manager log with no finding at all.
    path = FIXTURES / "public" / "fabricmanager" / "journal-restart-failed-h20-ppcie.txt"
    (finding,) = unread(analyze_text(path.read_text(), str(path)))
    assert "Job for nvidia-fabricmanager.service failed" in finding["message"]


async def test_check_quotes_what_no_fm_rule_reads_in_fms_journal_as_analyze_does():
    # A poll that read FM's unit active, then its journal after systemd killed it (the two reads race): no
    # FM_NOT_RUNNING explains the kill, so the journal's words of it must not be dropped.
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.diagnosis import diagnose
    from nvls_tui.model import CommandResult
    from nvls_tui.poll.assemble import assemble_node_state
    from nvls_tui.sim.fleet import load_fleet

    (backend,) = sim_backends(load_fleet("sim:healthy/hgx01", speed=0))
    sections = await backend.read_sections()
    fm_log = sections["fm_log"]
    killed = ("2026-08-15T14:10:08+0000 hgx01 systemd[1]: nvidia-fabricmanager.service: Main process exited, "
              "code=killed, status=9/KILL\n")
    sections["fm_log"] = CommandResult(fm_log.argv, fm_log.exit_status, fm_log.stdout + killed, fm_log.stderr)
    state = assemble_node_state("hgx01", sections, simulated=True)
    checked = [f for f in diagnose(state).findings if f.code == "UNREAD_EVIDENCE"]
    said = unread(analyze_text(sections["fm_log"].output, "fm-journal.txt"))
    assert [(f.severity.value, f.message) for f in checked] == [(f["severity"], f["message"]) for f in said]
    assert len(checked) == 1 and "code=killed" in checked[0].message


def test_an_nccl_warn_line_no_rule_reads_is_quoted_in_a_passing_run():
    # The real H200 all_reduce_perf run, with a WARN line NCCL prints when it cannot load libibverbs
    # (src/misc/ibvwrap.cc's words): the run passed, and before, the line was dropped without a word.
    run = (FIXTURES / "real" / "h200x2-nvswitch" / "all_reduce_perf-g2.txt").read_text().splitlines()
    warn = "gpu-h200:5121:5121 [0] NCCL WARN Failed to open libibverbs.so[.1]"
    entry = analyze_text("\n".join([*run[:5], warn, *run[5:]]) + "\n", "smoke.log")
    assert entry["kind"] == "nccl-tests"
    (finding,) = unread(entry)
    assert "Failed to open libibverbs.so[.1]" in finding["message"] and "NCCL's output" in finding["message"]


def test_nccl_s_failure_lines_are_read_by_the_smoke_rule_not_quoted_again():
    path = FIXTURES / "public" / "nccl-tests" / "fail-nvls-bind-401-warn-line.txt"
    entry = analyze_text(path.read_text(), str(path))
    assert "NVLS_SMOKE_FAILED" in [f["code"] for f in entry["findings"]] and unread(entry) == []
