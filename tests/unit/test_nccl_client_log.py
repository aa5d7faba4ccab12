"""Issue 35 (the client side): NCCL's INFO lines of a healthy client are no nccl-tests run that ended early.

A job's ``NCCL_DEBUG=INFO`` lines (init complete, a tuner plugin, NET/IB falling back to sockets, NVLS comm
info, "NVLS multicast support is not available") hold no nccl-tests header, table or footer: nothing "ends
before its footer" there, so they read quiet. nccl-tests' own output cut before its footer still warns.
NCCL's lines also stay NCCL's where a paste stripped or redacted NCCL's ``host:pid:tid`` field.
"""

from __future__ import annotations

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.analyze.paste import fails
from nvls_tui.parsers.detect import detect_kind

INIT_COMPLETE = (
    "node1:2304:2340 [5] NCCL INFO 16 coll channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer\n"
    "node1:2304:2340 [5] NCCL INFO TUNER/Plugin: Using internal tuner plugin.\n"
    "node1:2303:2343 [4] NCCL INFO comm 0x98247f0 rank 12 nranks 16 cudaDev 4 nvmlDev 4 busId 96000 - Init COMPLETE\n"
)

NVLS_NOT_AVAILABLE = (
    "algo-1:18062:18131 [5] NCCL INFO NVLS multicast support is not available on dev 5\n"
    "algo-1:18063:18133 [6] NCCL INFO Setting affinity for GPU 6 to ffffff00,0000ffff,ff000000\n"
)


def test_a_healthy_clients_info_lines_read_as_nccl_with_no_finding():
    for text in (INIT_COMPLETE, NVLS_NOT_AVAILABLE):
        entry = analyze_text(text, "client.txt")
        assert entry["kind"] == "nccl-tests"
        assert entry["findings"] == []
        assert not fails(entry)


def test_nccl_tests_own_output_cut_before_its_footer_still_warns():
    text = ("# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n"
            "# Collective test starting: all_reduce_perf\n"
            "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"
            + INIT_COMPLETE)
    entry = analyze_text(text, "cut.txt")
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("NVLS_SMOKE_FAILED", "warning")]


def test_info_lines_whose_host_field_was_stripped_are_nccls():
    text = "NCCL INFO NCCL version 2.24.3+cuda12.2\nNCCL INFO Using network IBext_v8\n"
    assert detect_kind(text) == "nccl-tests"
    entry = analyze_text(text, "bare.txt")
    assert entry["findings"] == [] and not fails(entry)


def test_a_warn_line_with_a_redacted_pid_field_is_an_nccl_warn():
    line = ("[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp "
            "failed with 110 Connection timed out, on dev mlx_x:1\n")
    assert detect_kind(line) == "nccl-tests"
    entry = analyze_text(line, "warn.txt")
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("UNREAD_EVIDENCE", "warning")]
    assert "ibv_modify_qp" in entry["findings"][0]["message"]


def test_prose_that_starts_a_line_with_nccl_info_words_is_not_enough_without_the_level_word():
    assert detect_kind("NCCL is a library; INFO lines come with NCCL_DEBUG=INFO.\n") == "unknown"


def test_a_warn_line_that_names_no_failure_is_still_read():
    # NCCL's WARN level says something went wrong, whatever the words (a launch that put two ranks on one GPU).
    text = ("[1,2]<stdout>:gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 "
            "both on CUDA device 1000\n[1,2]<stdout>:gpu-03:29880:30398 [0] NCCL INFO init.cc:867 -> 5\n")
    entry = analyze_text(text, "dup.txt")
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("UNREAD_EVIDENCE", "warning")]
    assert "Duplicate GPU detected" in entry["findings"][0]["message"]


def test_the_summary_calls_a_client_log_one_not_a_test_that_did_not_complete():
    from nvls_tui.headless.analyze import _summary

    assert _summary(analyze_text(INIT_COMPLETE, "client.txt")) == "NCCL client log, 0 WARN lines"


def test_pytorchs_nccl_process_group_error_lines_are_the_nccl_client_failing():
    line = ("[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an "
            "illegal memory access was encountered\n")
    for text in (line, "(RayWorkerVllm pid=7046) Fatal Python error: Aborted\n" + line,
                 "[rank0]:[E1114 10:23:41.960836047 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds\n"):
        entry = analyze_text(text, "pg.txt")
        assert entry["kind"] == "nccl-tests", text
        assert [(f["code"], f["severity"]) for f in entry["findings"]][:1] == [("NVLS_SMOKE_FAILED", "error")], text
        assert fails(entry)


def test_an_info_line_of_the_process_group_is_no_failure():
    entry = analyze_text("[I ProcessGroupNCCL.cpp:835] [Rank 0] ProcessGroupNCCL initialization options: "
                         "NCCL_ASYNC_ERROR_HANDLING: 1\n", "pg.txt")
    assert entry["kind"] == "nccl-tests" and entry["findings"] == []


P2P_NVLINK = ("P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given their "
              "connectivity, and is probably due to a hardware issue. If you still want to proceed, you can set "
              "NCCL_IGNORE_DISABLED_P2P=1.\n")


def test_nccls_refusal_of_nvlink_gpus_without_p2p_is_an_error_naming_the_links():
    # NCCL's own topology check (a WARN, then init fails): quoted alone or behind NCCL's prefix, it is NCCL's.
    for text in (P2P_NVLINK, "gpu05:1234:1234 [1] NCCL WARN " + P2P_NVLINK):
        entry = analyze_text(text, "p2p.txt")
        assert entry["kind"] == "nccl-tests", text
        (finding,) = [f for f in entry["findings"] if f["severity"] == "error"]
        assert finding["code"] == "NVLS_SMOKE_FAILED"
        assert "nvlink -s" in finding["message"] and "hardware ticket" in finding["message"]
        assert fails(entry)


def test_the_info_form_for_pcie_pairs_stays_quiet():
    entry = analyze_text("node:89404:89404 [2] NCCL INFO P2P is disabled between connected GPUs 6 and 7. You can "
                         "repress this message with NCCL_IGNORE_DISABLED_P2P=1.\n", "p2p.txt")
    assert entry["findings"] == []


def test_prose_about_the_p2p_refusal_is_not_nccls():
    assert detect_kind("We hit the 'P2P is disabled between NVLINK connected GPUs 1 and 0' check.\n") == "unknown"


def test_a_ray_or_vllm_workers_prefix_is_peeled_as_a_wrapper_naming_the_node():
    text = ("(RayWorkerVllm pid=7046, ip=10.0.0.5) gpu05:7046:7269 [0] NCCL INFO comm 0x1 rank 1 nranks 2 - Init COMPLETE\n"
            "(RayWorkerVllm pid=7046, ip=10.0.0.5) [E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread "
            "terminated with exception: CUDA error: an illegal memory access was encountered\n"
            "(RayWorkerVllm pid=7046, ip=10.0.0.5) \n")
    entry = analyze_text(text, "ray.txt")
    assert entry["kind"] == "nccl-tests"
    assert entry["wrapper"]["form"] == "worker-tag" and entry["wrapper"]["hosts"] == ["10.0.0.5"]
    assert [f["code"] for f in entry["findings"]] == ["NVLS_SMOKE_FAILED"]
    assert entry["data"]["errors"][0].startswith("[E ProcessGroupNCCL.cpp:916]")
    vllm = analyze_text("(VllmWorkerProcess pid=3265) gpu05:3265:3265 [1] NCCL INFO NVLS multicast support is "
                        "available on dev 1\n(VllmWorkerProcess pid=3265) gpu05:3265:3265 [1] NCCL INFO Init COMPLETE\n",
                        "vllm.txt")
    assert vllm["wrapper"]["form"] == "worker-tag" and vllm["findings"] == []


@pytest.mark.parametrize("text", [
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n",
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, unhandled system error, NCCL "
    "version 2.14.3\n",
    "ncclInternalError: Internal check failed.\nLast error:\nProxy Call to rank 0 failed (Connect)\n",
])
def test_torchs_older_nccl_exception_and_nccls_error_names_are_the_nccl_client_failing(text):
    entry = analyze_text(text, "torch.txt")
    assert entry["kind"] == "nccl-tests"
    assert [(f["code"], f["severity"]) for f in entry["findings"]][:1] == [("NVLS_SMOKE_FAILED", "error")]


def test_prose_naming_an_nccl_error_mid_sentence_is_not_nccls():
    assert detect_kind("We got RuntimeError: NCCL error: unhandled cuda error on two nodes.\n") == "unknown"


def test_a_number_that_is_no_cuda_error_gets_no_cuda_advice():
    # SeqNum=802 and Rank 401 are a collective's sequence number and a rank, not CUDA's 802 or 401.
    line = ("[rank401]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 401] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=802, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 milliseconds\n")
    (finding,) = analyze_text(line, "timeout.txt")["findings"]
    assert finding["severity"] == "error" and " — " not in finding["message"], finding["message"]


def test_newer_vllms_worker_prefix_names_its_rank():
    text = ("(VllmWorker rank=3 pid=406) gpu05:406:406 [3] NCCL INFO comm 0x1 rank 3 nranks 8 - Init COMPLETE\n"
            "(VllmWorker rank=3 pid=406) [E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 milliseconds\n")
    entry = analyze_text(text, "vllm.txt")
    assert entry["wrapper"]["form"] == "worker-tag" and entry["wrapper"]["ranks"] == [3]
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("NVLS_SMOKE_FAILED", "error")]
