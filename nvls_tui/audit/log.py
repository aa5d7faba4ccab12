"""The append-only audit log: one JSONL file per run, flushed and fsynced after every record.

Every command a run sends to a node, its exit status and its (bounded) output, every signal and
every step lands here with the time, the node, the operator and the dry-run flag, so that a
``kill -9`` of nvls-tui loses nothing that happened before it. Secrets never do: environment
values that look like tokens or keys, ``key=value`` pairs named like secrets, and private key
material are redacted before a record is written.
"""

from __future__ import annotations

import datetime as dt
import errno
import getpass
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nvls_tui import paths
from nvls_tui.localfiles import PRIVATE_FLAGS, UnsafeLocation, private_dir

OUTPUT_LIMIT = 16 * 1024
REDACTED = "[redacted]"

_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|PRIVATE|CREDENTIAL|AUTH|KEY$|_KEY_)", re.I)
_TOKENISH = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_\-+/=.:]{24,}$")
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|passphrase|api[_-]?key|access[_-]?key)[A-Za-z0-9_.-]*)"
    r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9_\-+/=.]{8,}")


# Free space an audit directory must have before a run starts (a long repair writes a few MB).
HEADROOM = 8 * 1024 * 1024


class AuditWriteError(OSError):
    """The audit log cannot take a record: the run must stop (and restore); ``str()`` says why."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "the audit log could not be written"


def _free_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def default_audit_dir() -> Path:
    """``$XDG_STATE_HOME/nvls-tui/audit`` (``~/.local/state/nvls-tui/audit`` when unset; platformdirs)."""
    return paths.audit_dir()


def redact_text(text: str) -> str:
    """``text`` with private keys, bearer tokens and secret-named assignments replaced."""
    if not text:
        return text
    text = _PEM.sub("[private key redacted]", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def redact_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Environment variables with the values of secret-looking names or token-like values replaced."""
    out: dict[str, str] = {}
    for key, value in (env or {}).items():
        secret = bool(_SECRET_NAME.search(key)) or bool(_TOKENISH.match(str(value)))
        out[str(key)] = REDACTED if secret else redact_text(str(value))
    return out


def bound_output(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """At most ``limit`` characters: the head and the tail, which is where tools put what matters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def _iso(at: float | None) -> str:
    moment = dt.datetime.fromtimestamp(at, dt.UTC) if at is not None else dt.datetime.now(dt.UTC)
    return moment.isoformat(timespec="milliseconds")


class AuditLog:
    """One run's audit log. Call it with a runbook event (it is an event sink) or :meth:`write` a dict.

    Attributes:
        path: the JSONL file.
        operator: who ran nvls-tui (``getpass.getuser()``).
        dry_run: whether the run was a dry run (on every record).
    """

    def __init__(self, path: str | os.PathLike[str], *, operator: str | None = None, dry_run: bool = False) -> None:
        self.path = Path(path)
        self.operator = operator or _whoami()
        self.dry_run = dry_run
        private_dir(self.path.parent)  # 0700 and ours, or refused with one sentence
        # O_APPEND: records are only ever added; 0600: outputs can name hosts and users; O_NOFOLLOW:
        # a link planted where the log goes is refused, never written through.
        try:
            self._fd: int | None = os.open(self.path, PRIVATE_FLAGS | os.O_APPEND, 0o600)
        except FileExistsError:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            st = os.fstat(self._fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                os.close(self._fd)
                self._fd = None
                raise UnsafeLocation(f"refusing the audit log {self.path}: it is not a regular file of yours") from None

    @classmethod
    def create(cls, directory: str | os.PathLike[str] | None, run_id: str, *, kind: str = "repair",
               operator: str | None = None, dry_run: bool = False, headroom: int = HEADROOM) -> AuditLog:
        """A new log ``DIR/KIND-RUN_ID.jsonl`` (DIR defaults to :func:`default_audit_dir`), proven writable.

        Audit first: nothing may change a node that the log cannot record. The directory must have
        ``headroom`` bytes free, and a first record is written and fsynced before anything else.

        Raises:
            UnsafeLocation: the directory is not private (another owner, group/world-writable, a link).
            AuditWriteError: too little room, or the first record could not be written.
            OSError: the directory or the file cannot be created.
        """
        base = Path(directory).expanduser() if directory else default_audit_dir()
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
        log = cls(base / f"{kind}-{safe}.jsonl", operator=operator, dry_run=dry_run)
        try:
            free = _free_bytes(log.path.parent)
            if free < headroom:
                raise AuditWriteError(f"the audit directory {log.path.parent} has {free // 1024} KiB free, less than "
                                      f"the {headroom // (1024 * 1024)} MiB a run needs for its audit log")
            log.write({"event": "audit-opened", "node": None, "kind": kind, "run_id": run_id})
        except BaseException:
            log.close()
            raise
        return log

    def encode(self, record: Mapping[str, Any]) -> bytes:
        """One record as its JSONL line (time, operator and dry_run added when missing)."""
        data = {"time": _iso(None), "operator": self.operator, "dry_run": self.dry_run, **record}
        return (json.dumps(data, sort_keys=False, default=str, ensure_ascii=False) + "\n").encode("utf-8")

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record (adds time, operator, dry_run when missing); flushed and fsynced.

        Raises:
            AuditWriteError: the record could not be written (the file is as it was before).
        """
        self.append([self.encode(record)])

    def append(self, lines: list[bytes]) -> None:
        """Append encoded records in one write and one fsync (a group commit).

        The records are on disk whole or not at all: a short or failed write (a full disk) is cut
        back off the file, so the log never ends in a torn record.

        Raises:
            AuditWriteError: the records could not be written (the file is as it was before).
        """
        if self._fd is None:
            raise ValueError(f"the audit log {self.path} is closed")
        data = b"".join(lines)
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                # A short write is a full disk (or quota); the part that landed is cut off below.
                raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} ({written} of {len(data)} bytes written)")
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise AuditWriteError(f"the audit log {self.path} could not be written: {exc.strerror or exc}") from exc

    def __call__(self, event: Any) -> None:
        """Event sink: turn a runbook event into a record and write it."""
        self.write(event_record(event))

    def close(self) -> None:
        """Close the file (further writes raise)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def event_record(event: Any) -> dict[str, Any]:
    """The audit record of one runbook event: ``event.to_record()``, bounded and with secrets redacted.

    The record is the event serialized (one schema, ``runbook/events.py``); this only bounds the
    output and redacts what looks secret, so ``from_record`` reads back the event as far as it was safe
    to keep.
    """
    record = dict(event.to_record())
    if record.get("argv") is not None:
        record["argv"] = [redact_text(str(a)) for a in record["argv"]]
    if "env" in record:
        record["env"] = redact_env(record["env"])
    if "output" in record:
        record["output"] = redact_text(bound_output(str(record["output"] or "")))
    if "line" in record:
        record["line"] = redact_text(bound_output(str(record["line"]), 4096))
    # Every other text too, at any depth: a signal's outcome quotes the process's command line as
    # ps printed it, and holders' command lines (`--api-key=...`) ride in several events.
    return {key: value if key in _SEALED else _redact_deep(value) for key, value in record.items()}


# Fields event_record has already made safe, or that hold no text from a node's processes.
_SEALED = frozenset({"time", "node", "step", "event", "argv", "exit_status", "output", "env"})


def _redact_deep(value: Any) -> Any:
    """``value`` with :func:`redact_text` applied to every string inside it."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: _redact_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_deep(v) for v in value]
    return value


def _whoami() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


__all__ = ["HEADROOM", "OUTPUT_LIMIT", "AuditLog", "AuditWriteError", "bound_output", "default_audit_dir", "event_record", "redact_env",
           "redact_text"]
