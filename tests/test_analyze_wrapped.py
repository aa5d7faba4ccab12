"""`analyze` reads a paste inside its wrapper (journal, dmesg, kubectl, launcher tags, quoting), says what the
wrapper told (hosts, ranks), and says so when the text is cut; bare captures read exactly as before."""

from __future__ import annotations

import json
import pathlib

import pytest

from nvls_tui.analyze.captured import HANDLERS, analyze_text
from nvls_tui.model.jsonout import finding_json
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.textsafe import clean

SHARED = pathlib.Path("/work/shared/fixtures")
FIXTURES = pathlib.Path(__file__).parent / "fixtures"
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
    data, findings, warnings = HANDLERS[entry["kind"]](clean(strip_fixture_header(text)))
    assert json.loads(json.dumps(entry["data"])) == json.loads(json.dumps(data))
    assert entry["findings"] == [finding_json(f) for f in findings]
    assert entry["warnings"] == list(warnings)
