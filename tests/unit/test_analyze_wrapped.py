"""`analyze` reads a paste inside its wrapper (journal, dmesg, kubectl, launcher tags, quoting), says what the
wrapper told (hosts, ranks), and says so when the text is cut; bare captures read exactly as before."""

from __future__ import annotations

import json
import pathlib

import pytest

from nvls_tui.analyze.captured import HANDLERS, analyze_text
from nvls_tui.cli import main
from nvls_tui.model.jsonout import finding_json
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.textsafe import clean
from tests.unit.test_unwrap import OUT_OF_SYNC, XID, dmesg_file, journalctl, write_journal

SHARED = pathlib.Path("/work/shared/fixtures")
FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
WRAPPED = FIXTURES / "wrapped"

# The kind of every shared real/public capture as `analyze` read it before the unwrapping step existed.
SHARED_KINDS = {
    "public/device-holders/systemctl-status-dcgm-active.txt": "systemctl-status",
    "public/fabricmanager/journal-restart-failed-h20-ppcie.txt": "fabricmanager-log",
    "public/fabricmanager/systemctl-status-active-b300-nvlsm.txt": "systemctl-status",
    "public/gpu-reset/fail-in-use-by-another-client-nvsentinel.txt": "nvidia-smi-reset",
    "public/gpu-reset/success-after-pm0-nvsentinel.txt": "nvidia-smi-reset",
    "public/kernel-log/nvswitch-probe-sxid-22013-h100-ppcie.txt": "kernel-log",
    "public/kernel-log/xid-144-145-149-nvlink-lines.txt": "kernel-log",
    "public/nccl-tests/fail-nvls-bind-401-pytorch-ci.txt": "nccl-tests",
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
    "real/h100-1gpu-vm/dmesg-nvidia-lines.txt": "kernel-log",
    "real/h100-1gpu-vm/dmesg_--time-format_iso-nvidia-lines.txt": "kernel-log",
    "real/h100-1gpu-vm/dmesg_-T-nvidia-lines.txt": "kernel-log",
    "real/h100-1gpu-vm/dmesg_-x-nvidia-lines.txt": "kernel-log",
    "real/h200-1gpu-vm/fuser-v-one-cuda-process.txt": "fuser",
    "real/h200-1gpu-vm/probe-output-with-cuda-holder.txt": "nvls-tui-probe",
    "real/h200-1gpu-vm/probe-script.sh": "unknown",
    "real/h200-1gpu-vm/ps-holder-identity.txt": "ps",
    "real/h200-1gpu-vm/query-gpu-probe-fields.csv": "nvidia-smi-query-csv",
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
}


def _bare_captures() -> list[pathlib.Path]:
    """Every real or public capture, shared and the project's own (not the wrapped pastes, not audit logs)."""
    found = [p for p in SHARED.rglob("*") if p.is_file() and p.name != "README.md"]
    found += [p for sub in ("real", "public") for p in (FIXTURES / sub).rglob("*") if p.is_file() and p.name != "README.md"]
    return sorted(found)


def test_every_shared_capture_is_pinned():
    on_disk = {str(p.relative_to(SHARED)) for p in SHARED.rglob("*") if p.is_file() and p.name != "README.md"}
    assert on_disk == set(SHARED_KINDS)


@pytest.mark.parametrize(("name", "kind"), sorted(SHARED_KINDS.items()))
def test_a_shared_capture_keeps_its_kind(name, kind):
    assert analyze_text((SHARED / name).read_text(errors="replace"), name)["kind"] == kind


@pytest.mark.parametrize("path", _bare_captures(), ids=lambda p: str(p).rsplit("fixtures/", 1)[-1])
def test_a_bare_capture_reads_exactly_as_its_parser_reads_the_unwrapped_file(path):
    # Whatever the unwrapping step recognises in a bare capture, the data, findings and warnings are the
    # ones the kind's parser gives for the file as it is.
    text = path.read_text(errors="replace")
    entry = analyze_text(text, path.name)
    if entry["kind"] == "unknown":
        return
    if len(entry["parts"]) > 1:  # a transcript read part by part: each part as its parser reads its lines
        lines = clean(text).split("\n")
        for part in entry["parts"]:
            if part["kind"] == "unknown":
                continue
            first, last = part["lines"]
            data, findings, warnings = HANDLERS[part["kind"]]("\n".join(lines[first - 1:last]))
            assert json.loads(json.dumps(part["data"])) == json.loads(json.dumps(data))
            assert part["warnings"] == list(warnings)
        return
    data, findings, warnings = HANDLERS[entry["kind"]](clean(strip_fixture_header(text)))
    assert json.loads(json.dumps(entry["data"])) == json.loads(json.dumps(data))
    assert entry["findings"] == [finding_json(f) for f in findings]
    assert entry["warnings"] == list(warnings)


# ---- pastes read inside their wrappers --------------------------------------------------------------

WRAPPED_READS = {
    # file: (kind, wrapper form, hosts, ranks)
    "host-tags-nccl-initialization-error-nccl-1029.txt": ("nccl-tests", "host-tags", ["rdma-test-gpu-worker-1"], []),
    "kernel-tag-xid-45-open-gpu-kernel-modules-1150.txt": ("kernel-log", "kernel-tag", [], []),
    "mpirun-tag-output-nccl-init-aws-k8s-tester-464.txt": ("nccl-tests", "indent+mpirun", [], [0, 1]),
    "quoted-dmesg-ctime-xid-gpud-46.txt": ("kernel-log", "quote+dmesg-ctime", [], []),
    "torch-rank-nccl-invalid-argument-nccl-1410.txt": ("nccl-tests", "torch-rank", [], [7]),
}


@pytest.mark.parametrize(("name", "expected"), sorted(WRAPPED_READS.items()))
def test_a_wrapped_public_paste_reads_as_its_tool_and_says_what_the_wrapper_told(name, expected):
    kind, form, hosts, ranks = expected
    entry = analyze_text((WRAPPED / name).read_text(), name)
    assert entry["kind"] == kind
    assert entry["wrapper"] == {"form": form, "hosts": hosts, "ranks": ranks} | (
        {"times": entry["wrapper"]["times"]} if "times" in entry["wrapper"] else {})


def test_the_quoted_dmesg_paste_gives_the_xids_with_their_times():
    entry = analyze_text((WRAPPED / "quoted-dmesg-ctime-xid-gpud-46.txt").read_text(), "paste")
    assert [(e["xid"], e["timestamp"]) for e in entry["data"]["events"]] == [
        (13, "Fri Aug 30 11:43:09 2024"), (13, "Fri Aug 30 11:43:09 2024"), (13, "Fri Aug 30 11:43:09 2024"),
        (109, "Fri Aug 30 11:43:14 2024")]


def test_a_torch_rank_error_names_its_rank_as_the_origin():
    entry = analyze_text((WRAPPED / "torch-rank-nccl-invalid-argument-nccl-1410.txt").read_text(), "paste")
    assert entry["origins"] == [{"host": None, "rank": 7, "pid": None, "by": "wrapper"}]
    assert entry["findings"][0]["code"] == "NVLS_SMOKE_FAILED" and entry["findings"][0]["severity"] == "error"


def test_nccls_own_host_field_wins_over_the_launchers_tag():
    # The real WARN line of a public capture, collected by a launcher that tagged it with the login node's name.
    warn = strip_fixture_header((SHARED / "public/nccl-tests/fail-nvls-bind-401-warn-line.txt").read_text())
    pasted = "".join(f"login-node-3: {line}\n" for line in warn.splitlines())
    entry = analyze_text(pasted, "paste")
    assert entry["wrapper"]["hosts"] == ["login-node-3"]
    assert entry["origins"] == [{"host": "gpu-stress-dgc86-xfpt6", "rank": None, "pid": 420, "by": "nccl"}]


def test_a_bare_nccl_warn_line_gets_its_origin_from_nccl_and_no_wrapper():
    entry = analyze_text((SHARED / "public/nccl-tests/fail-nvls-bind-401-warn-line.txt").read_text(), "paste")
    assert "wrapper" not in entry
    assert entry["origins"] == [{"host": "gpu-stress-dgc86-xfpt6", "rank": None, "pid": 420, "by": "nccl"}]


def test_the_readable_output_says_which_host_and_rank_the_nccl_error_came_from(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    warn = strip_fixture_header((SHARED / "public/nccl-tests/fail-nvls-bind-401-warn-line.txt").read_text())
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("".join(f"[rank5]: {line}\n" for line in warn.splitlines()))
    code = main(["analyze", str(tagged), str(WRAPPED / "torch-rank-nccl-invalid-argument-nccl-1410.txt")])
    out = capsys.readouterr().out
    assert code == 1
    assert "the NCCL error came from gpu-stress-dgc86-xfpt6 (rank 5, pid 420)" in out
    assert "the NCCL error came from rank 7" in out
    assert "read inside torch-rank; rank 7" in out


def test_dmesg_iso_times_the_unwrapping_took_off_come_back_on_the_events(tmp_path):
    printed = dmesg_file(tmp_path, "--time-format", "iso")
    entry = analyze_text(printed, "dmesg-iso")
    assert entry["kind"] == "kernel-log" and entry["wrapper"]["form"] == "dmesg-iso"
    stamps = [line.split(" ", 1)[0] for line in printed.splitlines()]
    assert [e["timestamp"] for e in entry["data"]["events"]] == stamps[:2]  # the Xid and the out-of-sync line
    assert [e["line"] for e in entry["data"]["events"]] == [XID, OUT_OF_SYNC]


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> pathlib.Path:
    """The real journal file of tests/unit/test_unwrap.py (kernel NVRM lines and FM's unit)."""
    return write_journal(tmp_path_factory.mktemp("journal"))


def test_a_no_hostname_journal_gives_kernel_events_their_journal_times(journal):
    printed = journalctl(journal, "-o", "short", "--no-hostname", "_TRANSPORT=kernel")
    entry = analyze_text(printed, "journal")
    assert entry["kind"] == "kernel-log" and entry["wrapper"]["hosts"] == []
    assert all(e["timestamp"] and e["timestamp"].startswith("Dec 02 ") for e in entry["data"]["events"])


@pytest.mark.parametrize("mode", ["short", "short-iso", "short-precise", "short-iso-precise", "short-monotonic", "json"])
def test_a_real_journal_of_fms_unit_reads_as_fms_log_in_every_mode(journal, mode):
    entry = analyze_text(journalctl(journal, "-o", mode, "SYSLOG_IDENTIFIER=nv-fabricmanager"), "journal")
    assert entry["kind"] == "fabricmanager-log" and entry["wrapper"]["hosts"] == ["gpu05"]
    assert [e["code"] for e in entry["data"]["events"]] == ["CONFIGURED"]
    assert entry["data"]["events"][0]["timestamp"]


def test_escapes_decoded_from_a_json_line_never_reach_the_entry():
    # A JSON logger's line decodes \u001b into a real escape: the inner text is cleaned again.
    line = '{"msg":"' + "\\n".join([r"\u001b[31m" + XID, OUT_OF_SYNC + r"\u001b]0;pwned\u0007"]) + '\\n"}'
    entry = analyze_text(line + "\n", "json-line")
    assert entry["kind"] == "kernel-log" and entry["wrapper"]["form"] == "escaped-newlines"
    assert "\x1b" not in json.dumps(entry, ensure_ascii=False) and "\x07" not in json.dumps(entry, ensure_ascii=False)


# ---- truncated input says so (issue 27 item 3) -------------------------------------------------------

SMI_Q = (FIXTURES / "real/h200x2-nvswitch/nvidia-smi-q.txt").read_text()
SMI_XML = (FIXTURES / "real/h200x2-nvswitch/nvidia-smi-q-x.xml").read_text()
PROBE = (FIXTURES / "real/h200-1gpu-vm/probe-output-with-cuda-holder.txt").read_text()


def _lines_before(text: str, needle: str, nth: int = 1, extra: int = 0) -> str:
    """``text`` cut before the ``nth`` line that starts with ``needle`` (plus ``extra`` lines of it)."""
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith(needle)][nth - 1]
    return "".join(lines[: at + extra])


def _codes(entry: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in entry["findings"]]


def test_nvidia_smi_q_cut_before_the_last_gpus_fabric_block_reads_it_unread_not_na():
    cut = _lines_before(SMI_Q, "    Fabric", nth=2)
    entry = analyze_text(cut, "q.txt")
    gpu1 = entry["data"]["gpus"][1]
    assert (gpu1["fabric"]["state"], gpu1["fabric"]["status"]) == ("unread", "unread")
    assert any(w.startswith("the text ends inside GPU 1's section (00000000:00:07.0)") for w in entry["warnings"])
    assert ("EVIDENCE_MISSING", "error") in _codes(entry)  # unknown is never healthy
    assert entry["data"]["gpus"][0]["fabric"]["state"] == "Completed"  # what was read whole stays read


def test_nvidia_smi_q_cut_inside_the_fabric_block_keeps_the_state_and_leaves_the_status_unread():
    cut = _lines_before(SMI_Q, "    Fabric", nth=2, extra=2)  # "Fabric" and its "State" line
    gpu1 = analyze_text(cut, "q.txt")["data"]["gpus"][1]
    assert (gpu1["fabric"]["state"], gpu1["fabric"]["status"]) == ("Completed", "unread")


def test_nvidia_smi_q_cut_after_the_fabric_block_keeps_the_fabric_and_still_says_it_was_cut():
    entry = analyze_text(_lines_before(SMI_Q, "    Processes", nth=2), "q.txt")
    assert entry["data"]["gpus"][1]["fabric"]["state"] == "Completed"
    assert any(w.startswith("the text ends inside GPU 1's section") for w in entry["warnings"])
    assert "EVIDENCE_MISSING" not in [code for code, _ in _codes(entry)]


def test_a_single_gpu_nvidia_smi_q_cut_before_its_processes_says_so():
    one = (FIXTURES / "real/nvidia-h200/nvidia-smi-q.txt").read_text()
    entry = analyze_text(_lines_before(one, "    Fabric"), "q.txt")
    assert any(w.startswith("the text ends inside GPU 0's section") for w in entry["warnings"])
    assert entry["data"]["gpus"][0]["fabric"]["state"] == "unread"


@pytest.mark.parametrize("name", ["real/h200x2-nvswitch/nvidia-smi-q.txt", "real/nvidia-h200/nvidia-smi-q.txt",
                                  "public/nvidia-smi-q/h100-590-q-idle.txt", "public/nvidia-smi-q/h200-590-q-idle.txt",
                                  "public/nvidia-smi-q/h100-590-q-load-with-processes.txt"])
def test_a_whole_nvidia_smi_q_is_not_called_cut(name):
    entry = analyze_text((FIXTURES / name).read_text(), name)
    assert not any("ends inside" in w for w in entry["warnings"])
    assert all(g["fabric"]["state"] != "unread" for g in entry["data"]["gpus"])


def test_nvidia_smi_xml_cut_inside_the_second_gpu_reads_its_fabric_unread():
    cut = SMI_XML[: SMI_XML.index("<fabric>", SMI_XML.index('<gpu id="00000000:00:07.0">'))]
    entry = analyze_text(cut, "q.xml")
    gpu1 = entry["data"]["gpus"][1]
    assert (gpu1["fabric"]["state"], gpu1["fabric"]["status"]) == ("unread", "unread")
    assert any(w.startswith("the text ends inside GPU 1's section (00000000:00:07.0)") for w in entry["warnings"])
    assert ("EVIDENCE_MISSING", "error") in _codes(entry)
    assert entry["data"]["gpus"][0]["fabric"]["state"] == "Completed"


def test_nvidia_smi_xml_cut_after_the_fabric_element_keeps_the_fabric():
    second = SMI_XML.index('<gpu id="00000000:00:07.0">')
    cut = SMI_XML[: SMI_XML.index("</fabric>", second) + len("</fabric>")]
    entry = analyze_text(cut, "q.xml")
    assert entry["data"]["gpus"][1]["fabric"]["state"] == "Completed"
    assert any(w.startswith("the text ends inside GPU 1's section") for w in entry["warnings"])


def test_a_probe_output_cut_inside_a_section_says_the_text_ends_there_not_that_a_command_timed_out():
    cut = _lines_before(PROBE, "@@nvls-tui end holders")
    entry = analyze_text(cut, "probe.txt")
    assert entry["kind"] == "nvls-tui-probe"
    assert any(w.startswith("the text ends inside the probe's holders section") for w in entry["warnings"])
    missing = {f.get("section"): f["message"] for f in entry["findings"] if f["code"] == "EVIDENCE_MISSING"}
    assert "holders" in missing and "the captured text ends inside it" in missing["holders"]
    assert all("did not finish" not in m and "timed out" not in m for m in missing.values())
    assert "the captured text ends before it" in missing["kernel"]  # a section it never reached


def test_a_real_logrus_line_with_escaped_newlines_reads_as_the_reset_it_carries():
    # mig-parted logs nvidia-smi's refusal as one logrus line (a public capture under tests/fixtures/reset/).
    entry = analyze_text((FIXTURES / "reset/mig-parted-escaped-refusal-magic-castle-387.txt").read_text(), "log")
    assert entry["kind"] == "nvidia-smi-reset" and entry["wrapper"]["form"] == "escaped-newlines"
    assert entry["data"]["failed"] == [{"bus_id": "00000000:00:06.0", "reason": "In use by another client"}]
