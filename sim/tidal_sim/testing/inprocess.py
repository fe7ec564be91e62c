"""Karmada in this process: the emulator's store, controllers and REST handlers, no sockets.

`InProcessApiClient` stands where tidal's KarmadaClient expects the official client's ApiClient
(param_serialize, call_api), and hands each request to the emulator's dispatcher directly; the
controllers settle after every request, and time moves only on a ManualClock. An engine unit
test then runs the real engine and the real access layer against Karmada's behaviour in
milliseconds, deterministically. A watch with nothing to send moves the manual clock on
instead of blocking, so waiting for Karmada costs no real time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tidal_sim.apiserver.jsonenc import dumps
from tidal_sim.apiserver.request import Request, Response, StreamResponse
from tidal_sim.clock import ManualClock
from tidal_sim.emulator import Emulator, Running
from tidal_sim.store import Obj

if TYPE_CHECKING:
    from tidal.karmada.client import KarmadaClient


class _Headers:
    """Case-insensitive header lookup, as the server's handlers and tidal's client read it."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {k.lower(): v for k, v in values.items()}

    def get(self, name: str, default: str | None = None, /) -> str | None:
        return self._values.get(name.lower(), default)

    def items(self) -> list[tuple[str, str]]:
        return list(self._values.items())


class _Stream:
    """What tidal's client reads of a watch answer: `stream()` and `release_conn()`."""

    def __init__(self, result: StreamResponse) -> None:
        self._result = result

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self._result.chunks

    def release_conn(self) -> None:
        close = getattr(self._result.chunks, "close", None)
        if close is not None:
            close()
        self._result.on_close()


class InProcessResponse:
    """One answer, shaped like the official client's RESTResponse."""

    def __init__(self, result: Response | StreamResponse) -> None:
        self.status = result.code
        self.reason = ""
        headers = {k: v if isinstance(v, str) else ", ".join(v) for k, v in result.headers.items()}
        if isinstance(result, StreamResponse):
            self.data = b""
            self.response: _Stream | None = _Stream(result)
            headers.setdefault("Content-Type", "application/json")
        else:
            self.response = None
            self.data, content_type = _encode(result.body)
            headers.setdefault("Content-Type", content_type)
        self.headers = _Headers(headers)

    def read(self) -> bytes:
        return self.data

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)


def _encode(body: Any) -> tuple[bytes, str]:
    if isinstance(body, bytes):
        return body, "application/json"
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=utf-8"
    return dumps(body), "application/json"


class InProcessApiClient:
    """The official ApiClient's two request methods, answered by the emulator in-process."""

    def __init__(self, emulator: Emulator, *, user: str = "admin") -> None:
        self.emulator = emulator
        self.user = user

    def param_serialize(
        self,
        method: str,
        resource_path: str,
        path_params: Any = None,
        query_params: list[tuple[str, Any]] | None = None,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        files: Any = None,
        auth_settings: Any = None,
        collection_formats: Any = None,
        _host: Any = None,
        _request_auth: Any = None,
    ) -> tuple[str, str, dict[str, str], Any, Any]:
        url = resource_path
        if query_params:
            url += "?" + urlencode([(k, str(v)) for k, v in query_params])
        headers = dict(header_params or {})
        headers.setdefault("Authorization", f"Bearer sim:{self.user}")
        return method, url, headers, body, post_params

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> InProcessResponse:
        split = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        if body is None:
            payload = b""
        elif isinstance(body, bytes):
            payload = body
        elif isinstance(body, str):
            payload = body.encode()
        else:
            payload = json.dumps(body).encode()
        request = Request(
            method,
            split.path.rstrip("/") or "/",
            query,
            _Headers(dict(header_params or {})),
            payload,
            idle=self._idle,
            now=self.emulator.clock.now,
        )
        result = self.emulator.server.dispatch(request)
        self.emulator.settle()  # the controllers react before the caller looks again
        return InProcessResponse(result)

    def _idle(self, seconds: float) -> None:
        """A watch with nothing to send: time moves on (a ManualClock), else a short wait."""
        if isinstance(self.emulator.clock, ManualClock):
            self.emulator.advance(seconds)
        else:
            time.sleep(min(seconds, 0.05))
            self.emulator.settle()

    def close(self) -> None:
        """Nothing to close: no connection pool."""


class EngineClock:
    """tidal's Clock (now, sleep, monotonic) over the emulator's ManualClock: when the engine
    sleeps, the emulator's time moves and its controllers (pod start-up, scheduler) run."""

    def __init__(self, emulator: Emulator) -> None:
        if not isinstance(emulator.clock, ManualClock):
            raise TypeError("EngineClock needs the emulator to run on a ManualClock")
        self._emulator = emulator
        self._clock = emulator.clock
        self._t0 = emulator.clock.now()

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), tz=UTC)

    def sleep(self, seconds: float) -> None:
        self._emulator.advance(max(0.0, seconds))

    def monotonic(self) -> float:
        return self._clock.now() - self._t0


class InProcessKarmada(Running):
    """An emulated Karmada control plane reached without sockets, on a ManualClock."""

    def __init__(
        self,
        topology: Path | str | list[Obj] | None = None,
        *,
        clock: ManualClock | None = None,
        **emulator_options: Any,
    ) -> None:
        self.clock = clock or ManualClock()
        self.emulator = Emulator(topology, clock=self.clock, **emulator_options)

    def start(self) -> InProcessKarmada:
        self.emulator.start(serve=False)
        return self

    def stop(self) -> None:
        self.emulator.stop()

    def api_client(self, *, user: str = "admin") -> InProcessApiClient:
        """An ApiClient stand-in acting as `user`."""
        return InProcessApiClient(self.emulator, user=user)

    def client(self, **options: Any) -> KarmadaClient:
        """tidal's KarmadaClient over `api_client()`; its retries sleep on the manual clock."""
        from tidal.karmada.client import KarmadaClient

        options.setdefault("sleep", self.advance)
        options.setdefault("background_watch", False)  # its watches move the manual clock
        return KarmadaClient(self.api_client(), **options)

    def engine_clock(self) -> EngineClock:
        return EngineClock(self.emulator)

    def advance(self, seconds: float) -> None:
        """Move time forward, running the controllers' due work."""
        self.emulator.advance(seconds)

    def apply(self, manifests: list[Obj] | Path | str) -> list[Obj]:
        """Create objects as a topology does (no API request is counted)."""
        created = self.emulator.apply(manifests)
        self.emulator.settle()
        return created
