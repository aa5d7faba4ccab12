"""``lsof`` of /dev/nvidia* as a holders source, read from the real ``/usr/bin/lsof`` and checked
against the real ``fuser -v`` on the same processes.

Only the device files are stand-ins (there is no GPU here): plain files on a private tmpfs ``/dev`` in
a mount namespace of the test's own, which real processes open and map as a CUDA process, a
persistence daemon and a monitoring loop do. lsof, fuser, the PIDs, the fds and the mappings are real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.model import HolderKind
from nvls_tui.parsers.detect import detect_kind
from nvls_tui.parsers.fuser import parse_fuser_v
from nvls_tui.parsers.holders import classify
from nvls_tui.parsers.lsof import parse_lsof

LSOF, FUSER, UNSHARE = shutil.which("lsof"), shutil.which("fuser"), shutil.which("unshare")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (LSOF and FUSER and UNSHARE),
    reason="needs root (a private /dev in a mount namespace), lsof, fuser and unshare",
)

# Inside a private mount namespace: a tmpfs /dev with stand-in device files, three holders, then the
# real tools over them. The holders are named by their executable (a symlink to sleep/python), which is
# what the kernel's comm, so lsof's COMMAND and fuser's, is made of.
SCRIPT = r"""
set -e
out=$1; python=$2; bin=$out/bin; mkdir -p "$bin"
mount -t tmpfs tmpfs /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5
for f in nvidia0 nvidia1 nvidiactl nvidia-uvm; do head -c 8192 /dev/zero > /dev/$f; done
head -c 8192 /dev/zero > "$out/libnvidia-ml.so.1"
ln -s "$(command -v sleep)" "$bin/nvidia-persistenced"
ln -s "$(command -v sleep)" "$bin/gpu watch"
ln -s "$python" "$bin/train"
# persistenced: three devices read-write, and nvidia0 a second time read-only (two fds, one device)
bash -c 'exec 3<>/dev/nvidia0 4<>/dev/nvidia1 5<>/dev/nvidiactl 6</dev/nvidia0; exec "$0" infinity' \
    "$bin/nvidia-persistenced" &
echo $! > "$out/pid.persistenced"
# a CUDA-like process: maps nvidia-uvm and an NVIDIA library, reads nvidia0
"$bin/train" -c '
import mmap, os, sys, time
fd = os.open("/dev/nvidia-uvm", os.O_RDWR); dev = mmap.mmap(fd, 4096)
lib = os.open(sys.argv[1], os.O_RDONLY); libmap = mmap.mmap(lib, 4096, prot=mmap.PROT_READ); os.close(lib)
ro = os.open("/dev/nvidia0", os.O_RDONLY)
open(sys.argv[2], "w").write("ready")
time.sleep(1e9)' "$out/libnvidia-ml.so.1" "$out/ready.train" &
echo $! > "$out/pid.train"
# a monitoring loop: one device read-only, a space in its name
bash -c 'exec 3</dev/nvidia1; exec "$0" infinity' "$bin/gpu watch" &
echo $! > "$out/pid.watch"
for _ in $(seq 300); do [ -e "$out/ready.train" ] && break; sleep 0.1; done
[ -e "$out/ready.train" ] || { echo "the CUDA-like holder did not start" >&2; exit 1; }
sleep 0.3
pids=$(cat "$out"/pid.* | paste -sd,)
lsof /dev/nvidia* > "$out/lsof.txt" 2>&1 || true
lsof -F pcuLfan /dev/nvidia* > "$out/lsof-F.txt" 2>&1 || true
lsof -p "$pids" 2>/dev/null | grep nvidia > "$out/lsof-grep.txt" || true
lsof /dev/nvidia-nothing > "$out/lsof-missing.txt" 2>&1 || true
fuser -v /dev/nvidia* > "$out/fuser.txt" 2>&1 || true
kill $(cat "$out"/pid.*)
wait 2>/dev/null || true
"""


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("lsof")
    done = subprocess.run([UNSHARE, "-m", "--propagation", "private", "bash", "-c", SCRIPT, "script", str(out),
                           os.path.realpath(sys.executable)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pids = {name.split(".", 1)[1]: int((out / name).read_text()) for name in os.listdir(out)
            if name.startswith("pid.")}
    texts = {name: (out / name).read_text() for name in os.listdir(out) if name.endswith(".txt")}
    return {"pids": pids, **texts}


def by_pid(holders) -> dict[int, tuple[str, str, set[str]]]:
    return {h.pid: (h.access, h.command, set(h.devices)) for h in holders}


def test_one_holder_per_pid_with_every_device_it_holds(captured):
    pids = captured["pids"]
    parsed = parse_lsof(captured["lsof.txt"])
    got = by_pid(parsed.value)
    assert got == {
        pids["persistenced"]: ("F....", "nvidia-pe", {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"}),
        pids["train"]: ("F...m", "train", {"/dev/nvidia-uvm", "/dev/nvidia0"}),
        pids["watch"]: ("f....", "gpu wa", {"/dev/nvidia1"}),  # lsof printed "gpu\\x20wa": 9 characters
    }
    assert all(h.user == "root" for h in parsed.value)


def test_lsof_and_fuser_name_the_same_holders_devices_and_access(captured):
    lsof = by_pid(parse_lsof(captured["lsof.txt"]).value)
    fuser = by_pid(parse_fuser_v(captured["fuser.txt"]).value)
    assert set(lsof) == set(fuser) == set(captured["pids"].values())
    for pid, (access, command, devices) in lsof.items():
        f_access, f_command, f_devices = fuser[pid]
        assert (access, devices) == (f_access, f_devices)
        # lsof cuts COMMAND to 9 characters after escaping a space as \\x20 ("gpu\\x20wa"); fuser prints comm's 15
        assert f_command.startswith(command) and len(command) <= 9


def test_field_output_reads_the_same_holders_with_the_whole_comm(captured):
    fields = parse_lsof(captured["lsof-F.txt"])
    fuser = by_pid(parse_fuser_v(captured["fuser.txt"]).value)
    assert by_pid(fields.value) == fuser  # -F's c field is the kernel's comm, as fuser prints it
    assert {h.user for h in fields.value} == {"root"}  # the L field (login) over the u field (uid)


def test_a_cut_command_still_names_its_kind(captured):
    persistenced = next(h for h in parse_lsof(captured["lsof.txt"]).value if h.pid == captured["pids"]["persistenced"])
    assert classify(persistenced.command) is HolderKind.PERSISTENCED


def test_a_mapped_nvidia_library_is_not_a_device_held(captured):
    text = captured["lsof-grep.txt"]
    assert "libnvidia-ml.so.1" in text and not text.startswith("COMMAND")  # grep dropped the header
    assert detect_kind(text) == "lsof"
    parsed = parse_lsof(text)
    assert by_pid(parsed.value) == by_pid(parse_lsof(captured["lsof.txt"]).value)
    assert any("no /dev/nvidia* file" in w for w in parsed.warnings)


def test_lsof_s_own_complaints_are_warnings_not_rows(captured):
    parsed = parse_lsof(captured["lsof.txt"])
    # The private /dev has no /dev/shm or /dev/pts: the real lsof says so, once per file system.
    assert any(w.startswith("lsof: WARNING: can't stat()") for w in parsed.warnings)
    assert not any(w.startswith("unreadable") for w in parsed.warnings)


def test_analyze_reads_lsof_as_holders(captured):
    entry = analyze_text(captured["lsof.txt"], "lsof.txt")
    assert entry["kind"] == "lsof"
    holders = {h["pid"]: h for h in entry["data"]["holders"]}
    assert holders[captured["pids"]["train"]]["devices"] == ["/dev/nvidia-uvm", "/dev/nvidia0"]
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("HOLDERS_PRESENT", "info")]
    assert entry["findings"][0]["message"].startswith("3 processes hold /dev/nvidia*")
    json.dumps(entry)
    assert analyze_text(captured["lsof-F.txt"], "f.txt")["kind"] == "lsof"


def test_lsof_that_could_not_stat_the_devices_is_unknown_not_no_holder(captured):
    text = captured["lsof-missing.txt"]
    assert "lsof: status error on /dev/nvidia-nothing: No such file or directory" in text
    entry = analyze_text(text, "missing.txt")
    assert entry["kind"] == "lsof"
    assert entry["data"]["holders"] == []
    assert [(f["code"], f["severity"], f["section"]) for f in entry["findings"]] == [
        ("EVIDENCE_MISSING", "warning", "holders")]


def test_prose_that_mentions_lsof_is_not_lsof():
    prose = "We ran lsof on /dev/nvidia0 and saw nvidia-pe holding it; COMMAND was cut.\n"
    assert detect_kind(prose) != "lsof"
    assert parse_lsof(prose).value == ()
    assert parse_lsof(prose).warnings  # the line is not lsof's: said, not dropped silently


def test_not_text_is_a_warning_not_a_raise():
    assert parse_lsof(None).warnings == ("Expected text, got NoneType.",)  # type: ignore[arg-type]

