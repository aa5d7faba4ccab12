"""Recognise what command printed a text, by its content alone (never by the file name)."""

from __future__ import annotations

import re

# The driver's lines in the forms the kernel-log rule's prefixes leave out (issue 35's corpus): a journal line
# without its host (``Feb 15 12:31:57.737822 kernel: nvidia-nvlink: ...``), NVRM naming its function without
# a colon after NVRM (``[ 343.06] NVRM kfspSendBootCommands_GH100: ...``), gpud's scan quoting the driver's
# line (``[XID found] (54 minutes ago) "NVRM: Xid ..."``) and the kernel's line about the nvidia driver and a device.
_DRIVER_LINES = (r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? kernel: (?:NVRM|nvidia[\w-]*)[: ]|"
                 r"^(?:\[[^\]\n]*\] ?)?NVRM [A-Za-z_]\w{2,80}: |^\[S?XID found\] |"
                 # the kernel's own line about the nvidia driver and a device ("nvidia 0000:2c:00.0: probe ...")
                 r"^(?:\[[^\]\n]*\] ?)?nvidia [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d: ")

# nccl-tests' own lines in the forms its first builds printed or a paste left (issue 35's corpus): "NCCL failure
# all_reduce.cu:95 '...'" and "Test CUDA failure common.cu:730 '...'" without a table, the header's nThread line or
# its column header without the "#" (or the first builds' "bytes N type op"), the units line, the out-of-bounds footer.
_NCCL_TESTS_OLD = (r"^(?:Test )?(?:NCCL|CUDA) failure [\w/.\-]+\.cu:\d+ '|^#?[ \t]*nThread \d+ nGpus \d+ |"
                   r"^#?[ \t]*(?:size|bytes)[ \t]+(?:count|N)[ \t]+type[ \t]+(?:redop|op)[ \t]|"
                   r"^#[ \t]+\(B\)[ \t]+\(elements\)|^#[ \t]*Out of bounds values[ \t]*:")

# nvidia-smi's outputs in the forms a paste leaves (issue 35's corpus): the Fabric block of -q grepped out at the
# line's start, nvidia-smi's NVML failure behind a logger's bracketed tags ("[task ...] [train] [nvidia-smi(stdout)]
# Failed to initialize NVML: ..."), and topo -m with its tabs turned into spaces.
_SMI_PASTED_FORMS = {
    "nvidia-smi-q": r"^Fabric[ \t]*\n[ \t]+State[ \t]+:",
    "nvidia-smi": r"^(?:\[[^\]\n]{1,80}\] ?){1,4}Failed to initialize NVML: ",
    "topo-matrix": r"^[ \t]+GPU0[ \t]+GPU1\b[^\n]*\nGPU0[ \t]+X[ \t]",
}

# Ordered: the first kind whose test matches wins, so the more specific tests come first.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nvls-tui-probe", re.compile(r"^@@nvls-tui(?:-[0-9A-Za-z]+)? begin \w+$", re.M)),
    ("nvidia-smi-q-xml", re.compile(r"<nvidia_smi_log\b|<!DOCTYPE nvidia_smi_log")),
    ("nccl-tests-json", re.compile(r'^\s*\{[\s\S]*"(?:results|nccl_version)"\s*:', re.M)),
    # nvidia-smi -mig's own sentences (whole, with a bus id): before the reset's, which its advice may follow.
    ("nvidia-smi-mig", re.compile(r"Warning: MIG mode is in pending (?:enable|disable) state for GPU [0-9A-Fa-f]{4,8}:|"
                                  r"(?:^|\]: )(?:Enabled|Disabled) MIG Mode for GPU [0-9A-Fa-f]{4,8}:", re.M)),
    # Anchored to nvidia-smi's own lines: prose that quotes them (a README, a ticket) is not a reset.
    # (Each also after a journal line's "ident[pid]: ", as a unit that ran the reset logged it.)
    ("nvidia-smi-reset", re.compile(r"(?:^|\]: )GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d was successfully "
                                    r"reset\.\s*$|(?:^|\]: )The following GPUs could not be reset:$|"
                                    # the summary line, also after the ellipsis of a hand-cut paste
                                    r"(?:^|\]: )(?:(?:\.\.\.|…|\[\.\.\.\])\s*)?\d+ devices? (?:is|are) currently being "
                                    r"used by one or more other", re.M)),
    # nccl-tests' own lines and NCCL's log lines (``host:pid:tid [dev] NCCL INFO``), never the words
    # alone: prose that quotes them (a README, a ticket) is not a run. The host field starts where a word
    # does ((?<!\S)): unanchored, \S+ was tried from every position of a long word (one 200 KB line: minutes).
    ("nccl-tests", re.compile(r"^# nccl-tests version|^# Collective test|^# nThread \d|^#\s+Avg bus bandwidth\s*:|"
                              r"Test NCCL failure common\.cu:\d|(?<!\S)\S+:\d+:\d+ \[\d+\] (?:\S+ )?(?:\(\w+\) )?NCCL (?:WARN|INFO) |"
                              r"pid \d+: Test failure common\.cu:\d|"
                              # NCCL's WARN line pasted without its host:pid:tid field: at a line's start, bare or
                              # after the rank in brackets, with or without NCCL's own source file:line
                              r"^(?:\[\d+\] )?(?:[\w/.\-]+\.(?:cc|cu|cpp|h):\d+ )?NCCL WARN |"
                              # torch's NCCL exception, its first line or NCCL's error name at a line's start
                              r"^torch\.distributed\.DistBackendError: NCCL error in: |"
                              r"^ncclUnhandledCudaError: Call to CUDA function failed\.|"
                              r"^Failed to bind NVLink SHARP \(NVLS\) Multicast memory of size \d+ : CUDA error \d+|"
                              # NVSHMEM's own error lines for its multicast (NVLS) memory: "FILE:LINE: non-zero
                              # status: 401 cuMemMap failed ..." and its multicast group mapping
                              r"\.cpp:\d+: non-zero status: \d+ (?:cuMemMap failed|Mapping mem size \d+ to MC group|"
                              r"Mapping multicast groups)",
                              re.M)),
    ("nccl-tests", re.compile(_NCCL_TESTS_OLD, re.M)),
    ("nvidia-smi-q", re.compile(_SMI_PASTED_FORMS["nvidia-smi-q"], re.M)),
    ("nvidia-smi-q", re.compile(r"=+NVSMI LOG=+|^\s*Driver Version\s+:|^\s+Fabric\s*\n\s+State\s+:", re.M)),
    # nvidia-smi's table, or its own words that it could not reach the driver (NVML's version mismatch, no driver).
    ("nvidia-smi", re.compile(r"NVIDIA-SMI \S+\s+Driver Version:|^Failed to initialize NVML: |"
                              r"^NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", re.M)),
    ("nvidia-smi", re.compile(_SMI_PASTED_FORMS["nvidia-smi"], re.M)),
    # lsof's table header, a header-less row of a /dev/nvidia* file (`lsof | grep nvidia`), or -F fields.
    ("lsof", re.compile(r"^\s*COMMAND\s+PID\s+(?:TID\s+)?(?:TASKCMD\s+)?USER\s+FD\s+TYPE\s+DEVICE\s+SIZE/OFF\s+NODE\s+NAME|"
                        r"^\S{1,30} +\d{1,10} +(?:\S+ +){1,3}(?:\d{1,9}[urw]\S?|mem|txt) +(?:CHR|REG) +[^\n]*?/dev/nvidia|"
                        r"^p\d{1,10}\n(?:[^\n]*\n){0,40}?n/dev/nvidia|^lsof: status error on /dev/nvidia", re.M)),
    ("fuser", re.compile(r"^\s+USER\s+PID ACCESS COMMAND|^/dev/nvidia\S*:\s+(?:\S+\s+\d+\s+[\w.]{4,5}\s|\d+\w*)",
                         re.M)),
    ("systemctl-status", re.compile(r"^[●×○↻*] \S+\.(?:service|timer)\b.* - |^\s+Loaded: \S+ \(", re.M)),
    # Journal lines of FM itself or of systemd about its unit, `--version`, or FM's own log file.
    ("fabricmanager-log", re.compile(r"(?:^|\s)nv-fabricmanager\[\d+\]:|\ssystemd\[\d+\]: .*nvidia-fabricmanager|"
                                     # FM's start script in the journal, and the GPU Operator driver container's
                                     # own line before it starts FM (its log, `kubectl logs`)
                                     r"\snvidia-fabricmanager-start\.sh\[\d+\]:|^Starting NVIDIA fabric manager daemon\b|"
                                     r"^Fabric Manager version is|"
                                     r"^\[\w{3} \d+ \d{4} [\d:]+\] \[(?:INFO|WARNING|ERROR)\]|"
                                     # FM's own version-mismatch words, however the line reached the paste
                                     r"fabric manager NVIDIA GPU driver interface version \d+\.\d", re.M)),
    ("nvidia-smi-help", re.compile(r"^List of valid properties to query for the switch", re.M)),
    ("lspci", re.compile(r"^(?:\S+ )*?(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.\d \w[\w ]*(?: \[[0-9a-f]{4}\])?: "
                         r"NVIDIA Corporation", re.M)),
    # Kernel lines by their shape: a journal/dmesg/kmsg prefix (or none), then the driver's own tag.
    # A journal line may carry the kernel's own "[seconds]" stamp after "kernel: " (syslog-era journals).
    ("kernel-log", re.compile(r"^(?:(?:\S+ +\d+ [\d:.]+ \S+ kernel: |\d{4}-\d\d-\d\dT\S+ \S+ kernel: )(?:\[[^\]]*\] ?)?|"
                              r"\[[^\]]*\] ?|\d+,\d+,\d+,[^;]*;)?(?:NVRM: |nvidia-nvswitch\d*: |nvidia(?:-nvlink|-modeset|-uvm)?: )",
                              re.M)),
    ("kernel-log", re.compile(_DRIVER_LINES, re.M)),
    # A header of dotted field names separated by ", " (no nested quantifiers: big CSVs are common).
    ("nvidia-smi-query-csv", re.compile(r"^(?:index|pci\.bus_id|name|uuid|pid|driver_version|timestamp), [\w.]"
                                        r"|^\d+, 0{4,8}:[0-9A-Fa-f]{2}:|^Field \"[\w.]+\" is not a valid field to query\.",
                                        re.M)),
    # nvidia-smi nvlink -e: a GPU line (its UUID left out by some releases), then its per-link counters; before
    # -s, whose link lines the same GPU line heads.
    ("nvlink-errors", re.compile(r"^GPU \d+: [^\n]+\n(?:\s*\n)*\s+Links? [\d,\- ]+: (?:[A-Za-z /]*Errors?: \d|No errors)",
                                 re.M)),
    # (The UUID as printed or as a paste redacted it; NVML's own line where no link of the GPU is up.)
    ("nvlink-status", re.compile(r"^GPU \d+: [^\n]+\(UUID: [^)\n]*\)\s*\n(?:\s+Link \d+:|NVML: Unable to retrieve "
                                 r"N[Vv][Ll]ink information as all links are inActive)", re.M)),
    # dcgmi's own box title and its key line, never prose about them.
    ("dcgmi-nvlink-errors", re.compile(r"^\| NVLINK Error Counts\s+\|$", re.M)),
    ("dcgmi-nvlink-status", re.compile(r"^\|  NvLink Link Status  \|$|^Key: Up=U, Down=D, Disabled=X", re.M)),
    ("dcgmi-diag", re.compile(r"^\|\s*Diagnostic\s+\|\s*Result\s+\||^\+-+\s+(?:Metadata|Deployment|Integration|Hardware|"
                              r"Stress|Plugins?)\s+-+\+", re.M)),
    ("topo-matrix", re.compile(r"^(?:\x1b\[[0-9;]*m)?\tGPU0\t|^GPU0\t\s*X\s", re.M)),
    ("topo-matrix", re.compile(_SMI_PASTED_FORMS["topo-matrix"], re.M)),
    ("nvml-fabric", re.compile(r"^\d+ v[123] \S+ \{'", re.M)),
    ("proc-stat", re.compile(r"^\d+ \(.+\) [RSDZTtWXxKWPI] -?\d+ -?\d+ -?\d+", re.M)),
    ("ps", re.compile(r"^\s*\d+\s+\d+\s+\S+\s+\w{3} \w{3} +\d+ [\d:]{8} \d{4}\s", re.M)),
)


# The kinds a paste may hold a run of, line by line (issue 35, item 1): a line of each says its kind by its
# own words, whatever wrapper is around it (journal prefix, dmesg stamp, mpirun tag), so no pattern is
# anchored to a line's start except where the kind's own line starts there. Ordered: the first wins (an
# NCCL line that quotes the driver is NCCL's). Every pattern is literal words or bounded classes: they also
# run over a whole text at once (fast on a 200 KB line, see above).
_LINE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nccl-tests", re.compile(r"\bNCCL (?:WARN|INFO|ERROR)\b|Test NCCL failure|^# nccl-tests version|^# Collective test|"
                              r"^#\s+Avg bus bandwidth\s*:|DistBackendError: NCCL error|ncclUnhandledCudaError|"
                              r"Failed to bind NVLink SHARP|non-zero status: \d+ (?:cuMemMap failed|Mapping)", re.M)),
    ("nvidia-smi-mig", re.compile(r"MIG mode is in pending (?:enable|disable) state for GPU|"
                                  r"(?:Enabled|Disabled) MIG Mode for GPU")),
    ("nvidia-smi-reset", re.compile(r"was successfully reset\.|could not be reset:|"
                                    r"\d+ devices? (?:is|are) currently being used by one or more other")),
    # The driver's tags where a kernel line has them: at the start, after a stamp or a journal's "kernel: "
    # (never a path's "/dev/nvidia-uvm: ", fuser's).
    ("kernel-log", re.compile(r"\bkernel: |(?:^|[\]>] ?|\s)(?:NVRM: |nvidia-nvswitch\d*: |nvidia(?:-nvlink|-modeset|-uvm)?: )",
                              re.M)),
    ("kernel-log", re.compile(_DRIVER_LINES, re.M)),
    # (systemd names FM's unit by its description too: "Starting NVIDIA fabric manager service...")
    ("fabricmanager-log", re.compile(r"\bnv-fabricmanager\b|\bnvidia-fabricmanager|^Fabric Manager version is|"
                                     r"(?i:\b(?:Starting|Started|Stopping|Stopped|Failed to start) [^\n]{0,80}?"
                                     r"fabric ?manager)|"
                                     r"^\[\w{3} \d+ \d{4} [\d:]+\] \[(?:INFO|WARNING|ERROR)\]|"
                                     r"fabric manager NVIDIA GPU driver interface version", re.M)),
    ("fuser", re.compile(r"^/dev/nvidia[\w-]*:\s|^\s+USER\s+PID ACCESS COMMAND", re.M)),
    ("lsof", re.compile(r"^COMMAND\s+PID\s+.*\bNAME\s*$|\bCHR\s+\d+,\d+\s+\S+\s+\d+\s+/dev/nvidia", re.M)),
)

LINE_KINDS = tuple(dict.fromkeys(kind for kind, _ in _LINE_RULES))
"""The kinds :func:`line_kind` names."""


def line_kind(line: str) -> str | None:
    """The kind of output one line belongs to (one of :data:`LINE_KINDS`), or None for prose and anything else."""
    for kind, pattern in _LINE_RULES:
        if pattern.search(line):
            return kind
    return None


def line_kinds_in(text: str) -> list[str]:
    """The :data:`LINE_KINDS` some line of ``text`` belongs to (one search per kind over the whole text)."""
    return list(dict.fromkeys(kind for kind, pattern in _LINE_RULES if pattern.search(text)))


def detect_kind(text: str) -> str:
    """The kind of output ``text`` is (a KIND of contract.md, or one of our extra kinds), or ``unknown``."""
    sample = text[:200_000]
    for kind, pattern in _RULES:
        if pattern.search(sample):
            return kind
    return "unknown"
