"""The HTTP side: routes kubectl's requests to discovery or api, streams watches, logs every request.

Plain HTTP on 127.0.0.1 (kubectl accepts ``server: http://...`` in a kubeconfig; no TLS, no auth).
HTTP/1.1 with keep-alive as kubectl expects; a watch is a chunked stream of one JSON event per line.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nvls_tui.lab.kube_standin import api, discovery, tables
from nvls_tui.lab.kube_standin.errors import ApiError, method_not_allowed, status, unknown_path
from nvls_tui.lab.kube_standin.store import Store

#: The longest watch the server keeps open when the client names no timeoutSeconds (the real default
#: is a random 30-60 minutes; tests want their threads back sooner).
MAX_WATCH_SECONDS = 1800


class RequestLog:
    """Every request served, in order: (method, path with query, content type, body) for tests to read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[tuple[str, str, str, bytes]] = []

    def add(self, method: str, path: str, content_type: str, body: bytes) -> None:
        """Record one request."""
        with self._lock:
            self.entries.append((method, path, content_type, body))

    def snapshot(self) -> list[tuple[str, str, str, bytes]]:
        """A copy of the log."""
        with self._lock:
            return list(self.entries)


class Server(ThreadingHTTPServer):
    """A threading HTTP server that carries the store and the request log to its handlers."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, store: Store, address: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.store = store
        self.log = RequestLog()
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class Handler(BaseHTTPRequestHandler):
    """One connection's requests."""

    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the request log keeps what tests need."""

    # -- answers ---------------------------------------------------------------------------------

    def _send(self, code: int, body: dict[str, Any], content_type: str = "application/json") -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _body(self) -> bytes:
        """The request body, by Content-Length or chunked (``kubectl create --raw -f`` sends chunks)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        body = self._body()
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        self.server.log.add(self.command, self.path, self.headers.get("Content-Type") or "", body)
        try:
            self._route(url.path, query, body)
        except ApiError as err:
            self._send(err.code, err.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # the real server answers a 500 Status, never a dropped connection
            self._send(500, status(500, f"Internal error occurred: {type(exc).__name__}: {exc}",
                                   reason="InternalError"))

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = _handle

    def _route(self, path: str, query: dict[str, str], body: bytes) -> None:
        segments = [urllib.parse.unquote(s) for s in path.strip("/").split("/") if s]
        if self.command == "GET" and self._discovery(segments):
            return
        target = api.parse_path(segments, query)
        store = self.server.store
        table = tables.wants_table(self.headers.get("Accept") or "")
        if self.command == "GET" and target.name is None:
            if query.get("watch") in ("1", "true"):
                self._watch(target)
                return
            code, answer = api.list_(store, target)
            if table:
                answer = tables.table(target.resource, answer["items"], answer["metadata"]["resourceVersion"],
                                      query.get("includeObject", ""), table)
            self._send(code, answer)
        elif self.command == "GET":
            code, answer = api.get(store, target)
            if table:
                answer = tables.table(target.resource, [answer], answer["metadata"]["resourceVersion"],
                                      query.get("includeObject", ""), table)
            self._send(code, answer)
        elif self.command == "PATCH" and target.name is not None:
            self._send(*api.patch_(store, target, self.headers.get("Content-Type") or "", body))
        elif self.command == "DELETE" and target.name is not None:
            self._send(*api.delete(store, target, body))
        elif self.command == "POST":
            self._send(*api.create(store, target, body))
        else:
            raise method_not_allowed()

    def _discovery(self, segments: list[str]) -> bool:
        accept = self.headers.get("Accept") or ""
        if segments == ["version"]:
            self._send(200, dict(discovery.VERSION))
            return True
        if segments in (["api"], ["apis"]):
            wanted = discovery.wants_aggregated(accept)
            path = "/" + segments[0]
            if wanted:
                self._send(200, discovery.aggregated(path, wanted), wanted)
            elif path == "/api":
                self._send(200, discovery.api_versions(self.server.url.removeprefix("http://")))
            else:
                self._send(200, discovery.api_group_list())
            return True
        if segments == ["api", "v1"] or (len(segments) == 3 and segments[0] == "apis"):
            group, version = ("", "v1") if segments[0] == "api" else (segments[1], segments[2])
            doc = discovery.resource_list(group, version)
            if doc is None:
                raise unknown_path()
            self._send(200, doc)
            return True
        if len(segments) == 2 and segments[0] == "apis":
            group_doc = discovery.api_group(segments[1])
            if group_doc is None:
                raise unknown_path()
            self._send(200, group_doc)
            return True
        return False

    def _watch(self, target: api.Target) -> None:
        """A chunked stream of ``{"type": ..., "object": ...}`` lines until timeoutSeconds or shutdown."""
        store = self.server.store
        try:
            timeout = float(target.query.get("timeoutSeconds") or MAX_WATCH_SECONDS)
        except ValueError:
            raise ApiError(400, "invalid timeoutSeconds") from None
        events = store.watch(target.resource.plural, target.namespace, api.predicates(target),
                             target.query.get("resourceVersion"), min(timeout, MAX_WATCH_SECONDS))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        r = target.resource
        for ev in events:
            obj = {"kind": r.kind, "apiVersion": r.api_version,
                   **{k: v for k, v in ev.obj.items() if k not in ("kind", "apiVersion")}}
            line = json.dumps({"type": ev.type, "object": obj}, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
