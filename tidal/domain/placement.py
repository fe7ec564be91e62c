"""A placement as a value: built from the raw placement of a policy or a binding, equal to
another placement when their normalized contents are (empty values dropped, the CRD's
replicaSchedulingType default filled in), and giving the raw placement back for writes.

Two placements that Karmada treats alike compare equal although their raw forms differ (a
binding carries `spreadConstraints: []` where the policy has none, the API server fills in
`replicaSchedulingType: Divided`); the raw form is kept untouched, so what is written is what
was read."""

from __future__ import annotations

import copy
from collections.abc import Hashable
from typing import Any

_EMPTY: tuple[object, ...] = (None, {}, [], "")


def normalized(raw: object) -> Any:
    """`raw` without empty values (None, {}, [], "") in any mapping, with the CRD's
    replicaSchedulingType default (Divided) in any replicaScheduling; list items are kept
    as they are (only normalized themselves); anything else is copied."""
    if isinstance(raw, dict):
        out = {k: normalized(v) for k, v in raw.items() if v not in _EMPTY}
        out = {k: v for k, v in out.items() if v not in _EMPTY}
        scheduling = out.get("replicaScheduling")
        if isinstance(scheduling, dict) and "replicaSchedulingType" not in scheduling:
            out["replicaScheduling"] = {**scheduling, "replicaSchedulingType": "Divided"}
        return out
    if isinstance(raw, list):
        return [normalized(v) for v in raw]
    return copy.deepcopy(raw)


def _frozen(value: object) -> Hashable:
    """A hashable form of normalized content; equal contents give equal forms."""
    if isinstance(value, dict):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value if isinstance(value, Hashable) else repr(value)


class Placement:
    """An immutable placement: equality and hash by normalized content; `raw()` for writes."""

    __slots__ = ("_content", "_raw")

    _raw: Any
    _content: Any

    def __init__(self, raw: object) -> None:
        object.__setattr__(self, "_raw", copy.deepcopy(raw))
        object.__setattr__(self, "_content", normalized(raw))

    @classmethod
    def of(cls, raw: object) -> Placement | None:
        """The placement of a raw value read off an object; None where it has none."""
        return None if raw is None else cls(raw)

    def raw(self) -> Any:
        """The placement as it was read (a copy): what a write puts back."""
        return copy.deepcopy(self._raw)

    def content(self) -> Any:
        """The normalized content (a copy): what equality compares."""
        return copy.deepcopy(self._content)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Placement is immutable (cannot set {name})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Placement):
            return NotImplemented
        return bool(self._content == other._content)

    def __hash__(self) -> int:
        return hash(_frozen(self._content))

    def __repr__(self) -> str:
        return f"Placement({self._content!r})"
