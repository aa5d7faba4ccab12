"""The audit log written off the event loop: a thread appends and fsyncs records in groups.

Writing and fsyncing one record per event on the event loop stalled the console for every streamed
smoke-test line. Here an event is encoded at once (its time is when it happened) and queued; a
thread takes everything queued so far, writes it in one ``write`` and one ``fsync`` (a group
commit), and goes back for more. Audit first still holds where it matters: before a command goes to
a node, the runbook awaits :meth:`AuditWriter.flush`, which returns once every record queued so far
is on disk, so the record of a command always lands before the command runs. What can be lost to a
``kill -9`` is only output already shown, never the record of a change.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nvls_tui.records.audit import AuditLog, AuditWriteError, event_record


class _Barrier:
    """A point in the queue: set once everything queued before it is written (or failed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.done = threading.Event()
        self.ok = False
        self.loop = loop
        self.future: asyncio.Future[bool] | None = loop.create_future() if loop is not None else None

    def release(self, ok: bool) -> None:
        self.ok = ok
        self.done.set()
        if self.loop is not None and self.future is not None:
            try:
                self.loop.call_soon_threadsafe(_settle, self.future, ok)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass


def _settle(future: asyncio.Future[bool], ok: bool) -> None:
    if not future.done():
        future.set_result(ok)


_STOP = object()


class AuditWriter:
    """An event sink that hands records to a writer thread.

    Args:
        log: the open audit log (the writer closes it).
        on_failure: called once, on the event loop thread when there is one, with the first
            :class:`AuditWriteError` (a full disk): the caller stops what it is doing.

    Attributes:
        failed: the first write error (None while every record landed).
    """

    def __init__(self, log: AuditLog, on_failure: Callable[[AuditWriteError], None] | None = None) -> None:
        self.log = log
        self.on_failure = on_failure
        self.failed: AuditWriteError | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._thread = threading.Thread(target=self._drain, name=f"audit {log.path.name}", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        """The JSONL file."""
        return self.log.path

    def __call__(self, event: Any) -> None:
        """Event sink: queue the event's record (never blocks, never raises)."""
        self.put(event_record(event))

    def put(self, record: Mapping[str, Any]) -> None:
        """Queue one record; it is stamped now, not when the thread writes it."""
        if self._closed:
            return
        self._queue.put(self.log.encode(record))

    async def flush(self) -> bool:
        """Wait until every record queued so far is on disk; False when the log failed."""
        if self._closed:
            return self.failed is None
        barrier = _Barrier(asyncio.get_running_loop())
        self._queue.put(barrier)
        assert barrier.future is not None
        return await barrier.future

    def flush_sync(self, timeout: float | None = 30.0) -> bool:
        """:meth:`flush` for code outside the event loop (the end of a headless run)."""
        if self._closed:
            return self.failed is None
        barrier = _Barrier()
        self._queue.put(barrier)
        barrier.done.wait(timeout)
        return barrier.ok

    def close(self) -> None:
        """Write what is queued, stop the thread, close the file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout=60)
        self.log.close()

    def _drain(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            lines = [item for item in batch if isinstance(item, bytes)]
            if lines and self.failed is None:
                try:
                    self.log.append(lines)
                except (AuditWriteError, ValueError) as exc:
                    self._fail(exc if isinstance(exc, AuditWriteError) else AuditWriteError(str(exc)))
            for item in batch:
                if isinstance(item, _Barrier):
                    item.release(self.failed is None)
            if any(item is _STOP for item in batch):
                return

    def _fail(self, exc: AuditWriteError) -> None:
        self.failed = exc
        if self.on_failure is None:
            return
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self.on_failure, exc)
                return
            except RuntimeError:
                pass
        self.on_failure(exc)

    def __enter__(self) -> AuditWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["AuditWriter"]
