"""Counts of API requests by verb and resource, and an ordered log of every request.

`GET /sim/v1/requests` returns `snapshot()`:
`{"total": N, "by": {"<verb> <resource>": n}, "byVerb": {...}, "byResource": {...},
  "byCode": {"<code>": n}}` where verb is one of get, list, watch, create, update, patch,
delete, deletecollection and resource is the plural (`resourcebindings`, or
`resourcebindings/status` for the subresource). Discovery and /sim/v1 requests are not counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RequestRecord:
    seq: int
    time: float  # wall-clock seconds since the epoch
    verb: str
    resource: str  # plural, or plural/status
    group: str
    namespace: str | None
    name: str | None
    code: int
    user_agent: str
    identity: str  # who the caller said it is: impersonation/X-Remote-User header or bearer token
    # the object's resourceVersion after a create, update or patch: where the write falls in
    # the store's order (None for other requests)
    resource_version: int | None = None
    dry_run: bool = False  # dryRun=All: validated, nothing stored
    field_validation: str = ""  # the request's fieldValidation query parameter, as sent

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RequestAccounting:
    """Thread-safe counters plus a bounded request log (oldest entries dropped first)."""

    def __init__(self, log_size: int = 200_000) -> None:
        self._lock = threading.Lock()
        self._by: Counter[tuple[str, str]] = Counter()
        self._codes: Counter[int] = Counter()
        self._log: deque[RequestRecord] = deque(maxlen=log_size)
        self._seq = 0

    def record(
        self,
        verb: str,
        resource: str,
        group: str,
        namespace: str | None,
        name: str | None,
        code: int,
        user_agent: str = "",
        identity: str = "",
        resource_version: int | None = None,
        dry_run: bool = False,
        field_validation: str = "",
    ) -> None:
        with self._lock:
            self._seq += 1
            self._by[(verb, resource)] += 1
            self._codes[code] += 1
            self._log.append(
                RequestRecord(
                    self._seq,
                    time.time(),
                    verb,
                    resource,
                    group,
                    namespace,
                    name,
                    code,
                    user_agent,
                    identity,
                    resource_version,
                    dry_run,
                    field_validation,
                )
            )

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            by_verb: Counter[str] = Counter()
            by_resource: Counter[str] = Counter()
            for (verb, resource), n in self._by.items():
                by_verb[verb] += n
                by_resource[resource] += n
            return {
                "total": sum(self._by.values()),
                "by": {f"{v} {r}": n for (v, r), n in sorted(self._by.items())},
                "byVerb": dict(sorted(by_verb.items())),
                "byResource": dict(sorted(by_resource.items())),
                "byCode": {str(c): n for c, n in sorted(self._codes.items())},
            }

    def log(self, since_seq: int = 0) -> list[RequestRecord]:
        with self._lock:
            return [r for r in self._log if r.seq > since_seq]

    def reset(self) -> None:
        with self._lock:
            self._by.clear()
            self._codes.clear()
            self._log.clear()
