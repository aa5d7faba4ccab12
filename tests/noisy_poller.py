"""A poller process (the real ``nvls_tui.poller.process.main``) whose nodes make it write ~3 MiB to stderr
as it builds them: half through ``sys.stderr`` (Python's own writes: a log line, a warning, a traceback),
half straight to file descriptor 2 (what a C library or faulthandler writes). For tests/unit/test_poller_stderr.py.
"""

from __future__ import annotations

import os
import sys

from nvls_tui.poller import process as poller_process

LINE = "noise " * 20 + "\n"  # 121 bytes
BYTES = 3 << 20
_build = poller_process.build


def noisy_build(spec):
    for n in range(BYTES // 2 // len(LINE)):
        sys.stderr.write(f"{n:08d} {LINE}")
    chunk = (f"fd2 {LINE}" * 1000).encode()
    for _ in range(BYTES // 2 // len(chunk)):
        os.write(2, chunk)
    os.write(2, b"the last line written straight to fd 2\n")
    return _build(spec)


poller_process.build = noisy_build

if __name__ == "__main__":
    sys.exit(poller_process.main())
