"""systemctl, fuser, ps, /proc stat, holders, kernel log and Fabric Manager log parsers on real output."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvls_tui.model import Holder, HolderKind, ServiceState
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.fabricmanager_log import (
    parse_fm_line,
    parse_fm_log,
    parse_fm_version,
)
from nvls_tui.parsers.fuser import FuserHolder, parse_fuser_terse, parse_fuser_v
from nvls_tui.parsers.holders import build_holders, classify, unit_and_pod
from nvls_tui.parsers.kernel_log import classify_kernel_line, parse_kernel_log
from nvls_tui.parsers.ps import ProcStat, PsEntry, parse_proc_stat, parse_ps
from nvls_tui.parsers.systemctl import parse_show, parse_status, parse_status_details

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL = FIXTURES / "real" / "h200x2-nvswitch"
PUBLIC = FIXTURES / "public"


def read(path: Path) -> str:
    return strip_fixture_header(path.read_text())


GPU_FILES = ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm")

# The incident's FM unit, as `systemctl status nvidia-fabricmanager --no-pager -l` printed it.
INCIDENT_STATUS = """\
=== FABRIC MANAGER SERVICE ===
× nvidia-fabricmanager.service - NVIDIA fabric manager service
Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)
Active: failed (Result: signal) since Mon 2026-08-10 15:45:34 UTC; 5 days ago
Main PID: 9946 (code=killed, signal=KILL)
CPU: 27.747s
Aug 10 06:41:31 inst-1onle-devrel-rdma-pool systemd[1]:
"""


# -- systemctl ------------------------------------------------------------------------------------

def test_status_of_the_running_fabric_manager_with_nvlsm():
    details = parse_status_details(read(PUBLIC / "fabricmanager" / "systemctl-status-active-b300-nvlsm.txt"))
    assert details.warnings == ()
    assert details.value.service == ServiceState(
        name="nvidia-fabricmanager.service", active="active", sub="running", load="loaded",
        main_pid=31082, result=None, since="Thu 2026-08-27 07:13:21 UTC",
    )
    assert details.value.path == "/usr/lib/systemd/system/nvidia-fabricmanager.service"
    assert details.value.enablement == "enabled"
    assert details.value.process_name == "nv-fabricmanage"
    assert details.value.description == "NVIDIA fabric manager service"


def test_status_of_the_active_dcgm_unit():
    state = parse_status(read(PUBLIC / "device-holders" / "systemctl-status-dcgm-active.txt")).value
    assert (state.name, state.active, state.sub, state.main_pid) == ("nvidia-dcgm.service", "active", "running",
                                                                     100107)
    assert state.since == "Fri 2026-08-28 01:36:35 UTC"


def test_status_of_the_incidents_killed_fabric_manager_has_no_live_main_pid():
    details = parse_status_details(INCIDENT_STATUS).value
    assert details.service == ServiceState(
        name="nvidia-fabricmanager.service", active="failed", sub="failed", load="loaded",
        main_pid=None, result="signal", since="Mon 2026-08-10 15:45:34 UTC",
    )
    assert (details.exited_pid, details.exit_status) == (9946, "code=killed, signal=KILL")
    assert details.path == "/lib/systemd/system/nvidia-fabricmanager.service"


def test_status_of_an_auto_restarting_unit_keeps_sub_state_and_result():
    text = ("● kubelet.service - kubelet\n     Loaded: masked (Reason: Unit kubelet.service is masked.)\n"
            "     Active: activating (auto-restart) (Result: exit-code) since Tue 2026-12-01 10:00:00 UTC; 3s ago\n")
    state = parse_status(text).value
    assert (state.active, state.sub, state.result, state.load) == ("activating", "auto-restart", "exit-code",
                                                                   "masked")


def test_status_of_a_missing_unit_is_not_found():
    state = parse_status("Unit nvidia-fabricmanager.service could not be found.\n").value
    assert (state.name, state.active, state.load, state.exists) == ("nvidia-fabricmanager.service", "inactive",
                                                                    "not-found", False)


def test_status_without_a_unit_line_warns():
    parsed = parse_status("hello\n")
    assert parsed.value.name == "" and parsed.warnings


SHOW = """\
Id=nvidia-fabricmanager.service
LoadState=loaded
ActiveState=failed
SubState=failed
MainPID=0
Result=signal
ActiveEnterTimestamp=Mon 2026-08-10 06:41:31 UTC
InactiveEnterTimestamp=Mon 2026-08-10 15:45:34 UTC

Id=kubelet.service
LoadState=loaded
ActiveState=active
SubState=running
MainPID=2211
Result=success
ActiveEnterTimestamp=Mon 2026-08-10 06:40:00 UTC

Id=nvidia-snapshot.timer
LoadState=not-found
ActiveState=inactive
SubState=dead
MainPID=0
Result=success
ActiveEnterTimestamp=
"""


def test_show_gives_one_state_per_unit_block():
    parsed = parse_show(SHOW)
    assert parsed.warnings == ()
    fm, kubelet, timer = parsed.value
    # A failed unit's "since" is when it went down (InactiveEnterTimestamp), as `systemctl status` says.
    assert fm == ServiceState("nvidia-fabricmanager.service", "failed", "failed", "loaded", None, "signal",
                              "Mon 2026-08-10 15:45:34 UTC")
    assert (kubelet.active, kubelet.main_pid, kubelet.result) == ("active", 2211, "success")
    assert (timer.load, timer.exists, timer.since, timer.main_pid) == ("not-found", False, None, None)


def test_show_splits_units_on_a_repeated_key_when_blank_lines_are_missing():
    # systemd prints properties in its own order; here MainPID comes first in each block.
    text = "MainPID=0\nId=a.service\nActiveState=inactive\nMainPID=7\nId=b.service\nActiveState=active\n"
    states = parse_show(text).value
    assert [(s.name, s.active, s.main_pid) for s in states] == [("a.service", "inactive", None),
                                                              ("b.service", "active", 7)]


# -- fuser ----------------------------------------------------------------------------------------

def test_fuser_v_merges_each_pid_across_every_gpu_file():
    parsed = parse_fuser_v(read(REAL / "fuser-v-two-cuda-processes.txt"))
    assert parsed.warnings == ()
    assert parsed.value == (
        FuserHolder(560, "root", "F...m", "python3", GPU_FILES),
        FuserHolder(561, "root", "F...m", "python3", GPU_FILES),
    )


def test_fuser_v_skips_kernel_mounts_and_reads_names_printed_on_their_own_line():
    text = """\
                     USER        PID ACCESS COMMAND
/dev/nvidia-nvswitchctl:
                     root      37538 F.... dcgm-exporter
/dev/nvidia0:        root     kernel mount /dev
                     root      37538 ....m dcgm-exporter
                     root     924303 F.... nv-hostengine
Specified filename /dev/nvidia-nvswitch9 does not exist.
"""
    parsed = parse_fuser_v(text)
    assert parsed.value == (
        FuserHolder(37538, "root", "F...m", "dcgm-exporter", ("/dev/nvidia-nvswitchctl", "/dev/nvidia0")),
        FuserHolder(924303, "root", "F....", "nv-hostengine", ("/dev/nvidia0",)),
    )
    assert parsed.warnings == ("Specified filename /dev/nvidia-nvswitch9 does not exist.",)


@st.composite
def fuser_tables(draw):
    """A psmisc ``fuser -v`` table: files, each with rows of (user, pid, access, command)."""
    files = draw(st.lists(st.sampled_from([f"/dev/nvidia{i}" for i in range(8)] + ["/dev/nvidiactl",
                                                                                     "/dev/nvidia-uvm"]),
                          min_size=1, max_size=10, unique=True))
    access = st.text(alphabet=".Fm", min_size=5, max_size=5)
    row = st.tuples(st.sampled_from(["root", "alice"]), st.integers(1, 60), access,
                    st.sampled_from(["python3", "nv-hostengine", "", "dcgm-exporter"]))
    return [(name, draw(st.lists(row, min_size=1, max_size=6))) for name in files]


def _render_fuser(table) -> str:
    lines = ["                     USER        PID ACCESS COMMAND"]
    for name, rows in table:
        for i, (user, pid, access, command) in enumerate(rows):
            label = f"{name}:" if i == 0 else ""
            lines.append(f"{label:<20} {user:>5} {pid:>10} {access} {command}".rstrip())
    return "\n".join(lines) + "\n"


@given(fuser_tables())
def test_fuser_v_merges_every_pid_as_the_table_says(table):
    # One holder per PID in the order fuser first listed it: its first user, its first command that
    # is not empty, every file once in the order listed, and the access letters of all its rows.
    parsed = parse_fuser_v(_render_fuser(table))
    want: dict[int, list] = {}
    for name, rows in table:
        for user, pid, access, command in rows:
            entry = want.setdefault(pid, [user, "....." , "", []])
            entry[1] = "".join(a if a != "." else b for a, b in zip(entry[1], access, strict=True))
            entry[2] = entry[2] or command
            if name not in entry[3]:
                entry[3].append(name)
    assert parsed.warnings == ()
    assert parsed.value == tuple(FuserHolder(pid, u, a, c, tuple(d)) for pid, (u, a, c, d) in want.items())


def test_fuser_terse_gives_the_pids_of_each_file():
    parsed = parse_fuser_terse(read(REAL / "fuser-terse-two-cuda-processes.txt"))
    assert parsed.value == {f: (560, 561) for f in GPU_FILES}
    assert parsed.warnings == ()


def test_fuser_terse_with_streams_apart_files_pids_under_a_wildcard():
    parsed = parse_fuser_terse("   560   561   560   561", "/dev/nvidia0:mm\n/dev/nvidia1:mm\n")
    assert parsed.value == {"*": (560, 561)}
    assert parsed.warnings
    one = parse_fuser_terse("   560   561", "/dev/nvidia0:mm\n")
    assert one.value == {"/dev/nvidia0": (560, 561)} and one.warnings == ()


# -- ps and /proc/PID/stat --------------------------------------------------------------------------

PS_TEXT = """\
  560   557 root                             Mon Nov 30 07:51:12 2026 0::/user.slice/user-0.slice/session-1.scope python3 -c import torch; torch.cuda.init()
37538 37001 root                             Mon Nov  3 07:51:12 2026 0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c3d4e_5f6a_7b8c_9d0e_112233445566.slice/cri-containerd-ab12.scope /usr/bin/dcgm-exporter -f /etc/dcgm-exporter/dcp-metrics-included.csv
100107     1 nvidia-dcgm                      Fri Aug 28 01:36:35 2026 0::/system.slice/nvidia-dcgm.service /usr/bin/nv-hostengine -n --service-account nvidia-dcgm
  777     1 root                             Fri Aug 28 01:36:35 2026 - watch -n 1 nvidia-smi
"""


def test_ps_lines_give_identity_cgroup_and_full_command():
    parsed = parse_ps(PS_TEXT)
    assert parsed.warnings == ()
    first, dcgm, hostengine, watch = parsed.value
    assert first == PsEntry(560, 557, "root", "Mon Nov 30 07:51:12 2026",
                            "0::/user.slice/user-0.slice/session-1.scope",
                            "python3 -c import torch; torch.cuda.init()")
    assert dcgm.lstart == "Mon Nov 3 07:51:12 2026"
    assert dcgm.args.startswith("/usr/bin/dcgm-exporter -f ")
    assert (hostengine.user, hostengine.cgroup) == ("nvidia-dcgm", "0::/system.slice/nvidia-dcgm.service")
    assert watch.cgroup is None and watch.args == "watch -n 1 nvidia-smi"


def test_ps_skips_its_header_and_warns_about_unreadable_process_lines():
    parsed = parse_ps("    PID    PPID USER STARTED CGROUP COMMAND\n  12 oops\n")
    assert parsed.value == () and parsed.warnings == ("unreadable ps line: 12 oops",)


def test_proc_stat_gives_start_time_2610_for_both_real_processes():
    parsed = parse_proc_stat(read(REAL / "proc-pid-stat.txt"))
    assert parsed.warnings == ()
    assert parsed.value == {
        560: ProcStat(560, "python3", "S", 557, 2610),
        561: ProcStat(561, "python3", "S", 557, 2610),
    }


def test_proc_stat_reads_a_comm_with_spaces_and_parentheses():
    line = "42 (my (odd) name) R 1 " + " ".join(["0"] * 17) + " 99999 0 0"
    assert parse_proc_stat(line).value[42] == ProcStat(42, "my (odd) name", "R", 1, 99999)


def test_proc_stat_warns_on_a_truncated_record():
    parsed = parse_proc_stat("560 (python3) S 557 555")
    assert parsed.value == {} and parsed.warnings == ("truncated /proc/560/stat line",)


# -- holders ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "command,kind",
    [
        ("/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv", HolderKind.DCGM_EXPORTER),
        ("/snap/dcgm/62/usr/bin/nv-hostengine -n", HolderKind.NV_HOSTENGINE),
        ("nvidia-device-plugin", HolderKind.DEVICE_PLUGIN),
        ("nvidia-device-p", HolderKind.DEVICE_PLUGIN),  # fuser's 15-character comm
        ("nvidia-mig-manager", HolderKind.MIG_MANAGER),
        ("gpu-feature-discovery --oneshot=false", HolderKind.FEATURE_DISCOVERY),
        ("nvidia-smi --query-gpu=index --format=csv", HolderKind.NVIDIA_SMI),
        ("watch -n 1 nvidia-smi", HolderKind.WATCH),
        ("watch -n1 'nvidia-smi --query-gpu=utilization.gpu --format=csv'", HolderKind.WATCH),
        ("watch -n1 date", HolderKind.OTHER),
        ("/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg", HolderKind.FABRIC_MANAGER),
        ("nv-fabricmanage", HolderKind.FABRIC_MANAGER),
        ("/usr/bin/nvidia-persistenced --user nvidia-persistenced", HolderKind.PERSISTENCED),
        ("python3 -m vllm.entrypoints.openai.api_server --tensor-parallel-size 4", HolderKind.CUDA_APP),
        ("/usr/local/bin/torchrun --nproc-per-node 8 train.py", HolderKind.CUDA_APP),
        ("vllm serve model", HolderKind.CUDA_APP),
        ("/usr/bin/all_reduce_perf -b 8M -e 128M -f 2 -g 8", HolderKind.CUDA_APP),
        ("bash", HolderKind.OTHER),
        ("", HolderKind.OTHER),
    ],
)
def test_classify_names_the_holder_kind(command, kind):
    assert classify(command) is kind


@pytest.mark.parametrize(
    "cgroup,expected",
    [
        ("0::/system.slice/nvidia-dcgm.service", ("nvidia-dcgm.service", None)),
        ("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c..slice/"
         "cri-containerd-ab12.scope", (None, "pod1b2c")),
        ("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f6a_7b8c_9d0e_112233445566"
         ".slice/cri-containerd-ab12.scope", (None, "pod1b2c3d4e-5f6a-7b8c-9d0e-112233445566")),
        ("/kubepods/besteffort/pod0f1e2d3c-aaaa-bbbb-cccc-ddddeeeeffff/ab12", (None,
                                                                          "pod0f1e2d3c-aaaa-bbbb-cccc-ddddeeeeffff")),
        ("0::/user.slice/user-0.slice/session-1.scope", ("session-1.scope", None)),
        ("12:pids:/system.slice/kubelet.service,1:name=systemd:/system.slice/kubelet.service",
         ("kubelet.service", None)),
        ("0::/", (None, None)),
        ("-", (None, None)),
        (None, (None, None)),
    ],
)
def test_unit_and_pod_from_a_cgroup(cgroup, expected):
    assert unit_and_pod(cgroup) == expected


def test_build_holders_joins_fuser_and_ps_by_pid_sorted_by_pid():
    fuser = (
        FuserHolder(100107, "nvidia-dcgm", "F...m", "nv-hostengine", ("/dev/nvidiactl",)),
        FuserHolder(37538, "root", "F...m", "dcgm-exporter", ("/dev/nvidia0", "/dev/nvidia1")),
        FuserHolder(999, "root", "F....", "nvidia-device-p", ("/dev/nvidia0",)),
    )
    holders = build_holders(fuser, parse_ps(PS_TEXT).value)
    assert [h.pid for h in holders] == [999, 37538, 100107]
    assert holders[0] == Holder(pid=999, user="root", command="nvidia-device-p", kind=HolderKind.DEVICE_PLUGIN,
                                devices=("/dev/nvidia0",))
    dcgm = holders[1]
    assert (dcgm.kind, dcgm.unit, dcgm.pod) == (HolderKind.DCGM_EXPORTER, None,
                                                "pod1b2c3d4e-5f6a-7b8c-9d0e-112233445566")
    assert dcgm.command.startswith("/usr/bin/dcgm-exporter -f ") and dcgm.start_time == "Mon Nov 3 07:51:12 2026"
    assert (dcgm.ppid, dcgm.devices) == (37001, ("/dev/nvidia0", "/dev/nvidia1"))
    assert (holders[2].kind, holders[2].unit, holders[2].user) == (HolderKind.NV_HOSTENGINE, "nvidia-dcgm.service",
                                                                   "nvidia-dcgm")


def test_build_holders_from_the_real_fuser_table():
    fuser = parse_fuser_v(read(REAL / "fuser-v-two-cuda-processes.txt")).value
    holders = build_holders(fuser, ())
    assert [(h.pid, h.kind, h.devices, h.start_time) for h in holders] == [
        (560, HolderKind.CUDA_APP, GPU_FILES, None),
        (561, HolderKind.CUDA_APP, GPU_FILES, None),
    ]


# -- kernel log -------------------------------------------------------------------------------------

def test_the_nvswitch_probe_log_gives_five_sxid_22013_events():
    events = parse_kernel_log(read(PUBLIC / "kernel-log" / "nvswitch-probe-sxid-22013-h100-ppcie.txt")).value
    assert [(e.code, e.xid, e.pci) for e in events] == [("SXID", 22013, "0000:02:00.0")] * 5
    assert [e.timestamp for e in events] == ["25.948274", "25.950244", "25.952303", "25.955391", "25.957361"]
    assert events[0].line.startswith("[   25.948274] nvidia-nvswitch1: SXid")


def test_the_nvlink_xid_lines_give_their_numbers_and_pci_addresses():
    events = parse_kernel_log(read(PUBLIC / "kernel-log" / "xid-144-145-149-nvlink-lines.txt")).value
    assert [(e.code, e.xid, e.pci) for e in events] == [
        ("XID", 144, "0000:01:00"),
        ("XID", 149, "0000:00:00"),
        ("XID", 149, "0000:00:00"),
        ("XID", 149, "0019:01:00"),
        ("XID", 145, "0018:01:00"),
    ]


@pytest.mark.parametrize(
    "line,code,timestamp",
    [
        ("Nov 30 08:00:01 gpu05 kernel: NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by "
         "the driver is out of sync", "NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "Nov 30 08:00:01"),
        ("2026-11-30T08:00:01+0000 gpu05 kernel: NVRM: mem_multicast_fabric.c:3039 "
         "NV_ERR_FABRIC_MANAGER_NOT_PRESENT", "NV_ERR_FABRIC_MANAGER_NOT_PRESENT", "2026-11-30T08:00:01+0000"),
        ("[Mon Nov 30 08:00:01 2026] NVRM: _memMulticastFabricAttach: NV_ERR_FABRIC_STATE_OUT_OF_SYNC",
         "NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "Mon Nov 30 08:00:01 2026"),
        ("Fabric Manager is not loaded", "NV_ERR_FABRIC_MANAGER_NOT_PRESENT", None),
        ("[ 3.5] NVRM: gpuDoSomething: NV_ERR_INSUFFICIENT_RESOURCES", "NV_ERR_INSUFFICIENT_RESOURCES", "3.5"),
    ],
)
def test_kernel_lines_in_every_log_format_give_their_code_and_timestamp(line, code, timestamp):
    event = classify_kernel_line(line)
    assert (event.code, event.timestamp, event.line) == (code, timestamp, line)


def test_an_xid_in_dmesg_t_form_keeps_number_pci_and_time():
    event = classify_kernel_line("[Mon Nov 30 08:00:01 2026] NVRM: Xid (PCI:0000:0f:00): 79, pid=1, GPU has "
                                 "fallen off the bus.")
    assert (event.code, event.xid, event.pci, event.timestamp) == ("XID", 79, "0000:0f:00",
                                                                   "Mon Nov 30 08:00:01 2026")


def test_unrelated_kernel_lines_are_skipped_silently():
    parsed = parse_kernel_log("[   14.817960] nvidia-nvswitch0: using MSI\nNov 30 08:00:01 h kernel: eth0 up\n\n")
    assert parsed.value == () and parsed.warnings == ()


# -- Fabric Manager log --------------------------------------------------------------------------------

def test_the_h20_journal_gives_configured_started_stopped_and_the_failed_restart():
    events = parse_fm_log(read(PUBLIC / "fabricmanager" / "journal-restart-failed-h20-ppcie.txt")).value
    assert [e.code for e in events if e.code] == ["FAILED", "CONFIGURED", "STARTED", "STARTED", "STOPPED"]
    configured = next(e for e in events if e.code == "CONFIGURED")
    assert configured.timestamp == "Jan 05 14:45:28" and configured.level is None
    assert configured.message.startswith("Successfully configured all the available NVSwitches to route GPU")
    assert events[1].message == "Starting nvidia-fabricmanager.service - NVIDIA fabric manager service..."


def test_the_b300_status_tail_has_the_gpus_and_nvswitches_configured_line():
    events = parse_fm_log(read(PUBLIC / "fabricmanager" / "systemctl-status-active-b300-nvlsm.txt")).value
    assert [e.code for e in events if e.code] == ["CONFIGURED", "STARTED", "STARTED"]
    assert next(e for e in events if e.code == "CONFIGURED").timestamp == "Aug 27 07:13:21"


@pytest.mark.parametrize(
    "line,level,code,message",
    [
        ("[Nov 30 2026 08:00:01] [INFO] [tid 1234] Successfully configured all the available GPUs and NVSwitches "
         "to route NVLink traffic.", "INFO", "CONFIGURED",
         "Successfully configured all the available GPUs and NVSwitches to route NVLink traffic."),
        ("[Nov 30 2026 08:00:01] [ERROR] [tid 1234] fabric manager NVLink driver interface version 580.82 and "
         "NVIDIA driver version 575.51 don't match", "ERROR", "VERSION_MISMATCH", None),
        ("[Nov 30 2026 08:00:02] [WARNING] [tid 1234] request to query NVSwitch device information from NVSwitch "
         "driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]", "WARNING",
         "NV_WARN_NOTHING_TO_DO", None),
        ("Aug 10 15:45:34 gpu05 systemd[1]: nvidia-fabricmanager.service: Failed with result 'signal'.", None,
         "FAILED", "nvidia-fabricmanager.service: Failed with result 'signal'."),
        ("Aug 10 15:45:34 gpu05 systemd[1]: Failed to start NVIDIA fabric manager service.", None, "FAILED", None),
        ("Aug 10 15:45:34 gpu05 systemd[1]: Stopped nvidia-fabricmanager.service - NVIDIA fabric manager service.",
         None, "STOPPED", None),
    ],
)
def test_fm_lines_give_level_code_and_message(line, level, code, message):
    event = parse_fm_line(line)
    assert (event.level, event.code) == (level, code)
    if message is not None:
        assert event.message == message


def test_fm_version_is_read_from_the_version_line():
    assert parse_fm_version("Fabric Manager version is : 580.82.07\n") == "580.82.07"
    assert parse_fm_version("nv-fabricmanager: command not found\n") is None
