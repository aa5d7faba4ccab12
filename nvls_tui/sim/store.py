"""A simulated node kept in a JSON file, for the shims: one command per process, one lock for all.

Every shim invocation takes an exclusive ``flock`` on ``DIR/state.lock``, reads ``DIR/state.json``,
runs its command, and writes the file back atomically (temp file + rename) before unlocking, so
concurrent commands (eight parallel ``nvidia-smi -q`` over SSH) serialise instead of corrupting it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from nvls_tui.sim.clock import SimClock
from nvls_tui.sim.proc_files import PROC_DIR, write_proc
from nvls_tui.sim.state import Node


class NodeStore:
    """``DIR/state.json`` holding one node and its clock."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.path = self.dir / "state.json"
        self.lock_path = self.dir / "state.lock"

    def save(self, node: Node, clock: SimClock) -> None:
        """Write the state atomically (call with the lock held, or before anyone else can read)."""
        tmp = self.path.with_name(f".state.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"clock": clock.to_dict(), "node": node.to_dict()}))
        os.replace(tmp, self.path)
        if (self.dir / PROC_DIR).is_dir():  # a shim node: its process files follow its state (sim/proc_files.py)
            write_proc(self.dir / PROC_DIR, node)

    def load(self) -> tuple[Node, SimClock]:
        """Read the state (without locking: for inspection in tests)."""
        data = json.loads(self.path.read_text())
        return Node.from_dict(data["node"]), SimClock.from_dict(data["clock"])

    @contextlib.contextmanager
    def locked(self, write: bool = True) -> Iterator[tuple[Node, SimClock]]:
        """Hold the lock; yield the node and clock; save them on a clean exit when ``write``."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            node, clock = self.load()
            yield node, clock
            if write:
                self.save(node, clock)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
