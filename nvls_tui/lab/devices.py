"""How a lab node's processes hold its stand-in ``/dev/nvidia*`` files: standard library only.

The long-lived stand-ins (:mod:`nvls_tui.lab.daemons`: FM, DCGM, persistenced, kubelet's pods, a job's
``nvls-lab-hold``) start as a Python process of their own, each time their unit or pod starts; what they need
to hold a device lives here, apart from the simulator :mod:`nvls_tui.lab.tools` imports, so a holder's start
does not import it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator


@contextlib.contextmanager
def holding(paths: list[str], mapped: bool = False) -> Iterator[None]:
    """Keep ``paths`` open for the duration: a real process holding device files.

    Opened read-write, as CUDA and NVML open the devices (fuser's ``F``); with ``mapped``, the first
    page of each is mapped too, as the long-lived daemons map theirs (fuser's ``m``).
    """
    fds, maps = [], []
    try:
        for path in paths:
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDWR)
                fds.append(fd)
                if mapped:
                    maps.append(mmap.mmap(fd, mmap.PAGESIZE))
        yield
    finally:
        for area in maps:
            area.close()
        for fd in fds:
            os.close(fd)


def gpu_files() -> list[str]:
    """The GPU device files of this node, and the control file, as a CUDA program opens them."""
    names = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia") and n[6:].isdecimal())
    return ["/dev/nvidiactl", *(f"/dev/{n}" for n in names)]
