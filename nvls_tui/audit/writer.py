"""The audit log written off the event loop: a thread appends and fsyncs records in groups.

Writing and fsyncing one record per event on the event loop stalled the console for every streamed
smoke-test line. Here an event is encoded at once (its time is when it happened) and queued; a
thread takes everything queued so far, writes it in one ``write`` and one ``fsync`` (a group
commit), and goes back for more. Audit first still holds where it matters: before a command goes to
a node, the runbook awaits :meth:`AuditWriter.flush`, which returns once every record queued so far
is on disk, so the record of a command always lands before the command runs. What can be lost to a
``kill -9`` is only output already shown, never the record of a change.

When the log cannot be written (a full disk) the run stops and restores, and the restore's commands
go out anyway. They, and everything the log refused, go to a :class:`Fallback`: a private file in
another directory (standard error as the last resort), which the failure message names.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from nvls_tui import paths
from nvls_tui.audit.log import AuditLog, AuditWriteError, event_record
from nvls_tui.localfiles import create_private, private_dir


def fallback_dirs() -> list[Path]:
    """The directories a failed log's records may go to, in order (:func:`paths.audit_fallback_dirs`)."""
    return paths.audit_fallback_dirs()


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` appended and fsynced, or the file cut back to where it was and OSError raised."""
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, size)
        except OSError:
            pass
        raise


class Fallback:
    """Where records go once the audit log failed: a private file in another directory, else stderr.

    The restore runs even when the log cannot record it (a node left with its services stopped is worse
    than a gap in the log), so what it sends must still land somewhere durable: each directory of
    :func:`fallback_dirs` but the failed log's own is tried in turn (0700, the file 0600, fsynced), and
    standard error is the last resort. The first record says which log failed and why, with its run id,
    so ``nvls-tui report`` reads the fallback file too.
    """

    def __init__(self, failed: AuditLog, error: str, stream: TextIO | None = None) -> None:
        self.path: Path | None = None
        self._name = failed.path.name
        self._header = failed.encode({"event": "audit-fallback", "node": None, "run_id": failed.path.stem,
                                      "failed_log": str(failed.path), "error": error})
        home = os.path.realpath(failed.path.parent)
        self._candidates = [d for d in fallback_dirs() if os.path.realpath(d) != home]
        self._fd: int | None = None
        self._stream = stream
        self._streaming = False

    @property
    def where(self) -> str:
        """``in PATH`` or ``on standard error``: where the records went."""
        return f"in {self.path}" if self.path is not None else "on standard error"

    def append(self, lines: list[bytes]) -> None:
        """Keep ``lines``: in the open fallback file, the next directory that takes them, or on stderr."""
        data = b"".join(lines)
        while self._fd is not None or self._open_next():
            assert self._fd is not None
            try:
                _write_all(self._fd, data)
                return
            except OSError:
                self.close()  # this one filled up too: the next directory, with its own header line
                self.path = None
        self._to_stream(lines)

    def _open_next(self) -> bool:
        while self._candidates:
            folder = self._candidates.pop(0)
            fd = None
            try:
                path = private_dir(folder) / self._name
                try:
                    fd = create_private(path)
                except FileExistsError:
                    path = path.with_name(f"{path.stem}-{os.getpid()}-{len(self._candidates)}{path.suffix}")
                    fd = create_private(path)
                _write_all(fd, self._header)
                _sync_dir(path.parent)
            except OSError:  # UnsafeLocation too: not writable, not ours, full
                if fd is not None:
                    os.close(fd)
                    _unlink(path)
                continue
            self._fd, self.path = fd, path
            return True
        return False

    def _to_stream(self, lines: list[bytes]) -> None:
        stream = self._stream or sys.stderr
        if not self._streaming:
            lines = [self._header, *lines]
            self._streaming = True
        try:
            for line in lines:
                stream.write(f"nvls-tui: audit record: {line.decode('utf-8', 'replace')}")
            stream.flush()
        except (OSError, ValueError):
            pass  # standard error is gone too: nothing is left to write to

    def close(self) -> None:
        """Close the fallback file (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _sync_dir(folder: Path) -> None:
    """fsync a directory, so that a file just created in it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class _Barrier:
    """A point in the queue: its future is settled once everything queued before it is written (or failed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[bool] = loop.create_future()

    def release(self, ok: bool) -> None:
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
        self.fallback: Fallback | None = None
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

    @property
    def fallback_path(self) -> Path | None:
        """The file that holds what the log could not take (None: nothing failed, or only stderr took it)."""
        return self.fallback.path if self.fallback is not None else None

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
        return await barrier.future

    def close(self) -> None:
        """Write what is queued, stop the thread, close the file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout=60)
        self.log.close()
        if self.fallback is not None:
            self.fallback.close()

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
                    self._fail(exc if isinstance(exc, AuditWriteError) else AuditWriteError(str(exc)), lines)
            elif lines and self.fallback is not None:
                self.fallback.append(lines)  # after the failure: the restore's records among them
            for item in batch:
                if isinstance(item, _Barrier):
                    item.release(self.failed is None)
            if any(item is _STOP for item in batch):
                return

    def _fail(self, exc: AuditWriteError, lines: list[bytes]) -> None:
        """The log refused ``lines``: they and every later record go to a :class:`Fallback`, and the
        failure (which names where they went) is reported once."""
        self.fallback = Fallback(self.log, str(exc))
        self.fallback.append(lines)
        exc = AuditWriteError(f"{exc}; what it could not take is {self.fallback.where}")
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
