"""Durations: "30s", "10m", "1h30m" parse, print back and refuse everything else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel, ValidationError

from tidal.domain.durations import Duration, PositiveDuration, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("10m", timedelta(minutes=10)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d", timedelta(days=2)),
        ("1m500ms", timedelta(minutes=1, milliseconds=500)),
        ("0s", timedelta(0)),
    ],
)
def test_parse_known_forms(text: str, expected: timedelta) -> None:
    """Each unit and combinations of units, largest first, parse to the right value."""
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "1.5h", "-5s", "10 m", "30m1h", "1h1h", "1w", "m"])
def test_parse_refuses_other_text(text: str) -> None:
    """Anything but number+unit pairs, largest unit first and each once, is refused."""
    with pytest.raises(ValueError, match=r"duration|unit"):
        parse_duration(text)


@pytest.mark.parametrize(
    "value",
    [timedelta(0), timedelta(seconds=90), timedelta(hours=25), timedelta(days=1, milliseconds=5)],
)
def test_format_round_trips(value: timedelta) -> None:
    """format_duration prints text that parses back to the same value."""
    assert parse_duration(format_duration(value)) == value


def test_format_is_shortest() -> None:
    """90 seconds print as 1m30s, an hour as 1h."""
    assert format_duration(timedelta(seconds=90)) == "1m30s"
    assert format_duration(timedelta(hours=1)) == "1h"


class _Durations(BaseModel):
    pause: Duration
    timeout: PositiveDuration


def test_field_types_validate_and_serialize() -> None:
    """The pydantic types parse text and dump it back as text."""
    model = _Durations(pause="0s", timeout="1h30m")
    assert model.timeout == timedelta(hours=1, minutes=30)
    assert model.model_dump(mode="json") == {"pause": "0s", "timeout": "1h30m"}


def test_positive_duration_refuses_zero_and_numbers() -> None:
    """A timeout of zero and a bare number (unit unknown) are both refused."""
    with pytest.raises(ValidationError, match="greater than zero"):
        _Durations(pause="0s", timeout="0s")
    with pytest.raises(ValidationError, match="duration string"):
        _Durations(pause=30, timeout="1m")
