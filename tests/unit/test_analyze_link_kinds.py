"""Issue 35 item 4: the NVLink views operators paste (``nvidia-smi nvlink -s``/``-e``, ``dcgmi nvlink``, ``dcgmi
diag``) are read into findings, not only recognised: a link down is an error naming the GPU (or switch) and its
links, non-zero NVLink error counters a warning. Real public samples under tests/fixtures/public/."""

from __future__ import annotations

import pathlib

from nvls_tui.analyze.captured import analyze_text

PUBLIC = pathlib.Path(__file__).parents[1] / "fixtures" / "public"


def _read(rel: str) -> dict:
    return analyze_text((PUBLIC / rel).read_text(), rel)


def _codes(entry: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in entry["findings"]]


def _with_inactive(links: dict[int, str]) -> str:
    """The public H100 HGX ``nvlink --status`` sample with some links printed as nvidia-smi prints a link that is
    not up (``<inactive>``)."""
    text = (PUBLIC / "nvlink-topo/h100-hgx-nvlink-status-gpu0-1.txt").read_text()
    out = []
    gpu = None
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpu = int(line.split()[1].rstrip(":"))
        stripped = line.strip()
        if gpu == 1 and stripped.startswith("Link ") and int(stripped.split()[1].rstrip(":")) in links:
            line = line[: line.index("Link")] + f"Link {stripped.split()[1]} {links[int(stripped.split()[1].rstrip(':'))]}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_nvlink_status_all_active_gives_no_finding():
    entry = _read("nvlink-topo/h100-hgx-nvlink-status-gpu0-1.txt")
    assert entry["kind"] == "nvlink-status"
    assert entry["findings"] == []


def test_nvlink_status_inactive_links_are_an_error_naming_the_gpu_and_links():
    entry = analyze_text(_with_inactive({3: "<inactive>", 7: "<inactive>"}), "s.txt")
    assert entry["kind"] == "nvlink-status"
    assert _codes(entry) == [("NVLINK_DOWN", "error")]
    message = entry["findings"][0]["message"]
    assert "GPU 1" in message and "links 3, 7" in message and "16 of 18" in message
    assert "GPU 0" not in message
    assert entry["data"]["gpus"][1]["inactive_links"] == [3, 7]


def test_nvlink_errors_is_its_own_kind_with_counters_not_link_status():
    entry = _read("nvlink-topo/nvlink-errors-h100-zero-ml-engineering.txt")
    assert entry["kind"] == "nvlink-errors"
    gpu = entry["data"]["gpus"][0]
    assert gpu["index"] == 0 and gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert [link["link"] for link in gpu["links"]] == [0, 1, 17]
    assert gpu["links"][2]["counters"] == {"Replay Errors": 0, "Recovery Errors": 0, "CRC Errors": 0}
    assert entry["findings"] == []


def test_nvlink_errors_without_uuid_and_tab_indent_is_read():
    entry = _read("nvlink-topo/nvlink-errors-gb300-zero-srt-slurm.txt")
    assert entry["kind"] == "nvlink-errors"
    assert entry["data"]["gpus"][0]["name"] == "NVIDIA GB300"
    assert entry["data"]["gpus"][0]["links"][0]["counters"]["CRC Errors"] == 0
    assert entry["findings"] == []


def test_nonzero_replay_and_crc_counters_are_a_warning_naming_gpu_link_and_counter():
    entry = _read("nvlink-topo/nvlink-errors-v100-replay-crc.txt")
    assert entry["kind"] == "nvlink-errors"
    assert _codes(entry) == [("NVLINK_ERRORS", "warning")]
    message = entry["findings"][0]["message"]
    assert "GPU 0 link 3: Replay Errors 2353" in message
    assert "GPU 2 link 0: Replay Errors 148, CRC Errors 65535" in message


def test_dcgmi_link_status_every_link_down_is_an_error_per_gpu():
    entry = _read("dcgm/dcgmi-nvlink-link-status-all-down.txt")
    assert entry["kind"] == "dcgmi-nvlink-status"
    assert [g["id"] for g in entry["data"]["gpus"]] == [0, 1]
    assert entry["data"]["gpus"][0]["down"] == list(range(18))
    assert _codes(entry) == [("NVLINK_DOWN", "error")]
    message = entry["findings"][0]["message"]
    assert "GPU 0: links 0-17 down" in message and "GPU 1: links 0-17 down" in message


def test_dcgmi_link_status_all_up_is_quiet():
    entry = _read("dcgm/dcgmi-nvlink-link-status-h100-all-up.txt")
    assert entry["kind"] == "dcgmi-nvlink-status"
    assert len(entry["data"]["gpus"]) == 8
    assert entry["findings"] == []


def test_dcgmi_link_status_reads_nvswitch_rows():
    text = ("+----------------------+\n|  NvLink Link Status  |\n+----------------------+\nGPUs:\n    gpuId 0:\n"
            "        U U U U\nNvSwitches:\n    physicalId 8:\n        U D U X _ U\n\n"
            "Key: Up=U, Down=D, Disabled=X, Not Supported=_\n")
    entry = analyze_text(text, "s.txt")
    assert entry["data"]["nvswitches"][0] == {"id": 8, "down": [1], "disabled": [3], "up": 3}
    assert "NVSwitch 8: link 1 down" in entry["findings"][0]["message"]


def test_dcgmi_diag_nvlink_down_warnings_are_an_error_naming_the_links():
    entry = _read("dcgm/dcgmi-diag-pcie-nvlink-down-a100.txt")
    assert entry["kind"] == "dcgmi-diag"
    assert entry["data"]["results"] == [{"test": "PCIe", "result": "Fail - All"}]
    assert _codes(entry) == [("NVLINK_DOWN", "error")]
    assert "GPU 0: links 0-4 down" in entry["findings"][0]["message"]
    assert "PCIe" in entry["findings"][0]["message"]


# dcgmi nvlink -e -g N: no public capture was found. The text below is laid out as DCGM's own code prints it
# (NVIDIA/DCGM dcgmi/Nvlink.cpp: header "NVLINK Error Counts" and "GPU N", one "Link N" section with the four
# counters as children; dcgmi/DcgmiOutput.cpp's tree: "| " label " | " value " |", children prefixed "-> ", an
# "=" rule under the header), not a capture: the shape, not the values, is what it tests.
DCGMI_ERRORS = """\
+------------------------------+-------------------------------------------------+
| NVLINK Error Counts                                                            |
| GPU 3                                                                          |
+==============================+=================================================+
| Link 0                       |                                                 |
| -> CRC FLIT Error            | 0                                               |
| -> CRC Data Error            | 0                                               |
| -> Replay Error              | 0                                               |
| -> Recovery Error            | 0                                               |
| Link 1                       |                                                 |
| -> CRC FLIT Error            | 12                                              |
| -> CRC Data Error            | 0                                               |
| -> Replay Error              | 4                                               |
| -> Recovery Error            | 0                                               |
+------------------------------+-------------------------------------------------+
"""


def test_dcgmi_nvlink_error_counts_are_their_own_kind_and_nonzero_counters_a_warning():
    entry = analyze_text(DCGMI_ERRORS, "e.txt")
    assert entry["kind"] == "dcgmi-nvlink-errors"
    gpu = entry["data"]["gpus"][0]
    assert gpu["index"] == 3 and [x["link"] for x in gpu["links"]] == [0, 1]
    assert gpu["links"][1]["counters"] == {"CRC FLIT Error": 12, "CRC Data Error": 0, "Replay Error": 4,
                                           "Recovery Error": 0}
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("NVLINK_ERRORS", "warning")]
    assert "GPU 3 link 1: CRC FLIT Error 12, Replay Error 4" in entry["findings"][0]["message"]


def test_dcgmi_nvlink_error_counts_all_zero_are_quiet():
    quiet = DCGMI_ERRORS.replace("| 12 ", "| 0  ").replace("| 4  ", "| 0  ")
    entry = analyze_text(quiet, "e.txt")
    assert entry["kind"] == "dcgmi-nvlink-errors" and entry["findings"] == []


def test_nvlink_status_with_a_redacted_uuid_and_inactive_links_is_read():
    entry = _read("nvlink-topo/nvlink-status-v100-two-inactive-azhpc.txt")
    assert entry["kind"] == "nvlink-status"
    assert _codes(entry) == [("NVLINK_DOWN", "error")]
    assert "GPU 3: links 3, 5 inactive (4 of 6 active)" in entry["findings"][0]["message"]


def test_nvml_saying_all_links_are_inactive_is_nvlink_down_for_that_gpu():
    entry = _read("nvlink-topo/nvlink-status-b200-all-inactive-gpud.txt")
    assert entry["kind"] == "nvlink-status"
    assert entry["data"]["gpus"][0]["all_inactive"] is True
    assert _codes(entry) == [("NVLINK_DOWN", "error")]
    assert "GPU 2: all links inactive" in entry["findings"][0]["message"]
