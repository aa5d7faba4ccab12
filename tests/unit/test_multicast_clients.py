"""Multicast failures as other clients than nccl-tests report them: NVSHMEM's cuMemMap and multicast group
mapping errors, NCCL's older ``Cuda failure 'initialization error'`` without a number, and NCCL's error
inside a PyTorch traceback (``ncclUnhandledCudaError ... Cuda failure 802``). Each reads as NVLS bind
failure evidence, with the advice of the NCCL path for its CUDA error. Real public captures under
tests/fixtures/multicast/ (each names its source).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvls_tui.analyze.captured import NCCL_ADVICE, analyze_text
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.detect import detect_kind
from nvls_tui.parsers.nccl_tests import parse_nccl_text

MULTICAST = Path(__file__).parents[1] / "fixtures" / "multicast"
ADVICE_802, ADVICE_401 = NCCL_ADVICE[0][1], NCCL_ADVICE[1][1]


def read(name: str) -> str:
    return (MULTICAST / name).read_text()


@pytest.mark.parametrize(("name", "bind_error", "advice"), [
    ("torch-traceback-802-nccl-1769.txt", 802, ADVICE_802),
    ("old-initialization-error-pdsh-nccl-1029.txt", None, ADVICE_802),
    ("nvshmem-cumemmap-401-out-of-sync-nvshmem-40.txt", 401, ADVICE_401),
])
def test_each_client_s_failure_is_nvls_bind_evidence_with_the_nccl_path_s_advice(name, bind_error, advice):
    entry = analyze_text(read(name), name)
    assert entry["kind"] == "nccl-tests"
    assert entry["data"]["nvls"]["bind_error"] == bind_error
    assert entry["data"]["nvls"]["bind_failed"] is True
    (finding,) = entry["findings"]
    assert (finding["code"], finding["severity"]) == ("NVLS_SMOKE_FAILED", "error")
    assert finding["message"].startswith("NVLS multicast setup failed: ")
    assert finding["message"].endswith(f" — {advice}")


def test_the_802_inside_a_torch_traceback_is_named_not_the_traceback_s_first_line():
    run = parse_nccl_text(strip_fixture_header(read("torch-traceback-802-nccl-1769.txt"))).value
    assert run.exit_hint == "NVLS multicast bind failed: CUDA error 802 'system not yet initialized' (a Fabric " \
                            "Manager or NVSwitch fault)"
    assert run.errors[0].startswith("[rank2]: torch.distributed.DistBackendError")
    message = analyze_text(read("torch-traceback-802-nccl-1769.txt"), "f")["findings"][0]["message"]
    # (analyze reads inside torch's "[rankN]: " wrapper; the parser alone keeps it on the line)
    assert message.startswith("NVLS multicast setup failed: Cuda failure 802 'system not yet initialized'")


def test_nccl_s_old_form_without_a_number_at_its_nvls_transport_is_a_bind_failure():
    run = parse_nccl_text(strip_fixture_header(read("old-initialization-error-pdsh-nccl-1029.txt"))).value
    assert run.nvls.bind_failed and run.nvls.bind_error is None
    assert run.exit_hint == "NVLS multicast setup failed: Cuda failure 'initialization error' at transport/nvls.cc:245"
    assert run.nvls.multicast_available is False


def test_nvshmem_s_cumemmap_and_multicast_group_lines_are_read_as_multicast_failures():
    body = strip_fixture_header(read("nvshmem-cumemmap-401-out-of-sync-nvshmem-40.txt"))
    assert detect_kind(body) == "nccl-tests"
    run = parse_nccl_text(body).value
    assert len(run.errors) == 3  # cuMemMap, the MC group mapping, the multicast groups for the heap
    assert run.exit_hint == "NVLS multicast bind failed: NVSHMEM's cuMemMap returned CUDA error 401"
    assert not run.completed


def test_a_cuda_failure_elsewhere_is_not_nvls_evidence():
    # The same NCCL trailer with another CUDA error (no multicast in it) stays a plain NCCL failure.
    text = strip_fixture_header(read("torch-traceback-802-nccl-1769.txt")).replace(
        "Cuda failure 802 'system not yet initialized'", "Cuda failure 2 'out of memory'")
    entry = analyze_text(text, "f")
    assert entry["data"]["nvls"]["bind_failed"] is False
    assert entry["findings"][0]["message"].startswith("the NCCL client failed: ")
    # The CUDA error catalogue reads the other error (2: out of memory) as the application's, never the fabric's.
    advice = entry["findings"][0]["message"].split(" — ", 1)[1]
    assert advice.startswith("CUDA error 2 (cudaErrorMemoryAllocation: out of memory): the application's fault")
    assert "Fabric Manager" not in advice and "NVLS" not in advice


def test_prose_about_nvshmem_is_not_a_log():
    prose = "NVSHMEM failed in cuMemMap on our H200s; setting NVSHMEM_DISABLE_NVLS=1 made it go away.\n"
    assert detect_kind(prose) == "unknown"
