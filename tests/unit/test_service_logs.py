"""Issue 35, items 2 and 4: the logs of NVIDIA's services around the fabric are read, not "unknown".

DCGM's own logs (nv-hostengine, nvvs, dcgm-exporter), ``dcgmi health``, the GPU Operator's containers, NVIDIA's
Kubernetes GPU plugins and nvidia-persistenced's journal each have a kind: their error text is never dropped
(``UNREAD_EVIDENCE`` where no rule reads it), their INFO noise stays quiet, and an Xid they report is read
through NVIDIA's Xid catalogue. The lines are real ones from public reports (tests/corpus/ has the files).
"""

from __future__ import annotations

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.analyze.paste import fails


def _read(text: str) -> dict:
    return analyze_text(text, "paste.txt")


def _codes(entry: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in entry["findings"]]


def _assert_one_unread(entry: dict, kind: str, quoted: str) -> None:
    """``entry`` is of ``kind`` and its one finding is UNREAD_EVIDENCE quoting ``quoted``."""
    assert entry["kind"] == kind
    assert _codes(entry) == [("UNREAD_EVIDENCE", "warning")]
    assert quoted in entry["findings"][0]["message"]


# --- DCGM's own logs --------------------------------------------------------------------------------------

HOSTENGINE_ERROR = (
    "2024-05-24 10:22:29.245 ERROR [5231:5273] [[NvSwitch]] ReadNvSwitchStatusAllSwitches() returned Object is in "
    "an undefined state [/workspaces/dcgm-rel_dcgm_2_2-postmerge/modules/nvswitch/DcgmModuleNvSwitch.cpp:388] "
    "[DcgmNs::DcgmModuleNvSwitch::RunOnce]\n")
NVVS_DEBUG = (
    "2026-01-16 09:50:02.432 DEBUG [3279516:3279516] Fabric manager successfully started for GPU 6 "
    "[/builds/dcgm/dcgm/nvvs/src/Software.cpp:1003] [Software::checkFabricManager]\n"
    "2026-01-16 09:50:02.437 WARN  [3279516:3279516] Error getting the graphics pids for GPU 0. Status = -32 "
    "skipping check. [/builds/dcgm/dcgm/nvvs/src/Software.cpp:598] [Software::checkForGraphicsProcesses]\n")


def test_hostengine_error_about_nvswitches_is_unread_evidence_quoting_it():
    entry = _read(HOSTENGINE_ERROR)
    _assert_one_unread(entry, "dcgm-log", "ReadNvSwitchStatusAllSwitches() returned Object is in an undefined state")
    event = entry["data"]["events"][0]
    assert (event["level"], event["module"], event["timestamp"]) == ("ERROR", "NvSwitch", "2024-05-24 10:22:29.245")
    assert not fails(entry)


def test_hostengine_line_without_its_time_stamp_is_still_dcgm_log():
    line = HOSTENGINE_ERROR.split(" ", 2)[2]
    assert line.startswith("ERROR [")
    entry = _read(line)
    assert entry["kind"] == "dcgm-log"
    assert _codes(entry) == [("UNREAD_EVIDENCE", "warning")]


def test_nvvs_debug_and_a_warn_that_names_no_fabric_stay_quiet():
    entry = _read(NVVS_DEBUG)
    assert entry["kind"] == "dcgm-log"
    assert entry["findings"] == []
    assert [e["level"] for e in entry["data"]["events"]] == ["DEBUG", "WARN"]


def test_a_dcgm_warn_that_names_the_nvswitches_is_read_out():
    line = ("2021-05-18 07:32:52.824 WARN [1:1] NSCQ returned warning during session creation. "
            "[/workspaces/dcgm/modules/nvswitch/DcgmNvSwitchManager.cpp:432] [DcgmNs::DcgmNvSwitchManager::AttachToNscq]\n")
    assert _codes(_read(line)) == [("UNREAD_EVIDENCE", "warning")]


def test_dcgm_exporter_info_lines_in_logfmt_and_text_are_quiet_and_known():
    logfmt = ('time="2024-05-31T03:42:29Z" level=info msg="Starting dcgm-exporter"\n'
              'time="2024-05-31T03:42:29Z" level=info msg="Not collecting NvSwitch metrics; no switches to monitor"\n')
    text = ("INFO[0000] Starting dcgm-exporter\n"
            "INFO[0001] Not collecting link metrics: no switches to monitor\n")
    for paste in (logfmt, text):
        entry = _read(paste)
        assert (entry["kind"], entry["findings"], fails(entry)) == ("dcgm-log", [], False)
        assert [e["level"] for e in entry["data"]["events"]] == ["INFO", "INFO"]


@pytest.mark.parametrize(("text", "kind", "quoted"), [
    # dcgm-exporter's fatal line (logfmt) after its INFO start
    ('time="2020-12-15T11:28:40Z" level=info msg="Starting dcgm-exporter"\n'
     'time="2020-12-15T11:28:40Z" level=fatal msg="Error watching fields: This request is serviced by a module of DCGM '
     'that is not currently loaded"\n', "dcgm-log", "Error watching fields"),
    # the device plugin's own start lines name its kind; its failure is quoted
    ("2019/10/30 11:16:23 Loading NVML\n2019/10/30 11:16:23 Starting FS watcher.\n"
     "2019/10/30 11:16:23 Failed to created FS watcher.\n", "k8s-device-plugin-log", "Failed to created FS watcher."),
])
def test_a_services_failure_line_is_quoted_as_unread_evidence(text, kind, quoted):
    _assert_one_unread(_read(text), kind, quoted)


def test_a_logfmt_log_of_something_else_is_not_dcgm():
    entry = _read('time="2024-05-31T03:42:29Z" level=info msg="Starting containerd"\n')
    assert entry["kind"] != "dcgm-log"


def test_a_dcgm_failure_reason_quoted_by_another_tool_is_read_out():
    entry = _read("ErrorCode:DCGM_FR_IMEX_UNHEALTHY GPU:0 IMEX daemon status is -3 (not READY)\n"
                  "Check IMEX installation, configuration, domain and daemon status, and network\n"
                  "connectivity. Recommended Action=CONTACT_SUPPORT;\n")
    _assert_one_unread(entry, "dcgm-log", "DCGM_FR_IMEX_UNHEALTHY")
    assert entry["data"]["failure_reasons"][0]["code"] == "DCGM_FR_IMEX_UNHEALTHY"


# --- dcgmi health -----------------------------------------------------------------------------------------

HEALTH_FAILURE = """\
+---------------------------+----------------------------------------------------------+
| Health Monitor Report                                                                |
+===========================+==========================================================+
| Overall Health            | Failure                                                  |
| -> 0                      | Failure                                                  |
|    -> NVLINK system       | Failure                                                  |
|                           | GPU 0's NvLink link 0 is currently down Run a field      |
|                           | diagnostic on the GPU.                                   |
|                           | GPU 0's NvLink link 3 is currently down                  |
+---------------------------+----------------------------------------------------------+
"""
HEALTH_OK = """\
+---------------------------+----------------------------------------------------------+
| Health Monitor Report                                                                |
+===========================+==========================================================+
| Overall Health            | Healthy                                                  |
+---------------------------+----------------------------------------------------------+
"""


def test_dcgmi_health_nvlink_failure_is_nvlink_down_naming_the_links():
    entry = _read(HEALTH_FAILURE)
    assert entry["kind"] == "dcgmi-health"
    assert _codes(entry) == [("NVLINK_DOWN", "error")]
    assert "GPU 0: links 0, 3 down" in entry["findings"][0]["message"]
    assert entry["data"]["overall"] == "Failure"
    assert entry["data"]["systems"] == [{"gpu": 0, "system": "NVLINK", "health": "Failure",
                                         "messages": ["GPU 0's NvLink link 0 is currently down Run a field",
                                                      "diagnostic on the GPU.", "GPU 0's NvLink link 3 is currently down"]}]
    assert fails(entry)


def test_dcgmi_health_healthy_is_quiet():
    entry = _read(HEALTH_OK)
    assert (entry["kind"], entry["findings"], fails(entry)) == ("dcgmi-health", [], False)


def test_dcgmi_health_failure_no_rule_reads_is_never_silent():
    entry = _read(HEALTH_FAILURE.replace("NVLINK system", "PCIe system ").replace("NvLink link", "PCIe replay"))
    assert entry["kind"] == "dcgmi-health"
    assert ("UNREAD_EVIDENCE", "warning") in _codes(entry)
    assert "PCIe" in entry["findings"][0]["message"]


# --- the GPU Operator's containers ------------------------------------------------------------------------

def test_driver_container_that_cannot_unload_the_driver_in_use_is_unread_evidence():
    entry = _read("Starting installation of NVIDIA driver version 460.32.03 for Linux kernel version 4.15.0-136-generic\n"
                  "\n"
                  "Stopping NVIDIA persistence daemon...\n"
                  "Unloading NVIDIA driver kernel modules...\n"
                  "Could not unload NVIDIA driver kernel modules, driver is in use\n")
    _assert_one_unread(entry, "gpu-operator-log", "Could not unload NVIDIA driver kernel modules, driver is in use")
    assert not fails(entry)


def test_validator_still_waiting_at_the_end_of_its_log_is_a_warning():
    waiting = "2022-11-22T04:05:53.914790700+00:00 stdout F waiting for nvidia container stack to be setup\n"
    entry = _read(waiting * 3)
    assert entry["kind"] == "gpu-operator-log"
    assert _codes(entry) == [("OPERATOR_NOT_READY", "warning")]
    assert "waiting for nvidia container stack to be setup" in entry["findings"][0]["message"]
    assert "3 lines" in entry["findings"][0]["message"]


def test_validator_that_stopped_waiting_is_quiet():
    entry = _read("waiting for nvidia container stack to be setup\n"
                  "Starting installation of NVIDIA driver version 550.54.15 for Linux kernel version 5.15.0-1\n"
                  "Done, now waiting for signal\n")
    assert entry["kind"] == "gpu-operator-log"
    assert entry["findings"] == []


# --- NVIDIA's Kubernetes GPU plugins ----------------------------------------------------------------------

def test_device_plugin_xid_is_read_through_the_xid_catalogue():
    entry = _read("2020/08/10 19:09:42 XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, "
                  "the device will go unhealthy.\n"
                  "2020/08/10 19:09:42 'nvidia.com/gpu' device marked unhealthy: GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8\n")
    assert entry["kind"] == "k8s-device-plugin-log"
    # Xid 69 is RESTART_APP in NVIDIA's catalogue: the application's fault, a warning.
    assert _codes(entry) == [("XID", "warning")]
    finding = entry["findings"][0]
    assert "ROBUST_CHANNEL_GR_CLASS_ERROR" in finding["message"] and finding["action"] == "RESTART_APP"
    assert "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8" in finding["message"]
    assert entry["data"]["unhealthy"] == ["GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8"]


def test_device_plugin_xid_that_asks_for_a_reset_is_an_error():
    entry = _read("I0612 10:00:00.000000       1 health.go:159] XidCriticalError: Xid=79 on Device=GPU-1, "
                  "marking device as unhealthy.\n")
    assert entry["kind"] == "k8s-device-plugin-log"
    assert _codes(entry) == [("XID", "error")]
    assert entry["findings"][0]["action"] == "RESTART_BM"


def test_dra_kubelet_plugin_info_is_quiet():
    entry = _read("I0929 12:40:26.277236       1 nvlib.go:243] identified fabric clique UUID/ID (device "
                  "0/GPU-6328b923-c487-281a-fd27-291f5d278893): 6a130f54-faaa-4b8f-847f-be44ab70f917/32766\n")
    assert (entry["kind"], entry["findings"], fails(entry)) == ("k8s-device-plugin-log", [], False)


def test_a_gpu_plugin_error_line_is_unread_evidence():
    entry = _read("E0929 12:40:26.277236       1 nvlib.go:250] error getting fabric clique for device 0: "
                  "NVML: Unknown Error\n")
    assert entry["kind"] == "k8s-device-plugin-log"
    assert _codes(entry) == [("UNREAD_EVIDENCE", "warning")]


# --- nvidia-persistenced ----------------------------------------------------------------------------------

def test_persistenced_start_registration_and_signal_15_stop_are_quiet():
    entry = _read("May 31 05:33:20 kino1 systemd[1]: Starting NVIDIA Persistence Daemon...\n"
                  "May 31 05:33:40 kino1 nvidia-persistenced[19176]: Started (19176)\n"
                  "May 31 05:33:40 kino1 nvidia-persistenced[19176]: device 0000:3d:00.0 - registered\n"
                  "May 31 05:33:41 kino1 nvidia-persistenced[19176]: Received signal 15\n"
                  "May 31 05:33:41 kino1 nvidia-persistenced[19176]: Shutdown (19176)\n")
    assert (entry["kind"], entry["findings"], fails(entry)) == ("persistenced-log", [], False)
    assert entry["data"]["registered"] == ["0000:3d:00.0"]


def test_persistenced_failing_to_initialize_is_unread_evidence():
    entry = _read("Aug 27 21:35:25 ubuntu nvidia-persistenced[1405]: Started (1405)\n"
                  "Aug 27 21:35:25 ubuntu nvidia-persistenced[1405]: NUMA: Failed to open "
                  "/sys/devices/system/memory/auto_online_blocks: Permission denied\n"
                  "Aug 27 21:35:25 ubuntu nvidia-persistenced[1400]: nvidia-persistenced failed to initialize. Check "
                  "syslog for more details.\n"
                  "Aug 27 21:35:25 ubuntu systemd[1]: nvidia-persistenced.service: Control process exited, code=exited, "
                  "status=1/FAILURE\n")
    _assert_one_unread(entry, "persistenced-log", "auto_online_blocks: Permission denied")
    assert "and 0 more" not in entry["findings"][0]["message"]


# --- Fabric Manager's wrappers (Talos) --------------------------------------------------------------------

def test_fm_wrapper_start_lines_are_a_quiet_fabricmanager_log():
    entry = _read("10.10.10.10: 2025/11/25 13:58:49 nvidia-fabricmanager-wrapper: found NVSwitch LPF: device=mlx5_10 "
                  "guid=0xcc40f3030027f630\n"
                  "10.10.10.10: 2025/11/25 13:58:49 nvidia-fabricmanager-wrapper: running command: /opt/nvidia/nvlsm/sbin/"
                  "nvlsm --config /usr/share/nvidia/nvlsm/nvlsm.conf\n"
                  "10.10.10.10: nvlsm: Config file is `/usr/share/nvidia/nvlsm/nvlsm.conf`:\n")
    assert (entry["kind"], entry["findings"], fails(entry)) == ("fabricmanager-log", [], False)


def test_fm_config_item_with_an_invalid_value_means_fm_never_starts():
    entry = _read("<node ip>: fabric manager config file item: FABRIC_NODE_CONFIG_FILE has an invalid value\n")
    assert entry["kind"] == "fabricmanager-log"
    assert _codes(entry) == [("FM_NOT_RUNNING", "error")]
    message = entry["findings"][0]["message"]
    assert "FABRIC_NODE_CONFIG_FILE" in message
    # FM itself refused its configuration: the move is the config item, not the start script's arguments
    assert "refused its configuration" in message and "fabricmanager.cfg" in message
    assert "start script" not in message
    assert fails(entry)


def test_a_pasters_elision_after_the_waiting_lines_does_not_end_the_wait():
    entry = _read("waiting for nvidia container stack to be setup\n" * 2 + "......\n")
    assert _codes(entry) == [("OPERATOR_NOT_READY", "warning")]




def test_device_plugin_klog_lines_inside_journal_lines_are_read():
    prefix = "Oct 17 12:05:33 ip-10-0-0-1.ec2.internal nvidia-device-plugin[1667]: "
    quiet = _read(prefix + "I1017 12:05:33.312453    1667 server.go:154] Registered device plugin for 'nvidia.com/gpu' "
                  "with Kubelet\n" + prefix + "I1017 12:05:33.312501    1667 main.go:353] Stopping plugins.\n")
    assert (quiet["kind"], quiet["findings"]) == ("k8s-device-plugin-log", [])
    failed = _read(prefix + "E1017 12:05:33.312453    1667 main.go:154] error starting plugins: failed to get "
                   "devices\n")
    assert _codes(failed) == [("UNREAD_EVIDENCE", "warning")]


@pytest.mark.parametrize("failed", [
    "10.10.10.10: 2025/11/25 13:58:49 nvidia-fabricmanager-wrapper: failed to find an NVSwitch LPF device",
    "10.10.10.10: nvlsm: ERR: failed to bind to port guid 0xcc40f3030027f630",
])
def test_a_failure_said_by_fms_wrapper_or_its_nvlsm_is_never_dropped(failed):
    entry = _read("10.10.10.10: 2025/11/25 13:58:49 nvidia-fabricmanager-wrapper: found NVSwitch LPF: device=mlx5_10 "
                  "guid=0xcc40f3030027f630\n" + failed + "\n")
    assert entry["kind"] == "fabricmanager-log"
    assert ("UNREAD_EVIDENCE", "warning") in _codes(entry)


def test_a_driver_container_that_loaded_the_driver_and_waits_for_its_signal_is_a_quiet_operator_log():
    entry = _read("Loading NVIDIA driver kernel modules...\n"
                  "+ modprobe -a nvidia nvidia-uvm nvidia-modeset\n"
                  "Starting NVIDIA persistence daemon...\n"
                  "Done, now waiting for signal\n")
    assert (entry["kind"], entry["findings"], entry["data"]["waiting"]) == ("gpu-operator-log", [], None)


def test_persistenced_lines_beside_the_drivers_are_a_part_of_their_own_and_their_failure_is_quoted():
    entry = _read("Aug 27 21:35:25 ubuntu kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  560.35.03\n"
                  "Aug 27 21:35:25 ubuntu nvidia-persistenced[1405]: Started (1405)\n"
                  "Aug 27 21:35:25 ubuntu nvidia-persistenced[1405]: NUMA: Failed to open "
                  "/sys/devices/system/memory/auto_online_blocks: Permission denied\n"
                  "Aug 27 21:35:26 ubuntu kernel: NVRM: GPU 0009:01:00.0: RmInitAdapter succeeded\n")
    assert [(p["kind"], p["lines"]) for p in entry["parts"]] == [("kernel-log", [1, 1]), ("persistenced-log", [2, 3]),
                                                                 ("kernel-log", [4, 4])]
    quoted = [f["message"] for f in entry["findings"] if f["code"] == "UNREAD_EVIDENCE"]
    assert len(quoted) == 1 and "auto_online_blocks: Permission denied" in quoted[0]


PERSISTENCED_STATUS_FAILED = """\
× nvidia-persistenced.service - NVIDIA Persistence Daemon
     Loaded: loaded (/usr/lib/systemd/system/nvidia-persistenced.service; enabled; preset: enabled)
     Active: failed (Result: exit-code) since Mon 2025-09-22 11:50:01 +08; 6min ago
        CPU: 12ms

Sep 22 11:50:01 host systemd[1]: Starting nvidia-persistenced.service - NVIDIA Persistence Daemon...
Sep 22 11:50:01 host nvidia-persistenced[1234]: Failed to change ownership of /var/run/nvidia-persistenced: Operation \
not permitted
Sep 22 11:50:01 host nvidia-persistenced[1234]: Shutdown (1234)
Sep 22 11:50:01 host systemd[1]: Failed to start nvidia-persistenced.service - NVIDIA Persistence Daemon.
"""


def test_systemctl_status_of_a_failed_nvidia_unit_other_than_fm_is_never_silent():
    entry = _read(PERSISTENCED_STATUS_FAILED)
    assert entry["kind"] == "systemctl-status"
    assert _codes(entry) == [("UNREAD_EVIDENCE", "warning")]
    message = entry["findings"][0]["message"]
    assert "Active: failed (Result: exit-code)" in message
    assert "Failed to change ownership" in message


def test_systemctl_status_of_a_running_nvidia_unit_with_quiet_lines_stays_quiet():
    running = (PERSISTENCED_STATUS_FAILED.replace("×", "●").replace("failed (Result: exit-code)", "active (running)")
               .split("\nSep 22")[0] + "\nSep 22 11:50:01 host nvidia-persistenced[1234]: Started (1234)\n")
    entry = _read(running)
    assert (entry["kind"], entry["findings"]) == ("systemctl-status", [])


def test_the_driver_managers_logfmt_lines_are_the_operators_and_their_error_level_is_read_out():
    quiet = _read('time=2026-02-25T08:26:00Z level=info msg=Getting current value of the '
                  '"nvidia.com/gpu.deploy.device-plugin" node label\n'
                  'time=2026-02-25T08:26:00Z level=info msg=Current value of "nvidia.com/gpu.deploy.device-plugin"=true\n')
    assert (quiet["kind"], quiet["findings"]) == ("gpu-operator-log", [])
    failed = _read('time=2026-02-25T08:26:00Z level=info msg=Starting driver uninstallation process\n'
                   'time=2026-02-25T08:26:05Z level=error msg=Failed to evict GPU pods from the node\n')
    _assert_one_unread(failed, "gpu-operator-log", "Failed to evict GPU pods")
