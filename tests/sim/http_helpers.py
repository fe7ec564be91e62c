"""Plain HTTP to the emulator (urllib, no client library): for answers the client hides."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tidal_sim.emulator import Emulator


def raw(
    emu: Emulator, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, Any, dict[str, str]]:
    """One plain HTTP request: (status code, decoded JSON body, headers)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        emu.url + path, data=data, method=method, headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


def call(emu: Emulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """(status code, decoded JSON body) of one plain JSON request."""
    code, answer, _ = raw(emu, method, path, body)
    return code, answer
