"""The suite's children get Ctrl-C whichever way the suite was started (tests/conftest.py).

A suite run as a background job of a shell without job control inherits SIGINT ignored; every child a test
started inherited it too, and the tests that interrupt a child (``check --watch``, ``check`` while waiting, an
interrupted repair) waited out the child's timeout and failed in whichever worker no in-process repair had
reset the handler first.
"""

from __future__ import annotations

import subprocess
import sys


def test_a_child_process_of_a_test_takes_ctrl_c():
    shown = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert "default_int_handler" in shown, shown
