"""nvidia-smi that cannot reach the driver ("Failed to initialize NVML: Driver/library version mismatch", "NVIDIA-SMI
has failed because it couldn't communicate with the NVIDIA driver") read no GPU: in a transcript split at its
prompts, such an output was read as an nvidia-smi table with nothing in it, exit 0 (the corpus's shine-cluster#30
and negativo17#171). It is an error: the GPUs could not be read, with the move the words call for."""

from __future__ import annotations

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.analyze.paste import fails

TRANSCRIPT = """$ nvidia-smi
Failed to initialize NVML: Driver/library version mismatch
$ squeue
             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              2691    normal     task    mahan  R 2-16:46:05      1 eureka
"""


@pytest.mark.parametrize(("text", "words"), [
    (TRANSCRIPT, "Driver/library version mismatch"),
    ("$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
     "latest NVIDIA driver is installed and running.\n", "couldn't communicate with the NVIDIA driver"),
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n",
     "Driver/library version mismatch"),
])
def test_nvidia_smi_that_cannot_reach_the_driver_is_an_error(text, words):
    entry = analyze_text(text, "paste.txt")
    findings = [f for part in entry.get("parts", [entry]) for f in part["findings"]] or entry["findings"]
    failed = [f for f in findings if f["code"] == "EVIDENCE_MISSING" and f["severity"] == "error"]
    assert failed and words in failed[0]["message"], findings
    assert fails(entry)  # analyze exits 1
