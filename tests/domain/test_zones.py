"""Time-zone suggestions by meaning: city aliases, fixed offsets and abbreviations are
suggested a zone that keeps the schedule's times, never a zone that merely looks alike."""

from __future__ import annotations

import pytest

from tidal.domain.schedule_base import check_time_zone


def _hint(value: str) -> str:
    with pytest.raises(ValueError) as info:
        check_time_zone(value)
    return str(info.value)


@pytest.mark.parametrize(
    ("value", "zone"),
    [
        ("Asia/Beijing", "Asia/Shanghai"),
        ("Beijing", "Asia/Shanghai"),
        ("asia/beijing", "Asia/Shanghai"),
        ("Asia/Shenzhen", "Asia/Shanghai"),
        ("Asia/Mumbai", "Asia/Kolkata"),
        ("Asia/New_Delhi", "Asia/Kolkata"),
        ("America/San_Francisco", "America/Los_Angeles"),
        ("US/Pacific Time", "America/Los_Angeles"),
        ("Europe/Munich", "Europe/Berlin"),
        ("Asia/Bangalore", "Asia/Kolkata"),
    ],
)
def test_city_aliases_suggest_the_zone_that_city_uses(value: str, zone: str) -> None:
    """A city that is not a zone name is pointed at the zone it keeps time by."""
    hint = _hint(value)
    assert f"did you mean {zone}?" in hint
    assert "Brunei" not in hint


@pytest.mark.parametrize(
    ("value", "etc", "city"),
    [
        ("UTC+8", "Etc/GMT-8", "Asia/Shanghai"),
        ("GMT+8", "Etc/GMT-8", "Asia/Singapore"),
        ("UTC+08:00", "Etc/GMT-8", "Asia/Shanghai"),
        ("utc-5", "Etc/GMT+5", "America/New_York"),
        ("UTC+1", "Etc/GMT-1", "Europe/Berlin"),
    ],
)
def test_fixed_offsets_name_the_etc_zone_and_city_zones(value: str, etc: str, city: str) -> None:
    """`UTC+8` is not UTC: the Etc zone with the inverted sign, and city zones at that offset."""
    hint = _hint(value)
    assert f"use {etc}" in hint and "sign" in hint
    assert city in hint
    assert "did you mean UTC?" not in hint


def test_a_half_hour_offset_has_no_etc_zone_but_city_zones() -> None:
    """UTC+5:30 has no Etc zone; the city zones at that offset are suggested."""
    hint = _hint("UTC+5:30")
    assert "Asia/Kolkata" in hint and "Etc/" not in hint


@pytest.mark.parametrize(
    ("value", "candidates"),
    [
        ("CST", ["Asia/Shanghai", "America/Chicago", "America/Havana"]),
        ("IST", ["Asia/Kolkata", "Asia/Jerusalem", "Europe/Dublin"]),
        ("BST", ["Europe/London", "Asia/Dhaka"]),
    ],
)
def test_ambiguous_abbreviations_list_the_candidates(value: str, candidates: list[str]) -> None:
    """An ambiguous abbreviation says so and lists every zone it may mean."""
    hint = _hint(value)
    assert "ambiguous" in hint
    for zone in candidates:
        assert zone in hint


@pytest.mark.parametrize(
    ("value", "zone"),
    [
        ("JST", "Asia/Tokyo"),
        ("PST", "America/Los_Angeles"),
        ("CEST", "Europe/Berlin"),
        ("KST", "Asia/Seoul"),
    ],
)
def test_unambiguous_abbreviations_suggest_their_zone(value: str, zone: str) -> None:
    """A well-known abbreviation names the zone with the daylight-saving rules."""
    assert f"did you mean {zone}?" in _hint(value)


def test_plain_typos_still_get_the_closest_name() -> None:
    """Europe/Berln -> Europe/Berlin, as before."""
    assert "did you mean Europe/Berlin?" in _hint("Europe/Berln")


def test_valid_zones_pass() -> None:
    """IANA names (and the legacy fixed ones such as EST) are accepted as they are."""
    for zone in ("Asia/Shanghai", "UTC", "Etc/GMT-8", "EST"):
        assert check_time_zone(zone) == zone
