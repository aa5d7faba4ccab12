"""Issue 35 item 1: a transcript's parts read together. Fabric Manager failing to start is an error (an NVLS outage
on an NVSwitch board) unless the same paste's nvidia-smi names only GPUs no NVSwitch board carries (GeForce,
Quadro, RTX): then FM had nothing to manage, a warning. The transcript is the corpus's (gpu-operator issue 356)."""

from __future__ import annotations

from nvls_tui.analyze.captured import analyze_text

FM_FAILED = ("[root@test-rocky8-kvm63 ~]#  systemctl start nvidia-fabricmanager\n"
             "Job for nvidia-fabricmanager.service failed because the control process exited with error code.\n"
             "See \"systemctl status nvidia-fabricmanager.service\" and \"journalctl -xe\" for details.\n\n")
SMI = ("[root@test-rocky8-kvm63 ~]#    nvidia-smi\n"
       "Thu Jun  2 21:32:25 2022       \n"
       "+-----------------------------------------------------------------------------+\n"
       "| NVIDIA-SMI 510.47.03    Driver Version: 510.47.03    CUDA Version: 11.6     |\n"
       "|-------------------------------+----------------------+----------------------+\n"
       "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
       "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
       "|                               |                      |               MIG M. |\n"
       "|===============================+======================+======================|\n"
       "|   0  NVIDIA GeForce ...  Off  | 00000000:05:00.0 Off |                  N/A |\n"
       "| N/A   51C    P0    15W /  N/A |      0MiB /  4096MiB |      0%      Default |\n"
       "+-------------------------------+----------------------+----------------------+\n")


def _fm(entry: dict) -> list[str]:
    return [f["severity"] for f in entry["findings"] if f["code"] == "FM_NOT_RUNNING"]


def test_a_prompt_followed_by_two_spaces_still_splits_the_transcript():
    entry = analyze_text(FM_FAILED + SMI, "t")
    assert [p.get("command") for p in entry["parts"]] == ["systemctl start nvidia-fabricmanager", "nvidia-smi"]


def test_fm_failing_on_a_geforce_node_is_a_warning_that_says_why():
    entry = analyze_text(FM_FAILED + SMI, "t")
    assert _fm(entry) == ["warning"]
    assert "no NVSwitch board" in next(f["message"] for f in entry["findings"] if f["code"] == "FM_NOT_RUNNING")


def test_fm_failing_alone_or_beside_an_h100_stays_an_error():
    assert _fm(analyze_text(FM_FAILED, "t")) == ["error"]
    h100 = SMI.replace("NVIDIA GeForce ...", "NVIDIA H100 80GB ")
    assert _fm(analyze_text(FM_FAILED + h100, "t")) == ["error"]
