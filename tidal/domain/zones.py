"""What to suggest for a time zone that is not an IANA name, by meaning rather than spelling:
`Asia/Beijing` is a city that keeps China's time (Asia/Shanghai), not a typo of Asia/Brunei;
`UTC+8` is a fixed offset (Etc/GMT-8, sign inverted) or a city zone at that offset, not UTC;
`CST` is an abbreviation of several zones. Pure: offsets are read at fixed reference dates."""

from __future__ import annotations

import difflib
import re
import zoneinfo
from datetime import UTC, datetime, timedelta

# Cities (and regions) people write that are not zone names, by the zone they keep time by.
ALIASES = {
    "beijing": "Asia/Shanghai",
    "shenzhen": "Asia/Shanghai",
    "guangzhou": "Asia/Shanghai",
    "hangzhou": "Asia/Shanghai",
    "chengdu": "Asia/Shanghai",
    "china": "Asia/Shanghai",
    "prc": "Asia/Shanghai",
    "mumbai": "Asia/Kolkata",
    "bombay": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "new_delhi": "Asia/Kolkata",
    "bangalore": "Asia/Kolkata",
    "bengaluru": "Asia/Kolkata",
    "chennai": "Asia/Kolkata",
    "hyderabad": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "osaka": "Asia/Tokyo",
    "kyoto": "Asia/Tokyo",
    "hanoi": "Asia/Bangkok",
    "san_francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "san_jose": "America/Los_Angeles",
    "pacific_time": "America/Los_Angeles",
    "pacific": "America/Los_Angeles",
    "boston": "America/New_York",
    "washington": "America/New_York",
    "eastern_time": "America/New_York",
    "eastern": "America/New_York",
    "atlanta": "America/New_York",
    "miami": "America/New_York",
    "dallas": "America/Chicago",
    "houston": "America/Chicago",
    "austin": "America/Chicago",
    "central_time": "America/Chicago",
    "central": "America/Chicago",
    "munich": "Europe/Berlin",
    "frankfurt": "Europe/Berlin",
    "hamburg": "Europe/Berlin",
    "milan": "Europe/Rome",
    "barcelona": "Europe/Madrid",
    "manchester": "Europe/London",
    "edinburgh": "Europe/London",
    "geneva": "Europe/Zurich",
    "melbourne_au": "Australia/Melbourne",
    "canberra": "Australia/Sydney",
    "st_petersburg": "Europe/Moscow",
}

# Abbreviations: every zone each may mean (one entry: unambiguous).
ABBREVIATIONS = {
    "CST": (
        ("China Standard Time", "Asia/Shanghai"),
        ("US Central", "America/Chicago"),
        ("Cuba", "America/Havana"),
    ),
    "IST": (
        ("India", "Asia/Kolkata"),
        ("Israel", "Asia/Jerusalem"),
        ("Irish Standard Time", "Europe/Dublin"),
    ),
    "BST": (("British Summer Time", "Europe/London"), ("Bangladesh", "Asia/Dhaka")),
    "AST": (("Atlantic", "America/Halifax"), ("Arabia", "Asia/Riyadh")),
    "CDT": (("US Central", "America/Chicago"), ("Cuba", "America/Havana")),
    "PST": (("US Pacific", "America/Los_Angeles"),),
    "PDT": (("US Pacific", "America/Los_Angeles"),),
    "PT": (("US Pacific", "America/Los_Angeles"),),
    "EDT": (("US Eastern", "America/New_York"),),
    "ET": (("US Eastern", "America/New_York"),),
    "CT": (("US Central", "America/Chicago"),),
    "MDT": (("US Mountain", "America/Denver"),),
    "MT": (("US Mountain", "America/Denver"),),
    "JST": (("Japan", "Asia/Tokyo"),),
    "KST": (("Korea", "Asia/Seoul"),),
    "HKT": (("Hong Kong", "Asia/Hong_Kong"),),
    "SGT": (("Singapore", "Asia/Singapore"),),
    "CEST": (("Central European Summer Time", "Europe/Berlin"),),
    "BJT": (("China Standard Time", "Asia/Shanghai"),),
    "AEST": (("Australian Eastern", "Australia/Sydney"),),
    "AEDT": (("Australian Eastern", "Australia/Sydney"),),
    "NZST": (("New Zealand", "Pacific/Auckland"),),
    "MSK": (("Moscow", "Europe/Moscow"),),
}

# City zones offered for a fixed offset (checked at the reference dates below).
CITY_ZONES = (
    "Pacific/Honolulu",
    "America/Anchorage",
    "America/Los_Angeles",
    "America/Denver",
    "America/Chicago",
    "America/New_York",
    "America/Halifax",
    "America/Sao_Paulo",
    "Atlantic/Azores",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Paris",
    "Africa/Lagos",
    "Europe/Athens",
    "Africa/Cairo",
    "Europe/Moscow",
    "Asia/Dubai",
    "Asia/Karachi",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Dhaka",
    "Asia/Bangkok",
    "Asia/Jakarta",
    "Asia/Shanghai",
    "Asia/Singapore",
    "Asia/Hong_Kong",
    "Asia/Taipei",
    "Australia/Perth",
    "Asia/Tokyo",
    "Asia/Seoul",
    "Australia/Brisbane",
    "Australia/Sydney",
    "Pacific/Auckland",
)
_REFERENCE = (datetime(2026, 1, 15, tzinfo=UTC), datetime(2026, 7, 15, tzinfo=UTC))
_OFFSET = re.compile(r"^(?:(?:UTC|GMT|Z)\s*)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


def suggest(value: str, known: frozenset[str]) -> str:
    """The hint that follows "unknown time zone '...'"."""
    text = value.strip()
    offset = _offset_hint(text)
    if offset:
        return offset
    abbreviation = ABBREVIATIONS.get(text.upper())
    if abbreviation:
        if len(abbreviation) == 1:
            return (
                f"did you mean {abbreviation[0][1]}? ({text} is {abbreviation[0][0]}; "
                "the zone name carries its daylight-saving rules, an abbreviation does not)"
            )
        listed = ", ".join(f"{zone} ({meaning})" for meaning, zone in abbreviation)
        return f"{text} is ambiguous: it may mean {listed}; use the zone you mean"
    city = re.sub(r"[\s-]+", "_", text.rsplit("/", 1)[-1]).lower()
    alias = ALIASES.get(city) or ALIASES.get(city.removesuffix("_time"))
    if alias:
        return f"did you mean {alias}? ({text.rsplit('/', 1)[-1]} keeps the time of {alias})"
    by_lower = {zone.lower(): zone for zone in known}
    if text.lower() in by_lower:
        return f"did you mean {by_lower[text.lower()]}? (zone names are case-sensitive)"
    close = difflib.get_close_matches(text, sorted(known), n=1)
    return f"did you mean {close[0]}?" if close else "use an IANA name such as Europe/Berlin"


def _offset_hint(text: str) -> str | None:
    match = _OFFSET.match(text)
    if match is None:
        return None
    sign, hours, minutes = match.group(1), int(match.group(2)), int(match.group(3) or 0)
    if hours > 14 or minutes >= 60:
        return None
    delta = timedelta(hours=hours, minutes=minutes) * (1 if sign == "+" else -1)
    shown = f"UTC{sign}{hours}" + (f":{minutes:02d}" if minutes else "")
    cities = [
        z
        for z in CITY_ZONES
        if any(
            zoneinfo.ZoneInfo(z).utcoffset(at.replace(tzinfo=None)) == delta for at in _REFERENCE
        )
    ]
    near = (
        f"; city zones at {shown} (with their daylight-saving rules): " + ", ".join(cities)
        if cities
        else ""
    )
    if minutes == 0 and hours <= 12:
        etc = "Etc/GMT" + ("" if hours == 0 else ("-" if sign == "+" else "+") + str(hours))
        return (
            f"{text} is a fixed offset, not a zone name: for a fixed {shown} use {etc} "
            f"(Etc names invert the sign){near}"
        )
    return f"{text} is a fixed offset, not a zone name, and no Etc zone has it{near}"
