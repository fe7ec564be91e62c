"""Durations as users write them ("30s", "10m", "1h30m", "2d") and back.

A pydantic field type for each use: `Duration` (zero allowed, e.g. no pause between waves) and
`PositiveDuration` (timeouts, catch-up windows).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_UNITS: dict[str, int] = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)(ms|d|h|m|s)")
DURATION_PATTERN = r"^(\d+(ms|d|h|m|s))+$"
_WHOLE = re.compile(DURATION_PATTERN)
HINT = 'write a number with a unit: "30s", "10m", "1h30m", "2d"'


def parse_duration(text: str) -> timedelta:
    """Parse "1h30m"-style text (units d, h, m, s, ms; each at most once, largest first)."""
    value = text.strip()
    if not _WHOLE.match(value):
        raise ValueError(f"{text!r} is not a duration; {HINT}")
    seen: list[str] = []
    total = timedelta()
    for amount, unit in _PART.findall(value):
        if unit in seen:
            raise ValueError(f"{text!r} repeats the unit {unit!r}; {HINT}")
        seen.append(unit)
        if unit == "ms":
            total += timedelta(milliseconds=int(amount))
        else:
            total += timedelta(seconds=int(amount) * _UNITS[unit])
    order = ["d", "h", "m", "s", "ms"]
    if seen != sorted(seen, key=order.index):
        raise ValueError(
            f"{text!r} lists its units out of order; write the largest first, e.g. 1h30m"
        )
    return total


def format_duration(value: timedelta) -> str:
    """The shortest text that `parse_duration` reads back as the same value ("0s" for zero)."""
    if value < timedelta(0):
        raise ValueError("negative durations have no text form")
    millis = value // timedelta(milliseconds=1)
    seconds, ms = divmod(millis, 1000)
    parts: list[str] = []
    for unit in ("d", "h", "m", "s"):
        amount, seconds = divmod(seconds, _UNITS[unit])
        if amount:
            parts.append(f"{amount}{unit}")
    if ms:
        parts.append(f"{ms}ms")
    return "".join(parts) or "0s"


def _coerce(value: Any, *, positive: bool) -> timedelta:
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, str):
        result = parse_duration(value)
    else:
        # Integers are refused on purpose: "30" could mean seconds or minutes.
        raise ValueError(f"expected a duration string, got {type(value).__name__}; {HINT}")
    if result < timedelta(0):
        raise ValueError("a duration cannot be negative")
    if positive and result == timedelta(0):
        raise ValueError(f"the duration must be greater than zero; {HINT}")
    return result


def _non_negative(value: Any) -> timedelta:
    return _coerce(value, positive=False)


def _positive(value: Any) -> timedelta:
    return _coerce(value, positive=True)


_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": DURATION_PATTERN,
    "examples": ["30s", "10m", "1h30m"],
}

Duration = Annotated[
    timedelta,
    BeforeValidator(_non_negative),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(_SCHEMA),
]
PositiveDuration = Annotated[
    timedelta,
    BeforeValidator(_positive),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({**_SCHEMA, "not": {"pattern": r"^(0+(ms|d|h|m|s))+$"}}),
]
