"""Issue 35's acceptance: no input that holds an error-level NVIDIA line is read as "nothing wrong, exit 0".

Every file of the corpus (tests/corpus/) and every shared capture the suite reads (/work/shared/fixtures, as
tests/unit/test_analyze_wrapped.py reads them) goes through the real ``nvls-tui analyze --json``. A file with an
error-level line from NVIDIA's stack (:func:`error_level_nvidia_line` says which) must end with a finding or a
non-zero exit. The definition here is the test's own, written from the driver's, Fabric Manager's, NCCL's and
nvidia-smi's own markers, not the product's :mod:`nvls_tui.parsers.unread`, so the two check each other.

The files that still fail are listed in :data:`KNOWN_GAPS`, each only while another helper's rows of
tests/corpus/KNOWN_MISREADS.md cover it; a gap that closes fails this test until its entry is deleted.
"""

from __future__ import annotations

import io
import json
import pathlib
import re
from contextlib import redirect_stdout

import pytest

from nvls_tui.cli import main

CORPUS = pathlib.Path(__file__).parents[1] / "corpus"
SHARED = pathlib.Path("/work/shared/fixtures")

# The driver's own prefix, and the words an NVRM line uses for a failure (an Xid/SXid line is one whatever it says).
_NVRM = re.compile(r"\bNVRM: ")
_NVRM_ERROR = re.compile(
    r"\bS?Xid\b|\bNV_ERR_[A-Z0-9_]+|\b(?:fail(?:ed|ure)?|error|fatal|timeout|timed out|cannot|unable|mismatch|not supported)\b",
    re.IGNORECASE)
# Fabric Manager's level tag ("[ERROR] [tid 1234] ...") and systemd's word that its unit failed to start, NCCL's warning level (NCCL has no ERROR level: its
# failures are WARN lines), nvidia-smi's NVML init failure, and CUDA's runtime error text as its API prints it.
_OTHER = re.compile(
    r"\[ERROR\] \[tid \d+\]|\bnvidia-fabricmanager(?:\.service)? failed\b|Failed to start .*Fabric ?Manager"
    r"|\bNCCL WARN\b|Failed to initialize NVML\b"
    r"|\bCUDA error: [a-z]|\bcuda(?:GetDeviceCount|Init|Malloc\w*)?\(\) (?:returned|failed)|\bCUDA_ERROR_[A-Z_]+\b"
    r"|\bCUDA failure \d+ '")
# The driver's banner and notices print at err level on a healthy boot: not failures (domain.md).
_NVRM_BENIGN = re.compile(r"loading NVIDIA UNIX|Persistence mode is deprecated|FBHUB Interrupt detected")


def error_level_nvidia_line(line: str) -> bool:
    """Whether ``line`` is NVIDIA's stack reporting a failure in its own words.

    Counted: an ``NVRM:`` line that names an Xid, an SXid, an ``NV_ERR_*`` status or a failure word (``not
    supported``: the driver refusing a GPU; the driver's banner and notices, printed at ``err`` level on a healthy
    boot, are not); Fabric Manager's ``[ERROR]`` level tag and systemd's word that its unit failed; NCCL's ``WARN`` level (NCCL reports its failures at WARN); nvidia-smi's ``Failed to initialize NVML``;
    CUDA's runtime error text (``CUDA error: ...``, ``CUDA_ERROR_*``, ``CUDA failure N '...'``).
    """
    if _NVRM.search(line) and _NVRM_ERROR.search(line) and not _NVRM_BENIGN.search(line):
        return True
    return bool(_OTHER.search(line))


def _inputs() -> dict[str, pathlib.Path]:
    found = {f"corpus/{p.relative_to(CORPUS).as_posix()}": p for p in CORPUS.rglob("*.txt")}
    found |= {f"shared/{p.relative_to(SHARED).as_posix()}": p
              for p in SHARED.rglob("*") if p.is_file() and p.name != "README.md"}
    return dict(sorted(found.items()))


INPUTS = _inputs()

# Files that still end exit 0 with no finding although they hold an error-level NVIDIA line, each covered by
# another helper's rows of tests/corpus/KNOWN_MISREADS.md (the apps/ and nccl/ rows: corpus-clients; the dcgm/,
# gpu-operator/, k8s/, persistenced/ and fabricmanager/ rows: corpus-services).
KNOWN_GAPS: frozenset[str] = frozenset()


def _silent(path: pathlib.Path) -> tuple[bool, list[str]]:
    """(whether analyze ends exit 0 with no finding, the error-level NVIDIA lines the file holds)."""
    text = path.read_text(errors="replace")
    marked = [ln.strip() for ln in text.splitlines() if not ln.startswith("# ") and error_level_nvidia_line(ln)]
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["analyze", "--json", str(path)])
    (entry,) = json.loads(out.getvalue())
    findings = list(entry["findings"]) + [f for p in entry.get("parts") or [] for f in p.get("findings") or []]
    return code == 0 and not findings, marked


def test_inputs_are_found():
    assert any(k.startswith("corpus/") for k in INPUTS) and any(k.startswith("shared/") for k in INPUTS)
    assert KNOWN_GAPS <= set(INPUTS), f"KNOWN_GAPS names files that do not exist: {KNOWN_GAPS - set(INPUTS)}"


@pytest.mark.parametrize("name", list(INPUTS))
def test_error_level_nvidia_text_is_never_read_as_nothing(name):
    silent, marked = _silent(INPUTS[name])
    if name in KNOWN_GAPS:
        assert marked and silent, f"{name} no longer reads as nothing: delete it from KNOWN_GAPS"
        return
    assert not (marked and silent), f"{name}: exit 0 with no finding, yet it holds {marked[:3]}"


@pytest.mark.parametrize(("line", "counted"), [
    ("[  5.1] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.", True),
    ("NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x65:1813)", True),
    ("NVRM: API mismatch: the client has the version 550.54.14, but", True),
    ("[Sep 12 10:00:01 2024] [ERROR] [tid 1234] failed to find the GPU(s)", True),
    ("host:1:2 [0] transport/nvls.cc:245 NCCL WARN Cuda failure 'initialization error'", True),
    ("Job for nvidia-fabricmanager.service failed because the control process exited with error code.", True),
    ("NVRM: installed in this system is not supported by the", True),
    ("Failed to initialize NVML: Driver/library version mismatch", True),
    ("RuntimeError: CUDA error: system not yet initialized", True),
    # A healthy H100's boot: the driver's banner at err level and its notices are not failures.
    ("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024", False),
    ("NVRM: Persistence mode is deprecated and will be removed in a future release.", False),
    ("host:1:2 NCCL INFO NET/IB : No device found.", False),
    ("r8169 0000:03:00.0 eth0: Link is Down", False),
])
def test_the_definition_counts_failures_only(line, counted):
    assert error_level_nvidia_line(line) is counted
