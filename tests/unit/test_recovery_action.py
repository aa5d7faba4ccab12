"""NVML's GPU recovery action, read through its catalogue (issue 35, item 3): ``GPU Recovery Action`` in
``nvidia-smi -q`` (text and XML) is the driver's own word of what a GPU needs. Anything but ``None`` is a finding
with NVIDIA's action and its move; ``None`` says nothing.
"""

from __future__ import annotations

from pathlib import Path

from nvls_tui.analyze.captured import analyze_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
TEXT = FIXTURES / "public" / "nvidia-smi-q" / "h100-590-q-idle.txt"
XML = FIXTURES / "real" / "h200x2-nvswitch" / "nvidia-smi-q-x.xml"


def recovery(entry: dict) -> list[dict]:
    return [f for f in entry["findings"] if f["code"] == "GPU_RECOVERY_ACTION"]


def test_none_says_nothing_and_the_data_keeps_the_word():
    entry = analyze_text(TEXT.read_text(), str(TEXT))
    assert recovery(entry) == [] and [g["recovery_action"] for g in entry["data"]["gpus"]] == ["None"]


def test_drain_and_reset_is_an_error_with_nvidia_s_move():
    text = TEXT.read_text().replace("GPU Recovery Action                                : None",
                                    "GPU Recovery Action                                : Drain and Reset")
    (finding,) = recovery(analyze_text(text, "q.txt"))
    assert finding["severity"] == "error" and finding["action"] == "DRAIN_AND_RESET" and finding["gpu"] == 0
    assert "Drain and Reset" in finding["message"] and "reset" in finding["next_move"]


def test_the_xml_says_the_same():
    xml = XML.read_text().replace("<gpu_recovery_action>None</gpu_recovery_action>",
                                  "<gpu_recovery_action>Node Reboot Required</gpu_recovery_action>", 1)
    (finding,) = recovery(analyze_text(xml, "q.xml"))
    assert finding["action"] == "RESTART_BM" and "a GPU reset will not fix it" in finding["next_move"]


def test_a_word_the_catalogue_does_not_know_is_an_error_not_fine():
    text = TEXT.read_text().replace("GPU Recovery Action                                : None",
                                    "GPU Recovery Action                                : Something New")
    (finding,) = recovery(analyze_text(text, "q.txt"))
    assert finding["severity"] == "error" and "Something New" in finding["message"]
