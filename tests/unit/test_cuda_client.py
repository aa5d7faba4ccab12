"""Issue 35 (the client side): an application's CUDA error is read through the CUDA error catalogue.

PyTorch, JAX, vLLM, SGLang or gpu-burn failing a CUDA call print the runtime's error by number ("Error 802: ...",
"error=802", "cuda runtime error (802)"), by name (``CUDA_ERROR_SYSTEM_NOT_READY``) or by its words ("...: system
not yet initialized"). All three read the same row of nvls_tui/catalogues/cuda_error.csv, whose reading gives the
severity and the next move: 802 (the system is not ready; on an NVSwitch node Fabric Manager / the fabric) is an
error whose move is the repair, an illegal memory access the application's fault.
"""

from __future__ import annotations

import pytest

from nvls_tui import catalogues
from nvls_tui.analyze.captured import analyze_text
from nvls_tui.analyze.paste import fails
from nvls_tui.parsers.cuda_app import cuda_errors_in

TORCH_802 = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
             "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized\n")
JAX_802 = ("2024-11-12 15:37:25.005059: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to "
           "cuInit: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized\n")
THC_802 = ("THCudaCheck FAIL file=/work/aten/src/THC/THCGeneral.cpp line=50 error=802 : system not yet initialized\n"
           "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
           "RuntimeError: cuda runtime error (802) : system not yet initialized at THCGeneral.cpp:50\n")
BURN = ("GPU 0: NVIDIA H100 80GB HBM3 ...\nterminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  Error (gpu_burn-drv.cpp:298): system not yet initialized\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  Error (gpu_burn-drv.cpp:298): OS call failed or operation not supported on this OS\n")


# ---- the catalogue --------------------------------------------------------------------------------------
def test_the_catalogue_reads_a_code_by_number_name_driver_name_and_words():
    row = catalogues.cuda_error(802)
    assert (row.name, row.driver_name, row.text, row.bucket) == (
        "cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized", "CHECK_FABRIC")
    for key in ("cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY", "System not yet initialized"):
        assert catalogues.cuda_error(key) == row
    assert catalogues.cuda_error(700).bucket == "RESTART_APP"
    assert catalogues.cuda_error(4242) is None and catalogues.cuda_error("not an error") is None


def test_every_reading_the_cuda_catalogue_uses_is_a_bucket():
    used = {e.bucket for e in catalogues.cuda_errors().values()}
    assert used - {""} <= set(catalogues.BUCKETS)
    assert catalogues.bucket("CHECK_FABRIC").severity == "error"


# ---- the parser -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [TORCH_802, JAX_802, THC_802, BURN.split("\n", 2)[2]])
def test_each_form_names_802(text):
    assert cuda_errors_in(text)[0].code == 802


def test_an_unlisted_number_beside_cuda_is_still_read_with_its_number():
    (err,) = cuda_errors_in("RuntimeError: CUDA error 4242: something new\n")
    assert err.code == 4242 and err.entry is None


@pytest.mark.parametrize("text", [
    "ValueError: invalid argument\n",  # a short CUDA word on a line that does not name CUDA
    "Error 802: file not found\n",  # a number beside an error word, neither CUDA's words nor CUDA named
    "The system is not yet initialized, please wait.\n",  # prose
])
def test_text_that_is_not_a_cuda_error_names_none(text):
    assert cuda_errors_in(text) == []


# ---- the reading ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [TORCH_802, JAX_802, THC_802])
def test_an_applications_802_is_an_error_whose_move_is_the_fabric(text):
    entry = analyze_text(text, "app.txt")
    assert entry["kind"] == "app-log"
    (finding,) = entry["findings"]
    assert (finding["code"], finding["severity"]) == ("CUDA_ERROR", "error")
    assert "CUDA error 802 (cudaErrorSystemNotReady: system not yet initialized)" in finding["message"]
    assert "Fabric Manager" in finding["message"]
    assert fails(entry)


def test_each_code_of_an_output_is_a_finding_of_its_own():
    entry = analyze_text(BURN, "burn.txt")
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("CUDA_ERROR", "error")] * 2
    assert "CUDA error 304 (cudaErrorOperatingSystem" in entry["findings"][1]["message"]
    assert [e["code"] for e in entry["data"]["cuda_errors"]] == [802, 304]


def test_an_illegal_memory_access_is_the_applications_fault():
    entry = analyze_text("RuntimeError: CUDA error: an illegal memory access was encountered\n", "app.txt")
    (finding,) = entry["findings"]
    assert (finding["code"], finding["severity"]) == ("CUDA_ERROR", "warning")
    assert "the application's fault, not the fabric's" in finding["message"]


def test_the_nccl_client_failing_on_a_cuda_error_says_what_the_catalogue_reads():
    line = ("[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an "
            "illegal memory access was encountered\n")
    entry = analyze_text(line, "pg.txt")
    (finding,) = [f for f in entry["findings"] if f["code"] == "NVLS_SMOKE_FAILED"]
    assert finding["severity"] == "error"
    assert "CUDA error 700 (cudaErrorIllegalAddress" in finding["message"]
    assert "the application's fault, not the fabric's" in finding["message"]


def test_prose_that_quotes_no_cuda_error_stays_unknown():
    assert analyze_text("Our service failed to start: invalid argument\n", "p.txt")["kind"] == "unknown"


def test_the_summary_names_the_codes():
    from nvls_tui.headless.analyze import _summary

    assert _summary(analyze_text(BURN, "burn.txt")) == "application output, CUDA errors 802, 304"


@pytest.mark.parametrize("prose", [
    "When NCCL says `Failed to bind NVLink SHARP (NVLS) Multicast memory ... CUDA error 802`, run check.\n",
    "the error text NCCL prints for it: `Cuda failure 'invalid argument'` after an FM restart\n",
    "We saw CUDA error 4242 on some nodes last week.\n",  # an unlisted number: read in an output, no output alone
])
def test_prose_that_quotes_a_cuda_error_is_no_application_output(prose):
    assert analyze_text(prose, "p.md")["kind"] == "unknown"


def test_a_paste_of_kernel_lines_and_an_applications_802_reads_both():
    kernel = ("Nov 12 15:37:20 gpu05 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen "
              "off the bus.\n")
    entry = analyze_text(kernel + TORCH_802, "mixed.txt")
    assert [p["kind"] for p in entry["parts"]] == ["kernel-log", "app-log"]
    codes = {f["code"] for f in entry["findings"]}
    assert "CUDA_ERROR" in codes and "GPU_LOST" in codes


def test_nccls_cuda_failure_trailer_stays_nccls_in_a_paste():
    # NCCL's "Last error: Cuda failure 802 '...'" under torch's NCCL exception is NCCL's run, not an application part.
    text = ("[rank2]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:77, unhandled cuda error\n"
            "[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.\n[rank2]: Last error:\n"
            "[rank2]: Cuda failure 802 'system not yet initialized'\n"
            "Nov 12 15:37:20 gpu05 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n")
    entry = analyze_text(text, "mixed.txt")
    assert [p["kind"] for p in entry["parts"]] == ["nccl-tests", "kernel-log"]


@pytest.mark.parametrize("code", sorted(catalogues.cuda_errors()))
def test_every_code_of_the_catalogue_reads_with_its_reading(code):
    row = catalogues.cuda_error(code)
    bucket = catalogues.bucket(row.bucket) if row.bucket else catalogues.CUDA_NO_BUCKET
    for line in (f"RuntimeError: Unexpected error from cudaGetDeviceCount(). Error {code}: {row.text}",
                 f"jax: failed call to cuInit: {row.driver_name or row.name}: {row.text}"):
        (finding,) = analyze_text(line + "\n", "app.txt")["findings"]
        assert (finding["code"], finding["severity"]) == ("CUDA_ERROR", bucket.severity), line
        assert f"CUDA error {code} ({row.name}: {row.text})" in finding["message"] and bucket.move in finding["message"]


def test_nccls_trailer_without_a_number_stays_nccls_too():
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL "
            "version 2.21.5\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
            "Cuda failure 'system not yet initialized'\n")
    entry = analyze_text(text, "torch.txt")
    assert entry["kind"] == "nccl-tests" and [p["kind"] for p in entry["parts"]] == ["nccl-tests"]
    assert "CUDA error 802 means NVLS multicast could not bind" in entry["findings"][0]["message"]


def test_cudas_own_tag_is_no_host():
    entry = analyze_text("CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has unsupported display driver / "
                         "cuda driver combination\n", "caffe.txt")
    assert entry["kind"] == "app-log" and "wrapper" not in entry
    assert "“CUDA: Check failed" in entry["findings"][0]["message"]
