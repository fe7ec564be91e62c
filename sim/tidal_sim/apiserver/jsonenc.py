"""Compact JSON encoding for responses: orjson when installed (about six times faster on large
lists, which matters for 10,000-object lists), the standard library otherwise."""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson

    def dumps(value: Any) -> bytes:
        data: bytes = orjson.dumps(value)
        return data

except ImportError:  # pragma: no cover - orjson is a declared dependency

    def dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()
