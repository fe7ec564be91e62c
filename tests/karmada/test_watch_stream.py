"""A watch stream read from a server that cuts the connection in the middle of an event: the
events before the cut are yielded, and the cut ends the stream quietly (the caller resumes
from its last resourceVersion), as any other dropped connection does, never an error."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from tidal.karmada.client import RESOURCE_BINDINGS, KarmadaClient

WHOLE = {"type": "ADDED", "object": {"kind": "ResourceBinding", "metadata": {"name": "a"}}}


class CutWatch(BaseHTTPRequestHandler):
    """Answers a watch with one whole event, then half of the next, then closes."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(json.dumps(WHOLE).encode() + b"\n")
        self.wfile.write(b'{"type": "MODIFIED", "object": {"kind": "ResourceBi')
        self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def cut_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CutWatch)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_event_cut_off_by_a_closed_connection_ends_the_watch_quietly(
    cut_server: str, tmp_path: Path
) -> None:
    """One whole event comes through; the cut one neither comes through nor raises."""
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": cut_server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    try:
        path = RESOURCE_BINDINGS.path("ns")
        events = list(client.stream(RESOURCE_BINDINGS, path, {}, read_timeout=5.0))
    finally:
        client.close()
    assert events == [WHOLE]
