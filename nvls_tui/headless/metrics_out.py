"""``check --metrics-textfile FILE`` and ``--metrics-listen [ADDR:]PORT``: the metrics core's two ways out.

One :class:`~nvls_tui.metrics.build.LatestRound` feeds both: the textfile is written after every round
(prometheus_client's ``write_to_textfile``: a temporary file in the same folder, then a rename, so
node_exporter never reads half a file; no sample timestamps), and the HTTP server serves the same round
on ``/metrics`` while ``check --watch`` runs. Each round also reads the audit directory's repair outcomes,
so the watch's textfile and a repair run's audit log agree.
"""

from __future__ import annotations

import ipaddress
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prometheus_client.registry import CollectorRegistry

from nvls_tui.audit.log import default_audit_dir
from nvls_tui.metrics.build import LatestRound, LiveRound, Round, registry_of
from nvls_tui.metrics.fm_starts import FmStarts
from nvls_tui.metrics.repairs import AuditTally
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.settings import Settings

LOOPBACK = "127.0.0.1"


class MetricsSetupError(ValueError):
    """A metrics option that cannot work (a folder that cannot be written, an address in use): one sentence."""


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``ADDR:PORT`` or ``[V6ADDR]:PORT`` -> (address, port); a bare port listens on loopback only.

    Raises:
        ValueError: not an IP address and a port of 0-65535 (0: any free port, said on stderr).
    """
    text = text.strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = LOOPBACK, text
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdecimal() or int(port) > 65535:
        raise ValueError(f"{text!r} is not [ADDRESS:]PORT (a port of 0-65535, e.g. 127.0.0.1:9464)")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{text!r}: {host!r} is not an IP address (e.g. 127.0.0.1:9464, [::1]:9464)") from None
    return host, int(port)


def check_textfile(path: str) -> Path:
    """The textfile's path, refused before any node is polled where it cannot be written there.

    node_exporter's textfile collector reads only ``*.prom`` files of its folder, so another name would
    never be seen; the temporary file beside it must be creatable, so the folder must be writable.
    """
    target = Path(path).expanduser()
    if target.suffix != ".prom":
        raise MetricsSetupError(f"--metrics-textfile {path}: the name must end in .prom (node_exporter's textfile "
                                "collector reads no other)")
    folder = target.parent
    if not folder.is_dir():
        raise MetricsSetupError(f"--metrics-textfile {path}: the folder {folder} does not exist")
    if target.is_dir():
        raise MetricsSetupError(f"--metrics-textfile {path}: a folder, not a file")
    try:  # as the write will: a file beside it (root passes os.access on a read-only folder)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{target.name}.check-"):
            pass
    except OSError as exc:
        raise MetricsSetupError(f"--metrics-textfile {path}: the folder {folder} is not writable "
                                f"({exc.strerror or exc})") from None
    return target


def serve(host: str, port: int, registry: CollectorRegistry, command: str) -> tuple[Any, tuple[str, int]]:
    """prometheus_client's HTTP server for ``registry`` on ``host:port`` (a thread), named on stderr.

    Raises:
        MetricsSetupError: the address cannot be listened on (in use, not this machine's): one sentence.
    """
    from prometheus_client import start_http_server

    try:
        server, _ = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise MetricsSetupError(f"--metrics-listen {host}:{port}: cannot listen there ({exc.strerror or exc})") \
            from None
    bound = server.server_address
    address = (str(bound[0]), int(bound[1]))
    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
    print(f"nvls-tui {command}: metrics on http://{shown}:{address[1]}/metrics", file=sys.stderr, flush=True)
    return server, address


def stop(server: Any) -> None:
    """Stop a server :func:`serve` started and free its port."""
    server.shutdown()
    server.server_close()


class MetricsOut:
    """The textfile and/or the HTTP endpoint of one ``check`` (or ``check --watch``)."""

    def __init__(self, settings: Settings) -> None:
        self.textfile = check_textfile(settings.metrics_textfile) if settings.metrics_textfile else None
        self.latest = LatestRound()
        self.registry = registry_of(self.latest)
        self.fm_starts = FmStarts()
        self.audit = AuditTally(settings.audit_dir or default_audit_dir())
        self.write_seconds: float | None = None  # how long the last textfile write took (bench/)
        self._server: Any = None
        self.address: tuple[str, int] | None = None
        if settings.metrics_listen:
            self._serve(*parse_listen(settings.metrics_listen))

    def _serve(self, host: str, port: int) -> None:
        self._server, self.address = serve(host, port, self.registry, "check")

    def publish(self, results: Sequence[tuple[NodeState, Diagnosis]], elapsed: float) -> None:
        """Expose one finished round: the endpoint's next scrape and the textfile (rewritten whole) show it."""
        self.latest.update(Round(results, elapsed, repairs=self.audit.read(), fm_starts=self.fm_starts))
        if self.textfile is not None:
            from prometheus_client import write_to_textfile

            began = time.perf_counter()
            try:
                write_to_textfile(str(self.textfile), self.registry)
            except OSError as exc:
                raise MetricsSetupError(f"--metrics-textfile {self.textfile}: could not be written "
                                        f"({exc.strerror or exc})") from None
            self.write_seconds = time.perf_counter() - began

    def close(self) -> None:
        """Stop serving (the textfile stays: node_exporter keeps showing the last round, with its mtime)."""
        if self._server is not None:
            stop(self._server)
            self._server = None


class LiveMetrics:
    """The console's ``--metrics-listen``: each scrape builds the metrics from the fleet as it stands (the
    poller's latest state and diagnosis of every node), with the audit directory's repairs."""

    def __init__(self, settings: Settings, results: Callable[[], Sequence[tuple[NodeState, Diagnosis]]]) -> None:
        self.results = results
        self.fm_starts = FmStarts()
        self.audit = AuditTally(settings.audit_dir or default_audit_dir())
        self.registry = registry_of(LiveRound(self._round))
        self._server: Any = None
        self.address: tuple[str, int] | None = None
        self._server, self.address = serve(*parse_listen(settings.metrics_listen or ""), self.registry, "console")

    def _round(self) -> Round:
        results = list(self.results())
        polled = [s.polled_at for s, _ in results if s.polled_at is not None]
        return Round(results, None, ended=max(polled) if polled else time.time(), repairs=self.audit.read(),
                     fm_starts=self.fm_starts)

    def close(self) -> None:
        """Stop serving."""
        if self._server is not None:
            stop(self._server)
            self._server = None


def metrics_out(settings: Settings) -> MetricsOut | None:
    """The metrics outputs ``settings`` asks for, or None."""
    if not settings.metrics_textfile and not settings.metrics_listen:
        return None
    return MetricsOut(settings)


__all__ = ["LiveMetrics", "MetricsOut", "MetricsSetupError", "check_textfile", "metrics_out", "parse_listen", "serve",
           "stop"]
