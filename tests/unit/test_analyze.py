"""`nvls-tui analyze`: every real and public fixture is recognised by content, with its values."""

from __future__ import annotations

import io
import json
import pathlib
import shutil

import pytest

from nvls_tui.cli import main
from nvls_tui.parsers.nvidia_smi_misc import (
    parse_nvlink_status,
    parse_nvml_fabric_dump,
    parse_smi_table,
    parse_topo_matrix,
)

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
REAL = FIXTURES / "real" / "h200x2-nvswitch"

EXPECTED_KINDS = {
    "real/h200x2-nvswitch/all_reduce_perf-g2.json": "nccl-tests-json",
    "real/h200x2-nvswitch/all_reduce_perf-g2.txt": "nccl-tests",
    "real/h200x2-nvswitch/fuser-terse-two-cuda-processes.txt": "fuser",
    "real/h200x2-nvswitch/fuser-v-two-cuda-processes.txt": "fuser",
    "real/h200x2-nvswitch/nvidia-smi-q-x-with-processes.xml": "nvidia-smi-q-xml",
    "real/h200x2-nvswitch/nvidia-smi-q-x.xml": "nvidia-smi-q-xml",
    "real/h200x2-nvswitch/nvidia-smi-q.txt": "nvidia-smi-q",
    "real/h200x2-nvswitch/nvidia-smi-with-processes.txt": "nvidia-smi",
    "real/h200x2-nvswitch/nvidia-smi.txt": "nvidia-smi",
    "real/h200x2-nvswitch/nvlink-status.txt": "nvlink-status",
    "real/h200x2-nvswitch/proc-pid-stat.txt": "proc-stat",
    "real/h200x2-nvswitch/pynvml-fabric.txt": "nvml-fabric",
    "real/h200x2-nvswitch/query-compute-apps.csv": "nvidia-smi-query-csv",
    "real/h200x2-nvswitch/query-gpu-fabric.csv": "nvidia-smi-query-csv",
    "real/h200x2-nvswitch/topo-m.txt": "topo-matrix",
    "public/device-holders/systemctl-status-dcgm-active.txt": "systemctl-status",
    "mig/enabled-applied-hpcmate-wiki.txt": "nvidia-smi-mig",
    "mig/pending-disable-in-use-gpu-operator-118.txt": "nvidia-smi-mig",
    "mig/pending-enable-not-supported-mig-user-guide.txt": "nvidia-smi-mig",
    "public/fabricmanager/journal-restart-failed-h20-ppcie.txt": "fabricmanager-log",
    "fm/journal-inner-log-prefix-bottlerocket-142.txt": "fabricmanager-log",
    "fm/log-multicast-team-errors-nccl-1043.txt": "fabricmanager-log",
    "fm/version-mismatch-journal-line-gpu-operator-544.txt": "fabricmanager-log",
    "fm/version-mismatch-quoted-nvtrust-55.txt": "fabricmanager-log",
    "fm/version-mismatch-systemctl-status-akash.txt": "fabricmanager-log",
    "fm/version-mismatch-wrapped-driver-container-735.txt": "fabricmanager-log",
    "public/fabricmanager/systemctl-status-active-b300-nvlsm.txt": "systemctl-status",
    "public/fabricmanager/systemctl-status-failed-killed-nvsentinel.txt": "systemctl-status",
    "public/fabricmanager/driver-container-fm-start-script-unknown-option.txt": "fabricmanager-log",
    "public/fabricmanager/journal-start-script-failed-nothing-to-do.txt": "fabricmanager-log",
    "public/gpu-reset/fail-in-use-by-another-client-nvsentinel.txt": "nvidia-smi-reset",
    "public/gpu-reset/success-after-pm0-nvsentinel.txt": "nvidia-smi-reset",
    "multicast/nvshmem-cumemmap-401-out-of-sync-nvshmem-40.txt": "nccl-tests",
    "multicast/old-initialization-error-pdsh-nccl-1029.txt": "nccl-tests",
    "multicast/torch-traceback-802-nccl-1769.txt": "nccl-tests",
    "reset/mig-parted-erro-four-gpus-mig-parted-181.txt": "nvidia-smi-reset",
    "reset/mig-parted-escaped-refusal-magic-castle-387.txt": "nvidia-smi-reset",
    "reset/refused-then-reset-after-killall-gpu-operator-118.txt": "nvidia-smi-reset",
    "public/kernel-log/nvswitch-probe-sxid-22013-h100-ppcie.txt": "kernel-log",
    "public/kernel-log/xid-144-145-149-nvlink-lines.txt": "kernel-log",
    "public/kernel-log/nv-err-reset-required-no-xid-gb200.txt": "kernel-log",
    "public/kernel-log/nv-err-gpu-is-lost-rpc-status-dgx-a100.txt": "kernel-log",
    "public/kernel-log/nvlink-postrxdet-link-mask-failed-gh100.txt": "kernel-log",
    "public/nccl-tests/fail-nvls-bind-401-pytorch-ci.txt": "nccl-tests",
    "public/nccl-tests/bare-warn-nvls-invalid-argument-nccl-976.txt": "nccl-tests",
    "public/nccl-tests/fail-nvls-bind-401-warn-line.txt": "nccl-tests",
    "public/nccl-tests/fail-unhandled-cuda-error-rtx5090.txt": "nccl-tests",
    "public/nccl-tests/h800-nvls-broadcast-debuginfo-head.txt": "nccl-tests",
    "public/nvidia-smi-csv/h100-590-help-query-gpu.txt": "nvidia-smi-help",
    "public/nvidia-smi-csv/h100-590-query-gpu-all-fields.txt": "nvidia-smi-query-csv",
    "public/nvidia-smi-q/h100-590-q-idle.txt": "nvidia-smi-q",
    "public/nvidia-smi-q/h100-590-q-load-with-processes.txt": "nvidia-smi-q",
    "public/nvidia-smi-q/h200-590-q-idle.txt": "nvidia-smi-q",
    "public/nvlink-topo/h100-hgx-nvlink-status-gpu0-1.txt": "nvlink-status",
    "public/nvlink-topo/lspci-iommu-h200-hgx-nvswitch-22a3.txt": "lspci",
    "public/nvlink-topo/nvlink-errors-h100-zero-ml-engineering.txt": "nvlink-errors",
    "public/nvlink-topo/nvlink-errors-gb300-zero-srt-slurm.txt": "nvlink-errors",
    "public/nvlink-topo/nvlink-errors-v100-replay-crc.txt": "nvlink-errors",
    "public/nvlink-topo/nvlink-status-v100-two-inactive-azhpc.txt": "nvlink-status",
    "public/nvlink-topo/nvlink-status-b200-all-inactive-gpud.txt": "nvlink-status",
    "public/dcgm/dcgmi-nvlink-link-status-all-down.txt": "dcgmi-nvlink-status",
    "public/dcgm/dcgmi-nvlink-link-status-h100-all-up.txt": "dcgmi-nvlink-status",
    "public/dcgm/dcgmi-diag-pcie-nvlink-down-a100.txt": "dcgmi-diag",
    "real/h200-1gpu-vm/fuser-v-one-cuda-process.txt": "fuser",
    "real/h200-1gpu-vm/probe-output-with-cuda-holder.txt": "nvls-tui-probe",
    "real/h200-1gpu-vm/probe-script.sh": "unknown",  # a script, not an output
    "real/h200-1gpu-vm/ps-holder-identity.txt": "ps",
    "real/h200-1gpu-vm/query-gpu-probe-fields.csv": "nvidia-smi-query-csv",
    "real/nvidia-h200/check-local-before-fix.json": "unknown",  # nvls-tui's own JSON
    "real/nvidia-h200/check-ssh-before-fix.json": "unknown",
    "real/nvidia-h200/check-local-after-fix.json": "unknown",
    "real/nvidia-h200/check-ssh-after-fix.json": "unknown",
    "real/nvidia-h200/probe-output-after-fix.txt": "nvls-tui-probe",
    "real/nvidia-h200/dmesg-nvidia-lines.txt": "kernel-log",
    "real/nvidia-h200/fuser-v-one-cuda-process.txt": "fuser",
    "real/nvidia-h200/ls-l-dev-nvidia.txt": "unknown",
    "real/nvidia-h200/nvidia-smi-q-x.xml": "nvidia-smi-q-xml",
    "real/nvidia-h200/nvidia-smi-q.txt": "nvidia-smi-q",
    "real/nvidia-h200/nvidia-smi.txt": "nvidia-smi",
    "real/nvidia-h200/nvml-fabric-v3.txt": "unknown",
    "real/nvidia-h200/probe-output-before-fix.txt": "nvls-tui-probe",
    "real/nvidia-h200/proc-pid-cgroup-stat-fd.txt": "proc-stat",
    "real/nvidia-h200/ps-holder-identity.txt": "ps",
    "real/nvidia-h200/ps-ppid-of-holder.txt": "unknown",  # "  429": nothing to recognise it by
    "real/nvidia-h200/query-gpu-fabric-health.csv": "nvidia-smi-query-csv",
    "real/nvidia-h200/query-gpu-invalid-field.txt": "nvidia-smi-query-csv",
    "real/nvidia-h200/query-gpu-probe-fields.csv": "nvidia-smi-query-csv",
    "real/nvidia-h200/sysfs-pci-nvidia.txt": "unknown",
    "real/nvidia-h200/topo-m.txt": "topo-matrix",
    # util-linux dmesg's time forms of the same three NVRM lines (none is a fault): read inside their wrappers.
    "real/nvidia-h200/dmesg-T-nvrm.txt": "kernel-log",
    "real/nvidia-h200/dmesg-r-nvrm.txt": "kernel-log",
    "real/nvidia-h200/dmesg-time-format-iso-nvrm.txt": "kernel-log",
    "real/nvidia-h200/dmesg-x-nvrm.txt": "kernel-log",
    "real/nvidia-h200/query-gpu-mig-persistence.csv": "nvidia-smi-query-csv",
    # grep -n -A of nvidia-smi -q (line numbers with ':' and '-', '--' between hits): no whole output to read.
    "real/nvidia-h200/nvidia-smi-q-mig-persistence-grep.txt": "unknown",
    "real/nvidia-h200/proc-stat-btime.txt": "unknown",  # /proc/stat's btime line: the poll's, not a capture kind
    "real/nvidia-h200/check-local-2026-12-02.json": "unknown",  # nvls-tui's own JSON
    "real/nvidia-h200/check-ssh-2026-12-02.json": "unknown",
    "real/nvidia-h200/probe-output-2026-12-02.txt": "nvls-tui-probe",
    # The Kubernetes stand-in's inputs (a cluster state, an OpenAPI excerpt): no output of a node.
    "k8s/openapi-excerpt.json": "unknown",
    "k8s/state-gpu-node.json": "unknown",
    "kernel/fallen-off-bus-no-xid-570.txt": "kernel-log",
    "kernel/xid-79-fallen-off-bus-journal.txt": "kernel-log",
    "kernel/rminitadapter-failed-nvidia-readme-390.txt": "kernel-log",
    "real/h100-1gpu-vm/dmesg-nvidia-lines.txt": "kernel-log",
    "real/h100-1gpu-vm/query-gpu-recovery-action.csv": "nvidia-smi-query-csv",
    "real/h100-1gpu-vm/dmesg_--time-format_iso-nvidia-lines.txt": "kernel-log",
    "real/h100-1gpu-vm/dmesg_-T-nvidia-lines.txt": "kernel-log",
    "real/h100-1gpu-vm/dmesg_-x-nvidia-lines.txt": "kernel-log",
    "restarters/needrestart.conf": "unknown",  # a configuration file (the needrestart section reads it), no output
    # Pastes read inside their wrappers (tests/unit/test_analyze_wrapped.py says what each wrapper told).
    "wrapped/host-tags-nccl-initialization-error-nccl-1029.txt": "nccl-tests",
    "wrapped/kernel-tag-xid-45-open-gpu-kernel-modules-1150.txt": "kernel-log",
    "wrapped/kubectl-prefix-nginx-kubernetes-124732.txt": "unknown",  # nginx's log: the prefix is read, not the rest
    "wrapped/mpirun-tag-output-nccl-init-aws-k8s-tester-464.txt": "nccl-tests",
    "wrapped/quoted-dmesg-ctime-xid-gpud-46.txt": "kernel-log",
    "wrapped/torch-rank-nccl-invalid-argument-nccl-1410.txt": "nccl-tests",
}


def analyze(capsys, *args: str) -> tuple[int, list[dict]]:
    code = main(["analyze", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else []


def test_every_fixture_file_is_listed_here_with_its_kind():
    # audit-v1/ holds nvls-tui's own audit logs and their reports (tests/unit/test_event_records.py), not captures.
    on_disk = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*")
               if p.is_file() and p.name != "README.md" and p.relative_to(FIXTURES).parts[0] != "audit-v1"}
    assert on_disk == set(EXPECTED_KINDS)


@pytest.mark.parametrize(("name", "kind"), sorted(EXPECTED_KINDS.items()))
def test_each_fixture_is_recognised_by_its_content_not_its_name(capsys, tmp_path, name, kind):
    renamed = tmp_path / "capture.out"  # the name says nothing about the content
    shutil.copy(FIXTURES / name, renamed)
    code, (entry,) = analyze(capsys, str(renamed))
    assert entry["kind"] == kind
    if kind == "unknown":
        assert entry["error"] and code == 1  # said, not guessed
    else:
        assert "error" not in entry
        # Recognised: the exit status is the fixture's own findings' (1 with an error finding, as contract.md says).
        assert code == (1 if any(f["severity"] == "error" for f in entry["findings"]) else 0), entry["findings"]


def test_analyze_of_the_real_h200_directory_prints_every_kind_and_exits_0(capsys):
    files = sorted(str(p) for p in REAL.iterdir())
    code, entries = analyze(capsys, *files)
    assert code == 0
    by_name = {pathlib.Path(e["file"]).name: e for e in entries}
    smi = by_name["nvidia-smi-q.txt"]["data"]
    assert smi["driver"] == "580.159.04"
    assert [g["bus_id"] for g in smi["gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert {(g["fabric"]["state"], g["fabric"]["status"]) for g in smi["gpus"]} == {("Completed", "Success")}
    assert smi["gpus"][0]["fabric"]["cluster_uuid"] == "00000000-0000-0000-0000-000000000000"
    nccl = by_name["all_reduce_perf-g2.txt"]["data"]
    assert nccl["avg_busbw"] == 234.857 and nccl["out_of_bounds"] == 0 and nccl["completed"] is True
    assert [r["oop"]["busbw"] for r in nccl["rows"]] == [167.11, 209.95, 240.16, 267.89, 284.19]
    assert by_name["query-gpu-fabric.csv"]["data"]["rows"][1]["fabric.state"] == "Completed"
    assert [h["pid"] for h in by_name["fuser-v-two-cuda-processes.txt"]["data"]["holders"]] == [560, 561]
    assert by_name["topo-m.txt"]["data"]["matrix"]["GPU0"]["GPU1"] == "NV18"


def test_the_json_matches_the_contract_field_for_field(capsys):
    _, (smi, nccl, reset, status, kernel, fuser) = analyze(
        capsys, str(REAL / "nvidia-smi-q-x.xml"), str(REAL / "all_reduce_perf-g2.txt"),
        str(FIXTURES / "public/gpu-reset/fail-in-use-by-another-client-nvsentinel.txt"),
        str(FIXTURES / "public/device-holders/systemctl-status-dcgm-active.txt"),
        str(FIXTURES / "public/kernel-log/xid-144-145-149-nvlink-lines.txt"),
        str(REAL / "fuser-v-two-cuda-processes.txt"))
    for entry in (smi, nccl, reset, status, kernel, fuser):
        assert {"file", "kind", "data", "findings"} <= set(entry)
    gpu = smi["data"]["gpus"][0]
    assert {"bus_id", "name", "uuid", "fabric"} <= set(gpu) and smi["data"]["driver"] == "580.159.04"
    assert {"state", "status", "clique_id", "cluster_uuid", "health"} <= set(gpu["fabric"])
    assert gpu["fabric"]["health"]["summary"] is None  # nvidia-smi's N/A is null in data
    assert {"test", "version", "ngpus", "rows", "avg_busbw", "out_of_bounds", "completed", "errors", "nvls"} \
        <= set(nccl["data"])
    row = nccl["data"]["rows"][0]
    assert (row["size"], row["count"], row["type"], row["redop"]) == (8388608, 2097152, "float", "sum")
    assert row["oop"] == {"time_us": 50.2, "algbw": 167.11, "busbw": 167.11, "wrong": 0}
    assert row["ip"] == {"time_us": 49.71, "algbw": 168.74, "busbw": 168.74, "wrong": 0}
    assert {"channels", "multicast_available"} <= set(nccl["data"]["nvls"])
    assert reset["data"]["failed"] == [{"bus_id": "00000000:1A:00.0", "reason": "In use by another client"}]
    assert reset["data"]["reset"] == [] and reset["data"]["nvswitches_reset"] is False
    assert [f["code"] for f in reset["findings"]] == ["RESET_REFUSED"]
    assert (status["data"]["unit"], status["data"]["active"], status["data"]["sub"], status["data"]["main_pid"]) \
        == ("nvidia-dcgm.service", "active", "running", 100107)
    assert [(e["code"], e["xid"], e["pci"]) for e in kernel["data"]["events"]] == [
        ("XID", 144, "0000:01:00"), ("XID", 149, "0000:00:00"), ("XID", 149, "0000:00:00"),
        ("XID", 149, "0019:01:00"), ("XID", 145, "0018:01:00")]
    assert {f["severity"] for f in kernel["findings"]} == {"error"}
    holder = fuser["data"]["holders"][0]
    assert holder == {"pid": 560, "user": "root", "access": "F...m", "command": "python3",
                      "devices": ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"]}


def test_an_nvls_bind_failure_is_an_error_finding_and_exit_1(capsys):
    code, (entry,) = analyze(capsys, str(FIXTURES / "public/nccl-tests/fail-nvls-bind-401-warn-line.txt"))
    assert code == 1
    assert entry["data"]["completed"] is False and entry["data"]["errors"]
    assert [f["code"] for f in entry["findings"]] == ["NVLS_SMOKE_FAILED"]


def test_dash_reads_standard_input(capsys, monkeypatch):
    data = (REAL / "query-gpu-fabric.csv").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, (entry,) = analyze(capsys, "-")
    assert code == 0 and entry["file"] == "-" and entry["kind"] == "nvidia-smi-query-csv"
    assert [r["index"] for r in entry["data"]["rows"]] == [0, 1]


def test_an_unrecognised_file_gets_kind_unknown_an_error_sentence_and_exit_1(capsys, tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("shopping list: eggs, milk\n")
    code, (entry,) = analyze(capsys, str(junk))
    assert code == 1 and entry["kind"] == "unknown" and entry["error"].startswith("not an output")


def test_a_missing_file_is_one_line_on_stderr_exit_2_and_the_other_files_still_analysed(capsys):
    code = main(["analyze", "--json", "/nonexistent/x.txt", str(REAL / "nvidia-smi.txt")])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == ["nvls-tui: cannot read /nonexistent/x.txt: No such file or directory"]
    assert [e["kind"] for e in json.loads(out)] == ["nvidia-smi"]


def test_a_directory_is_refused_in_one_line_without_a_traceback(capsys, tmp_path):
    code = main(["analyze", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1


def test_the_readable_summary_names_kinds_and_values(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    code = main(["analyze", str(REAL / "all_reduce_perf-g2.txt"), str(REAL / "nvidia-smi-q.txt")])
    out = capsys.readouterr().out
    assert code == 0
    assert "nccl-tests" in out and "580.159.04" in out
    # Rounded as operators read it, and wrapped between words: never inside a number or a word.
    assert "234.9 GB/s" in out and "234.857" not in out


# --- the small parsers of nvidia_smi_misc, on the real files -------------------------------------

def test_the_plain_nvidia_smi_table_gives_versions_gpus_and_processes():
    idle = parse_smi_table((REAL / "nvidia-smi.txt").read_text()).value
    assert (idle["driver"], idle["cuda"]) == ("580.159.04", "13.0")
    assert [(g["index"], g["name"], g["bus_id"], g["persistence_mode"]) for g in idle["gpus"]] == [
        (0, "NVIDIA H200", "00000000:00:06.0", "On"), (1, "NVIDIA H200", "00000000:00:07.0", "On")]
    busy = parse_smi_table((REAL / "nvidia-smi-with-processes.txt").read_text()).value
    assert sorted((p["gpu"], p["pid"]) for p in busy["processes"]) == [(0, 560), (1, 560), (1, 561)]


def test_nvlink_status_lists_eighteen_links_per_gpu_at_26_562():
    for path in (REAL / "nvlink-status.txt", FIXTURES / "public/nvlink-topo/h100-hgx-nvlink-status-gpu0-1.txt"):
        gpus = parse_nvlink_status(path.read_text()).value["gpus"]
        assert [g["active_links"] for g in gpus] == [18, 18]
        assert {link["gbps"] for g in gpus for link in g["links"]} == {26.562}
    real = parse_nvlink_status((REAL / "nvlink-status.txt").read_text()).value["gpus"]
    assert real[0]["uuid"] == "GPU-60ca8147-127f-46f0-9366-eba40a41b09d"


def test_the_topology_matrix_drops_ansi_codes_and_reads_nv18():
    data = parse_topo_matrix((REAL / "topo-m.txt").read_text()).value
    assert data["gpus"] == ["GPU0", "GPU1"]
    assert data["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "NV18"}, "GPU1": {"GPU0": "NV18", "GPU1": "X"}}


def test_the_nvml_dump_flags_the_misreading_v1_call():
    entries = parse_nvml_fabric_dump((REAL / "pynvml-fabric.txt").read_text()).value["entries"]
    assert [(e["gpu"], e["api"], e["state"], e["trustworthy"]) for e in entries] == [
        (0, "v1", "Not Supported", False), (0, "v2", "Completed", True), (0, "v3", "Completed", True),
        (1, "v1", "Not Supported", False), (1, "v2", "Completed", True), (1, "v3", "Completed", True)]
    assert {e["status"] for e in entries} == {0}


@pytest.mark.parametrize("prose", ["README.md", "docs/design.md", "docs/console.md", "docs/reference.md",
                                   "docs/operating.md"])
def test_prose_that_quotes_tool_output_is_not_taken_for_that_output(capsys, prose):
    # The README quotes "was successfully reset.", NCCL's WARN and NV_ERR_* codes in sentences.
    code, (entry,) = analyze(capsys, str(pathlib.Path(__file__).parents[2] / prose))
    assert entry["kind"] == "unknown" and code == 1


def test_a_probe_output_captured_on_the_real_h200_is_read_as_the_node_it_describes(capsys):
    code, (entry,) = analyze(capsys, str(FIXTURES / "real/nvidia-h200/probe-output-before-fix.txt"))
    node = entry["data"]
    assert entry["kind"] == "nvls-tui-probe" and code == 0  # warnings only: degraded, not broken
    assert node["platform"] == "no-nvswitch" and node["verdict"] == "degraded"
    assert [g["uuid"] for g in node["gpus"]] == ["GPU-4c92883e-14e5-36c3-30b6-025e29fe6609"]
    missing = {m["section"]: m["reason"] for m in node["missing"]}
    assert missing["units"] == missing["nvswitches"] == "tool missing"  # no systemctl, no lspci there
    assert "FABRIC_NOT_COMPLETED" not in {f["code"] for f in entry["findings"]}  # N/A: no fabric, not broken
