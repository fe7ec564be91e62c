"""The HTTP server: a thread per connection, JSON in and out, watches as chunked JSON lines."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tidal_sim.apiserver import discovery, openapi
from tidal_sim.apiserver.accounting import RequestAccounting
from tidal_sim.apiserver.admin import PREFIX as ADMIN_PREFIX
from tidal_sim.apiserver.admin import AdminApi
from tidal_sim.apiserver.authz import Authorizer
from tidal_sim.apiserver.errors import ApiError, not_found_path
from tidal_sim.apiserver.jsonenc import dumps
from tidal_sim.apiserver.proxy import PATH as PROXY_PATH
from tidal_sim.apiserver.proxy import ClusterProxy
from tidal_sim.apiserver.request import Request, Response, StreamResponse
from tidal_sim.apiserver.rest import Admitter, RestHandlers, error_response, verb_of
from tidal_sim.apiserver.routing import UnknownResource, parse_route
from tidal_sim.apiserver.watching import WatchRegistry
from tidal_sim.faults import Fault, Faults
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Store

log = logging.getLogger(__name__)
Obj = dict[str, Any]


# How often the serving loop looks whether stop() asked it to end: what stopping waits at most
# (every emulator a test starts is stopped at its teardown).
SHUTDOWN_POLL_SECONDS = 0.01


class ApiServer:
    """Serves `store` over the Kubernetes REST API on host:port (0 picks a free port)."""

    def __init__(
        self,
        store: Store,
        *,
        faults: Faults | None = None,
        accounting: RequestAccounting | None = None,
        admitter: Admitter | None = None,
        timeline: Callable[[], list[dict[str, Any]]] = list,
        team_capacity: Any = None,
        on_created: Callable[[ResourceType, Obj], None] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        bookmark_interval: float = 1.0,
        rbac: bool = False,
    ) -> None:
        self.store = store
        self.authorizer = Authorizer(store, store.kinds, enabled=rbac)
        self.faults = faults or Faults()
        self.accounting = accounting or RequestAccounting()
        self.watches = WatchRegistry(store)
        self.rest = RestHandlers(
            store, self.faults, self.watches, admitter, on_created, bookmark_interval
        )
        self.admin = AdminApi(self.accounting, self.faults, timeline, team_capacity)
        self.members = ClusterProxy(store, self.accounting)  # clusters/<name>/proxy
        self.faults.on_drop_watch = self._drop_watches
        self._host, self._port = host, port
        self._httpd: _HttpServer | None = None
        self.date_skew_seconds = 0.0  # added to the Date header of every answer
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    def start(self) -> ApiServer:
        self._httpd = _HttpServer((self._host, self._port), _Handler)
        self._httpd.api = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            name="sim-apiserver",
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.watches.drop()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def _drop_watches(self, fault: Fault) -> int:
        dropped = self.watches.drop(
            lambda resource, namespace: fault.matches("watch", resource, namespace, None)
        )
        if fault.compact:
            self.store.compact()
        return dropped

    # -- dispatch --------------------------------------------------------------------------
    def dispatch(self, req: Request) -> Response | StreamResponse:
        try:
            if req.path.startswith(ADMIN_PREFIX):
                return self.admin.handle(req)
            if PROXY_PATH.match(req.path):
                return self.members.handle(req)
            try:
                route = parse_route(self.store.kinds, req.path)
            except UnknownResource:
                raise not_found_path(req.path) from None
            if route is None:
                return self._non_resource(req)
            verb = verb_of(req.method, route, req)
        except ApiError as exc:
            return error_response(exc)
        try:
            self.authorizer.check(req.identity, verb, route)
            result = self.rest.handle(verb, route, req)
        except ApiError as exc:
            result = error_response(exc)
        except Exception as exc:  # a bug must answer 500, not kill the connection
            log.exception("sim apiserver: %s %s failed", req.method, req.path)
            result = error_response(ApiError(500, f"Internal error occurred: {exc}"))
        self.accounting.record(
            verb,
            route.resource,
            route.rtype.group,
            route.namespace,
            route.name,
            result.code,
            req.user_agent,
            req.identity,
            _written_version(verb, result),
            req.query.get("dryRun") == "All",
            req.query.get("fieldValidation") or "",
        )
        return result

    def _schema_of(self, group: str, version: str, kind: str) -> dict[str, Any] | None:
        admitter = self.rest.admitter
        return admitter.schema(group, version, kind) if admitter is not None else None

    def _non_resource(self, req: Request) -> Response:
        if req.method != "GET":
            raise ApiError(405, f"method {req.method} not allowed on {req.path}")
        parts = [p for p in req.path.split("/") if p]
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return Response(200, "ok")
        doc = self._discovery(parts) if parts[:1] != ["openapi"] else self._openapi(parts)
        if doc is None:
            raise not_found_path(req.path)
        return Response(200, doc)

    def _discovery(self, parts: list[str]) -> Any:
        """The version and discovery documents (None: no such path)."""
        kinds = self.store.kinds
        if parts == ["version"]:
            return discovery.VERSION_INFO
        if parts == ["api"]:
            return discovery.core_versions()
        if parts == ["apis"]:
            return discovery.group_list(kinds)
        if len(parts) == 2 and parts[0] == "api":
            return discovery.resource_list(kinds, "", parts[1])
        if len(parts) == 2 and parts[0] == "apis":
            return discovery.group(kinds, parts[1])
        if len(parts) == 3 and parts[0] == "apis":
            return discovery.resource_list(kinds, parts[1], parts[2])
        return None

    def _openapi(self, parts: list[str]) -> Any:
        """The OpenAPI v3 documents (None: no such path)."""
        kinds = self.store.kinds
        if parts == ["openapi", "v3"]:
            return openapi.root(kinds)
        if parts[:3] == ["openapi", "v3", "api"] and len(parts) == 4:
            return openapi.group_version(kinds, "", parts[3], self._schema_of)
        if parts[:3] == ["openapi", "v3", "apis"] and len(parts) == 5:
            return openapi.group_version(kinds, parts[3], parts[4], self._schema_of)
        return None


def _written_version(verb: str, result: Response | StreamResponse) -> int | None:
    """The resourceVersion a successful create/update/patch gave the object."""
    if (
        verb not in ("create", "update", "patch")
        or not isinstance(result, Response)
        or result.code >= 400
        or not isinstance(result.body, dict)
    ):
        return None
    version = (result.body.get("metadata") or {}).get("resourceVersion")
    return int(version) if isinstance(version, str) and version.isdigit() else None


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # bursts of new connections (benchmarks, many watchers)
    api: ApiServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: _HttpServer
    server_version = "tidal-sim"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is kept by RequestAccounting

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, off by the server's configured clock skew (a lying clock)."""
        if timestamp is None:
            timestamp = time.time() + self.server.api.date_skew_seconds
        return super().date_time_string(timestamp)

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _is_closed(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peek: bytes = self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            return peek == b""
        except (OSError, ValueError):
            return True

    def _serve(self) -> None:
        split = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        req = Request(
            self.command,
            split.path.rstrip("/") or "/",
            query,
            self.headers,
            self._read_body(),
            self._is_closed,
        )
        result = self.server.api.dispatch(req)
        try:
            if isinstance(result, StreamResponse):
                self._write_stream(result)
            else:
                self._write(result)
        except OSError:  # the client went away (or the server is stopping)
            self.close_connection = True

    def _write(self, result: Response) -> None:
        if isinstance(result.body, bytes):  # pre-encoded (a truncate fault's broken JSON)
            payload, ctype = result.body, "application/json"
        elif isinstance(result.body, str):
            payload, ctype = result.body.encode(), "text/plain; charset=utf-8"
        else:
            payload = dumps(result.body)
            ctype = "application/json"
        self.send_response(result.code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in result.headers.items():
            for line in value if isinstance(value, list) else [value]:
                self.send_header(key, line)
        self.end_headers()
        self.wfile.write(payload)

    def _write_stream(self, result: StreamResponse) -> None:
        chunks = result.chunks
        try:
            self.send_response(result.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self.wfile.flush()
            for chunk in chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            result.on_close()
            self.close_connection = True
