"""Building blocks of the schedule contract: the base model, semantic problems, names, zones.

Checks that span several fields raise one `PydanticCustomError` of type "tidal_semantic" whose
ctx["problems"] lists every problem as (location relative to the model, message), so the
loader can point at each key.
"""

from __future__ import annotations

import re
import zoneinfo
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from tidal.domain.zones import suggest

API_VERSION = "tidal.io/v1alpha1"
KIND = "TidalSchedule"
SEMANTIC_ERROR = "tidal_semantic"

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


def raise_problems(problems: list[Problem]) -> None:
    """Raise every problem at once (no-op for an empty list)."""
    if problems:
        raise PydanticCustomError(
            SEMANTIC_ERROR, "{message}", {"message": problems[0][1], "problems": problems}
        )


# --- names -----------------------------------------------------------------------------------

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _name_checker(pattern: str, max_length: int, what: str) -> Any:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if len(value) > max_length or not compiled.match(value):
            raise ValueError(
                f"{value!r} is not a valid {what}: use at most {max_length} lower-case letters, "
                "digits and '-', starting and ending with a letter or digit"
            )
        return value

    return check


DnsLabel = Annotated[
    str,
    AfterValidator(_name_checker(DNS_LABEL, 63, "name")),
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]
ObjectName = Annotated[
    str,
    AfterValidator(_name_checker(DNS_SUBDOMAIN, 253, "Kubernetes object name")),
    WithJsonSchema({"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 253}),
]
NamespaceName = Annotated[
    str,
    AfterValidator(_name_checker(DNS_LABEL, 63, "namespace")),
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]


class ContractModel(BaseModel):
    """Frozen, closed, camelCase in YAML, snake_case in Python."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        validate_default=False,
        field_title_generator=lambda name, info: info.alias or to_camel(name),
    )


_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_PREFIX = re.compile(DNS_SUBDOMAIN)


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a Kubernetes label key, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix)):
        return f"label key {key!r} has an invalid prefix; use a DNS subdomain before '/'"
    if len(name) > 63 or not _LABEL_NAME.match(name):
        return (
            f"label key {key!r} is invalid; use at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a Kubernetes label value, or None."""
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        return (
            f"label value {value!r} is invalid; use at most 63 letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit"
        )
    return None


@lru_cache(maxsize=1)
def _known_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_time_zone(value: str) -> str:
    """Accept an IANA zone name; suggest the nearest known ones otherwise."""
    if value not in _known_zones():
        try:
            zoneinfo.ZoneInfo(value)
            return value
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            pass
        raise ValueError(f"unknown time zone {value!r}; {suggest(value, _known_zones())}")
    return value


TimeZoneName = Annotated[
    str,
    AfterValidator(check_time_zone),
    WithJsonSchema(
        {"type": "string", "examples": ["Asia/Shanghai"], "description": "IANA time zone name"}
    ),
]
