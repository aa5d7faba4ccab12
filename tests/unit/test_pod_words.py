"""A pod the cluster did not name is said by its uid once: ``pod uid f1b0f602-…``, never ``pod podf1b0f602-…``.

The cgroup names a pod's slice ``pod<uid>`` (kubepods-besteffort-pod<uid>.slice): the holder keeps that word, and
the detail line under the holders table and the describe screen put "pod " before it again (found by a new
operator's tmux pass, tenth session).
"""

from __future__ import annotations

from nvls_tui.console.widgets.node_text import holder_detail
from nvls_tui.model import Holder, HolderKind
from nvls_tui.views.describe import _owner

UID = "f1b0f602-6c1e-4b54-9a9d-2a4f1c4bd1aa"
POD = Holder(4001, "root", "/usr/bin/dcgm-exporter", HolderKind.DCGM_EXPORTER, ("/dev/nvidiactl",), pod=f"pod{UID}",
             start_time="Mon Dec  7 03:00:00 2026")


def test_the_holder_detail_says_the_pods_uid_once():
    line = holder_detail(POD).splitlines()[0]
    assert f"pod uid {UID}" in line and "pod pod" not in line


def test_the_describe_screen_says_the_pods_uid_once():
    assert _owner(POD) == f"pod uid {UID} (its name not read: no cluster)"
