"""The server-independent request/response shapes the REST handlers work on."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


class Headers(Protocol):
    """Case-insensitive header lookup (http.client's Message, or a plain dict in tests)."""

    def get(self, name: str, /) -> str | None: ...


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: Headers
    body: bytes = b""
    is_closed: Callable[[], bool] = lambda: False
    # An in-process caller on a manual clock (tidal_sim.testing) passes both: a watch with
    # nothing to send then calls idle(seconds) to move time instead of blocking, and measures
    # its timeout with `now`.
    idle: Callable[[float], None] | None = None
    now: Callable[[], float] = time.monotonic

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("1", "true")

    def int_param(self, name: str) -> int | None:
        raw = self.query.get(name)
        if raw in (None, ""):
            return None
        try:
            return int(raw)
        except ValueError:
            return None

    @property
    def user_agent(self) -> str:
        return self.headers.get("User-Agent") or ""

    @property
    def identity(self) -> str:
        """Who the caller says it is: an impersonation header, or its bearer token.

        Tokens of the form `sim:<name>` (what Emulator.write_kubeconfig writes) name the user;
        other tokens are recorded as a short hash, never in clear.
        """
        for header in ("Impersonate-User", "X-Remote-User"):
            if self.headers.get(header):
                return str(self.headers.get(header))
        auth = self.headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
            if token.startswith("sim:"):
                return token[4:]
            return "token-sha256:" + hashlib.sha256(token.encode()).hexdigest()[:12]
        return ""


@dataclass
class Response:
    code: int
    body: Any
    headers: dict[str, str | list[str]] = field(default_factory=dict)  # a list: one line each


@dataclass
class StreamResponse:
    """A watch: newline-delimited JSON events written as they come, until the iterator ends."""

    chunks: Iterator[bytes]
    on_close: Callable[[], None] = lambda: None  # always called once the stream is over
    code: int = 200
    headers: dict[str, str] = field(default_factory=dict)
