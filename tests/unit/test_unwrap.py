"""parsers.unwrap: each wrapper a paste arrives in, made by the real tool where it runs here.

dmesg forms come from util-linux ``dmesg --file`` over a file in the old syslog format; journal forms
from a real journal file that ``systemd-journal-remote`` writes from export-format entries, read back
with ``journalctl --file ... -o MODE``. The other forms (kubectl, launchers, torch, tickets) come from
public captures under tests/fixtures/wrapped/.
"""

from __future__ import annotations

import pathlib
import random
import shutil
import struct
import subprocess

import pytest

from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.detect import detect_kind
from nvls_tui.parsers.unwrap import unwrap

WRAPPED = pathlib.Path(__file__).parents[1] / "fixtures" / "wrapped"
JOURNAL_REMOTE = pathlib.Path("/lib/systemd/systemd-journal-remote")

XID = "NVRM: Xid (PCI:0000:1a:00): 79, pid=1234, GPU has fallen off the bus."
OUT_OF_SYNC = "NVRM: NVLink fabric state cached by the driver is out of sync"
SWITCH = "nvidia-nvswitch0: using MSI"
FM_OK = "Successfully configured all the available NVSwitches to route GPU NVLink traffic."
SYSLOG = f"<3>[  301.500000] {XID}\n<4>[  302.000100] {OUT_OF_SYNC}\n<6>[  303.250000] {SWITCH}\n"


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (scripts/system-deps.sh installs it)")


def dmesg_file(tmp_path: pathlib.Path, *args: str) -> str:
    _need("dmesg")
    log = tmp_path / "kern.log"
    log.write_text(SYSLOG)
    return subprocess.run(["dmesg", "--file", str(log), *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout


# ---- dmesg ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "forms", "kept"), [
    ((), ("dmesg",), True),                                  # "[  301.500000] NVRM: ..." is read as it is
    (("--time-format", "ctime"), ("dmesg-ctime",), True),    # "[Wed Dec  2 09:13:48 2026] ..." too
    (("--time-format", "iso"), ("dmesg-iso",), False),
    (("--time-format", "reltime"), ("dmesg-reltime",), False),
    (("--time-format", "delta"), ("dmesg-delta",), False),
    (("-x",), ("dmesg-x", "dmesg"), True),
    (("-x", "--time-format", "iso"), ("dmesg-x", "dmesg-iso"), False),
    (("-x", "--time-format", "delta"), ("dmesg-x", "dmesg-delta"), False),
])
def test_every_dmesg_time_format_and_x_is_read_to_the_driver_lines(tmp_path, args, forms, kept):
    printed = dmesg_file(tmp_path, *args)
    inside = unwrap(printed)
    assert inside.forms == forms
    lines = inside.text.splitlines()
    if kept:  # the stamp the kernel parser reads stays on the line
        assert [line.split("] ", 1)[1] for line in lines] == [XID, OUT_OF_SYNC, SWITCH]
    else:
        assert lines == [XID, OUT_OF_SYNC, SWITCH]
    assert all(line.time for line in inside.lines if line.text)  # each line keeps the time dmesg printed
    assert detect_kind(inside.text) == "kernel-log"


def test_dmesg_x_keeps_the_seconds_since_boot_as_the_lines_times(tmp_path):
    inside = unwrap(dmesg_file(tmp_path, "-x"))
    assert [line.time for line in inside.lines if line.text] == ["301.500000", "302.000100", "303.250000"]


def test_dmesg_raw_drops_the_priority_and_reads_the_plain_form(tmp_path):
    inside = unwrap(dmesg_file(tmp_path, "--raw"))
    assert inside.forms == ("dmesg-raw", "dmesg")
    assert inside.text.splitlines()[0] == f"[  301.500000] {XID}"


# ---- journalctl over a real journal file -------------------------------------------------------------

def _field(name: str, value: str) -> bytes:
    data = value.encode()
    if b"\n" in data:  # export format: a binary field is NAME \n little-endian length \n data
        return name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
    return name.encode() + b"=" + data + b"\n"


def _entry(i: int, fields: list[tuple[str, str]]) -> bytes:
    head = [("__REALTIME_TIMESTAMP", str(1764666828_500000 + i * 500_000)),
            ("__MONOTONIC_TIMESTAMP", str(301_500000 + i * 500_000)),
            ("_BOOT_ID", "0f3c1a2b4d5e6f708192a3b4c5d6e7f8")]
    return b"".join(_field(k, v) for k, v in head + fields) + b"\n"


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> pathlib.Path:
    """A real journal file: two kernel-transport NVRM entries (one of two lines) and one of FM's unit."""
    return write_journal(tmp_path_factory.mktemp("journal"))


def write_journal(folder: pathlib.Path) -> pathlib.Path:
    """:func:`journal`'s file, written under ``folder`` by systemd-journal-remote (skips without it)."""
    if not JOURNAL_REMOTE.exists():
        pytest.skip("systemd-journal-remote is not installed (scripts/system-deps.sh installs it)")
    _need("journalctl")
    export = folder / "in.export"
    kernel = [("_TRANSPORT", "kernel"), ("_HOSTNAME", "gpu05"), ("SYSLOG_IDENTIFIER", "kernel")]
    export.write_bytes(
        _entry(0, [*kernel, ("PRIORITY", "3"), ("MESSAGE", XID)])
        + _entry(1, [("_TRANSPORT", "stdout"), ("_HOSTNAME", "gpu05"), ("SYSLOG_IDENTIFIER", "nv-fabricmanager"),
                     ("_PID", "1120"), ("_SYSTEMD_UNIT", "nvidia-fabricmanager.service"), ("PRIORITY", "6"),
                     ("MESSAGE", FM_OK)])
        + _entry(2, [*kernel, ("PRIORITY", "4"), ("MESSAGE", f"{OUT_OF_SYNC}\nsecond line of the record")]))
    out = folder / "out.journal"
    subprocess.run([str(JOURNAL_REMOTE), "-o", str(out), str(export)], capture_output=True, check=True, timeout=60)
    return out


def journalctl(journal: pathlib.Path, *args: str) -> str:
    return subprocess.run(["journalctl", "--file", str(journal), "--no-pager", *args], capture_output=True,
                          text=True, check=True, timeout=30).stdout


@pytest.mark.parametrize(("mode", "form"), [
    ("short", "journal-short"),
    ("short-precise", "journal-short-precise"),
    ("short-iso", "journal-short-iso"),
    ("short-iso-precise", "journal-short-iso-precise"),
    ("short-monotonic", "journal-short-monotonic"),
    ("json", "journal-json"),
])
def test_every_journal_output_mode_names_the_host_and_keeps_the_times(journal, mode, form):
    inside = unwrap(journalctl(journal, "-o", mode))
    assert inside.forms == (form,)
    assert inside.hosts == ["gpu05"]
    assert inside.times is not None and inside.times[0] != inside.times[1]
    # Kernel lines alone (journalctl -k) read as a kernel log; FM's unit lines alone as FM's log.
    assert detect_kind(unwrap(journalctl(journal, "-o", mode, "_TRANSPORT=kernel")).text) == "kernel-log"
    assert detect_kind(unwrap(journalctl(journal, "-o", mode, "SYSLOG_IDENTIFIER=nv-fabricmanager")).text) \
        == "fabricmanager-log"


def test_a_records_further_line_keeps_its_records_host_and_time(journal):
    inside = unwrap(journalctl(journal, "-o", "short-monotonic", "_TRANSPORT=kernel"))
    last = [line for line in inside.lines if line.text.strip()][-1]
    assert last.text == "[  302.500000] second line of the record"
    assert (last.host, last.time) == ("gpu05", "302.500000")


def test_journal_json_becomes_short_iso_lines_in_utc(journal):
    inside = unwrap(journalctl(journal, "-o", "json", "_TRANSPORT=kernel"))
    assert inside.text.splitlines()[0] == f"2025-12-02T09:13:48.500000+0000 gpu05 kernel: {XID}"


def test_journal_json_message_as_an_array_of_bytes_is_decoded():
    # journalctl -o json prints a MESSAGE that is not valid UTF-8 as an array of byte values.
    record = ('{"__REALTIME_TIMESTAMP":"1764666828500000","_HOSTNAME":"gpu05","SYSLOG_IDENTIFIER":"kernel",'
              '"_TRANSPORT":"kernel","MESSAGE":[' + ",".join(str(b) for b in OUT_OF_SYNC.encode() + b" \xff") + "]}")
    inside = unwrap(record + "\n")
    assert inside.forms == ("journal-json",)
    assert inside.text.startswith(f"2025-12-02T09:13:48.500000+0000 gpu05 kernel: {OUT_OF_SYNC} \ufffd")


def test_no_hostname_gives_the_kernel_message_and_the_units_tag(journal):
    inside = unwrap(journalctl(journal, "-o", "short", "--no-hostname"))
    assert inside.forms == ("journal-short",) and inside.hosts == []
    assert inside.text.splitlines()[:2] == [XID, f"nv-fabricmanager[1120]: {FM_OK}"]
    assert inside.lines[0].time is not None


def test_journal_cat_is_the_bare_messages_and_no_wrapper(journal):
    printed = journalctl(journal, "-o", "cat", "_TRANSPORT=kernel")
    inside = unwrap(printed)
    assert inside.forms == () and inside.text == printed
    assert detect_kind(inside.text) == "kernel-log"


def test_a_quoted_journal_is_read_inside_both(journal):
    printed = journalctl(journal, "-o", "short-iso", "_TRANSPORT=kernel")
    inside = unwrap("".join(f"> {line}\n" for line in printed.splitlines()))
    assert inside.forms == ("quote", "journal-short-iso") and inside.hosts == ["gpu05"]


def test_ansi_colours_and_crlf_are_dropped_and_are_no_form(journal):
    coloured = subprocess.run(["journalctl", "--file", str(journal), "--no-pager", "-o", "short", "_TRANSPORT=kernel"],
                              capture_output=True, text=True, check=True, timeout=30,
                              env={"SYSTEMD_COLORS": "1", "PATH": "/usr/bin:/bin"}).stdout
    assert "\x1b[" in coloured  # journalctl coloured the error-priority line
    inside = unwrap(coloured.replace("\n", "\r\n"))
    assert inside.forms == ("journal-short",)
    assert "\x1b" not in inside.text and "\r" not in inside.text
    assert inside.text.splitlines()[0].endswith(XID)


# ---- public captures --------------------------------------------------------------------------------

def _fixture(name: str):
    return unwrap(strip_fixture_header((WRAPPED / name).read_text()))


def test_torch_rank_tags_are_read_and_name_the_rank():
    inside = _fixture("torch-rank-nccl-invalid-argument-nccl-1410.txt")
    assert inside.forms == ("torch-rank",) and inside.ranks == [7]
    assert inside.text.splitlines()[-1] == "Cuda failure 1 'invalid argument'"


def test_launcher_host_tags_are_read_and_name_the_host():
    inside = _fixture("host-tags-nccl-initialization-error-nccl-1029.txt")
    assert inside.forms == ("host-tags",) and inside.hosts == ["rdma-test-gpu-worker-1"]
    assert inside.text.splitlines()[-1].startswith("rdma-test-gpu-worker-1:2921:4504 [7] NCCL INFO")


def test_mpirun_tag_output_under_a_common_indent_names_the_ranks():
    inside = _fixture("mpirun-tag-output-nccl-init-aws-k8s-tester-464.txt")
    assert inside.forms == ("indent", "mpirun") and inside.ranks == [0, 1]
    assert inside.text.splitlines()[0] == "multi-node-nccl-test-worker-0:22:28 [0] NCCL INFO Using network Socket"


def test_kubectl_prefix_names_pod_and_container():
    inside = _fixture("kubectl-prefix-nginx-kubernetes-124732.txt")
    assert inside.forms == ("kubectl-prefix",)
    assert (inside.pods, inside.containers) == (["y-844fbc9777-vhl79"], ["nginx"])
    assert inside.text.splitlines()[-1] == "2024/03/07 21:10:16 [notice] 1#1: nginx/1.25.4"


def test_kubectl_prefix_over_timestamps_is_read_in_two_layers():
    # The order kubectl prints them: --prefix first, then --timestamps' RFC 3339 stamp with nanoseconds.
    pasted = "".join(f"[pod/nccl-worker-0/nccl] 2026-06-23T15:45:0{i}.123456789Z {line}\n"
                     for i, line in enumerate([XID, OUT_OF_SYNC]))
    inside = unwrap(pasted)
    assert inside.forms == ("kubectl-prefix", "kubectl-timestamps")
    assert inside.text.splitlines() == [XID, OUT_OF_SYNC]
    assert inside.times == ("2026-06-23T15:45:00.123456789Z", "2026-06-23T15:45:01.123456789Z")


def test_quoted_dmesg_ctime_is_read_inside_the_quote():
    inside = _fixture("quoted-dmesg-ctime-xid-gpud-46.txt")
    assert inside.forms == ("quote", "dmesg-ctime")
    assert inside.text.splitlines()[1].startswith("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13")


def test_a_journal_kernel_tag_without_time_and_host_is_read():
    inside = _fixture("kernel-tag-xid-45-open-gpu-kernel-modules-1150.txt")
    assert inside.forms == ("kernel-tag",)
    assert inside.text.splitlines()[0].startswith("NVRM: Xid (PCI:0000:dc:00): 45")


def test_a_json_loggers_line_with_escaped_newlines_is_split_into_its_lines():
    line = '{"level":"error","msg":"' + "\\n".join([XID, OUT_OF_SYNC, SWITCH]) + '\\n"}'
    inside = unwrap(line + "\n")
    assert inside.forms == ("escaped-newlines",)
    assert inside.text.splitlines() == [XID, OUT_OF_SYNC, SWITCH]


def test_line_numbers_from_a_ticket_are_dropped_only_when_they_count_up():
    numbered = "".join(f"{n:>4}  {text}\n" for n, text in enumerate([XID, OUT_OF_SYNC, SWITCH], start=17))
    assert unwrap(numbered).text.splitlines() == [XID, OUT_OF_SYNC, SWITCH]
    pids = "  560   1 root python\n  812   1 root python\n 1400   1 root nvidia-smi\n"
    assert unwrap(pids).forms == ()  # ps' PIDs do not count up by one: not line numbers


def test_a_commented_paste_is_read_but_an_nccl_tests_header_is_left_alone():
    assert unwrap("".join(f"#  {t}\n" for t in [XID, OUT_OF_SYNC])).text.splitlines() == [f" {XID}", f" {OUT_OF_SYNC}"]
    header = "# nThread 1 nGpus 8 minBytes 8 maxBytes 128M\n#\n# Using devices\n#  Rank  0 Group  0 Pid 1 on a\n"
    assert unwrap(header).forms == ()


@pytest.mark.parametrize("prose", ["README.md", "docs/design.md", "docs/contract.md", "docs/reference.md",
                                   "docs/operating.md"])
def test_prose_that_quotes_log_lines_has_no_wrapper(prose):
    text = (pathlib.Path(__file__).parents[2] / prose).read_text()
    assert unwrap(text).forms == ()


def test_one_word_per_line_before_a_colon_is_not_a_node_set():
    assert unwrap("Note: one\nWarning: two\nHint: three\nCause: four\n").forms == ()


def test_srun_labels_name_the_ranks():
    pairs = [(3, XID), (0, OUT_OF_SYNC), (3, SWITCH), (0, XID), (3, OUT_OF_SYNC), (0, SWITCH)]
    labelled = "".join(f"{rank}: {text}\n" for rank, text in pairs)
    inside = unwrap(labelled)
    assert inside.forms == ("srun-label",) and inside.ranks == [0, 3]
    assert inside.text.splitlines() == [text for _, text in pairs]


def test_a_layer_most_lines_cannot_carry_any_more_is_given_up_where_that_is_known():
    """``_mostly`` stops reading once even the lines still unread, all carrying, could not make most: a paste
    of 1,000 lines no layer carries costs each of the ~20 layers tried ~200 looks, not 1,000 (the paste
    tests' reads spent most of their time there)."""
    from nvls_tui.parsers.unwrap import _mostly

    looked: list[str] = []
    assert not _mostly(["plain text"] * 1000, lambda text: looked.append(text) or False)
    assert len(looked) == 201  # the 201st miss leaves 799 unread: 799 < 80 % of 1,000


def test_giving_up_early_reads_as_reading_every_line():
    from nvls_tui.parsers.unwrap import MOST, _mostly

    rng = random.Random(37)
    for _ in range(5_000):
        lines = [rng.choice(["x", "", " ", "y"]) for _ in range(rng.randint(0, 30))]
        nonblank = [line for line in lines if line.strip()]
        carried = sum(line == "x" for line in nonblank)
        assert _mostly(lines, lambda text: text == "x") == (carried > 0 and carried >= MOST * len(nonblank)), lines
