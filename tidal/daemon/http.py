"""/healthz, /readyz, /metrics and /status (JSON: who waits for a slot or capacity, since when)
on one port (stdlib http.server on a thread)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

Check = Callable[[], tuple[bool, str]]


def empty_metrics() -> bytes:
    return bytes(generate_latest(CollectorRegistry()))


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class ServedOnThread:
    """An HTTP server (over IPv6 when the host is an IPv6 address) answering on its own daemon
    thread: `start()` it, `stop()` it."""

    def __init__(
        self, host: str, port: int, handler: type[BaseHTTPRequestHandler], thread_name: str
    ) -> None:
        server = _IPv6Server if ":" in host else ThreadingHTTPServer
        self.server = server((host, port), handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.server.serve_forever, name=thread_name, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class HealthServer(ServedOnThread):
    def __init__(
        self,
        port: int,
        healthy: Check,
        ready: Check,
        metrics: Callable[[], bytes] = empty_metrics,
        host: str = "0.0.0.0",
        status: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        checks = {"/healthz": healthy, "/readyz": ready}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    try:
                        body, code, ctype = metrics(), 200, CONTENT_TYPE_LATEST
                    except Exception as exc:
                        body, code, ctype = f"{exc}\n".encode(), 500, "text/plain"
                elif path == "/status" and status is not None:
                    try:
                        body, code = json.dumps(status()).encode(), 200
                    except Exception as exc:
                        body, code = json.dumps({"error": str(exc)}).encode(), 500
                    ctype = "application/json"
                elif path in checks:
                    ok, why = checks[path]()
                    body, code, ctype = f"{why}\n".encode(), 200 if ok else 503, "text/plain"
                else:
                    body, code, ctype = b"not found\n", 404, "text/plain"
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds would drown the logs

        super().__init__(host, port, Handler, "tidal-http")
