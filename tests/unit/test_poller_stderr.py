"""The poller process's stderr (a file the console holds, to quote the last line when the process ends)
stays under a cap however much the process writes, keeping the newest lines; the file is anonymous and
is closed when the console stops the process, so nothing of it is left on disk.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time

from nvls_tui.poll.client import PollerClient
from nvls_tui.poller.process import STDERR_CAP, PollerSpec, trim_file
from nvls_tui.settings import Settings


def test_trim_keeps_the_newest_whole_lines_and_says_how_much_it_dropped(tmp_path):
    path = tmp_path / "stderr"
    with path.open("w+b") as f:
        f.write(b"".join(b"line %07d\n" % n for n in range(200_000)))  # 2.6 MB
        size = f.tell()
        dropped = trim_file(f.fileno(), cap=1 << 20, keep=1000)
        f.write(b"after\n")  # the offset is at the new end: later writes follow the kept tail
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0] == f"[nvls-tui poller: {dropped} earlier bytes of this log dropped]"
    assert lines[1].startswith("line ") and len(lines[1]) == len("line 0000000")  # a whole line, not a cut one
    assert lines[-2:] == ["line 0199999", "after"]
    assert size - dropped == sum(len(line) + 1 for line in lines[1:-1]) and len(text) < 1100


def test_trim_leaves_a_file_under_the_cap_and_a_pipe_alone(tmp_path):
    path = tmp_path / "small"
    path.write_bytes(b"one line\n")
    with path.open("r+b") as f:
        assert trim_file(f.fileno(), cap=100, keep=10) == 0
    assert path.read_bytes() == b"one line\n"
    r, w = os.pipe()
    try:
        os.write(w, b"x" * 1000)
        assert trim_file(w, cap=10, keep=5) == 0  # a pipe's size is 0 to fstat, and it cannot be cut
    finally:
        os.close(r)
        os.close(w)


def test_a_noisy_poller_process_keeps_its_stderr_under_the_cap_and_nothing_is_left_when_stopped(tmp_path,
                                                                                                  monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # TMPDIR is read again: a named temp file would show up in tmp_path
    try:
        asyncio.run(_noisy(tmp_path))
    finally:
        tempfile.tempdir = None


async def _noisy(tmp_path) -> None:
    settings = Settings(command="console", targets=("sim:healthy/hgx01",))
    client = PollerClient(PollerSpec(settings, interval=None, poll_timeout=30.0), module="tests.noisy_poller",
                          python=sys.executable)
    got = []
    await client.start(got.extend)
    assert client._stderr is not None
    fd = client._stderr.fileno()
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert got and got[0].state.host == "hgx01"  # it polls as any poller process does
    await asyncio.sleep(2.5)  # the periodic check catches what went straight to fd 2
    size = os.fstat(fd).st_size
    assert size <= STDERR_CAP, size  # it wrote 3 MiB
    kept = os.pread(fd, size, 0).decode()
    assert kept.rstrip().endswith("the last line written straight to fd 2")
    assert "earlier bytes of this log dropped" in kept
    assert os.listdir(tmp_path) == []  # the file never had a name
    await client.close()
    assert client._stderr.closed
