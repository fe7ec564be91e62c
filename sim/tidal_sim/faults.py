"""Injected API faults: latency, 500s, 429s with Retry-After, 409s, dropped watches.

A fault matches requests by verb and resource (comma lists or `*`; resource is the plural,
or `plural/status`), optionally by namespace, name and caller identity (as the request log
records it: `replica-a` for the token `sim:replica-a`). It fires with `probability` (a seeded
random, so a run is repeatable) and at most `count` times (None: no limit).

- latency: the request waits `seconds` (real time) and then runs normally.
- error: 500 InternalError.   throttle: 429 TooManyRequests with `Retry-After: retry_after`.
- conflict: 409 Conflict, as for a stale resourceVersion.
- truncate: the answer (2xx, not a watch) is cut in the middle of its JSON.
- wrong-kind: the answer (2xx, not a watch) holds ConfigMaps with the same metadata instead of
  the objects asked for (a proxy or aggregated API gone wrong).
- drop-watch: open watch streams of matching resources are closed at once when injected
  (with `compact`, the watch history is forgotten too, so a resume gets 410 Gone); then up to
  `count` (default 0) later matching watch requests are cut `seconds` after they start.
- stall-watch: while it is there, watch streams of matching resources (open ones and later
  ones) stay open but deliver nothing, not even bookmarks: a slow or silently stuck watch.
  Its events are held, and flow once the fault is removed. Not consumed (no count).

HTTP: `POST /sim/v1/faults` with the JSON of `Fault` (camelCase: retryAfter), `GET` lists,
`DELETE /sim/v1/faults` clears all, `DELETE /sim/v1/faults/<id>` one.
"""

from __future__ import annotations

import builtins
import itertools
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

FaultType = Literal[
    "latency",
    "error",
    "throttle",
    "conflict",
    "drop-watch",
    "stall-watch",
    "truncate",
    "wrong-kind",
]
FAULT_TYPES: tuple[str, ...] = get_args(FaultType)
BODY_FAULT_TYPES: tuple[str, ...] = ("truncate", "wrong-kind")  # applied to the answer
STATE_FAULT_TYPES: tuple[str, ...] = ("stall-watch",)  # in force while present, never fired


class FaultError(ValueError):
    """A fault spec that makes no sense; the message names the field."""


@dataclass
class Fault:
    type: FaultType
    verb: str = "*"
    resource: str = "*"
    namespace: str | None = None
    name: str | None = None
    identity: str | None = None
    probability: float = 1.0
    count: int | None = None
    seconds: float = 0.0
    retry_after: int = 1
    compact: bool = False
    id: str = ""
    fired: int = field(default=0)

    def __post_init__(self) -> None:
        if self.type not in FAULT_TYPES:
            raise FaultError(f"fault type {self.type!r} is not one of {', '.join(FAULT_TYPES)}")
        if not 0.0 <= self.probability <= 1.0:
            raise FaultError(f"probability {self.probability} must be within [0, 1]")
        if self.count is not None and self.count < 0:
            raise FaultError(f"count {self.count} must be >= 0")
        if self.seconds < 0 or self.retry_after < 0:
            raise FaultError("seconds and retryAfter must be >= 0")
        if self.type == "drop-watch" and self.count is None:
            self.count = 0

    def matches(
        self,
        verb: str,
        resource: str,
        namespace: str | None,
        name: str | None,
        identity: str | None = None,
    ) -> bool:
        return (
            _in(self.verb, verb)
            and _in(self.resource, resource)
            and (self.namespace is None or self.namespace == (namespace or ""))
            and (self.name is None or self.name == name)
            and (self.identity is None or self.identity == identity)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "verb": self.verb,
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
            "identity": self.identity,
            "probability": self.probability,
            "count": self.count,
            "seconds": self.seconds,
            "retryAfter": self.retry_after,
            "compact": self.compact,
            "fired": self.fired,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        known = {
            "type",
            "verb",
            "resource",
            "namespace",
            "name",
            "identity",
            "probability",
            "count",
            "seconds",
            "retryAfter",
            "retry_after",
            "compact",
        }
        unknown = set(data) - known - {"id", "fired"}
        if unknown:
            raise FaultError(f"unknown fault field(s): {', '.join(sorted(unknown))}")
        if "type" not in data:
            raise FaultError("fault needs a type: " + ", ".join(FAULT_TYPES))
        try:
            return cls(
                type=data["type"],
                verb=str(data.get("verb", "*")),
                resource=str(data.get("resource", "*")),
                namespace=data.get("namespace"),
                name=data.get("name"),
                identity=data.get("identity"),
                probability=float(data.get("probability", 1.0)),
                count=None if data.get("count") is None else int(data["count"]),
                seconds=float(data.get("seconds", 0.0)),
                retry_after=int(data.get("retryAfter", data.get("retry_after", 1))),
                compact=bool(data.get("compact", False)),
            )
        except (TypeError, ValueError) as exc:
            if isinstance(exc, FaultError):
                raise
            raise FaultError(f"bad fault field value: {exc}") from exc


def _in(pattern: str, value: str) -> bool:
    return any(p.strip() in ("*", value) for p in pattern.split(","))


DropWatches = Callable[[Fault], int]


class Faults:
    """The set of active faults; the API server asks `fire()` on every request."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._random = random.Random(seed)
        self._ids = itertools.count(1)
        self.on_drop_watch: DropWatches | None = None

    def inject(self, fault: Fault | None = None, /, **spec: Any) -> Fault:
        """Add a fault (a Fault, or its fields as keywords); returns it with its id."""
        if fault is None:
            fault = Fault(**spec)
        with self._lock:
            fault.id = fault.id or f"f{next(self._ids)}"
            self._faults.append(fault)
        if fault.type == "drop-watch" and self.on_drop_watch is not None:
            self.on_drop_watch(fault)
        return fault

    def clear(self, fault_id: str | None = None) -> int:
        """Remove one fault, or all; returns how many were removed."""
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if fault_id is not None and f.id != fault_id]
            return before - len(self._faults)

    def list(self) -> builtins.list[Fault]:
        with self._lock:
            return list(self._faults)

    def stalled(self, resource: str, namespace: str | None) -> bool:
        """A stall-watch fault holds the watch streams of `resource` in `namespace` now."""
        with self._lock:
            return any(
                f.type == "stall-watch" and f.matches("watch", resource, namespace, None)
                for f in self._faults
            )

    def fire(
        self,
        verb: str,
        resource: str,
        namespace: str | None,
        name: str | None,
        types: tuple[str, ...] = FAULT_TYPES,
        identity: str | None = None,
    ) -> builtins.list[Fault]:
        """The faults that fire for this request (their counts consumed), in injection order."""
        fired: builtins.list[Fault] = []
        with self._lock:
            for fault in self._faults:
                if fault.type not in types or not fault.matches(
                    verb, resource, namespace, name, identity
                ):
                    continue
                if fault.count is not None and fault.fired >= fault.count:
                    continue
                if fault.probability < 1.0 and self._random.random() >= fault.probability:
                    continue
                fault.fired += 1
                fired.append(fault)
        return fired
